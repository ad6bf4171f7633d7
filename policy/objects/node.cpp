// Reading node lists (a Node, a NodeList or a List, JSON or YAML) into Nodes, and deriving each
// node's GPU facts from its labels, label scheme by label scheme in order of precedence.
#include "policy/objects/node.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "policy/objects/document.h"
#include "policy/objects/dra.h"
#include "policy/objects/json_view.h"
#include "policy/objects/node_pool.h"
#include "policy/objects/node_reader.h"
#include "policy/objects/pod.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using nlohmann::json;
std::string join(std::string_view outer, std::string_view inner) {
  if (outer.empty()) return std::string(inner);
  if (inner.empty()) return std::string(outer);
  return std::string(outer) + ": " + std::string(inner);
}

bool ends_with_list(std::string_view kind) {
  return kind.size() >= 4 && kind.substr(kind.size() - 4) == "List";
}

}  // namespace

const std::string* Node::label(std::string_view key) const {
  return find_value(labels, key);
}

bool tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";
}

const DeviceAttribute* DeviceKind::attribute(std::string_view name) const {
  const auto it =
      std::lower_bound(attributes.begin(), attributes.end(), name,
                       [](const DeviceAttribute& a, std::string_view key) { return a.name < key; });
  return it != attributes.end() && it->name == name ? &*it : nullptr;
}

Expected<Node> node_from_json(const json& object, std::string_view where) {
  return node_from_view(NlohmannView(object), where);
}

Expected<std::vector<Node>> parse_nodes(std::string_view text, std::string_view source,
                                        const CompatDb* db) {
  auto docs = parse_source_documents(text, source);
  if (!docs) return docs.error();
  if (docs->documents.empty()) {
    return Error{std::string(source), "no nodes: expected a Node, a NodeList or a List of Nodes"};
  }
  std::vector<Node> out;
  std::vector<ResourceSlice> slices;
  // NodePools and where each was read: their nodes are made once every
  // Node is read, named with how many of them are the pool's.
  std::vector<std::pair<NodePool, std::string>> pools;
  std::unordered_map<std::string, std::string> seen;  // name -> where it was read

  auto keep = [&](Node node, const std::string& where) -> std::optional<Error> {
    const auto [it, inserted] = seen.emplace(node.name, where);
    if (!inserted) {
      return Error{join(where, "metadata.name"),
                   (node.pool != nullptr ? "" : "node ") + quote(node.name) +
                       " appears twice (first in " +
                       (it->second.empty() ? std::string("the same list") : it->second) + ")"};
    }
    out.push_back(std::move(node));
    return std::nullopt;
  };
  auto add = [&](const json& object, const std::string& where) -> std::optional<Error> {
    const auto kind = object.is_object() ? object.find("kind") : object.end();
    if (kind != object.end() && *kind == "ResourceSlice") {
      auto slice = resource_slice_from_json(object, where);
      if (!slice) return slice.error();
      slices.push_back(std::move(*slice));
      return std::nullopt;
    }
    if (kind != object.end() && *kind == "NodePool") {
      if (db == nullptr) return Error{where, "a NodePool is not expected here"};
      auto pool = node_pool_from_json(object, where);
      if (!pool) return pool.error();
      pools.emplace_back(std::move(*pool), where);
      return std::nullopt;
    }
    auto node = node_from_json(object, where);
    if (!node) return node.error();
    return keep(std::move(*node), where);
  };
  auto add_items = [&](const json& items, const std::string& where,
                       const std::string& prefix) -> std::optional<Error> {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (auto e = add(items[i], join(where, index_path(prefix, i)))) return e;
    }
    return std::nullopt;
  };

  const bool several = docs->count > 1;
  for (const auto& doc : docs->documents) {
    const std::string where =
        several ? join(source, "document " + std::to_string(doc.index)) : std::string(source);
    const json& value = doc.value;
    if (value.is_array()) {
      if (auto e = add_items(value, where, "")) return *e;
      continue;
    }
    if (!value.is_object()) {
      return Error{where,
                   "expected a Node, a NodeList or a List, got " + std::string(value.type_name())};
    }
    auto kind = string_field(value, "kind", "", false);
    if (!kind) return kind.error().within(where);
    if (*kind == "Node" || *kind == "ResourceSlice" || *kind == "NodePool" ||
        (kind->empty() && value.contains("metadata") && !value.contains("items"))) {
      if (auto e = add(value, where)) return *e;
    } else if (ends_with_list(*kind) || (kind->empty() && value.contains("items"))) {
      auto items = array_field(value, "items", "");
      if (!items) return items.error().within(where);
      if (*items != nullptr) {
        if (auto e = add_items(**items, where, "items")) return *e;
      }
    } else {
      return Error{join(where, "kind"),
                   "expected a Node, a ResourceSlice, a NodePool, a NodeList or a List, got " +
                       quote(*kind)};
    }
  }
  const std::size_t cluster_nodes = out.size();
  for (auto& [pool, where] : pools) {
    const std::size_t now =
        pool_member_count(pool, std::span<const Node>(out.data(), cluster_nodes));
    for (Node& node : pool_nodes(std::make_shared<const NodePool>(std::move(pool)), *db, now)) {
      if (auto e = keep(std::move(node), where)) return *e;
    }
  }
  if (!slices.empty()) {
    // Slices of nodes the text does not hold describe nodes that are gone.
    auto kinds = device_kinds_by_node(slices);
    for (Node& node : out) {
      if (auto it = kinds.find(node.name); it != kinds.end()) {
        attach_devices(node, std::move(it->second));
      }
    }
  }
  return out;
}

namespace {

class Labels {
 public:
  explicit Labels(const Node& node) : node_(node) {}

  [[nodiscard]] const std::string* get(std::string_view key) const { return node_.label(key); }

  // "major.minor[.third]" from separate labels; nullopt when major or minor is absent.
  [[nodiscard]] std::optional<std::string> joined(std::string_view major, std::string_view minor,
                                                  std::string_view third = {}) const {
    const std::string* ma = get(major);
    const std::string* mi = get(minor);
    if (ma == nullptr || mi == nullptr) return std::nullopt;
    std::string out = *ma + "." + *mi;
    if (!third.empty()) {
      // GFD writes an empty revision for two-part driver versions.
      if (const std::string* th = get(third); th != nullptr && !th->empty()) out += "." + *th;
    }
    return out;
  }

 private:
  const Node& node_;
};

template <class T>
std::optional<T> parse_opt(const std::string* text) {
  if (text == nullptr) return std::nullopt;
  auto parsed = T::parse(*text);
  if (!parsed) return std::nullopt;
  return *parsed;
}

template <class T>
std::optional<T> parse_opt(const std::optional<std::string>& text) {
  return text ? parse_opt<T>(&*text) : std::nullopt;
}

// A DRA version attribute of NVIDIA's driver, by its unqualified name.
const DeviceAttribute* nvidia_attribute(const DeviceKind& kind, std::string_view name) {
  std::string qualified(kNvidiaDraDriver);
  qualified += '/';
  qualified += name;
  return kind.attribute(qualified);
}

// A driver version written as a semantic version, in the form nvidia-smi
// prints it: the third part has two digits (580.105.8 is 580.105.08).
std::optional<DriverVersion> driver_from_semver(std::string_view text) {
  auto parsed = DriverVersion::parse(text);
  if (!parsed) return std::nullopt;
  if (parsed->part_count() < 3 || parsed->part(2) >= 10) return *parsed;
  const std::string padded = std::to_string(parsed->part(0)) + "." +
                             std::to_string(parsed->part(1)) + ".0" +
                             std::to_string(parsed->part(2));
  auto again = DriverVersion::parse(padded);
  return again ? std::optional<DriverVersion>(*again) : std::optional<DriverVersion>(*parsed);
}

// A compute capability written as a semantic version: 9.0.0 is 9.0.
std::optional<ComputeCapability> cc_from_semver(std::string_view text) {
  const std::size_t first = text.find('.');
  if (first != std::string_view::npos) {
    const std::size_t second = text.find('.', first + 1);
    if (second != std::string_view::npos) {
      if (text.find_first_not_of('0', second + 1) != std::string_view::npos) return std::nullopt;
      text = text.substr(0, second);
    }
  }
  auto parsed = ComputeCapability::parse(text);
  return parsed ? std::optional<ComputeCapability>(*parsed) : std::nullopt;
}

// Without a CUDA version reported by the node, the matrix's for the
// driver's branch; for a branch newer than every one it knows, a floor.
void table_max_cuda(const CompatDb& db, GpuFacts& f) {
  if (f.max_cuda || !f.driver) return;
  f.max_cuda = db.max_cuda_for(*f.driver);
  f.max_cuda_floor = f.max_cuda && db.branch_beyond_known(*f.driver);
}

// A driver newer than the last branch that supports the node's GPU cannot
// be running on it: the labels disagree (a stale label, a wrong product).
void check_consistency(const CompatDb& db, GpuFacts& f) {
  if (!f.driver || !f.cc) return;
  const LastDriverBranch* last = db.last_driver_branch(*f.cc);
  if (last == nullptr || f.driver->branch() <= last->last_branch) return;
  f.inconsistency = "driver " + f.driver->str() + " is newer than R" +
                    std::to_string(last->last_branch) + ", the last driver branch for " +
                    last->family + " GPUs (compute capability " + f.cc->str() +
                    "): the node's labels cannot all be true";
}

}  // namespace

std::string max_cuda_text(const GpuFacts& facts) {
  if (!facts.max_cuda) return "unknown";
  if (facts.max_cuda_floor) return "at least " + facts.max_cuda->str() + " (inferred)";
  return facts.max_cuda->str();
}

std::vector<std::pair<std::string, std::string>> matrix_gaps(const GpuFacts& facts,
                                                             const CompatDb& db) {
  std::vector<std::pair<std::string, std::string>> gaps;
  if (facts.driver && db.branch_beyond_known(*facts.driver)) {
    gaps.emplace_back("driver_branch", std::to_string(facts.driver->branch()));
  }
  if (!facts.product.empty() && db.product_by_label(facts.product) == nullptr) {
    gaps.emplace_back("product", facts.product);
  }
  if (facts.cc && db.capability_beyond_known(*facts.cc)) {
    gaps.emplace_back("compute_capability", facts.cc->str());
  }
  return gaps;
}

GpuFacts device_gpu_facts(const DeviceKind& kind, const CompatDb& db) {
  GpuFacts f;
  f.has_gpu = kind.count > 0;
  if (const DeviceAttribute* a = nvidia_attribute(kind, "driverVersion")) {
    f.driver = driver_from_semver(a->value);
  }
  if (f.driver) f.driver_source = NodeFactSource::dra;
  if (const DeviceAttribute* a = nvidia_attribute(kind, "cudaDriverVersion")) {
    if (auto cuda = CudaVersion::parse(a->value)) f.max_cuda = *cuda;
  }
  table_max_cuda(db, f);
  const Product* product = nullptr;
  if (const DeviceAttribute* a = nvidia_attribute(kind, "productName")) {
    f.product = a->value;
    product = db.product_by_label(a->value);
  }
  if (const DeviceAttribute* a = nvidia_attribute(kind, "cudaComputeCapability")) {
    f.cc = cc_from_semver(a->value);
  }
  if (f.cc) {
    f.cc_source = NodeFactSource::dra;
  } else if (product != nullptr) {
    f.cc = product->cc;
    f.cc_source = NodeFactSource::product;
  }
  if (product != nullptr) {
    f.family = product->family;
    if (!product->brand.empty()) f.brand = product->brand;
  }
  if (f.family.empty()) {
    if (const DeviceAttribute* a = nvidia_attribute(kind, "architecture")) f.family = a->value;
  }
  check_consistency(db, f);
  return f;
}

namespace {

// The product a pool declares (the policy's gpuProduct, a matrix or cloud
// accelerator name) or that its GPU kind names (an instance type, a
// provider's GPU name), when the matrix knows it. A GPU name that stands for
// several products (a100: 40 GB and 80 GB) gives the first when they all
// have one compute capability, else none.
const Product* pool_product(const PoolNodeInfo& info, const CompatDb& db) {
  const NodePool& pool = *info.pool;
  if (!pool.product.empty()) {
    if (const Product* p = db.product_by_label(pool.product)) return p;
    for (const CloudAccelerator& row : db.cloud_accelerators) {
      if (row.value == pool.product) return db.product_by_cloud_label(row.label, row.value);
    }
    return nullptr;
  }
  if (info.kind_value.empty()) return nullptr;
  if (info.kind_key == "node.kubernetes.io/instance-type") {
    const InstanceType* type = db.instance_type(info.kind_value);
    return type != nullptr ? db.product_by_label(type->product) : nullptr;
  }
  const std::vector<const Product*> products =
      db.products_by_instance_label(info.kind_key, info.kind_value);
  if (products.empty()) return nullptr;
  for (const Product* p : products) {
    if (!(p->cc == products.front()->cc)) return nullptr;
  }
  return products.front();
}

// The first kind's facts fill in what labels leave unknown.
void add_device_facts(const Node& node, const CompatDb& db, GpuFacts& f) {
  for (const DeviceKind& kind : node.devices) {
    if (kind.driver == kNvidiaDraDriver && kind.count > 0) f.devices.push_back(kind);
  }
  if (f.devices.empty()) return;
  f.has_gpu = true;
  const GpuFacts first = device_gpu_facts(f.devices.front(), db);
  if (!f.driver && first.driver) {
    f.driver = first.driver;
    f.driver_source = first.driver_source;
  }
  if (!f.max_cuda) {
    f.max_cuda = first.max_cuda;
    f.max_cuda_floor = first.max_cuda_floor;
  }
  if (!f.cc && first.cc) {
    f.cc = first.cc;
    f.cc_source = first.cc_source;
  }
  if (f.product.empty()) f.product = first.product;
  if (f.family.empty()) f.family = first.family;
  if (!f.brand) f.brand = first.brand;
}

}  // namespace

GpuFacts derive_gpu_facts(const Node& node, const CompatDb& db) {
  GpuFacts f;
  for (const auto& [resource, amount] : node.allocatable) {
    if (amount > 0 && (resource == "nvidia.com/gpu" || resource.rfind("nvidia.com/mig-", 0) == 0)) {
      f.has_gpu = true;
    }
  }
  const Labels labels(node);

  // Driver: GFD's labels, the deprecated GFD ones, then cudagate's own. A
  // malformed value (Tegra reports "unknown.unknown.unknown") counts as absent.
  f.driver = parse_opt<DriverVersion>(labels.get("nvidia.com/cuda.driver-version.full"));
  if (!f.driver) {
    f.driver = parse_opt<DriverVersion>(labels.joined("nvidia.com/cuda.driver-version.major",
                                                      "nvidia.com/cuda.driver-version.minor",
                                                      "nvidia.com/cuda.driver-version.revision"));
  }
  if (!f.driver) {
    f.driver = parse_opt<DriverVersion>(labels.joined("nvidia.com/cuda.driver.major",
                                                      "nvidia.com/cuda.driver.minor",
                                                      "nvidia.com/cuda.driver.rev"));
  }
  if (f.driver) {
    f.driver_source = NodeFactSource::gfd;
  } else if ((f.driver = parse_opt<DriverVersion>(labels.get("cudagate.io/driver-version")))) {
    f.driver_source = NodeFactSource::cudagate;
  } else if (node.pool != nullptr &&
             (f.driver = parse_opt<DriverVersion>(&node.pool->pool->driver))) {
    f.driver_source = NodeFactSource::pool;
  }

  // Maximum CUDA: what the driver reports through GFD, else the compat-db's
  // answer for the driver's branch.
  f.max_cuda = parse_opt<CudaVersion>(labels.get("nvidia.com/cuda.runtime-version.full"));
  if (!f.max_cuda) {
    f.max_cuda = parse_opt<CudaVersion>(labels.joined("nvidia.com/cuda.runtime-version.major",
                                                      "nvidia.com/cuda.runtime-version.minor"));
  }
  if (!f.max_cuda) {
    f.max_cuda = parse_opt<CudaVersion>(
        labels.joined("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"));
  }
  table_max_cuda(db, f);

  // The product: cloud accelerator labels, then the product name labels.
  const Product* product = nullptr;
  NodeFactSource product_source = NodeFactSource::none;
  for (std::size_t i = 0; i < db.cloud_accelerators.size() && product == nullptr; ++i) {
    const std::string& key = db.cloud_accelerators[i].label;
    bool asked = false;  // each label key once, however many values the db lists
    for (std::size_t k = 0; k < i && !asked; ++k) asked = db.cloud_accelerators[k].label == key;
    if (asked) continue;
    if (const std::string* value = labels.get(key)) {
      product = db.product_by_cloud_label(key, *value);
      if (product != nullptr) product_source = NodeFactSource::cloud;
    }
  }
  const std::string* product_label = labels.get("nvidia.com/gpu.product");
  if (product_label == nullptr) product_label = labels.get("cudagate.io/gpu-product");
  if (product == nullptr) {
    for (const char* key : {"nvidia.com/gpu.product", "cudagate.io/gpu-product"}) {
      const std::string* value = labels.get(key);
      if (value == nullptr) continue;
      product = db.product_by_label(*value);
      if (product != nullptr) {
        product_source = NodeFactSource::product;
        break;
      }
    }
  }
  if (product == nullptr && node.pool != nullptr) {
    product = pool_product(*node.pool, db);
    if (product != nullptr) product_source = NodeFactSource::pool;
  }
  if (product_label != nullptr) {
    f.product = *product_label;
  } else if (product != nullptr) {
    f.product = product->name;
  }

  // Compute capability: GFD, cudagate's label, then the product.
  f.cc = parse_opt<ComputeCapability>(
      labels.joined("nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor"));
  if (f.cc) {
    f.cc_source = NodeFactSource::gfd;
  } else if ((f.cc = parse_opt<ComputeCapability>(labels.get("cudagate.io/compute-capability")))) {
    f.cc_source = NodeFactSource::cudagate;
  } else if (product != nullptr) {
    f.cc = product->cc;
    f.cc_source = product_source;
  }

  // GFD writes "undefined" for generations it has no name for.
  if (const std::string* family = labels.get("nvidia.com/gpu.family");
      family != nullptr && *family != "undefined") {
    f.family = *family;
  } else if (product != nullptr) {
    f.family = product->family;
  }
  if (product != nullptr && !product->brand.empty()) f.brand = product->brand;
  add_device_facts(node, db, f);
  check_consistency(db, f);
  return f;
}

bool is_gpu_resource(std::string_view name, const std::vector<std::string>& gpu_resources) {
  if (name.rfind("nvidia.com/mig-", 0) == 0) return true;
  return std::find(gpu_resources.begin(), gpu_resources.end(), name) != gpu_resources.end();
}

}  // namespace cudagate
