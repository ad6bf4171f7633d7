// The decision's words as records and logs spell them (verdicts, outcomes, metadata sources),
// the owned form of NodeNames, for node lists built by hand rather than by evaluate(), and
// when two decisions are the same.
#include "policy/rules/decision.h"

#include <algorithm>

#include "policy/rules/metadata.h"

namespace cudagate {

NodeNames::NodeNames(std::vector<std::string> names)
    : owned_(std::make_shared<const std::vector<std::string>>(std::move(names))) {
  for (const std::string& name : *owned_) push_back(name);
}

NodeNames::NodeNames(std::initializer_list<std::string_view> names)
    : NodeNames(std::vector<std::string>(names.begin(), names.end())) {}

bool operator==(const NodeNames& a, const NodeNames& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

bool operator==(const NodeNames& a, const std::vector<std::string>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end());
}

bool operator==(const Decision& a, const Decision& b) {
  return a.resource == b.resource && a.verdict == b.verdict && a.reason == b.reason &&
         a.containers == b.containers && a.candidates == b.candidates &&
         a.compatible == b.compatible && a.groups == b.groups &&
         a.unknown_image == b.unknown_image && a.unknown_node == b.unknown_node &&
         a.unknown_claim == b.unknown_claim && a.claims == b.claims &&
         a.device_requests == b.device_requests && a.device_container == b.device_container &&
         a.notes == b.notes;
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::pass:
      return "pass";
    case Verdict::partial:
      return "partial";
    case Verdict::fail:
      return "fail";
    case Verdict::unknown:
      return "unknown";
    case Verdict::no_candidates:
      return "no-candidates";
    case Verdict::skip:
      return "skip";
  }
  return "unknown";
}

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::compatible:
      return "compatible";
    case Outcome::incompatible:
      return "incompatible";
    case Outcome::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(Source source) {
  switch (source) {
    case Source::annotation:
      return "annotation";
    case Source::env:
      return "env";
    case Source::catalog:
      return "catalog";
    case Source::registry:
      return "registry";
    case Source::scan:
      return "scan";
    case Source::inference:
      return "inference";
    case Source::flag:
      return "flag";
    case Source::unknown:
      return "unknown";
  }
  return "unknown";
}

}  // namespace cudagate
