// The compatibility matrix's lookups: the questions node facts, image metadata and rules ask of a
// loaded CompatDb (loading is compat_db_load.cpp's).
#include "compat-db/compat_db.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <utility>

#include "compat-db/compat_db_checks.h"
#include "types/ascii.h"

namespace cudagate {
namespace {

// GFD prefixes match as GFD names do, ignoring case.
bool istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && ascii::iequals(text.substr(0, prefix.size()), prefix);
}

// The label value GPU Feature Discovery writes for an NVML product name
// (NVIDIA k8s-device-plugin, internal/lm/resource.go, sanitise): characters
// outside [A-Za-z0-9-_. ] dropped, the words that remain joined by '-'.
// "NVIDIA H100 80GB HBM3", as NVIDIA's DRA driver publishes it, is
// "NVIDIA-H100-80GB-HBM3".
std::string gfd_label_value(std::string_view nvml_name) {
  std::string out;
  bool gap = false;
  for (const char c : nvml_name) {
    const bool kept = ascii::is_alnum(c) || c == '-' || c == '_' || c == '.';
    if (kept) {
      if (gap && !out.empty()) out += '-';
      out += c;
      gap = false;
    } else if (ascii::is_space(c)) {
      gap = true;
    }
  }
  return out;
}

}  // namespace

std::optional<DriverVersion> CompatDb::min_driver_for(CudaVersion cuda) const {
  const DriverVersion* oldest = nullptr;
  for (const CudaRelease& release : cuda_releases) {
    if (release.cuda == cuda && (oldest == nullptr || release.min_driver < *oldest)) {
      oldest = &release.min_driver;
    }
  }
  if (oldest == nullptr) return std::nullopt;
  return *oldest;
}

std::optional<CudaVersion> CompatDb::max_cuda_for(const DriverVersion& driver) const {
  const auto after =
      std::upper_bound(driver_branches.begin(), driver_branches.end(), driver.branch(),
                       [](int branch, const DriverBranch& entry) { return branch < entry.branch; });
  if (after == driver_branches.begin()) return std::nullopt;
  return std::prev(after)->cuda;
}

const MinorVersionCompat* CompatDb::minor_compat_for(int cuda_major) const {
  const auto it =
      std::find_if(minor_version_compat.begin(), minor_version_compat.end(),
                   [&](const MinorVersionCompat& m) { return m.cuda_major == cuda_major; });
  return it == minor_version_compat.end() ? nullptr : &*it;
}

const CudaTargets* CompatDb::targets_for(CudaVersion cuda) const {
  const auto after = std::upper_bound(
      cuda_targets.begin(), cuda_targets.end(), cuda,
      [](const CudaVersion& version, const CudaTargets& entry) { return version < entry.since; });
  if (after == cuda_targets.begin()) return nullptr;
  return &*std::prev(after);
}

const Product* CompatDb::product_by_name(std::string_view name) const {
  for (const Product& product : products) {
    if (ascii::iequals(product.name, name)) return &product;
    for (const std::string& alias : product.aliases) {
      if (ascii::iequals(alias, name)) return &product;
    }
  }
  return nullptr;
}

const Product* CompatDb::product_by_gfd(std::string_view label_value) const {
  // GFD appends "-SHARED" when a GPU is shared and "-MIG-<profile>" for a
  // MIG device; both describe how the GPU is used, not which GPU it is.
  std::string_view value = label_value;
  if (value.ends_with("-SHARED")) value.remove_suffix(std::string_view("-SHARED").size());
  if (const auto mig = value.find("-MIG-"); mig != std::string_view::npos)
    value = value.substr(0, mig);
  if (value.empty()) return nullptr;
  for (const Product& product : products) {
    for (const std::string& name : product.gfd_names) {
      if (ascii::iequals(name, value)) return &product;
    }
  }
  const Product* best = nullptr;
  std::size_t best_length = 0;
  for (const Product& product : products) {
    for (const std::string& prefix : product.gfd_prefixes) {
      if (prefix.size() > best_length && istarts_with(value, prefix)) {
        best = &product;
        best_length = prefix.size();
      }
    }
  }
  return best;
}

const Product* CompatDb::product_by_label(std::string_view value) const {
  if (const Product* product = product_by_gfd(value)) return product;
  if (const Product* product = product_by_name(value)) return product;
  const std::string as_gfd = gfd_label_value(value);
  return as_gfd == value ? nullptr : product_by_gfd(as_gfd);
}

const Product* CompatDb::product_by_cloud_label(std::string_view label,
                                                std::string_view value) const {
  for (const CloudAccelerator& accelerator : cloud_accelerators) {
    if (accelerator.label != label || !ascii::iequals(accelerator.value, value)) continue;
    for (const Product& product : products) {
      if (product.name == accelerator.product) return &product;
    }
  }
  return nullptr;
}

const InstanceType* CompatDb::instance_type(std::string_view name) const {
  const auto it = std::find_if(instance_types.begin(), instance_types.end(),
                               [&](const InstanceType& t) { return t.name == name; });
  return it == instance_types.end() ? nullptr : &*it;
}

std::vector<const Product*> CompatDb::products_by_instance_label(std::string_view label,
                                                                 std::string_view value) const {
  std::vector<const Product*> out;
  for (const InstanceGpuLabel& entry : instance_gpu_labels) {
    if (entry.label != label || entry.value != value) continue;
    for (const std::string& name : entry.products) {
      const Product* product = compat_db_reader::named_product(products, name);
      if (product != nullptr && std::find(out.begin(), out.end(), product) == out.end()) {
        out.push_back(product);
      }
    }
  }
  return out;
}

const NamedArchitecture* CompatDb::architecture(std::string_view name,
                                                std::optional<CudaVersion> cuda) const {
  const NamedArchitecture* newest = nullptr;
  for (const NamedArchitecture& a : architectures) {
    if (a.name != name) continue;
    if (cuda && a.applies_to(*cuda)) return &a;
    if (newest == nullptr || newest->cuda_before) newest = &a;
  }
  return newest;
}

bool CompatDb::is_tegra(ComputeCapability cc) const {
  return std::any_of(tegra.begin(), tegra.end(),
                     [&](const TegraCapability& t) { return t.cc == cc; });
}

const CudaImage* CompatDb::cuda_image(std::string_view cuda_version) const {
  const auto it = std::find_if(cuda_images.begin(), cuda_images.end(),
                               [&](const CudaImage& i) { return i.cuda_version == cuda_version; });
  return it == cuda_images.end() ? nullptr : &*it;
}

const NgcRelease* CompatDb::ngc_release(std::string_view release) const {
  const auto it = std::find_if(ngc_releases.begin(), ngc_releases.end(),
                               [&](const NgcRelease& n) { return n.release == release; });
  return it == ngc_releases.end() ? nullptr : &*it;
}

bool CompatDb::branch_beyond_known(const DriverVersion& driver) const {
  return !driver_branches.empty() && driver.branch() > driver_branches.back().branch;
}

const LastDriverBranch* CompatDb::last_driver_branch(ComputeCapability cc) const {
  for (const LastDriverBranch& entry : last_driver_branches) {
    if (std::find(entry.capabilities.begin(), entry.capabilities.end(), cc) !=
        entry.capabilities.end()) {
      return &entry;
    }
  }
  return nullptr;
}

std::optional<ComputeCapability> CompatDb::newest_capability() const {
  std::optional<ComputeCapability> newest;
  const auto consider = [&newest](ComputeCapability cc) {
    if (!newest || *newest < cc) newest = cc;
  };
  for (const CudaTargets& targets : cuda_targets) {
    for (const ComputeCapability& cc : targets.all) consider(cc);
  }
  for (const Product& product : products) consider(product.cc);
  return newest;
}

bool CompatDb::capability_beyond_known(ComputeCapability cc) const {
  std::optional<int> newest_major;
  std::optional<int> newest_minor_of_major;  // of cc's major
  const auto consider = [&](ComputeCapability known) {
    if (!newest_major || *newest_major < known.major()) newest_major = known.major();
    if (known.major() == cc.major() &&
        (!newest_minor_of_major || *newest_minor_of_major < known.minor())) {
      newest_minor_of_major = known.minor();
    }
  };
  for (const CudaTargets& targets : cuda_targets) {
    for (const ComputeCapability& known : targets.all) consider(known);
  }
  for (const Product& product : products) consider(product.cc);
  if (newest_minor_of_major) return *newest_minor_of_major < cc.minor();
  return newest_major && *newest_major < cc.major();
}

std::optional<CudaVersion> CompatDb::newest_cuda() const {
  std::optional<CudaVersion> newest;
  const auto consider = [&newest](CudaVersion cuda) {
    if (!newest || *newest < cuda) newest = cuda;
  };
  for (const CudaRelease& release : cuda_releases) consider(release.cuda);
  for (const DriverBranch& branch : driver_branches) consider(branch.cuda);
  for (const CudaTargets& targets : cuda_targets) consider(targets.since);
  return newest;
}

std::string CompatDb::describe() const {
  std::string out = "the compatibility matrix (revision ";
  out += revision;
  out += ", ";
  out += as_of.empty() ? std::string("undated") : as_of;
  out += ')';
  return out;
}

const TorchBuild* CompatDb::torch_build(CudaVersion torch, CudaVersion cuda) const {
  for (const TorchBuild& build : torch_builds) {
    if (build.cuda == cuda && build.applies_to(torch)) return &build;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> newest_entries(const CompatDb& db) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!db.cuda_releases.empty()) {
    const CudaRelease& r = db.cuda_releases.back();
    out.emplace_back("CUDA release", r.label + " (" + r.version + ")");
  }
  if (!db.driver_branches.empty()) {
    const DriverBranch& b = db.driver_branches.back();
    out.emplace_back("driver branch", std::to_string(b.branch) + " (CUDA " + b.cuda.str() + ")");
  }
  if (const auto cc = db.newest_capability()) out.emplace_back("compute capability", cc->str());
  const auto newest_ngc = std::max_element(
      db.ngc_releases.begin(), db.ngc_releases.end(),
      [](const NgcRelease& a, const NgcRelease& b) { return a.release < b.release; });
  if (newest_ngc != db.ngc_releases.end()) out.emplace_back("NGC release", newest_ngc->release);
  const TorchBuild* newest_torch = nullptr;
  for (const TorchBuild& t : db.torch_builds) {
    if (newest_torch == nullptr || newest_torch->cuda < t.cuda) newest_torch = &t;
  }
  if (newest_torch != nullptr) {
    out.emplace_back("PyTorch build", newest_torch->cuda_variant + " (torch " +
                                          newest_torch->torch_since.str() + ")");
  }
  return out;
}

}  // namespace cudagate
