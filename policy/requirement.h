#pragma once
// NVIDIA_REQUIRE_* expressions, evaluated as the NVIDIA container toolkit
// (libnvidia-container) does before it starts a container:
//  - one variable = alternatives separated by spaces (OR);
//  - one alternative = terms separated by commas (AND);
//  - a term = <key><op><value>, key in {cuda, driver, arch, brand}
//    (case-insensitive), op in {=, !=, <, <=, >, >=}; brand only = and !=;
//  - versions compare numerically part by part, trailing ".0" ignored;
//  - every variable must hold (AND across variables).
// Quirks of the toolkit are kept so that cudagate agrees with the runtime:
// only ' ' separates alternatives (a tab belongs to the term), an alternative
// made only of commas holds, a variable with no alternatives holds, and the
// operator is the first of the list above that the run of "<>=!" characters
// is a prefix of (so "cuda!12.0" means "cuda!=12.0").
//
// Evaluation is three-valued: a node whose driver, CUDA version, capability
// or brand is unknown leaves terms about it unknown, and the result is
// unknown unless the known terms settle it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

enum class RequireKey : unsigned char { cuda, driver, arch, brand };
enum class RequireOp : unsigned char { eq, ne, lt, le, gt, ge };

struct RequireTerm {
  RequireKey key = RequireKey::cuda;
  RequireOp op = RequireOp::eq;
  std::string value;         // as written (brand lower-cased)
  std::vector<int> numbers;  // value split on '.', for cuda/driver/arch; trailing zeros trimmed
};

struct RequireAlternative {
  std::vector<RequireTerm> terms;
  std::string text;  // "brand=tesla,driver>=470,driver<471"
};

// One NVIDIA_REQUIRE_* variable.
struct Requirement {
  std::string variable;  // "NVIDIA_REQUIRE_CUDA"
  std::vector<RequireAlternative> alternatives;
  std::string text;  // the value as written
};

// Every requirement of one container (ANDed).
struct RequirementSet {
  std::vector<Requirement> requirements;
  [[nodiscard]] bool empty() const { return requirements.empty(); }
  // The values joined by "; " in variable order, for reports.
  [[nodiscard]] std::string str() const;
};

// Parses one variable's value. An empty value yields no alternatives (the
// toolkit skips empty tokens); an unknown key or operator, a missing key or
// value, brand with an ordering operator, or a version with anything but
// digits and dots (or not starting with a digit) is an error naming the term,
// with Error::where set to `variable`. The toolkit reports these only when it
// reaches the term; cudagate reports them up front.
Expected<Requirement> parse_requirement(std::string_view variable, std::string_view text);

// What the toolkit compares against on a node. Unknown facts are nullopt.
struct DeviceFacts {
  std::optional<DriverVersion> driver;
  std::optional<CudaVersion> max_cuda;  // the driver's CUDA version (nvidia-smi)
  std::optional<ComputeCapability> cc;
  std::optional<std::string> brand;  // NVML brand, lower-case: "tesla", "nvidia", "geforce"
};

enum class Tristate : unsigned char { yes, no, unknown };

struct RequirementResult {
  Tristate satisfied = Tristate::yes;
  // When not satisfied: the first variable (in set order) that failed and the
  // toolkit's wording of it, "unsatisfied condition: cuda>=12.4" (its first
  // alternative, whichever alternative decided), followed by ", please update
  // your driver to a newer version, or use an earlier cuda container" when
  // that alternative starts with "cuda>=" (case-sensitive, as the toolkit).
  // When unknown: `variable` names the first variable left undecided and
  // `condition` is empty.
  std::string variable;
  std::string condition;
};

[[nodiscard]] RequirementResult evaluate_requirements(const RequirementSet& set,
                                                      const DeviceFacts& device);

}  // namespace cudagate
