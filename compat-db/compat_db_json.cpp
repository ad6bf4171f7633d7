// The compatibility matrix written back as JSON in the input files' shape, for
// `cudagate db show --output json`, whose output `db lint` and `--compat-db` accept.
#include "compat-db/compat_db_json.h"

#include <string>
#include <vector>

namespace cudagate {
namespace {

using Json = nlohmann::ordered_json;

Json cc_list(const std::vector<ComputeCapability>& list) {
  Json out = Json::array();
  for (const auto& cc : list) out.push_back(cc.str());
  return out;
}

void put_if_not_empty(Json& object, const char* key, const std::vector<std::string>& values) {
  if (!values.empty()) object[key] = values;
}

void put_if_not_empty(Json& object, const char* key, const std::string& value) {
  if (!value.empty()) object[key] = value;
}

}  // namespace

namespace {

// The driver side: CUDA releases, minor version compatibility, driver
// branches, each release's targets and each architecture's last branch.
void put_driver_sections(Json& out, const CompatDb& db) {
  Json& releases = out["cudaReleases"] = Json::array();
  for (const auto& r : db.cuda_releases) {
    releases.push_back({{"version", r.version},
                        {"label", r.label},
                        {"minDriver", r.min_driver.str()},
                        {"source", r.source}});
  }

  Json& mvc = out["minorVersionCompat"] = Json::array();
  for (const auto& m : db.minor_version_compat) {
    mvc.push_back(
        {{"cudaMajor", m.cuda_major}, {"minDriver", m.min_driver.str()}, {"source", m.source}});
  }

  Json& branches = out["driverBranches"] = Json::array();
  for (const auto& b : db.driver_branches) {
    Json entry = {{"branch", b.branch}, {"cuda", b.cuda.str()}};
    put_if_not_empty(entry, "designation", b.designation);
    put_if_not_empty(entry, "endOfLife", b.end_of_life);
    entry["source"] = b.source;
    branches.push_back(std::move(entry));
  }

  Json& targets = out["cudaTargets"] = Json::array();
  for (const auto& t : db.cuda_targets) {
    Json entry = {
        {"since", t.since.str()}, {"all", cc_list(t.all)}, {"allMajor", cc_list(t.all_major)}};
    if (!t.arch_specific.empty()) entry["archSpecific"] = cc_list(t.arch_specific);
    if (!t.family_specific.empty()) entry["familySpecific"] = cc_list(t.family_specific);
    entry["source"] = t.source;
    targets.push_back(std::move(entry));
  }

  if (!db.last_driver_branches.empty()) {
    Json& last = out["lastDriverBranches"] = Json::array();
    for (const auto& l : db.last_driver_branches) {
      last.push_back({{"family", l.family},
                      {"computeCapabilities", cc_list(l.capabilities)},
                      {"lastBranch", l.last_branch},
                      {"source", l.source}});
    }
  }
}

// The GPU side: products, cloud labels, named architectures, Tegra.
void put_gpu_sections(Json& out, const CompatDb& db) {
  Json& products = out["products"] = Json::array();
  for (const auto& p : db.products) {
    Json entry = {{"name", p.name}};
    put_if_not_empty(entry, "aliases", p.aliases);
    put_if_not_empty(entry, "gfdNames", p.gfd_names);
    put_if_not_empty(entry, "gfdPrefixes", p.gfd_prefixes);
    entry["computeCapability"] = p.cc.str();
    entry["family"] = p.family;
    put_if_not_empty(entry, "brand", p.brand);
    entry["datacenter"] = p.datacenter;
    entry["source"] = p.source;
    products.push_back(std::move(entry));
  }

  Json& cloud = out["cloudAccelerators"] = Json::array();
  for (const auto& c : db.cloud_accelerators) {
    cloud.push_back(
        {{"label", c.label}, {"value", c.value}, {"product", c.product}, {"source", c.source}});
  }

  Json& archs = out["architectures"] = Json::array();
  for (const auto& a : db.architectures) {
    Json entry = {{"name", a.name}, {"archList", a.arch_list}};
    if (a.cuda_since) entry["cudaSince"] = a.cuda_since->str();
    if (a.cuda_before) entry["cudaBefore"] = a.cuda_before->str();
    entry["source"] = a.source;
    archs.push_back(std::move(entry));
  }

  Json& tegra = out["tegraCapabilities"] = Json::array();
  for (const auto& t : db.tegra) {
    tegra.push_back(
        {{"computeCapability", t.cc.str()}, {"devices", t.devices}, {"source", t.source}});
  }
}

// The image side: nvidia/cuda and NGC images, inference rules, PyTorch's builds.
void put_image_sections(Json& out, const CompatDb& db) {
  Json& images = out["cudaImages"] = Json::array();
  for (const auto& i : db.cuda_images) {
    images.push_back(
        {{"cudaVersion", i.cuda_version}, {"requireCuda", i.require_cuda}, {"source", i.source}});
  }

  Json& ngc = out["ngcReleases"] = Json::array();
  for (const auto& n : db.ngc_releases) {
    Json entry = {{"release", n.release}, {"cudaVersion", n.cuda_version}};
    if (n.min_driver) entry["minDriver"] = n.min_driver->str();
    Json forward = Json::array();
    for (const auto& d : n.forward_compat) forward.push_back(d.str());
    entry["forwardCompat"] = std::move(forward);
    if (n.min_cc) entry["minComputeCapability"] = n.min_cc->str();
    put_if_not_empty(entry, "pytorchVersion", n.pytorch_version);
    entry["source"] = n.source;
    ngc.push_back(std::move(entry));
  }

  Json& rules = out["imageRules"] = Json::array();
  for (const auto& r : db.image_rules) {
    rules.push_back({{"repositories", r.repositories}, {"kind", r.kind}, {"source", r.source}});
  }

  if (!db.torch_builds.empty()) {
    Json& torch = out["torchBuilds"] = Json::array();
    for (const auto& t : db.torch_builds) {
      Json entry = {{"cudaVariant", t.cuda_variant},
                    {"cuda", t.cuda.str()},
                    {"torchSince", t.torch_since.str()}};
      if (t.torch_before) entry["torchBefore"] = t.torch_before->str();
      entry["archList"] = t.arch_list;
      entry["source"] = t.source;
      torch.push_back(std::move(entry));
    }
  }
}

// Cloud instance types and autoscaler GPU-name labels.
void put_instance_sections(Json& out, const CompatDb& db) {
  if (!db.instance_types.empty()) {
    Json& types = out["instanceTypes"] = Json::array();
    for (const auto& t : db.instance_types) {
      types.push_back({{"provider", t.provider},
                       {"instanceType", t.name},
                       {"product", t.product},
                       {"gpus", t.gpus},
                       {"source", t.source}});
    }
  }

  if (!db.instance_gpu_labels.empty()) {
    Json& labels = out["instanceGpuLabels"] = Json::array();
    for (const auto& l : db.instance_gpu_labels) {
      Json entry = {{"label", l.label}, {"value", l.value}};
      if (l.products.size() == 1) {
        entry["product"] = l.products.front();
      } else {
        entry["products"] = l.products;
      }
      entry["source"] = l.source;
      labels.push_back(std::move(entry));
    }
  }
}

}  // namespace

Json compat_db_to_json(const CompatDb& db) {
  Json out;
  out["schemaVersion"] = 1;
  if (!db.as_of.empty()) out["asOf"] = db.as_of;
  put_driver_sections(out, db);
  put_gpu_sections(out, db);
  put_image_sections(out, db);
  put_instance_sections(out, db);
  return out;
}

}  // namespace cudagate
