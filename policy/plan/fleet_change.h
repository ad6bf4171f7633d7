#pragma once
// The changes a rollout plan is asked about, as values, and their effect on
// a node list and a workload list: a new driver on the nodes a selector
// picks, nodes removed, nodes added, a container's image replaced. Pure:
// applying a change reads and writes nothing but its arguments.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "policy/objects/label_selector.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "types/expected.h"
#include "types/version.h"

namespace cudagate {

// `SELECTOR=VERSION` (`pool=t4=570.124.06`, `gpu in (a,b)=580.65.06`): the
// version is what follows the last '='.
struct DriverChange {
  LabelSelector selector;
  DriverVersion driver;
  std::string text;  // as given
  [[nodiscard]] static Expected<DriverChange> parse(std::string_view text);
};

// `[NAMESPACE/]KIND/NAME[:CONTAINER]=IMAGE` (`ml/Deployment/trainer:main=
// nvcr.io/nvidia/pytorch:24.05-py3`). KIND is matched without regard to
// case; without NAMESPACE the workload of that kind and name must be the
// only one; without CONTAINER it must have one container (init containers
// aside).
struct ImageChange {
  std::optional<std::string> namespace_;
  std::string kind;
  std::string name;
  std::string container;  // "" when not given
  std::string image;
  std::string text;  // as given
  [[nodiscard]] static Expected<ImageChange> parse(std::string_view text);
};

struct FleetChanges {
  std::vector<DriverChange> drivers;
  std::vector<std::pair<LabelSelector, std::string>> removals;  // selector, text as given
  std::vector<Node> additions;
};

// The labels of `node` rewritten for driver `driver`, in every scheme
// cudagate reads (docs/contract.md §2.3) that the node carries: GFD's
// cuda.driver-version.{full,major,minor,revision}, the deprecated
// cuda.driver.{major,minor,rev}, cudagate.io/driver-version; and the
// maximum CUDA the node reports (cuda.runtime-version.{full,major,minor},
// cuda.runtime.{major,minor}) as the matrix gives it for that driver, as
// GPU Feature Discovery would relabel the node (removed when the matrix
// does not know the branch, so that the reader derives nothing stale). A
// node with no driver label gets GFD's current ones.
void set_driver(Node& node, const DriverVersion& driver, const CompatDb& db);

// The fleet after `changes`: the nodes that a removal selects are dropped,
// the driver changes applied to the nodes (of `nodes`) each selects, then
// the additions appended. Selectors apply to `nodes` only, never to the
// added nodes. Errors: a selector that selects no node, a node that two
// driver changes set to different versions, an added node whose name is
// taken by a node that stays.
Expected<std::vector<Node>> apply_fleet_changes(const std::vector<Node>& nodes,
                                                const FleetChanges& changes, const CompatDb& db);

// `workloads` with each image change applied. Errors: a change that
// matches no workload, several workloads or no container.
Expected<std::vector<Workload>> apply_image_changes(const std::vector<Workload>& workloads,
                                                    const std::vector<ImageChange>& changes);

}  // namespace cudagate
