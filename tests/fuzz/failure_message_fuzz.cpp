// Feeds arbitrary text, as a termination message or an event, to the
// failure recogniser and, as a Pod and an event list, to the status
// readers explain uses: recognition never fails, names a rule for each
// failure, reports each kind once and keeps its excerpts short; the
// readers return a report or an error with a place.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "policy/objects/document.h"
#include "policy/objects/pod_status.h"
#include "policy/rules/failure_message.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudagate;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::set<FailureKind> kinds;
  for (const RecognisedFailure& f : recognise_failures(text)) {
    if (rule_info(f.rule).name.empty() || !kinds.insert(f.kind).second) __builtin_trap();
    if (f.excerpt.size() > 303) __builtin_trap();
    if (f.kind == FailureKind::requirement_unsatisfied && f.cuda_needed &&
        f.condition.rfind("cuda", 0) != 0 && f.condition.rfind("CUDA", 0) != 0) {
      if (f.condition.size() < 6) __builtin_trap();
    }
  }
  if (size > 64 * 1024) return 0;
  auto docs = parse_documents(text, "fuzz.yaml");
  if (!docs || docs->empty()) return 0;
  auto pod = pod_report_from_json(docs->front(), "fuzz.yaml");
  if (!pod) {
    if (pod.error().where.rfind("fuzz.yaml", 0) != 0) __builtin_trap();
    return 0;
  }
  auto events = read_pod_events(text, "fuzz.yaml", *pod);
  if (!events && events.error().where.rfind("fuzz.yaml", 0) != 0) __builtin_trap();
  return 0;
}
