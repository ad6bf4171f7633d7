// Reading each section of a compat-db file: every entry's fields, their forms and the rules of
// its section, and the table that names the sections and their readers.
#include "compat-db/compat_db_sections.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "compat-db/compat_db_checks.h"
#include "compat-db/compat_db_reader.h"
#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate::compat_db_reader {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 5> kDesignations = {"", "LTSB", "PB", "NFB", "developer"};
constexpr std::array<std::string_view, 4> kRuleKinds = {"cuda-base", "ngc-release", "cuda-tag",
                                                        "pytorch-tag"};
constexpr std::array<std::string_view, 3> kProviders = {"aws", "gcp", "azure"};

template <std::size_t N>
bool one_of(std::string_view value, const std::array<std::string_view, N>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

template <std::size_t N>
std::string listing(const std::array<std::string_view, N>& items) {
  std::string out;
  for (std::string_view item : items) {
    if (item.empty()) continue;
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

// Versions in the matrix name a release, so a bare major ("12") is refused.
void require_minor(Entry& entry, std::string_view key, const std::string& text) {
  if (!text.empty() && text.find('.') == std::string::npos) {
    entry.fail(entry.field_path(key),
               "expected a CUDA version with a minor part like 12.4 or 12.4.1, got " + quote(text));
  }
}

// One TORCH_CUDA_ARCH_LIST-style list: "X.Y[a|f][+PTX]" entries joined by ';'.
bool well_formed_arch_list(std::string_view text) {
  if (text.empty()) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(';', start);
    std::string_view item =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (item.ends_with("+PTX")) item.remove_suffix(4);
    if (item.ends_with('a') || item.ends_with('f')) item.remove_suffix(1);
    if (item.find('.') == std::string_view::npos || !ComputeCapability::parse(item)) return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

// "YY.MM": an NGC monthly release.
bool is_release_name(std::string_view text) {
  if (text.size() != 5 || text[2] != '.') return false;
  if (!ascii::is_digit(text[0]) || !ascii::is_digit(text[1]) || !ascii::is_digit(text[3]) ||
      !ascii::is_digit(text[4])) {
    return false;
  }
  const int month = (text[3] - '0') * 10 + (text[4] - '0');
  return month >= 1 && month <= 12;
}

// NGC release notes print a bare branch ("requires driver 535 or later"); it
// is kept as the branch's first version so that comparisons work.
Expected<DriverVersion> parse_driver_or_branch(std::string_view text) {
  if (!text.empty() && text.find('.') == std::string_view::npos) {
    auto branch = DriverVersion::parse(std::string(text) + ".0");
    if (branch) return branch;
  }
  auto version = DriverVersion::parse(text);
  if (version) return version;
  return Error{
      "", "expected a driver version like 535.129.03 or a branch like 535, got " + quote(text)};
}

// --- Sections --------------------------------------------------------------

CudaRelease read_cuda_release(Entry& e) {
  CudaRelease r;
  r.version = e.text("version");
  if (auto cuda = e.parsed("version", false, &CudaVersion::parse)) r.cuda = *cuda;
  require_minor(e, "version", r.version);
  r.label = e.text("label");
  if (auto driver = e.parsed("minDriver", true, &parse_driver_or_branch)) r.min_driver = *driver;
  r.source = e.text("source");
  return r;
}

MinorVersionCompat read_minor_version_compat(Entry& e) {
  MinorVersionCompat m;
  m.cuda_major = e.number("cudaMajor");
  if (auto driver = e.parsed("minDriver", true, &DriverVersion::parse)) m.min_driver = *driver;
  m.source = e.text("source");
  return m;
}

DriverBranch read_driver_branch(Entry& e) {
  DriverBranch b;
  b.branch = e.number("branch");
  if (auto cuda = e.parsed("cuda", true, &CudaVersion::parse)) {
    b.cuda = *cuda;
    require_minor(e, "cuda", e.optional_text("cuda"));
  }
  b.designation = e.optional_text("designation");
  if (!one_of(b.designation, kDesignations)) {
    e.fail(e.field_path("designation"), "expected one of " + listing(kDesignations) +
                                            " (or leave it out), got " + quote(b.designation));
  }
  b.end_of_life = e.optional_text("endOfLife");
  if (!b.end_of_life.empty() && !is_month(b.end_of_life)) {
    e.fail(e.field_path("endOfLife"), "expected a month like 2026-06, got " + quote(b.end_of_life));
  }
  b.source = e.text("source");
  return b;
}

LastDriverBranch read_last_driver_branch(Entry& e) {
  LastDriverBranch l;
  l.family = e.text("family");
  l.capabilities = e.parsed_list("computeCapabilities", true, &ComputeCapability::parse);
  l.last_branch = e.number("lastBranch");
  l.source = e.text("source");
  return l;
}

// Capability lists are written ascending without repeats, so that a reader
// can check them against the source table at a glance.
void require_ascending(Entry& e, std::string_view key, const std::vector<ComputeCapability>& ccs) {
  for (std::size_t i = 1; i < ccs.size(); ++i) {
    if (!(ccs[i - 1] < ccs[i])) {
      e.fail(index_path(e.field_path(key), i),
             "expected capabilities in ascending order without repeats, got " + ccs[i].str() +
                 " after " + ccs[i - 1].str());
      return;
    }
  }
}

// A release cannot build a special target for a capability it does not build at all.
void require_subset_of_all(Entry& e, std::string_view key, std::string_view what,
                           const std::vector<ComputeCapability>& list,
                           const std::vector<ComputeCapability>& all) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (std::find(all.begin(), all.end(), list[i]) == all.end()) {
      e.fail(index_path(e.field_path(key), i),
             list[i].str() + " is not in \"all\"; " + std::string(what) + " is a subset of all");
      return;
    }
  }
}

CudaTargets read_cuda_targets(Entry& e) {
  CudaTargets t;
  if (auto since = e.parsed("since", true, &CudaVersion::parse)) {
    t.since = *since;
    require_minor(e, "since", e.optional_text("since"));
  }
  t.all = e.parsed_list("all", true, &ComputeCapability::parse);
  t.all_major = e.parsed_list("allMajor", true, &ComputeCapability::parse);
  t.arch_specific = e.parsed_list("archSpecific", false, &ComputeCapability::parse);
  t.family_specific = e.parsed_list("familySpecific", false, &ComputeCapability::parse);
  require_ascending(e, "all", t.all);
  require_ascending(e, "allMajor", t.all_major);
  require_ascending(e, "archSpecific", t.arch_specific);
  require_ascending(e, "familySpecific", t.family_specific);
  require_subset_of_all(e, "allMajor", "all-major", t.all_major, t.all);
  require_subset_of_all(e, "archSpecific", "an architecture-specific target", t.arch_specific,
                        t.all);
  require_subset_of_all(e, "familySpecific", "a family-specific target", t.family_specific, t.all);
  t.source = e.text("source");
  return t;
}

Product read_product(Entry& e) {
  Product p;
  p.name = e.text("name");
  p.aliases = e.texts("aliases", false);
  p.gfd_names = e.texts("gfdNames", false);
  p.gfd_prefixes = e.texts("gfdPrefixes", false);
  if (auto cc = e.parsed("computeCapability", true, &ComputeCapability::parse)) p.cc = *cc;
  p.family = e.text("family");
  p.brand = e.optional_text("brand");
  if (p.brand != ascii::lower(p.brand)) {
    e.fail(
        e.field_path("brand"),
        "expected the brand in lower case as NVIDIA_REQUIRE_* compares it, got " + quote(p.brand));
  }
  p.datacenter = e.boolean("datacenter");
  p.source = e.text("source");
  return p;
}

CloudAccelerator read_cloud_accelerator(Entry& e) {
  CloudAccelerator c;
  c.label = e.text("label");
  c.value = e.text("value");
  c.product = e.text("product");
  c.source = e.text("source");
  return c;
}

NamedArchitecture read_architecture(Entry& e) {
  NamedArchitecture a;
  a.name = e.text("name");
  a.arch_list = e.text("archList");
  if (!a.arch_list.empty() && !well_formed_arch_list(a.arch_list)) {
    e.fail(e.field_path("archList"),
           "expected entries like 8.0, 9.0a or 8.6+PTX joined by ';', got " + quote(a.arch_list));
  }
  a.cuda_since = e.parsed("cudaSince", false, &CudaVersion::parse);
  a.cuda_before = e.parsed("cudaBefore", false, &CudaVersion::parse);
  if (a.cuda_since && a.cuda_before && !(*a.cuda_since < *a.cuda_before)) {
    e.fail(e.field_path("cudaBefore"), "expected a CUDA release after cudaSince " +
                                           a.cuda_since->str() + ", got " + a.cuda_before->str());
  }
  a.source = e.text("source");
  return a;
}

TegraCapability read_tegra_capability(Entry& e) {
  TegraCapability t;
  if (auto cc = e.parsed("computeCapability", true, &ComputeCapability::parse)) t.cc = *cc;
  t.devices = e.text("devices");
  t.source = e.text("source");
  return t;
}

CudaImage read_cuda_image(Entry& e) {
  CudaImage i;
  i.cuda_version = e.text("cudaVersion");
  const auto cuda = e.parsed("cudaVersion", false, &CudaVersion::parse);
  require_minor(e, "cudaVersion", i.cuda_version);
  i.require_cuda = e.text("requireCuda");
  // The requirement's first term is the image's own CUDA release; a
  // mismatch means the row was copied from another image.
  if (cuda && !i.require_cuda.empty()) {
    const std::string expected = "cuda>=" + cuda->str();
    const std::string first = i.require_cuda.substr(0, i.require_cuda.find(' '));
    if (!ascii::iequals(first, expected)) {
      e.fail(e.field_path("requireCuda"), "expected the requirement to start with " +
                                              quote(expected) + " for CUDA " + i.cuda_version +
                                              ", got " + quote(first));
    }
  }
  i.source = e.text("source");
  return i;
}

NgcRelease read_ngc_release(Entry& e) {
  NgcRelease n;
  n.release = e.text("release");
  if (!n.release.empty() && !is_release_name(n.release)) {
    e.fail(e.field_path("release"),
           "expected a release like 24.01 (YY.MM), got " + quote(n.release));
  }
  n.cuda_version = e.text("cudaVersion");
  (void)e.parsed("cudaVersion", false, &CudaVersion::parse);
  require_minor(e, "cudaVersion", n.cuda_version);
  n.min_driver = e.parsed("minDriver", false, &parse_driver_or_branch);
  n.forward_compat = e.parsed_list("forwardCompat", false, &DriverVersion::parse);
  n.min_cc = e.parsed("minComputeCapability", false, &ComputeCapability::parse);
  n.pytorch_version = e.optional_text("pytorchVersion");
  n.source = e.text("source");
  return n;
}

// A torch release as major.minor ("2.7"); a patch part is refused, since
// the builds' lists change with minor releases only.
void read_torch_release(Entry& e, std::string_view key, bool required, CudaVersion& out,
                        bool& present) {
  const std::string text = e.optional_text(key);
  present = !text.empty();
  if (!present) {
    if (required) (void)e.text(key);
    return;
  }
  auto parsed = CudaVersion::parse(text);
  if (!parsed || std::count(text.begin(), text.end(), '.') != 1) {
    e.fail(e.field_path(key), "expected a torch release like 2.7, got " + quote(text));
    return;
  }
  out = *parsed;
}

TorchBuild read_torch_build(Entry& e) {
  TorchBuild t;
  t.cuda_variant = e.text("cudaVariant");
  if (auto cuda = e.parsed("cuda", true, &CudaVersion::parse)) {
    t.cuda = *cuda;
    require_minor(e, "cuda", e.optional_text("cuda"));
    const std::string variant =
        "cu" + std::to_string(cuda->major()) + std::to_string(cuda->minor());
    if (!t.cuda_variant.empty() && t.cuda_variant != variant) {
      e.fail(e.field_path("cudaVariant"), "expected " + quote(variant) + " for CUDA " +
                                              cuda->str() + ", got " + quote(t.cuda_variant));
    }
  }
  bool present = false;
  read_torch_release(e, "torchSince", true, t.torch_since, present);
  CudaVersion before;
  read_torch_release(e, "torchBefore", false, before, present);
  if (present) {
    t.torch_before = before;
    if (!(t.torch_since < before)) {
      e.fail(e.field_path("torchBefore"), "expected a torch release after torchSince " +
                                              t.torch_since.str() + ", got " + before.str());
    }
  }
  t.arch_list = e.text("archList");
  if (!t.arch_list.empty() && !well_formed_arch_list(t.arch_list)) {
    e.fail(e.field_path("archList"),
           "expected entries like 8.0, 9.0a or 8.6+PTX joined by ';', got " + quote(t.arch_list));
  }
  t.source = e.text("source");
  return t;
}

ImageRule read_image_rule(Entry& e) {
  ImageRule r;
  r.repositories = e.texts("repositories", true);
  r.kind = e.text("kind");
  if (!r.kind.empty() && !one_of(r.kind, kRuleKinds)) {
    e.fail(e.field_path("kind"),
           "expected one of " + listing(kRuleKinds) + ", got " + quote(r.kind));
  }
  r.source = e.text("source");
  return r;
}

InstanceType read_instance_type(Entry& e) {
  InstanceType t;
  t.provider = e.text("provider");
  if (!t.provider.empty() && !one_of(t.provider, kProviders)) {
    e.fail(e.field_path("provider"),
           "expected one of " + listing(kProviders) + ", got " + quote(t.provider));
  }
  t.name = e.text("instanceType");
  t.product = e.text("product");
  t.gpus = e.number("gpus");
  t.source = e.text("source");
  return t;
}

// "product" names one product, "products" several; exactly one of them.
InstanceGpuLabel read_instance_gpu_label(Entry& e) {
  InstanceGpuLabel l;
  l.label = e.text("label");
  l.value = e.text("value");
  const std::string one = e.optional_text("product");
  l.products = e.texts("products", false);
  if (!one.empty() && !l.products.empty()) {
    e.fail(e.field_path("products"), "give product (one name) or products (a list), not both");
  } else if (one.empty() && l.products.empty()) {
    e.fail(e.field_path("product"),
           "required field is missing (or give products, a non-empty list of names)");
  } else if (!one.empty()) {
    l.products = {one};
  }
  l.source = e.text("source");
  return l;
}

// read_entries, then `check` over the section's entries.
template <class T, class ReadOne, class Check>
std::optional<Error> read_checked(const json& value, std::string_view section, std::vector<T>& out,
                                  ReadOne read_one, Check check) {
  if (auto error = read_entries(value, section, out, read_one)) return error;
  return check(out);
}

template <class T>
std::optional<Error> no_check(const std::vector<T>& /*entries*/) {
  return std::nullopt;
}

// Every section of the schema, in the order README documents them.
const std::array<Section, 15> kSections = {{
    {"cudaReleases", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cudaReleases", db.cuda_releases, read_cuda_release,
                           [](const std::vector<CudaRelease>& e) {
                             return unique(e, "cudaReleases", "version",
                                           [](const CudaRelease& r) { return r.version; });
                           });
     }},
    {"minorVersionCompat", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "minorVersionCompat", db.minor_version_compat,
                           read_minor_version_compat, [](const std::vector<MinorVersionCompat>& e) {
                             return unique(
                                 e, "minorVersionCompat", "cudaMajor",
                                 [](const MinorVersionCompat& m) { return m.cuda_major; });
                           });
     }},
    {"driverBranches", true,
     [](const json& v, CompatDb& db) {
       return read_checked(
           v, "driverBranches", db.driver_branches, read_driver_branch,
           [](const std::vector<DriverBranch>& e) -> std::optional<Error> {
             if (auto error = unique(e, "driverBranches", "branch",
                                     [](const DriverBranch& b) { return b.branch; })) {
               return error;
             }
             return check_branch_order(e);
           });
     }},
    {"cudaTargets", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cudaTargets", db.cuda_targets, read_cuda_targets,
                           [](const std::vector<CudaTargets>& e) {
                             return unique(e, "cudaTargets", "since", [](const CudaTargets& t) {
                               return std::make_pair(t.since.major(), t.since.minor());
                             });
                           });
     }},
    {"lastDriverBranches", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "lastDriverBranches", db.last_driver_branches,
                           read_last_driver_branch, check_last_driver_branches);
     }},
    {"products", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "products", db.products, read_product, check_products);
     }},
    {"cloudAccelerators", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cloudAccelerators", db.cloud_accelerators, read_cloud_accelerator,
                           [](const std::vector<CloudAccelerator>& e) {
                             return unique(e, "cloudAccelerators", "value",
                                           [](const CloudAccelerator& c) {
                                             return std::make_pair(c.label, ascii::lower(c.value));
                                           });
                           });
     }},
    {"architectures", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "architectures", db.architectures, read_architecture,
                           check_architectures);
     }},
    {"tegraCapabilities", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "tegraCapabilities", db.tegra, read_tegra_capability,
                           [](const std::vector<TegraCapability>& e) {
                             return unique(e, "tegraCapabilities", "computeCapability",
                                           [](const TegraCapability& t) {
                                             return std::make_pair(t.cc.major(), t.cc.minor());
                                           });
                           });
     }},
    {"cudaImages", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "cudaImages", db.cuda_images, read_cuda_image,
                           [](const std::vector<CudaImage>& e) {
                             return unique(e, "cudaImages", "cudaVersion",
                                           [](const CudaImage& i) { return i.cuda_version; });
                           });
     }},
    {"ngcReleases", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "ngcReleases", db.ngc_releases, read_ngc_release,
                           [](const std::vector<NgcRelease>& e) {
                             return unique(e, "ngcReleases", "release",
                                           [](const NgcRelease& n) { return n.release; });
                           });
     }},
    {"imageRules", true,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "imageRules", db.image_rules, read_image_rule, no_check<ImageRule>);
     }},
    {"torchBuilds", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "torchBuilds", db.torch_builds, read_torch_build, check_torch_builds);
     }},
    {"instanceTypes", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "instanceTypes", db.instance_types, read_instance_type,
                           [](const std::vector<InstanceType>& e) {
                             return unique(e, "instanceTypes", "instanceType",
                                           [](const InstanceType& t) { return t.name; });
                           });
     }},
    {"instanceGpuLabels", false,
     [](const json& v, CompatDb& db) {
       return read_checked(v, "instanceGpuLabels", db.instance_gpu_labels, read_instance_gpu_label,
                           [](const std::vector<InstanceGpuLabel>& e) {
                             return unique(e, "instanceGpuLabels", "value",
                                           [](const InstanceGpuLabel& l) {
                                             return std::make_pair(l.label, l.value);
                                           });
                           });
     }},
}};

}  // namespace

std::span<const Section> sections() {
  return kSections;
}

const Section* find_section(std::string_view name) {
  for (const Section& section : kSections) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

std::string section_names() {
  std::string out;
  for (const Section& section : kSections) {
    if (!out.empty()) out += ", ";
    out += section.name;
  }
  return out;
}

}  // namespace cudagate::compat_db_reader
