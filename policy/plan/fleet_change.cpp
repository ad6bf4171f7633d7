// Applying rollout changes to node and workload lists.
#include "policy/plan/fleet_change.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "policy/image/image_ref.h"
#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::lower;

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto at = text.find(sep, start);
    out.emplace_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

void put(KeyValues& labels, std::string_view key, std::string value) {
  const auto it =
      std::lower_bound(labels.begin(), labels.end(), key,
                       [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it != labels.end() && it->first == key) {
    it->second = std::move(value);
  } else {
    labels.emplace(it, std::string(key), std::move(value));
  }
}

void drop_label(KeyValues& labels, std::string_view key) {
  std::erase_if(labels, [&](const auto& entry) { return entry.first == key; });
}

bool has(const Node& node, std::string_view key) {
  return node.label(key) != nullptr;
}

}  // namespace

Expected<DriverChange> DriverChange::parse(std::string_view text) {
  const auto eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error{quote(text), "expected SELECTOR=VERSION, such as pool=t4=570.124.06"};
  }
  const std::string_view version = text.substr(eq + 1);
  auto driver = DriverVersion::parse(version);
  if (!driver) {
    return Error{quote(text), "expected a driver version like 570.124.06 after the last '=', got " +
                                  quote(version)};
  }
  auto selector = LabelSelector::parse(text.substr(0, eq));
  if (!selector) return selector.error().within(quote(text));
  return DriverChange{std::move(*selector), std::move(*driver), std::string(text)};
}

Expected<ImageChange> ImageChange::parse(std::string_view text) {
  const auto eq = text.find('=');
  const std::string where = quote(text);
  if (eq == std::string_view::npos) {
    return Error{where, "expected [NAMESPACE/]KIND/NAME[:CONTAINER]=IMAGE"};
  }
  ImageChange change;
  change.text = std::string(text);
  change.image = std::string(text.substr(eq + 1));
  if (change.image.empty()) return Error{where, "expected an image after '='"};
  if (auto ref = ImageRef::parse(change.image); !ref) return ref.error().within(where);
  std::vector<std::string> parts = split(text.substr(0, eq), '/');
  if (parts.size() != 2 && parts.size() != 3) {
    return Error{where,
                 "expected [NAMESPACE/]KIND/NAME[:CONTAINER] before '=', such as "
                 "ml/Deployment/trainer:main"};
  }
  if (parts.size() == 3) change.namespace_ = parts[0];
  change.kind = parts[parts.size() - 2];
  std::string name = parts.back();
  if (const auto colon = name.find(':'); colon != std::string::npos) {
    change.container = name.substr(colon + 1);
    name.resize(colon);
    if (change.container.empty()) return Error{where, "expected a container name after ':'"};
  }
  change.name = std::move(name);
  if (change.kind.empty() || change.name.empty() ||
      (change.namespace_ && change.namespace_->empty())) {
    return Error{where, "expected [NAMESPACE/]KIND/NAME[:CONTAINER], none of them empty"};
  }
  return change;
}

void set_driver(Node& node, const DriverVersion& driver, const CompatDb& db) {
  std::vector<std::string> parts = split(driver.str(), '.');
  parts.resize(3);  // a two-part version has an empty revision, as GFD writes it
  const bool gfd = has(node, "nvidia.com/cuda.driver-version.full") ||
                   has(node, "nvidia.com/cuda.driver-version.major");
  const bool gfd_old = has(node, "nvidia.com/cuda.driver.major");
  const bool own = has(node, "cudagate.io/driver-version");
  if (gfd || (!gfd_old && !own)) {
    put(node.labels, "nvidia.com/cuda.driver-version.full", driver.str());
    put(node.labels, "nvidia.com/cuda.driver-version.major", parts[0]);
    put(node.labels, "nvidia.com/cuda.driver-version.minor", parts[1]);
    put(node.labels, "nvidia.com/cuda.driver-version.revision", parts[2]);
  }
  if (gfd_old) {
    put(node.labels, "nvidia.com/cuda.driver.major", parts[0]);
    put(node.labels, "nvidia.com/cuda.driver.minor", parts[1]);
    put(node.labels, "nvidia.com/cuda.driver.rev", parts[2]);
  }
  if (own) put(node.labels, "cudagate.io/driver-version", driver.str());

  const std::optional<CudaVersion> cuda = db.max_cuda_for(driver);
  const std::string major = cuda ? std::to_string(cuda->major()) : std::string();
  const std::string minor = cuda ? std::to_string(cuda->minor()) : std::string();
  const bool runtime = has(node, "nvidia.com/cuda.runtime-version.full") ||
                       has(node, "nvidia.com/cuda.runtime-version.major");
  const bool runtime_old = has(node, "nvidia.com/cuda.runtime.major");
  for (const char* key :
       {"nvidia.com/cuda.runtime-version.full", "nvidia.com/cuda.runtime-version.major",
        "nvidia.com/cuda.runtime-version.minor", "nvidia.com/cuda.runtime.major",
        "nvidia.com/cuda.runtime.minor"}) {
    drop_label(node.labels, key);
  }
  // For a branch newer than the matrix knows, what the driver will report
  // is unknown: without runtime labels the node's facts carry the matrix's
  // floor, as a node of that driver without GFD would.
  if (!cuda || db.branch_beyond_known(driver)) return;
  if (runtime) {
    put(node.labels, "nvidia.com/cuda.runtime-version.full", major + "." + minor);
    put(node.labels, "nvidia.com/cuda.runtime-version.major", major);
    put(node.labels, "nvidia.com/cuda.runtime-version.minor", minor);
  }
  if (runtime_old) {
    put(node.labels, "nvidia.com/cuda.runtime.major", major);
    put(node.labels, "nvidia.com/cuda.runtime.minor", minor);
  }
}

Expected<std::vector<Node>> apply_fleet_changes(const std::vector<Node>& nodes,
                                                const FleetChanges& changes, const CompatDb& db) {
  std::vector<bool> removed(nodes.size(), false);
  for (const auto& [selector, text] : changes.removals) {
    bool any = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (selector.matches(nodes[i].labels)) removed[i] = any = true;
    }
    if (!any) return Error{"--remove-nodes " + quote(text), "selects no node"};
  }
  // Node -> the change that sets its driver.
  std::vector<const DriverChange*> driver_of(nodes.size(), nullptr);
  for (const DriverChange& change : changes.drivers) {
    bool any = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!change.selector.matches(nodes[i].labels)) continue;
      any = true;
      const DriverChange* before = driver_of[i];
      if (before != nullptr && !(before->driver == change.driver)) {
        return Error{"--set-driver " + quote(change.text),
                     "node " + quote(nodes[i].name) + " is also set to " + before->driver.str() +
                         " by --set-driver " + quote(before->text)};
      }
      driver_of[i] = &change;
    }
    if (!any) return Error{"--set-driver " + quote(change.text), "selects no node"};
  }
  std::vector<Node> out;
  out.reserve(nodes.size() + changes.additions.size());
  std::set<std::string, std::less<>> names;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (removed[i]) continue;
    Node node = nodes[i];
    if (driver_of[i] != nullptr) set_driver(node, driver_of[i]->driver, db);
    names.insert(node.name);
    out.push_back(std::move(node));
  }
  for (const Node& node : changes.additions) {
    if (!names.insert(node.name).second) {
      return Error{"--add-nodes", "node " + quote(node.name) +
                                      " is already in the inventory; remove it with "
                                      "--remove-nodes to replace it"};
    }
    out.push_back(node);
  }
  return out;
}

Expected<std::vector<Workload>> apply_image_changes(const std::vector<Workload>& workloads,
                                                    const std::vector<ImageChange>& changes) {
  std::vector<Workload> out = workloads;
  for (const ImageChange& change : changes) {
    const std::string where = "--set-image " + quote(change.text);
    const std::string kind = lower(change.kind);
    Workload* found = nullptr;
    for (Workload& w : out) {
      const ResourceRef& r = w.resource;
      if (lower(r.kind) != kind || r.name != change.name) continue;
      if (change.namespace_ && r.namespace_ != *change.namespace_) continue;
      if (found != nullptr) {
        return Error{where, "matches " + change.kind + " " + change.name + " in namespaces " +
                                quote(found->resource.namespace_) + " and " + quote(r.namespace_) +
                                ": name the namespace"};
      }
      found = &w;
    }
    if (found == nullptr) return Error{where, "matches no workload of the inputs"};
    std::vector<ContainerSpec*> targets;
    std::string names;
    for (ContainerSpec& c : found->spec.containers) {
      if (!change.container.empty() ? c.name == change.container : !c.init) targets.push_back(&c);
      if (!c.init) names += (names.empty() ? "" : ", ") + c.name;
    }
    if (targets.empty()) {
      return Error{where,
                   "has no container " + quote(change.container) + " (containers: " + names + ")"};
    }
    if (targets.size() > 1) {
      return Error{where, "the workload has several containers (" + names +
                              "): name one, as KIND/NAME:CONTAINER"};
    }
    targets.front()->image = change.image;
  }
  return out;
}

}  // namespace cudagate
