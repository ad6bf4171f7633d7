// Resolving each GPU container's CUDA version, NVIDIA_REQUIRE_* and arch lists from their
// sources in order of precedence, including inference from well-known image references.
#include "policy/rules/metadata.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "policy/image/image_ref.h"
#include "types/quote.h"

namespace cudagate {
namespace {

constexpr std::string_view kCudaVersion = "CUDA_VERSION";
constexpr std::string_view kRequireCuda = "NVIDIA_REQUIRE_CUDA";
constexpr std::string_view kRequirePrefix = "NVIDIA_REQUIRE_";
constexpr std::string_view kRequireJetpack = "NVIDIA_REQUIRE_JETPACK";
constexpr std::string_view kDisableRequire = "NVIDIA_DISABLE_REQUIRE";
constexpr std::string_view kTorchArchList = "TORCH_CUDA_ARCH_LIST";
constexpr std::string_view kCudaArchs = "CUDAARCHS";
constexpr std::string_view kCmakeArchs = "CMAKE_CUDA_ARCHITECTURES";
constexpr std::string_view kCudaLabel = "com.nvidia.cuda.version";

// The name of a scanned runtime whose file the scan does not say.
constexpr std::string_view kScannedRuntime = "libcudart";

constexpr std::string_view kAnnotationCuda = "cudagate.io/cuda-version";
constexpr std::string_view kAnnotationArchs = "cudagate.io/arch-list";
constexpr std::string_view kAnnotationMinCc = "cudagate.io/min-compute-capability";

// One variable of the environment the container runtime will see.
struct EnvValue {
  std::optional<std::string_view> value;  // nullopt: set with valueFrom, unknown at admission
  Source source = Source::unknown;
};

bool starts_with(std::string_view text, std::string_view prefix);

// The variables of that environment that metadata is read from, by name
// (the image's first, then the pod's, the last setting of a name winning).
// Views into the container spec and the image facts, which outlive it.
class Env {
 public:
  static bool read(std::string_view name) {
    // Most of a container's variables start with another letter than these.
    if (name.empty()) return false;
    const char c = name[0];
    if (c != kCudaVersion[0] && c != kRequirePrefix[0] && c != kDisableRequire[0] &&
        c != kTorchArchList[0] && c != kCudaArchs[0] && c != kCmakeArchs[0]) {
      return false;
    }
    return name == kCudaVersion || starts_with(name, kRequirePrefix) || name == kDisableRequire ||
           name == kTorchArchList || name == kCudaArchs || name == kCmakeArchs;
  }

  void set(std::string_view name, EnvValue value) {
    if (!read(name)) return;
    const auto it = std::lower_bound(vars_.begin(), vars_.end(), name,
                                     [](const auto& v, std::string_view n) { return v.first < n; });
    if (it != vars_.end() && it->first == name) {
      it->second = value;
    } else {
      vars_.insert(it, {name, value});
    }
  }

  [[nodiscard]] const EnvValue* find(std::string_view name) const {
    const auto it = std::lower_bound(vars_.begin(), vars_.end(), name,
                                     [](const auto& v, std::string_view n) { return v.first < n; });
    return it != vars_.end() && it->first == name ? &it->second : nullptr;
  }

  [[nodiscard]] auto begin() const { return vars_.begin(); }
  [[nodiscard]] auto end() const { return vars_.end(); }

 private:
  std::vector<std::pair<std::string_view, EnvValue>> vars_;
};

// What is known about the image itself, from its first source.
struct ImageFacts {
  Source source = Source::unknown;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::pair<std::string, std::string>> labels;
  std::optional<ComputeCapability> min_cc;
  std::string min_cc_name;
};

// Go's strconv.ParseBool, true side; every other text (errors included) is
// false, as the toolkit ignores the parse error.
bool go_parse_bool_true(std::string_view text) {
  return text == "1" || text == "t" || text == "T" || text == "TRUE" || text == "true" ||
         text == "True";
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Dot-separated identifiers of [0-9A-Za-z-], as semver's pre-release and
// build metadata; pre-release numbers may not have leading zeros.
bool semver_identifiers(std::string_view text, bool numbers_without_leading_zero) {
  if (text.empty()) return false;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('.', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view id = text.substr(start, end - start);
    if (id.empty()) return false;
    const bool numeric =
        std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!std::all_of(id.begin(), id.end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 c == '-';
        })) {
      return false;
    }
    if (numbers_without_leading_zero && numeric && id.size() > 1 && id[0] == '0') return false;
    start = end + 1;
  }
  return true;
}

// CUDA_VERSION as the toolkit reads it (internal/config/image/cuda_image.go
// legacyVersion: Masterminds semver NewVersion, which coerces): an optional
// leading "v", one to three numeric parts, then optionally "-pre.release"
// and "+build.metadata"; the requirement uses major.minor.
Expected<CudaVersion> parse_cuda_version_variable(std::string_view text) {
  std::string_view core = text;
  if (core.starts_with('v')) core.remove_prefix(1);
  std::string_view build;
  if (const std::size_t plus = core.find('+'); plus != std::string_view::npos) {
    build = core.substr(plus + 1);
    core = core.substr(0, plus);
    if (!semver_identifiers(build, false)) core = {};
  }
  if (const std::size_t dash = core.find('-'); dash != std::string_view::npos) {
    const std::string_view pre = core.substr(dash + 1);
    core = core.substr(0, dash);
    if (!semver_identifiers(pre, true)) core = {};
  }
  auto version = CudaVersion::parse(core);
  if (!version) {
    return Error{"", "expected a CUDA version like 12.4 or 12.4.1, got " + quote(text)};
  }
  return version;
}

bool is_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The leading "12.8.1" of "12.8.1-base-ubuntu24.04".
std::string_view leading_version(std::string_view tag) {
  const std::string_view head = tag.substr(0, tag.find('-'));
  if (head.empty() || head.front() == '.' || !std::all_of(head.begin(), head.end(), [](char c) {
        return (c >= '0' && c <= '9') || c == '.';
      })) {
    return {};
  }
  return head;
}

// "12.3.2" from an NGC "12.4.0.41"-style version: CUDA_VERSION has at most
// three parts.
std::string at_most_three_parts(std::string_view version) {
  std::size_t dots = 0;
  for (std::size_t i = 0; i < version.size(); ++i) {
    if (version[i] == '.' && ++dots == 3) return std::string(version.substr(0, i));
  }
  return std::string(version);
}

// A CUDA version from one tag token: cudaX.Y, cuX.Y, cuXYZ (last digit is
// the minor: cu118 is 11.8, cu130 is 13.0).
std::optional<std::string> cuda_from_token(std::string_view token) {
  std::string_view rest;
  if (starts_with(token, "cuda")) {
    rest = token.substr(4);
  } else if (starts_with(token, "cu")) {
    rest = token.substr(2);
  } else {
    return std::nullopt;
  }
  if (rest.find('.') != std::string_view::npos) {
    if (CudaVersion::parse(rest) && std::count(rest.begin(), rest.end(), '.') <= 2) {
      return std::string(rest);
    }
    return std::nullopt;
  }
  if (starts_with(token, "cuda") || !is_digits(rest) || rest.size() < 2 || rest.size() > 4) {
    return std::nullopt;
  }
  return std::string(rest.substr(0, rest.size() - 1)) + "." +
         std::string(rest.substr(rest.size() - 1));
}

std::optional<std::string> cuda_from_tag(std::string_view tag) {
  std::size_t start = 0;
  for (std::size_t i = 0; i <= tag.size(); ++i) {
    if (i < tag.size() && tag[i] != '-' && tag[i] != '_') continue;
    if (auto v = cuda_from_token(tag.substr(start, i - start))) return v;
    start = i + 1;
  }
  return std::nullopt;
}

// The NVIDIA_REQUIRE_CUDA that an NGC release's images declare: the release's
// CUDA, or one forward-compatible driver branch on a datacenter brand.
std::string ngc_require_cuda(const NgcRelease& release, CudaVersion cuda, const CompatDb& db) {
  std::set<std::string> brands;
  for (const Product& p : db.products) {
    if (p.datacenter && !p.brand.empty()) brands.insert(p.brand);
  }
  std::string text = "cuda>=" + cuda.str();
  for (const DriverVersion& fc : release.forward_compat) {
    for (const std::string& brand : brands) {
      text +=
          " brand=" + brand + ",driver>=" + fc.str() + ",driver<" + std::to_string(fc.branch() + 1);
    }
  }
  return text;
}

// Applies one image rule; false when the reference says nothing under it.
bool infer_with_rule(const ImageRule& rule, const ImageRef& ref, const CompatDb& db,
                     ImageFacts& facts) {
  if (rule.kind == "cuda-base") {
    const std::string_view version = leading_version(ref.tag);
    if (version.empty() || !CudaVersion::parse(version)) return false;
    if (const CudaImage* image = db.cuda_image(version)) {
      facts.env.emplace_back(kCudaVersion, image->cuda_version);
      if (!image->require_cuda.empty()) facts.env.emplace_back(kRequireCuda, image->require_cuda);
    } else {
      facts.env.emplace_back(kCudaVersion, std::string(version));
    }
    return true;
  }
  if (rule.kind == "ngc-release") {
    const std::string_view tag = ref.tag;
    if (tag.size() < 5 || !is_digits(tag.substr(0, 2)) || tag[2] != '.' ||
        !is_digits(tag.substr(3, 2)) || (tag.size() > 5 && tag[5] != '-')) {
      return false;
    }
    const NgcRelease* release = db.ngc_release(tag.substr(0, 5));
    if (release == nullptr) return false;
    const std::string cuda_text = at_most_three_parts(release->cuda_version);
    auto cuda = CudaVersion::parse(cuda_text);
    if (!cuda) return false;
    facts.env.emplace_back(kCudaVersion, cuda_text);
    facts.env.emplace_back(kRequireCuda, ngc_require_cuda(*release, *cuda, db));
    if (release->min_cc) {
      facts.min_cc = release->min_cc;
      facts.min_cc_name = "NGC release " + release->release;
    }
    return true;
  }
  if (rule.kind == "pytorch-tag") {
    // "<torch>-cuda<X.Y>-cudnn<N>-<flavour>", as pytorch/pytorch tags its
    // images: the CUDA release, and the arch list PyTorch built that
    // torch release for it with (torchBuilds).
    const std::string_view torch_text = leading_version(ref.tag);
    const auto torch = CudaVersion::parse(torch_text);
    auto cuda_text = cuda_from_tag(ref.tag);
    if (!torch || !cuda_text) return false;
    const auto cuda = CudaVersion::parse(*cuda_text);
    const TorchBuild* build = cuda ? db.torch_build(*torch, *cuda) : nullptr;
    if (build == nullptr) return false;
    facts.labels.emplace_back(kCudaLabel, *cuda_text);
    facts.env.emplace_back(kTorchArchList, build->arch_list);
    return true;
  }
  if (rule.kind == "cuda-tag") {
    auto version = cuda_from_tag(ref.tag);
    if (!version) return false;
    facts.labels.emplace_back(kCudaLabel, *version);
    return true;
  }
  return false;
}

ImageFacts infer_image(std::string_view image, const CompatDb& db) {
  ImageFacts facts;
  auto ref = ImageRef::parse(image);
  if (!ref || ref->tag.empty()) return facts;
  const std::string name = ref->name();
  // Rules naming the repository outright come before pattern rules, so a
  // catch-all tag rule never shadows a release table.
  for (const bool patterns : {false, true}) {
    for (const ImageRule& rule : db.image_rules) {
      const bool matches = std::any_of(
          rule.repositories.begin(), rule.repositories.end(), [&](const std::string& repo) {
            const bool is_pattern =
                std::any_of(repo.begin(), repo.end(), [](char c) { return c == '*' || c == '?'; });
            return is_pattern == patterns && glob_match(repo, name);
          });
      if (matches && infer_with_rule(rule, *ref, db, facts)) {
        facts.source = Source::inference;
        return facts;
      }
    }
  }
  return facts;
}

}  // namespace

struct MetadataMemo::Impl {
  static constexpr std::size_t kMaxEntries = 1024;

  // Starts over for another compat-db, and when full.
  void use(const CompatDb& with) {
    if (db != &with || images.size() > kMaxEntries || requirements.size() > kMaxEntries) {
      images.clear();
      requirements.clear();
      db = &with;
    }
  }

  const CompatDb* db = nullptr;
  std::unordered_map<std::string, ImageFacts> images;
  std::unordered_map<std::string, Requirement> requirements;
};

void RegistryFacts::add(std::string image, std::shared_ptr<const ImageConfig> config) {
  if (config == nullptr || find(image) != nullptr) return;
  entries_.emplace_back(std::move(image), std::move(config));
}

const ImageConfig* RegistryFacts::find(std::string_view image) const {
  for (const auto& [name, config] : entries_) {
    if (name == image) return config.get();
  }
  return nullptr;
}

MetadataMemo::MetadataMemo() : impl_(std::make_unique<Impl>()) {}
MetadataMemo::~MetadataMemo() = default;

namespace {

ImageFacts image_facts(const ContainerSpec& container, const Policy& policy, const CompatDb& db,
                       const RegistryFacts* registry, MetadataMemo::Impl* memo) {
  ImageFacts facts;
  if (const CatalogEntry* entry = policy.catalog_entry(container.image)) {
    facts.source = Source::catalog;
    if (entry->cuda_version) facts.env.emplace_back(kCudaVersion, *entry->cuda_version);
    if (entry->arch_list) facts.env.emplace_back(kTorchArchList, *entry->arch_list);
    if (entry->require_cuda) facts.env.emplace_back(kRequireCuda, *entry->require_cuda);
    return facts;
  }
  if (registry != nullptr) {
    if (const ImageConfig* config = registry->find(container.image)) {
      facts.source = Source::registry;
      facts.env = config->env;
      facts.labels = config->labels;
      return facts;
    }
  }
  if (memo == nullptr) return infer_image(container.image, db);
  auto it = memo->images.find(container.image);
  if (it == memo->images.end()) {
    it = memo->images.emplace(container.image, infer_image(container.image, db)).first;
  }
  return it->second;
}

// Resolves one container; every error names the container.
class Resolver {
 public:
  Resolver(const Workload& workload, const ContainerSpec& container, const Policy& policy,
           const CompatDb& db, MetadataMemo::Impl* memo)
      : workload_(workload),
        container_(container),
        policy_(policy),
        db_(db),
        memo_(memo),
        prefix_("container \"" + container.name + "\"") {}

  Expected<ContainerMetadata> resolve(const RegistryFacts* registry, const FlagValues* flags) {
    facts_ = image_facts(container_, policy_, db_, registry, memo_);
    for (const auto& [name, value] : facts_.env) {
      env_.set(name, EnvValue{std::string_view(value), facts_.source});
    }
    for (const EnvVar& var : container_.env) {
      env_.set(var.name, EnvValue{var.value ? std::optional<std::string_view>(*var.value)
                                            : std::optional<std::string_view>(),
                                  Source::env});
    }

    if (registry != nullptr) {
      if (const ImageConfig* config = registry->find(container_.image)) scan_ = config->scan;
    }

    ContainerMetadata md;
    if (auto err = resolve_cuda(md)) return *err;
    if (auto err = resolve_require(md)) return *err;
    scan_cuda(md);

    if (facts_.min_cc) {
      md.min_cc = Sourced<ComputeCapability>{facts_.min_cc, Source::inference, facts_.min_cc->str(),
                                             facts_.min_cc_name};
    }
    // Annotations and flags may set the CUDA version that CMake's
    // "all"/"all-major" expand against, so they are applied before archs.
    if (auto err = override_values(md, flags)) return *err;
    if (auto err = resolve_archs(md)) return *err;
    scan_archs(md);
    if (auto err = override_archs(md, flags)) return *err;
    return md;
  }

 private:
  // A set, non-empty variable; nullptr when unset or empty.
  const EnvValue* get(std::string_view name) const {
    const EnvValue* v = env_.find(name);
    if (v == nullptr || (v->value && v->value->empty())) return nullptr;
    return v;
  }

  // parse_requirement, remembered in the memo.
  Requirement requirement(std::string_view variable, std::string_view text) const {
    if (memo_ == nullptr) return parse_requirement(variable, text);
    std::string key(variable);
    key += '=';
    key += text;
    auto it = memo_->requirements.find(key);
    if (it == memo_->requirements.end()) {
      it = memo_->requirements.emplace(std::move(key), parse_requirement(variable, text)).first;
    }
    return it->second;
  }

  Error env_error(std::string_view name, const Error& e) const {
    return e.within(prefix_ + ": env " + std::string(name));
  }

  std::optional<Error> resolve_cuda(ContainerMetadata& md) const {
    if (const EnvValue* v = get(kCudaVersion)) {
      md.cuda.source = v->source;
      md.cuda.name = kCudaVersion;
      if (!v->value) return std::nullopt;  // valueFrom: unknown
      md.cuda.text = std::string(*v->value);
      auto parsed = parse_cuda_version_variable(*v->value);
      if (parsed) {
        md.cuda.value = *parsed;
      } else if (v->source == Source::env && !require_disabled()) {
        return env_error(kCudaVersion, parsed.error());
      } else {
        md.cuda.source = Source::unknown;
      }
      return std::nullopt;
    }
    if (const EnvValue* v = get(kRequireCuda)) {
      if (!v->value) return std::nullopt;
      // The image's CUDA release as its requirement states it, whether or
      // not the toolkit checks the requirement; invalid terms say nothing.
      const Requirement req = requirement(kRequireCuda, *v->value);
      for (const RequireAlternative& alt : req.alternatives) {
        for (const RequireTerm& term : alt.terms) {
          if (!term.valid() || term.key != RequireKey::cuda || term.op != RequireOp::ge ||
              term.numbers.empty()) {
            continue;
          }
          md.cuda = Sourced<CudaVersion>{CudaVersion(term.part(0), term.part(1)), v->source,
                                         "cuda>=" + term.value, std::string(kRequireCuda)};
          return std::nullopt;
        }
      }
      return std::nullopt;
    }
    for (const auto& [label, value] : facts_.labels) {
      if (label != kCudaLabel || value.empty()) continue;
      if (auto parsed = CudaVersion::parse(value)) {
        md.cuda = Sourced<CudaVersion>{*parsed, facts_.source, value, std::string(kCudaLabel)};
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  // The CUDA runtime the scan found, where the image states no CUDA
  // version (a tag's inference is no statement of the image's); where it
  // states another release, a note saying so.
  void scan_cuda(ContainerMetadata& md) const {
    if (scan_ == nullptr || !scan_->cuda_runtime) return;
    const auto runtime = parse_cuda_version_variable(*scan_->cuda_runtime);
    if (!runtime) return;
    const std::string& where =
        scan_->cuda_runtime_path.empty() ? std::string(kScannedRuntime) : scan_->cuda_runtime_path;
    const std::string ships =
        "the image ships the CUDA runtime " + *scan_->cuda_runtime + " (" + where + ")";
    if (!md.cuda.value && md.cuda.source != Source::unknown) return;  // valueFrom
    if (!md.cuda.value || md.cuda.source == Source::inference) {
      md.cuda = Sourced<CudaVersion>{*runtime, Source::scan, *scan_->cuda_runtime, where};
      return;
    }
    if (md.cuda.value->major() != runtime->major() || md.cuda.value->minor() != runtime->minor()) {
      md.scan_notes.push_back(md.cuda.name + " (" + std::string(to_string(md.cuda.source)) +
                              ") says " + md.cuda.text + "; " + ships);
    }
  }

  // The architectures of the scan's counted files, over the image's
  // variables: the narrowest file's stand for them in the decision record,
  // and the gpu-arch rule checks every counted file.
  void scan_archs(ContainerMetadata& md) const {
    if (scan_ == nullptr) return;
    CountedFiles files = counted_files(*scan_, policy_.scan);
    if (files.counted.empty()) return;
    const ScannedCode* narrowest = nullptr;
    for (const std::size_t i : files.counted) {
      const ScannedCode& file = scan_->files[i];
      if (narrowest == nullptr || file.archs.targets().size() < narrowest->archs.targets().size()) {
        narrowest = &file;
      }
    }
    if (md.archs.value && *md.archs.value != narrowest->archs) {
      md.scan_notes.push_back(md.archs.name + " (" + std::string(to_string(md.archs.source)) +
                              ") says " + md.archs.value->str() + "; " + narrowest->path + " " +
                              kernels_text(narrowest->archs));
    }
    md.archs =
        Sourced<ArchSet>{narrowest->archs, Source::scan, narrowest->archs.str(), narrowest->path};
    md.archs_unknown.clear();
    md.archs_beyond_matrix = false;
    md.scan = scan_;
    md.scan_files = std::move(files);
  }

  // NVIDIA_DISABLE_REQUIRE set to a true value: the toolkit then reads
  // neither the requirements nor CUDA_VERSION (cuda_image.go GetRequirements).
  bool require_disabled() const {
    const EnvValue* disable = env_.find(kDisableRequire);
    return disable != nullptr && disable->value && go_parse_bool_true(*disable->value);
  }

  // An arch list that names a capability newer than the matrix knows: archs
  // unknown, said so; false when the list is within the matrix.
  bool beyond_matrix(ContainerMetadata& md, Source source, std::string_view name,
                     std::string_view text, bool torch) const {
    const std::string entry = arch_list_beyond_matrix(text, torch, db_);
    if (entry.empty()) return false;
    md.archs = Sourced<ArchSet>{std::nullopt, source, std::string(text), std::string(name)};
    md.archs_unknown = "CUDA arch " + quote(entry) + " in " + std::string(name) + ": " +
                       db_.describe() + " does not know that compute capability";
    md.archs_beyond_matrix = true;
    return true;
  }

  std::optional<Error> resolve_require(ContainerMetadata& md) const {
    if (const EnvValue* disable = env_.find(kDisableRequire)) {
      const EnvValue& v = *disable;
      if (!v.value || go_parse_bool_true(*v.value)) {
        // valueFrom may or may not disable: the requirement is unknown.
        md.require_disabled = v.value.has_value();
        md.require.source = v.source;
        md.require.name = kDisableRequire;
        md.require.text =
            v.value ? std::string(kDisableRequire) + "=" + std::string(*v.value) : std::string();
        return std::nullopt;
      }
    }
    RequirementSet set;
    Source source = Source::unknown;
    bool unknown = false;
    for (const auto& [name, v] : env_) {
      if (!starts_with(name, kRequirePrefix) || starts_with(name, kRequireJetpack)) continue;
      if (v.value && v.value->empty()) continue;
      if (source == Source::unknown || v.source == Source::env) source = v.source;
      if (!v.value) {
        unknown = true;
        continue;
      }
      set.requirements.push_back(requirement(name, *v.value));
    }
    // The toolkit's legacy rule: CUDA_VERSION without NVIDIA_REQUIRE_CUDA
    // requires a driver for at least that CUDA major.minor.
    const EnvValue* cuda = get(kCudaVersion);
    if (cuda != nullptr && get(kRequireCuda) == nullptr) {
      if (source == Source::unknown || cuda->source == Source::env) source = cuda->source;
      auto version =
          cuda->value ? parse_cuda_version_variable(*cuda->value) : Expected<CudaVersion>(Error{});
      if (version) {
        set.requirements.push_back(requirement(kCudaVersion, "cuda>=" + version->str()));
      } else {
        // The toolkit refuses to start such a container; whether it runs is
        // not a question of the node.
        unknown = true;
      }
    }
    if (source == Source::unknown) return std::nullopt;
    md.require.source = source;
    md.require.text = set.str();
    md.require.name =
        set.requirements.empty() ? std::string(kRequireCuda) : set.requirements.front().variable;
    if (!unknown) md.require.value = std::move(set);
    return std::nullopt;
  }

  std::optional<Error> resolve_archs(ContainerMetadata& md) const {
    for (const std::string_view name : {kTorchArchList, kCudaArchs, kCmakeArchs}) {
      const EnvValue* v = get(name);
      if (v == nullptr) continue;
      md.archs.source = v->source;
      md.archs.name = name;
      if (!v->value) return std::nullopt;
      md.archs.text = std::string(*v->value);
      const bool torch = name == kTorchArchList;
      if (torch ? torch_arch_list_is_native(*v->value) : cmake_arch_list_is_native(*v->value)) {
        md.archs_unknown = std::string(name) + " is \"" + md.archs.text +
                           "\": the image was built for the GPUs of the machine that built it, "
                           "which the image does not record";
        return std::nullopt;
      }
      auto parsed =
          torch ? parse_torch_arch_list(*v->value, db_, md.cuda.value, policy_.arch_list_reading)
                : parse_cmake_arch_list(*v->value, db_, md.cuda.value);
      if (parsed) {
        md.archs.value = std::move(*parsed);
      } else if (beyond_matrix(md, v->source, name, *v->value, torch)) {
        // Not the image's error: only looked for once the list does not
        // parse, since a target the parser knows is never beyond the matrix.
      } else if (v->source == Source::env) {
        return env_error(name, parsed.error());
      } else {
        md.archs.source = Source::unknown;
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  // The container's own annotation ("<key>.<container>") wins over the pod-wide one.
  std::optional<std::pair<std::string, const std::string*>> annotation(std::string_view key) const {
    std::string own = std::string(key) + "." + container_.name;
    if (const std::string* v = workload_.annotation(own)) return std::make_pair(own, v);
    if (const std::string* v = workload_.annotation(key))
      return std::make_pair(std::string(key), v);
    return std::nullopt;
  }

  template <class T, class Parse>
  std::optional<Error> apply(Sourced<T>& out, Source source, const std::string& name,
                             const std::string& text, Parse parse) const {
    auto parsed = parse(text);
    if (!parsed) {
      const std::string what = source == Source::flag ? "flag " + name : "annotation " + name;
      return parsed.error().within(prefix_ + ": " + what);
    }
    out = Sourced<T>{std::move(*parsed), source, text, name};
    return std::nullopt;
  }

  // cuda and min_cc from annotations, then from flags (which win).
  std::optional<Error> override_values(ContainerMetadata& md, const FlagValues* flags) const {
    if (auto a = annotation(kAnnotationCuda)) {
      if (auto err = apply(md.cuda, Source::annotation, a->first, *a->second, CudaVersion::parse)) {
        return err;
      }
    }
    if (auto a = annotation(kAnnotationMinCc)) {
      if (auto err = apply(md.min_cc, Source::annotation, a->first, *a->second,
                           ComputeCapability::parse)) {
        return err;
      }
    }
    if (flags != nullptr && flags->cuda) {
      if (auto err = apply(md.cuda, Source::flag, "--cuda", *flags->cuda, CudaVersion::parse)) {
        return err;
      }
    }
    if (flags != nullptr && flags->min_cc) {
      if (auto err = apply(md.min_cc, Source::flag, "--min-compute-capability", *flags->min_cc,
                           ComputeCapability::parse)) {
        return err;
      }
    }
    return std::nullopt;
  }

  std::optional<Error> override_archs(ContainerMetadata& md, const FlagValues* flags) const {
    auto parse = [this, &md](std::string_view text) {
      return parse_torch_arch_list(text, db_, md.cuda.value, policy_.arch_list_reading);
    };
    if (annotation(kAnnotationArchs) || (flags != nullptr && flags->arch_list)) {
      // A person's statement outranks the image's files.
      md.scan = nullptr;
      md.scan_files = CountedFiles{};
    }
    if (auto a = annotation(kAnnotationArchs)) {
      md.archs_unknown.clear();
      md.archs_beyond_matrix = false;
      if (auto err = apply(md.archs, Source::annotation, a->first, *a->second, parse)) {
        if (!beyond_matrix(md, Source::annotation, a->first, *a->second, true)) return err;
      }
    }
    if (flags != nullptr && flags->arch_list) {
      md.archs_unknown.clear();
      md.archs_beyond_matrix = false;
      if (auto err = apply(md.archs, Source::flag, "--arch-list", *flags->arch_list, parse)) {
        if (!beyond_matrix(md, Source::flag, "--arch-list", *flags->arch_list, true)) return err;
      }
    }
    return std::nullopt;
  }

  const Workload& workload_;
  const ContainerSpec& container_;
  const Policy& policy_;
  const CompatDb& db_;
  MetadataMemo::Impl* memo_;
  std::string prefix_;
  ImageFacts facts_;
  std::shared_ptr<const ScanFacts> scan_;
  Env env_;
};

}  // namespace

bool metadata_reads_env(std::string_view name) {
  return Env::read(name);
}

Expected<ContainerMetadata> resolve_metadata(const Workload& workload,
                                             const ContainerSpec& container, const Policy& policy,
                                             const CompatDb& db, const RegistryFacts* registry,
                                             const FlagValues* flags, MetadataMemo* memo) {
  MetadataMemo::Impl* impl = memo == nullptr ? nullptr : memo->impl_.get();
  if (impl != nullptr) impl->use(db);
  return Resolver(workload, container, policy, db, impl).resolve(registry, flags);
}

}  // namespace cudagate
