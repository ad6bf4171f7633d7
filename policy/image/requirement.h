#pragma once
// NVIDIA_REQUIRE_* expressions, evaluated as the NVIDIA container toolkit
// (libnvidia-container, src/cli/dsl.c dsl_evaluate) does before it starts a
// container:
//  - one variable = groups separated by spaces (OR);
//  - one group = terms separated by commas (AND);
//  - a term = <key><op><value>, key in {cuda, driver, arch, brand}
//    (case-insensitive), op in {=, !=, <, <=, >, >=}; brand only = and !=;
//  - versions compare numerically part by part, trailing ".0" ignored;
//  - every variable must hold (AND across variables).
// Evaluation runs left to right and stops: at the first satisfied group (the
// variable holds), and inside a group at the first false term (the group
// fails, the next one is tried). A term is checked only when evaluation
// reaches it: a malformed term ("invalid expression" to the toolkit) fails
// the container when reached and is no error anywhere else, so an unknown
// key after a satisfied group changes nothing.
//
// Quirks of the toolkit are kept so that cudagate agrees with the runtime:
// only ' ' separates groups (a tab belongs to the term); empty tokens are
// skipped; a group made only of commas ends the evaluation with the result
// of the last term evaluated before it (so "," alone holds and
// "cuda>=12.4 ," fails where cuda>=12.4 fails); a variable with no groups
// holds; and the operator is the first of the list above that the run of
// "<>=!" characters is a prefix of (so "cuda!12.0" means "cuda!=12.0").
//
// Evaluation is three-valued: a node whose driver, CUDA version, capability
// or brand is unknown leaves terms about it unknown, and the result is
// unknown unless every way the evaluation could go gives the same answer.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/version.h"

namespace cudagate {

enum class RequireKey : unsigned char { cuda, driver, arch, brand };
enum class RequireOp : unsigned char { eq, ne, lt, le, gt, ge };

struct RequireTerm {
  std::string text;  // the term as written: "driver>=470"
  // Why the toolkit calls this term an invalid expression, naming the term;
  // empty for a valid term. An invalid term's other fields are unspecified.
  std::string error;
  RequireKey key = RequireKey::cuda;
  RequireOp op = RequireOp::eq;
  std::string value;  // as written (brand lower-cased)
  // The value split on '.', for cuda/driver/arch; leading and trailing zeros
  // trimmed. Parts range over what the toolkit's strtoumax reads.
  std::vector<std::uint64_t> numbers;

  [[nodiscard]] bool valid() const { return error.empty(); }
  // Part i of the value as an int, 0 when absent, clamped to INT_MAX.
  [[nodiscard]] int part(std::size_t i) const;
};

struct RequireAlternative {
  std::vector<RequireTerm> terms;  // empty for a group made only of commas
  std::string text;                // "brand=tesla,driver>=470,driver<471"
};

// One NVIDIA_REQUIRE_* variable.
struct Requirement {
  std::string variable;  // "NVIDIA_REQUIRE_CUDA"
  std::vector<RequireAlternative> alternatives;
  std::string text;  // the value as written

  // The first invalid term in written order, or nullptr: what a person who
  // writes a requirement (a policy catalog entry) is told to fix. Whether it
  // matters on a node depends on whether evaluation reaches it there.
  [[nodiscard]] const RequireTerm* first_invalid() const;
};

// Every requirement of one container (ANDed).
struct RequirementSet {
  std::vector<Requirement> requirements;
  [[nodiscard]] bool empty() const { return requirements.empty(); }
  // The values joined by "; " in variable order, for reports.
  [[nodiscard]] std::string str() const;
};

// Splits one variable's value into groups and terms. Never fails: a term
// the toolkit would call an invalid expression (an unknown key or operator,
// a missing key or value, brand with an ordering operator, a version with
// anything but digits and dots, not starting with a digit, or with a part
// at or above 2^64-1) is kept with RequireTerm::error set.
[[nodiscard]] Requirement parse_requirement(std::string_view variable, std::string_view text);

// What the toolkit compares against on a node. Unknown facts are nullopt.
struct DeviceFacts {
  std::optional<DriverVersion> driver;
  std::optional<CudaVersion> max_cuda;  // the driver's CUDA version (nvidia-smi)
  std::optional<ComputeCapability> cc;
  std::optional<std::string> brand;  // NVML brand, lower-case: "tesla", "nvidia", "geforce"
  // max_cuda is only a floor (GpuFacts::max_cuda_floor): a cuda term is
  // decided only where every CUDA at or above it decides it the same way.
  bool max_cuda_floor = false;
};

enum class Tristate : unsigned char { yes, no, unknown };

struct RequirementResult {
  Tristate satisfied = Tristate::yes;
  // When not satisfied: the first variable (in set order) that fails on the
  // node, and either
  //  - `invalid`: the invalid term evaluation reaches there (the toolkit's
  //    "requirement error: invalid expression"), or
  //  - `condition`: the toolkit's wording of the failure, "unsatisfied
  //    condition: " and the value's text up to its first space (its first
  //    group, empty when the value starts with a space), followed by ",
  //    please update your driver to a newer version, or use an earlier cuda
  //    container" when that text starts with "cuda>=" (case-sensitive, as
  //    the toolkit).
  // When unknown: `variable` names the first variable left undecided;
  // `condition` and `invalid` are empty.
  std::string variable;
  std::string condition;
  const RequireTerm* invalid = nullptr;  // points into the evaluated set
};

[[nodiscard]] RequirementResult evaluate_requirements(const RequirementSet& set,
                                                      const DeviceFacts& device);

}  // namespace cudagate
