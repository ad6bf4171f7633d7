// Feeds arbitrary text to the NVIDIA_REQUIRE_* parser and evaluates it
// against a fully known node and an unknown one: a node whose facts are all
// known must get a yes or a no, and a failure must name a condition or the
// invalid term evaluation reached. A node whose CUDA is only a floor (a
// driver branch newer than the matrix knows) may answer yes or no only where
// every CUDA at or above the floor answers the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/image/requirement.h"

namespace {

using namespace cudagate;

void check_result(const RequirementSet& set, const DeviceFacts& device, bool all_known) {
  const RequirementResult r = evaluate_requirements(set, device);
  if (all_known && r.satisfied == Tristate::unknown) __builtin_trap();
  if (r.satisfied == Tristate::no) {
    if (r.variable != "NVIDIA_REQUIRE_FUZZ") __builtin_trap();
    if (r.invalid != nullptr) {
      if (r.invalid->valid() || !r.condition.empty()) __builtin_trap();
    } else if (r.condition.rfind("unsatisfied condition: ", 0) != 0) {
      __builtin_trap();
    }
  }
  if (r.satisfied != Tristate::no && r.invalid != nullptr) __builtin_trap();
  if (r.satisfied == Tristate::yes && (!r.variable.empty() || !r.condition.empty())) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Requirement req = parse_requirement("NVIDIA_REQUIRE_FUZZ", text);
  if (req.text != text) __builtin_trap();
  for (const auto& alt : req.alternatives) {
    if (alt.text.empty() || alt.text.find(' ') != std::string::npos) __builtin_trap();
    for (const auto& term : alt.terms) {
      if (term.text.empty() || term.text.find(',') != std::string::npos) __builtin_trap();
      if (term.valid() && !term.numbers.empty() && term.numbers.back() == 0) __builtin_trap();
    }
  }
  const RequireTerm* invalid = req.first_invalid();
  if (invalid != nullptr && invalid->error.empty()) __builtin_trap();
  RequirementSet set;
  set.requirements.push_back(req);
  // Parsing the same text again must give the same reading.
  const Requirement again = parse_requirement("NVIDIA_REQUIRE_FUZZ", text);
  if (again.alternatives.size() != req.alternatives.size()) __builtin_trap();

  DeviceFacts known;
  known.driver = *DriverVersion::parse("535.129.03");
  known.max_cuda = CudaVersion(12, 2);
  known.cc = ComputeCapability(8, 0);
  known.brand = "tesla";
  check_result(set, known, true);
  check_result(set, DeviceFacts{}, false);
  DeviceFacts partial;
  partial.driver = *DriverVersion::parse("570.86");
  check_result(set, partial, false);

  DeviceFacts floor = known;
  floor.max_cuda_floor = true;
  const Tristate at_floor = evaluate_requirements(set, floor).satisfied;
  if (at_floor != Tristate::unknown) {
    for (const CudaVersion above :
         {CudaVersion(12, 2), CudaVersion(12, 9), CudaVersion(13, 5), CudaVersion(99, 9)}) {
      DeviceFacts concrete = known;
      concrete.max_cuda = above;
      if (evaluate_requirements(set, concrete).satisfied != at_floor) __builtin_trap();
    }
  }
  return 0;
}
