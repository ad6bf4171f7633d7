#pragma once
// What a cluster reports about a pod after the fact, as `kubectl get pod -o
// yaml|json` and `kubectl get events -o yaml|json` print it: the node it
// was bound to, each container's state and last termination, and the
// events about it (core/v1 Events with involvedObject, and events.k8s.io/v1
// Events with regarding and note).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"

namespace cudagate {

struct ContainerReport {
  std::string name;
  bool init = false;
  std::string image;
  std::string state;         // "waiting", "running", "terminated", "" when none
  std::string reason;        // of the current state: CrashLoopBackOff, RunContainerError, ...
  std::string message;       // of the current state
  std::string last_reason;   // lastState.terminated.reason: Error, StartError, OOMKilled
  std::string last_message;  // lastState.terminated.message
  std::int64_t last_exit_code = 0;
  std::int64_t restarts = 0;
};

struct PodReport {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string node_name;  // spec.nodeName; "" when not bound
  std::string phase;
  std::vector<ContainerReport> containers;  // init containers first
};

struct PodEvent {
  std::string type;    // Normal, Warning
  std::string reason;  // Failed, FailedCreatePodSandBox, BackOff
  std::string message;
  std::string source;  // kubelet, or the reporting controller
  std::int64_t count = 1;
  std::string where;  // "events.yaml: items[3]"
};

// The report of a Pod object (`where` names it in errors). Fields of the
// wrong type are errors naming the field; absent ones are empty.
Expected<PodReport> pod_report_from_json(const nlohmann::json& pod, std::string_view where);

// The events of a `kubectl get events` output (`text`, read from `source`)
// that are about Pod `pod`: same name and namespace (and uid, when both
// carry one). Objects of other kinds in the list are ignored.
Expected<std::vector<PodEvent>> read_pod_events(std::string_view text, std::string_view source,
                                                const PodReport& pod);
// The same for one parsed document (an EventList, a List, an array or one
// Event) read at `where`, added to `out`.
std::optional<Error> read_pod_events_document(const nlohmann::json& document,
                                              const std::string& where, const PodReport& pod,
                                              std::vector<PodEvent>& out);

}  // namespace cudagate
