// Feeds arbitrary bytes to load_compat_db as one override file (what
// `--compat-db FILE` and `cudagate db lint` read). The loader must answer
// every input with a matrix or an Error, never crash or hang; a matrix it
// accepts must keep the invariants its lookups rely on.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compat-db/compat_db.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void exercise(const cudagate::CompatDb& db) {
  for (const cudagate::Product& product : db.products) {
    check(db.product_by_name(product.name) == &product);
    for (const std::string& alias : product.aliases) check(db.product_by_name(alias) == &product);
    for (const std::string& name : product.gfd_names) (void)db.product_by_gfd(name);
  }
  for (const cudagate::CloudAccelerator& accelerator : db.cloud_accelerators) {
    check(db.product_by_cloud_label(accelerator.label, accelerator.value) != nullptr);
  }
  for (const cudagate::CudaRelease& release : db.cuda_releases) {
    const auto min = db.min_driver_for(release.cuda);
    check(min.has_value() && !(release.min_driver < *min));
    (void)db.max_cuda_for(release.min_driver);
    (void)db.minor_compat_for(release.cuda.major());
    const cudagate::CudaTargets* targets = db.targets_for(release.cuda);
    check(targets == nullptr || !(release.cuda < targets->since));
  }
  for (const cudagate::NamedArchitecture& architecture : db.architectures) {
    check(db.architecture(architecture.name) != nullptr);
    // Ranges of one name do not overlap, so a release inside one finds its entry.
    if (architecture.cuda_since) {
      check(db.architecture(architecture.name, architecture.cuda_since) == &architecture);
    }
  }
  for (const cudagate::TegraCapability& tegra : db.tegra) check(db.is_tegra(tegra.cc));
  for (const cudagate::CudaImage& image : db.cuda_images)
    check(db.cuda_image(image.cuda_version) == &image);
  for (const cudagate::NgcRelease& release : db.ngc_releases)
    check(db.ngc_release(release.release) == &release);
  for (const cudagate::LastDriverBranch& entry : db.last_driver_branches) {
    for (const cudagate::ComputeCapability& cc : entry.capabilities) {
      check(db.last_driver_branch(cc) == &entry);
    }
  }
  for (const cudagate::TorchBuild& build : db.torch_builds) {
    // Ranges of one variant do not overlap, so a build's first release finds it.
    check(db.torch_build(build.torch_since, build.cuda) == &build);
  }
  // Instance type names are unique, and every product a table names exists.
  for (const cudagate::InstanceType& type : db.instance_types) {
    check(db.instance_type(type.name) == &type);
    check(type.gpus >= 1);
  }
  for (const cudagate::InstanceGpuLabel& label : db.instance_gpu_labels) {
    const auto products = db.products_by_instance_label(label.label, label.value);
    check(!products.empty() && products.size() <= label.products.size());
  }
  // Nothing the matrix names is newer than the matrix.
  for (const cudagate::Product& product : db.products) {
    check(!db.capability_beyond_known(product.cc));
  }
  for (const cudagate::DriverBranch& branch : db.driver_branches) {
    const auto driver = cudagate::DriverVersion::parse(std::to_string(branch.branch) + ".1");
    check(driver.has_value() && !db.branch_beyond_known(*driver));
  }
  (void)cudagate::newest_entries(db);
  (void)db.describe();
  (void)db.product_by_gfd("NVIDIA-A100-80GB-PCIe-MIG-1g.10gb-SHARED");
  (void)db.product_by_gfd("-MIG-");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto db = cudagate::load_compat_db({cudagate::CompatDbFile{"fuzz.json", text}});
  if (db) {
    exercise(*db);
  } else {
    check(!db.error().str().empty());
  }
  return 0;
}
