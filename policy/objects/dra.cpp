// ResourceSlices, ResourceClaims and ResourceClaimTemplates read into node
// device kinds and pod device requests (their CEL selectors are read by
// policy/objects/dra_selector.cpp).
#include "policy/objects/dra.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "policy/objects/document.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using json = nlohmann::json;

constexpr std::string_view kDraPrefix = "dra:";

std::string join_where(std::string_view where, std::string_view path) {
  if (where.empty()) return std::string(path);
  if (path.empty()) return std::string(where);
  return std::string(where) + ": " + std::string(path);
}

Error at(std::string_view where, std::string_view path, std::string message) {
  return Error{join_where(where, path), std::move(message)};
}

// "resource.k8s.io/v1" -> "v1"; "" when of another group.
std::string_view dra_version(std::string_view api_version) {
  const std::string prefix = std::string(kResourceGroup) + "/";
  if (api_version.substr(0, prefix.size()) != prefix) return {};
  return api_version.substr(prefix.size());
}

std::optional<Error> check_api_version(const json& object, std::string_view where,
                                       std::string_view kind) {
  auto api = string_field(object, "apiVersion", "", false);
  if (!api) return api.error().within(std::string(where));
  if (api->empty() || is_dra_api_version(*api)) return std::nullopt;
  return at(where, "apiVersion",
            "a " + std::string(kind) + " of " + quote(*api) +
                " is not read: cudagate reads resource.k8s.io/v1 (Kubernetes 1.34 and later), "
                "v1beta2 and v1beta1");
}

// "ResourceClaim ml/train-gpu": how messages name the claim a pod refers to.
std::string claim_reference(std::string_view kind, std::string_view ns, std::string_view name) {
  return std::string(kind) + " " + std::string(ns) + "/" + std::string(name);
}

// Names the driver leaves unqualified are in its own domain.
std::string qualified(std::string_view name, std::string_view driver) {
  if (name.find('/') != std::string_view::npos) return std::string(name);
  return std::string(driver) + "/" + std::string(name);
}

Expected<std::vector<DeviceAttribute>> read_attributes(const json& device, std::string_view driver,
                                                       const std::string& path) {
  std::vector<DeviceAttribute> out;
  auto attributes = object_field(device, "attributes", path);
  if (!attributes) return attributes.error();
  if (*attributes == nullptr) return out;
  for (const auto& [name, value] : (*attributes)->items()) {
    const std::string here = field_path(path, "attributes." + name);
    if (!value.is_object() || value.size() != 1) {
      return Error{here, "expected one of string, int, bool or version"};
    }
    // The one member: its key names the type (an iterator, not items(),
    // whose proxy would not outlive this statement).
    const auto member = value.begin();
    const std::string& type = member.key();
    const json& v = member.value();
    DeviceAttribute a;
    a.name = qualified(name, driver);
    if (type == "string" && v.is_string()) {
      a.type = DeviceAttribute::Type::string;
      a.value = v.get<std::string>();
    } else if (type == "version" && v.is_string()) {
      a.type = DeviceAttribute::Type::version;
      a.value = v.get<std::string>();
    } else if (type == "int" && v.is_number_integer()) {
      a.type = DeviceAttribute::Type::integer;
      a.value = std::to_string(v.get<std::int64_t>());
    } else if (type == "bool" && v.is_boolean()) {
      a.type = DeviceAttribute::Type::boolean;
      a.value = v.get<bool>() ? "true" : "false";
    } else {
      return Error{here, "expected one of string, int, bool or version, with a value of that type"};
    }
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(),
            [](const DeviceAttribute& a, const DeviceAttribute& b) { return a.name < b.name; });
  return out;
}

// Attributes that name one device, left out of its kind.
bool names_one_device(std::string_view name) {
  const std::size_t slash = name.rfind('/');
  const std::string_view local = slash == std::string_view::npos ? name : name.substr(slash + 1);
  static constexpr std::array<std::string_view, 8> kPerDevice = {
      "uuid", "parentUUID", "pciBusID", "pcieRoot", "index", "minor", "deviceID", "id"};
  return std::find(kPerDevice.begin(), kPerDevice.end(), local) != kPerDevice.end();
}

}  // namespace

bool is_dra_api_version(std::string_view api_version) {
  const std::string_view v = dra_version(api_version);
  return v == "v1" || v == "v1beta2" || v == "v1beta1";
}

Expected<ResourceSlice> resource_slice_from_json(const json& object, std::string_view where) {
  if (!object.is_object()) return at(where, "", type_error("an object", object));
  if (auto e = check_api_version(object, where, "ResourceSlice")) return *e;
  const bool beta1 = dra_version(object.value("apiVersion", "")) == "v1beta1";
  ResourceSlice out;
  auto metadata = object_field(object, "metadata", "");
  if (!metadata) return metadata.error().within(std::string(where));
  if (*metadata != nullptr) {
    auto name = string_field(**metadata, "name", "metadata", false);
    if (!name) return name.error().within(std::string(where));
    out.name = *name;
  }
  auto spec = object_field(object, "spec", "");
  if (!spec) return spec.error().within(std::string(where));
  if (*spec == nullptr) return at(where, "spec", "is required");
  auto driver = string_field(**spec, "driver", "spec", true);
  if (!driver) return driver.error().within(std::string(where));
  out.driver = *driver;
  auto node_name = string_field(**spec, "nodeName", "spec", false);
  if (!node_name) return node_name.error().within(std::string(where));
  out.node_name = *node_name;
  auto pool = object_field(**spec, "pool", "spec");
  if (!pool) return pool.error().within(std::string(where));
  if (*pool != nullptr) {
    auto pool_name = string_field(**pool, "name", "spec.pool", false);
    if (!pool_name) return pool_name.error().within(std::string(where));
    out.pool = *pool_name;
    if (const auto g = (*pool)->find("generation"); g != (*pool)->end() && !g->is_null()) {
      if (!g->is_number_integer()) {
        return at(where, "spec.pool.generation", type_error("an integer", *g));
      }
      out.pool_generation = g->get<std::int64_t>();
    }
  }
  auto devices = array_field(**spec, "devices", "spec");
  if (!devices) return devices.error().within(std::string(where));
  if (*devices == nullptr) return out;
  for (std::size_t i = 0; i < (*devices)->size(); ++i) {
    const json& item = (**devices)[i];
    const std::string path = index_path("spec.devices", i);
    if (!item.is_object()) return at(where, path, type_error("an object", item));
    SliceDevice device;
    auto name = string_field(item, "name", path, true);
    if (!name) return name.error().within(std::string(where));
    device.name = *name;
    const json* holder = &item;
    std::string attributes_path = path;
    if (beta1) {
      // v1beta1 keeps a device's attributes under `basic`.
      auto basic = object_field(item, "basic", path);
      if (!basic) return basic.error().within(std::string(where));
      if (*basic == nullptr) {
        out.devices.push_back(std::move(device));
        continue;
      }
      holder = *basic;
      attributes_path = field_path(path, "basic");
    }
    auto attributes = read_attributes(*holder, out.driver, attributes_path);
    if (!attributes) return attributes.error().within(std::string(where));
    device.attributes = std::move(*attributes);
    out.devices.push_back(std::move(device));
  }
  return out;
}

std::map<std::string, std::vector<DeviceKind>, std::less<>> device_kinds_by_node(
    const std::vector<ResourceSlice>& slices) {
  // The newest generation of each pool: a driver that republishes a pool
  // writes the new generation's slices before it removes the old ones.
  std::map<std::pair<std::string, std::string>, std::int64_t> newest;
  for (const ResourceSlice& s : slices) {
    auto [it, added] = newest.try_emplace({s.driver, s.pool}, s.pool_generation);
    if (!added) it->second = std::max(it->second, s.pool_generation);
  }
  std::map<std::string, std::vector<DeviceKind>, std::less<>> out;
  for (const ResourceSlice& s : slices) {
    if (s.node_name.empty() || s.driver != kNvidiaDraDriver) continue;
    if (newest.at({s.driver, s.pool}) != s.pool_generation) continue;
    std::vector<DeviceKind>& kinds = out[s.node_name];
    for (const SliceDevice& device : s.devices) {
      DeviceKind kind;
      kind.driver = s.driver;
      kind.count = 1;
      for (const DeviceAttribute& a : device.attributes) {
        if (names_one_device(a.name)) continue;
        if (a.name == qualified("type", s.driver)) kind.type = a.value;
        kind.attributes.push_back(a);
      }
      const auto same = std::find_if(kinds.begin(), kinds.end(), [&](const DeviceKind& k) {
        return k.driver == kind.driver && k.type == kind.type && k.attributes == kind.attributes;
      });
      if (same != kinds.end()) {
        ++same->count;
      } else {
        kinds.push_back(std::move(kind));
      }
    }
  }
  // Largest kinds first, then by attributes, so that a node's facts do not
  // depend on the order of its slices.
  for (auto& [node, kinds] : out) {
    std::sort(kinds.begin(), kinds.end(), [](const DeviceKind& a, const DeviceKind& b) {
      if (a.count != b.count) return a.count > b.count;
      if (a.type != b.type) return a.type < b.type;
      return std::lexicographical_compare(
          a.attributes.begin(), a.attributes.end(), b.attributes.begin(), b.attributes.end(),
          [](const DeviceAttribute& x, const DeviceAttribute& y) {
            return std::tie(x.name, x.value) < std::tie(y.name, y.value);
          });
    });
  }
  return out;
}

std::string dra_resource_name(std::string_view driver, std::string_view type) {
  std::string out(kDraPrefix);
  out += driver;
  out += ':';
  out += type;
  return out;
}

bool is_dra_resource(std::string_view name) {
  return name.substr(0, kDraPrefix.size()) == kDraPrefix;
}

void attach_devices(Node& node, std::vector<DeviceKind> kinds) {
  std::erase_if(node.allocatable, [](const auto& entry) { return is_dra_resource(entry.first); });
  std::map<std::string, std::int64_t> totals;
  for (const DeviceKind& kind : kinds) {
    totals[dra_resource_name(kind.driver, kind.type)] += kind.count;
    totals[dra_resource_name(kind.driver, "*")] += kind.count;
  }
  for (auto& [name, count] : totals) node.allocatable.emplace_back(name, count);
  std::sort(node.allocatable.begin(), node.allocatable.end());
  node.devices = std::move(kinds);
}

ClassDevices class_devices(std::string_view device_class) {
  const std::string driver(kNvidiaDraDriver);
  if (device_class == "gpu.nvidia.com") return {driver, "gpu"};
  if (device_class == "mig.nvidia.com") return {driver, "mig"};
  if (device_class == "vfio.gpu.nvidia.com") return {driver, "vfio"};
  return {driver, "*"};
}

bool is_claim_kind(std::string_view kind) {
  return kind == "ResourceClaim" || kind == "ResourceClaimTemplate";
}

namespace {

Expected<DeviceRequestWay> read_way(const json& item, const std::string& path,
                                    std::string_view where) {
  DeviceRequestWay way;
  auto device_class = string_field(item, "deviceClassName", path, true);
  if (!device_class) return device_class.error().within(std::string(where));
  way.device_class = *device_class;
  auto mode = string_field(item, "allocationMode", path, false);
  if (!mode) return mode.error().within(std::string(where));
  if (*mode == "All") {
    way.all = true;
  } else if (!mode->empty() && *mode != "ExactCount") {
    return at(where, field_path(path, "allocationMode"),
              "expected ExactCount or All, got " + quote(*mode));
  }
  if (const auto c = item.find("count"); c != item.end() && !c->is_null()) {
    if (!c->is_number_integer() || c->get<std::int64_t>() < 1) {
      return at(where, field_path(path, "count"), "expected a count of 1 or more");
    }
    way.count = c->get<std::int64_t>();
  }
  auto selectors = array_field(item, "selectors", path);
  if (!selectors) return selectors.error().within(std::string(where));
  if (*selectors != nullptr) {
    for (std::size_t i = 0; i < (*selectors)->size(); ++i) {
      const json& s = (**selectors)[i];
      const std::string here = index_path(field_path(path, "selectors"), i);
      if (!s.is_object()) return at(where, here, type_error("an object", s));
      auto cel = object_field(s, "cel", here);
      if (!cel) return cel.error().within(std::string(where));
      if (*cel == nullptr) return at(where, here, "expected a cel selector");
      auto expression = string_field(**cel, "expression", field_path(here, "cel"), true);
      if (!expression) return expression.error().within(std::string(where));
      way.selectors.push_back(*expression);
    }
  }
  return way;
}

}  // namespace

Expected<ClaimSpec> claim_from_json(const json& object, std::string_view where) {
  if (!object.is_object()) return at(where, "", type_error("an object", object));
  ClaimSpec out;
  auto kind = string_field(object, "kind", "", true);
  if (!kind) return kind.error().within(std::string(where));
  if (!is_claim_kind(*kind)) {
    return at(where, "kind",
              "expected ResourceClaim or ResourceClaimTemplate, got " + quote(*kind));
  }
  if (auto e = check_api_version(object, where, *kind)) return *e;
  const bool beta1 = dra_version(object.value("apiVersion", "")) == "v1beta1";
  out.resource.api_version = object.value("apiVersion", std::string(kResourceGroup) + "/v1");
  out.resource.kind = *kind;
  auto metadata = object_field(object, "metadata", "");
  if (!metadata) return metadata.error().within(std::string(where));
  if (*metadata != nullptr) {
    auto name = string_field(**metadata, "name", "metadata", false);
    if (!name) return name.error().within(std::string(where));
    out.resource.name = *name;
    auto ns = string_field(**metadata, "namespace", "metadata", false);
    if (!ns) return ns.error().within(std::string(where));
    out.resource.namespace_ = *ns;
  }
  // A template's claim spec is under spec.spec.
  std::string path = "spec";
  auto spec = object_field(object, "spec", "");
  if (!spec) return spec.error().within(std::string(where));
  if (*spec != nullptr && *kind == "ResourceClaimTemplate") {
    spec = object_field(**spec, "spec", "spec");
    if (!spec) return spec.error().within(std::string(where));
    path = "spec.spec";
  }
  if (*spec == nullptr) return out;
  auto devices = object_field(**spec, "devices", path);
  if (!devices) return devices.error().within(std::string(where));
  if (*devices == nullptr) return out;
  path = field_path(path, "devices");
  auto requests = array_field(**devices, "requests", path);
  if (!requests) return requests.error().within(std::string(where));
  if (*requests == nullptr) return out;
  for (std::size_t i = 0; i < (*requests)->size(); ++i) {
    const json& item = (**requests)[i];
    const std::string here = index_path(field_path(path, "requests"), i);
    if (!item.is_object()) return at(where, here, type_error("an object", item));
    DeviceRequest request;
    auto name = string_field(item, "name", here, true);
    if (!name) return name.error().within(std::string(where));
    request.name = *name;
    auto first = array_field(item, "firstAvailable", here);
    if (!first) return first.error().within(std::string(where));
    auto exactly = object_field(item, "exactly", here);
    if (!exactly) return exactly.error().within(std::string(where));
    if (*first != nullptr) {
      for (std::size_t k = 0; k < (*first)->size(); ++k) {
        const json& sub = (**first)[k];
        const std::string sub_path = index_path(field_path(here, "firstAvailable"), k);
        if (!sub.is_object()) return at(where, sub_path, type_error("an object", sub));
        auto way = read_way(sub, sub_path, where);
        if (!way) return way.error();
        request.ways.push_back(std::move(*way));
      }
    } else if (*exactly != nullptr) {
      auto way = read_way(**exactly, field_path(here, "exactly"), where);
      if (!way) return way.error();
      request.ways.push_back(std::move(*way));
    } else if (beta1 || item.contains("deviceClassName")) {
      // v1beta1 writes the one way in the request itself.
      auto way = read_way(item, here, where);
      if (!way) return way.error();
      request.ways.push_back(std::move(*way));
    } else {
      return at(where, here, "expected exactly or firstAvailable");
    }
    out.requests.push_back(std::move(request));
  }
  return out;
}

std::string ClaimCatalog::key(std::string_view kind, std::string_view namespace_,
                              std::string_view name) {
  std::string out(kind);
  out += '\x1f';
  out += namespace_.empty() ? std::string_view("default") : namespace_;
  out += '\x1f';
  out += name;
  return out;
}

void ClaimCatalog::add(ClaimSpec claim) {
  std::string k = key(claim.resource.kind, claim.resource.namespace_, claim.resource.name);
  claims_.insert_or_assign(std::move(k), std::move(claim));
}

bool ClaimCatalog::remove(std::string_view kind, std::string_view namespace_,
                          std::string_view name) {
  const auto it = claims_.find(key(kind, namespace_, name));
  if (it == claims_.end()) return false;
  claims_.erase(it);
  return true;
}

const ClaimSpec* ClaimCatalog::find(std::string_view kind, std::string_view namespace_,
                                    std::string_view name) const {
  const auto it = claims_.find(key(kind, namespace_, name));
  return it == claims_.end() ? nullptr : &it->second;
}

Expected<std::vector<ClaimSpec>> parse_claims(std::string_view text, std::string_view source) {
  auto docs = parse_source_documents(text, source);
  if (!docs) return docs.error();
  std::vector<ClaimSpec> out;
  const bool several = docs->count > 1;
  auto add = [&](const json& object, const std::string& where) -> std::optional<Error> {
    if (!object.is_object()) return std::nullopt;
    const auto kind = object.find("kind");
    if (kind == object.end() || !kind->is_string() || !is_claim_kind(kind->get<std::string>())) {
      return std::nullopt;
    }
    auto claim = claim_from_json(object, where);
    if (!claim) return claim.error();
    claim->object = object;
    out.push_back(std::move(*claim));
    return std::nullopt;
  };
  for (const auto& doc : docs->documents) {
    const std::string where = several
                                  ? std::string(source) + ": document " + std::to_string(doc.index)
                                  : std::string(source);
    const json& value = doc.value;
    const json* items = nullptr;
    if (value.is_array()) {
      items = &value;
    } else if (value.is_object() && value.contains("items") && value["items"].is_array()) {
      items = &value["items"];
    }
    if (items != nullptr) {
      for (std::size_t i = 0; i < items->size(); ++i) {
        if (auto e =
                add((*items)[i], where + ": " + index_path(value.is_array() ? "" : "items", i)))
          return *e;
      }
    } else if (auto e = add(value, where)) {
      return *e;
    }
  }
  return out;
}

ClaimUse claim_use(const PodSpec& spec, std::string_view namespace_, const ClaimCatalog* catalog,
                   const std::vector<std::string>& gpu_classes) {
  ClaimUse out;
  out.gpu.assign(spec.containers.size(), false);
  const std::string ns = namespace_.empty() ? std::string("default") : std::string(namespace_);
  // Per pod claim: its spec, and which of its requests are GPU requests.
  struct Resolved {
    const PodClaim* claim = nullptr;
    const ClaimSpec* spec = nullptr;
    std::set<std::string> gpu_requests;
  };
  std::vector<Resolved> resolved;
  for (const PodClaim& claim : spec.resource_claims) {
    Resolved r{&claim, nullptr, {}};
    const bool from_template = !claim.template_name.empty();
    const std::string kind = from_template ? "ResourceClaimTemplate" : "ResourceClaim";
    const std::string& name = from_template ? claim.template_name : claim.claim_name;
    if (name.empty()) {
      resolved.push_back(std::move(r));
      continue;
    }
    r.spec = catalog != nullptr ? catalog->find(kind, ns, name) : nullptr;
    if (r.spec == nullptr) {
      out.missing.push_back("pod claim " + quote(claim.name) + " names " +
                            claim_reference(kind, ns, name) + ", which cudagate does not know");
      resolved.push_back(std::move(r));
      continue;
    }
    for (const DeviceRequest& request : r.spec->requests) {
      const bool gpu = std::any_of(request.ways.begin(), request.ways.end(), [&](const auto& w) {
        return std::find(gpu_classes.begin(), gpu_classes.end(), w.device_class) !=
               gpu_classes.end();
      });
      if (!gpu) continue;
      r.gpu_requests.insert(request.name);
      // The scheduler takes the first way it can satisfy; cudagate judges
      // the first way of a GPU class (firstAvailable lists preferences).
      const auto way = std::find_if(request.ways.begin(), request.ways.end(), [&](const auto& w) {
        return std::find(gpu_classes.begin(), gpu_classes.end(), w.device_class) !=
               gpu_classes.end();
      });
      ClaimUse::Request use;
      use.label = "claim " + quote(claim.name) + " (" + claim_reference(kind, ns, name) +
                  "), request " + quote(request.name);
      use.devices = class_devices(way->device_class);
      use.count = way->all ? 1 : way->count;
      std::string unread;
      for (const std::string& text : way->selectors) {
        std::string why;
        auto selector = DraSelector::parse(text, &why);
        if (selector) {
          use.selectors.push_back(std::move(*selector));
        } else {
          use.exact = false;
          if (unread.empty()) unread = why;
        }
      }
      std::string note = use.label + ": devices of class " + way->device_class;
      if (request.ways.size() > 1) note += " (the first of its firstAvailable ways of a GPU class)";
      if (way->selectors.empty()) {
        note += ", no CEL selectors";
      } else if (use.exact) {
        note += ", CEL selectors evaluated on each kind of device";
      } else {
        note += ", a CEL selector that cudagate does not evaluate (" + unread +
                "): judged as able to take any device of the class";
      }
      out.notes.push_back(std::move(note));
      out.requests.push_back(std::move(use));
    }
    resolved.push_back(std::move(r));
  }
  for (std::size_t c = 0; c < spec.containers.size(); ++c) {
    for (const ContainerClaim& used : spec.containers[c].claims) {
      const auto r = std::find_if(resolved.begin(), resolved.end(),
                                  [&](const Resolved& x) { return x.claim->name == used.name; });
      if (r == resolved.end() || r->spec == nullptr) continue;
      if (used.request.empty() ? !r->gpu_requests.empty()
                               : r->gpu_requests.count(used.request) > 0) {
        out.gpu[c] = true;
      }
    }
  }
  return out;
}

bool may_take(const ClaimUse::Request& request, const DeviceKind& kind) {
  if (kind.driver != request.devices.driver) return false;
  if (request.devices.type != "*" && kind.type != request.devices.type) return false;
  if (request.devices.type == "*" && kind.type != "gpu" && kind.type != "mig") return false;
  if (!request.exact) return true;
  for (const DraSelector& selector : request.selectors) {
    // A selector that cannot be evaluated on the kind does not exclude it.
    if (selector.matches(kind) == false) return false;
  }
  return true;
}

}  // namespace cudagate
