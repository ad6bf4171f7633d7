// Parsing TORCH_CUDA_ARCH_LIST and CMake CUDA_ARCHITECTURES lists into ArchSets, and the
// binary-compatibility rules that say whether their code runs on a compute capability.
#include "policy/image/arch_list.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "compat-db/compat_db.h"
#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::iequals;
using ascii::is_digit;
using ascii::is_space;

bool consume_suffix(std::string_view& text, std::string_view suffix) {
  if (!text.ends_with(suffix)) return false;
  text.remove_suffix(suffix.size());
  return true;
}

// Splits on ';' and ASCII whitespace, skipping empty entries: CMake's list
// handling drops them, and whitespace in a CUDAARCHS value separates.
std::vector<std::string_view> split_entries(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != ';' && !is_space(text[i])) continue;
    if (i > start) out.push_back(text.substr(start, i - start));
    start = i + 1;
  }
  return out;
}

// Splits on ';' and ' ' as cpp_extension does (spaces become ';', then
// split on ';'), keeping empty entries.
std::vector<std::string_view> split_torch_entries(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != ';' && text[i] != ' ') continue;
    out.push_back(text.substr(start, i - start));
    start = i + 1;
  }
  return out;
}

std::string join(const std::vector<std::string_view>& parts, std::string_view separator) {
  std::string out;
  for (std::string_view p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

// Digits without a leading zero, `min`..`max` of them.
bool plain_number(std::string_view digits, std::size_t min, std::size_t max) {
  if (digits.size() < min || digits.size() > max || digits[0] == '0') return false;
  return std::all_of(digits.begin(), digits.end(), is_digit);
}

int to_int(std::string_view digits) {
  int value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}

ArchVariant variant_of(char suffix) {
  return suffix == 'a' ? ArchVariant::arch_specific : ArchVariant::family;
}

const char* suffix_of(ArchVariant v) {
  switch (v) {
    case ArchVariant::arch_specific:
      return "a";
    case ArchVariant::family:
      return "f";
    case ArchVariant::portable:
      break;
  }
  return "";
}

// One numeric PyTorch entry: X.Y, X.Ya or X.Yf, then "+PTX" (SASS and PTX),
// "(PTX)" (PTX only, the spelling ArchSet::str() gives compute_XY) or
// nothing. Case-sensitive, as cpp_extension's list of valid strings is.
std::optional<ArchTarget> parse_torch_numeric(std::string_view entry) {
  ArchTarget t;
  if (consume_suffix(entry, "+PTX")) {
    t.sass = t.ptx = true;
  } else if (consume_suffix(entry, "(PTX)")) {
    t.ptx = true;
  } else {
    t.sass = true;
  }
  if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) {
    t.variant = variant_of(entry.back());
    entry.remove_suffix(1);
  }
  const std::size_t dot = entry.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view major = entry.substr(0, dot);
  const std::string_view minor = entry.substr(dot + 1);
  if (!plain_number(major, 1, 3) || minor.size() != 1 || !is_digit(minor[0])) return std::nullopt;
  t.cc = ComputeCapability(to_int(major), minor[0] - '0');
  return t;
}

// One numeric CMake entry: 80, 90a, 100f, each optionally -real or -virtual.
// The last digit is the minor: 80 -> 8.0, 121 -> 12.1.
std::optional<ArchTarget> parse_cmake_numeric(std::string_view entry) {
  ArchTarget t;
  if (consume_suffix(entry, "-real")) {
    t.sass = true;
  } else if (consume_suffix(entry, "-virtual")) {
    t.ptx = true;
  } else {
    t.sass = t.ptx = true;
  }
  if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) {
    t.variant = variant_of(entry.back());
    entry.remove_suffix(1);
  }
  if (!plain_number(entry, 2, 4)) return std::nullopt;
  t.cc = ComputeCapability(to_int(entry.substr(0, entry.size() - 1)), entry.back() - '0');
  return t;
}

constexpr std::string_view kTorchExpected = "expected X.Y, X.Y+PTX, X.Ya or a name such as Ampere";
constexpr std::string_view kCmakeExpected =
    "expected a number such as 80 or 90a, optionally with -real or -virtual, or all or all-major";

bool cc_at_least_in_family(ComputeCapability target, ComputeCapability device) {
  return device.major() == target.major() && device.minor() >= target.minor();
}

// The capabilities some CUDA release of the matrix builds, per variant.
struct KnownTargets {
  std::set<ComputeCapability> portable;
  std::set<ComputeCapability> arch_specific;
  std::set<ComputeCapability> family;
  bool any = false;  // false: the matrix lists no release, every target is accepted

  explicit KnownTargets(const CompatDb& db) {
    for (const CudaTargets& t : db.cuda_targets) {
      portable.insert(t.all.begin(), t.all.end());
      arch_specific.insert(t.arch_specific.begin(), t.arch_specific.end());
      family.insert(t.family_specific.begin(), t.family_specific.end());
    }
    any = !portable.empty();
  }

  [[nodiscard]] const std::set<ComputeCapability>& of(ArchVariant v) const {
    switch (v) {
      case ArchVariant::arch_specific:
        return arch_specific;
      case ArchVariant::family:
        return family;
      case ArchVariant::portable:
        break;
    }
    return portable;
  }

  [[nodiscard]] bool has(const ArchTarget& t) const { return !any || of(t.variant).count(t.cc); }
};

std::string listing(const std::set<ComputeCapability>& ccs, int major = -1) {
  std::string out;
  for (const ComputeCapability& cc : ccs) {
    if (major >= 0 && cc.major() != major) continue;
    if (!out.empty()) out += ", ";
    out += cc.str();
  }
  return out;
}

// Why `t` names no target any CUDA release builds, for an error message:
// "sm_80a": "no CUDA release builds sm_80a; architecture-specific targets
// exist for 9.0, 10.0, ...".
std::string missing_target(const ArchTarget& t, const KnownTargets& known) {
  const std::string code = std::to_string(t.cc.major()) + std::to_string(t.cc.minor());
  switch (t.variant) {
    case ArchVariant::arch_specific:
      return "no CUDA release builds sm_" + code +
             "a; architecture-specific (a) targets exist for " + listing(known.arch_specific);
    case ArchVariant::family:
      return "no CUDA release builds sm_" + code + "f; family-specific (f) targets exist for " +
             listing(known.family);
    case ArchVariant::portable:
      break;
  }
  const std::string same_major = listing(known.portable, t.cc.major());
  std::string out = "no CUDA release builds for compute capability " + t.cc.str();
  if (!same_major.empty()) {
    out += "; the " + std::to_string(t.cc.major()) + ".x targets are " + same_major;
  } else {
    out += "; known targets run from " + known.portable.begin()->str() + " to " +
           known.portable.rbegin()->str();
  }
  return out;
}

// Each name of the matrix once, in file order (combined names first, as
// PyTorch's replacement needs), with the entry for `cuda`.
std::vector<const NamedArchitecture*> names_for(const CompatDb& db,
                                                std::optional<CudaVersion> cuda) {
  std::vector<const NamedArchitecture*> out;
  for (const NamedArchitecture& a : db.architectures) {
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const NamedArchitecture* n) { return n->name == a.name; });
    if (!seen) out.push_back(db.architecture(a.name, cuda));
  }
  return out;
}

std::string without_ptx(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, 4) == "+PTX") {
      i += 4;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// cpp_extension's `for named_arch, archival in named_arches.items():
// _arch_list = _arch_list.replace(named_arch, archival)` on one entry;
// `keep_ptx` false drops the expansions' own "+PTX" (the CMake reading).
std::string replace_names(std::string_view entry,
                          const std::vector<const NamedArchitecture*>& names, bool keep_ptx,
                          bool* replaced) {
  std::string text(entry);
  for (const NamedArchitecture* name : names) {
    const std::string expansion = keep_ptx ? name->arch_list : without_ptx(name->arch_list);
    std::string out;
    std::size_t from = 0;
    for (std::size_t at = text.find(name->name); at != std::string::npos;
         at = text.find(name->name, from)) {
      out.append(text, from, at - from);
      out += expansion;
      from = at + name->name.size();
      if (replaced != nullptr) *replaced = true;
    }
    out.append(text, from, std::string::npos);
    text = std::move(out);
  }
  return text;
}

// A spelling of `entry` that PyTorch accepts, when a case slip is all that
// keeps it out: "ampere" -> "Ampere", "kepler+tesla+ptx" -> "Kepler+Tesla+PTX",
// "8.0+ptx" -> "8.0+PTX", "9.0A" -> "9.0a". Empty when there is none.
std::string accepted_spelling(std::string_view entry,
                              const std::vector<const NamedArchitecture*>& names,
                              const KnownTargets& known) {
  std::string_view base = entry;
  std::string ptx;
  if (base.size() > 4 && iequals(base.substr(base.size() - 4), "+PTX")) {
    base.remove_suffix(4);
    ptx = "+PTX";
  }
  for (const NamedArchitecture* name : names) {
    if (iequals(name->name, base)) return name->name + ptx;
  }
  std::string numeric(base);
  if (!numeric.empty() && (numeric.back() == 'A' || numeric.back() == 'F')) {
    numeric.back() = ascii::to_lower(numeric.back());
  }
  numeric += ptx;
  if (numeric == entry) return {};
  if (auto t = parse_torch_numeric(numeric); t && known.has(*t)) return numeric;
  return {};
}

// One entry of TORCH_CUDA_ARCH_LIST, read as cpp_extension reads it.
Expected<std::vector<ArchTarget>> parse_torch_entry(
    std::string_view entry, const std::vector<const NamedArchitecture*>& names,
    const KnownTargets& known, ArchListReading reading) {
  const std::string where = quote(entry) + " in TORCH_CUDA_ARCH_LIST";
  bool replaced = false;
  const std::string expanded = replace_names(entry, names, true, &replaced);
  if (replaced) {
    // A name the matrix expands badly is the matrix's fault, not the entry's.
    for (const NamedArchitecture* name : names) {
      if (entry.find(name->name) == std::string_view::npos) continue;
      const std::vector<std::string_view> parts = split_entries(name->arch_list);
      if (parts.empty()) {
        return Error{
            "", "named CUDA arch " + quote(name->name) + " has an empty arch list in compat-db"};
      }
      for (std::string_view part : parts) {
        auto t = parse_torch_numeric(part);
        if (!t || part.find("(PTX)") != std::string_view::npos) {
          return Error{"", "named CUDA arch " + quote(name->name) + " expands to " +
                               quote(name->arch_list) + " in compat-db, whose entry " +
                               quote(part) + " is not X.Y, X.Y+PTX or X.Ya"};
        }
      }
    }
  }
  std::vector<ArchTarget> out;
  for (std::string_view part : split_torch_entries(expanded)) {
    auto t = parse_torch_numeric(part);
    if (t && !replaced && !known.has(*t)) {
      return Error{"", "unknown CUDA arch " + where + ": " + missing_target(*t, known)};
    }
    if (!t || (replaced && part.find("(PTX)") != std::string_view::npos)) {
      if (replaced) {
        std::string message = where + " reads as " + quote(expanded) + " in PyTorch, whose " +
                              quote(part) + " is no CUDA arch";
        std::string_view bare = entry;
        if (consume_suffix(bare, "+PTX")) {
          const std::string members = replace_names(bare, names, false, nullptr);
          std::string each;
          for (std::string_view m : split_torch_entries(members)) {
            if (!each.empty()) each += ';';
            each += std::string(m) + "+PTX";
          }
          message += ": " + quote(bare) + " already carries PTX for its newest member; write " +
                     quote(bare) + ", or its members with PTX, " + quote(each);
        }
        return Error{"", message};
      }
      std::string message = "unknown CUDA arch " + where + ": ";
      const std::string spelling = accepted_spelling(entry, names, known);
      if (!spelling.empty()) {
        message += "PyTorch reads names and \"+PTX\" case-sensitively; write " + quote(spelling);
      } else {
        message += kTorchExpected;
      }
      return Error{"", message};
    }
    if (!known.has(*t)) {
      return Error{"", "CUDA arch " + where + " reads as " + quote(expanded) + ", whose " +
                           quote(part) + " names no target: " + missing_target(*t, known)};
    }
    out.push_back(*t);
  }
  if (replaced && reading == ArchListReading::cmake) {
    // Same entries, without the PTX the names' expansions bring.
    out.clear();
    const std::string strict = replace_names(entry, names, false, nullptr);
    for (std::string_view part : split_torch_entries(strict)) {
      out.push_back(*parse_torch_numeric(part));
    }
  }
  return out;
}

}  // namespace

ArchSet::ArchSet(std::vector<ArchTarget> targets) {
  std::erase_if(targets, [](const ArchTarget& t) { return !t.sass && !t.ptx; });
  const auto key = [](const ArchTarget& t) {
    return std::make_tuple(t.cc, static_cast<int>(t.variant));
  };
  std::sort(targets.begin(), targets.end(),
            [&](const ArchTarget& a, const ArchTarget& b) { return key(a) < key(b); });
  for (const ArchTarget& t : targets) {
    if (!targets_.empty() && key(targets_.back()) == key(t)) {
      targets_.back().sass = targets_.back().sass || t.sass;
      targets_.back().ptx = targets_.back().ptx || t.ptx;
    } else {
      targets_.push_back(t);
    }
  }
}

bool ArchSet::runs_on(ComputeCapability cc, ArchMatch match, const CompatDb& db) const {
  const bool tegra_device = db.is_tegra(cc);
  for (const ArchTarget& t : targets_) {
    if (t.sass) {
      if (match == ArchMatch::exact || t.variant == ArchVariant::arch_specific || tegra_device ||
          db.is_tegra(t.cc)) {
        if (t.cc == cc) return true;
      } else if (cc_at_least_in_family(t.cc, cc)) {
        return true;
      }
    }
    if (t.ptx) {
      switch (t.variant) {
        case ArchVariant::portable:
          if (cc >= t.cc) return true;
          break;
        case ArchVariant::arch_specific:
          if (cc == t.cc) return true;
          break;
        case ArchVariant::family:
          if (cc_at_least_in_family(t.cc, cc)) return true;
          break;
      }
    }
  }
  return false;
}

std::optional<ComputeCapability> ArchSet::oldest() const {
  if (targets_.empty()) return std::nullopt;
  return targets_.front().cc;  // sorted by capability first
}

std::string target_str(const ArchTarget& t) {
  std::string out = t.cc.str();
  out += suffix_of(t.variant);
  if (t.sass && t.ptx) {
    out += "+PTX";
  } else if (t.ptx) {
    out += "(PTX)";
  }
  return out;
}

std::string ArchSet::str() const {
  std::string out;
  for (const ArchTarget& t : targets_) {
    if (!out.empty()) out += ';';
    out += target_str(t);
  }
  return out;
}

bool torch_arch_list_is_native(std::string_view text) {
  return text == "native";
}

bool cmake_arch_list_is_native(std::string_view text) {
  const std::vector<std::string_view> entries = split_entries(text);
  return std::any_of(entries.begin(), entries.end(),
                     [](std::string_view e) { return iequals(e, "native"); });
}

Expected<ArchSet> parse_torch_arch_list(std::string_view text, const CompatDb& db,
                                        std::optional<CudaVersion> cuda, ArchListReading reading) {
  const std::vector<std::string_view> separated = split_entries(text);
  if (separated.empty()) {
    return Error{"", "empty TORCH_CUDA_ARCH_LIST: " + std::string(kTorchExpected) +
                         ", separated by ';' or spaces"};
  }
  if (torch_arch_list_is_native(text)) {
    return Error{"",
                 "TORCH_CUDA_ARCH_LIST \"native\" builds for the GPUs of the machine that ran the "
                 "build, which the image does not record: name the architectures, such as " +
                     quote(std::string("8.0;9.0"))};
  }
  // cpp_extension turns spaces into ';' and nothing else: a tab or a line
  // break stays inside an entry, which no valid entry contains.
  if (const std::size_t at = text.find_first_of("\t\n\r\v\f"); at != std::string_view::npos) {
    return Error{"", "TORCH_CUDA_ARCH_LIST " + quote(text) + " contains " +
                         quote(text.substr(at, 1)) +
                         ", which PyTorch does not read as a separator (only ';' and spaces "
                         "are): write " +
                         quote(join(separated, ";"))};
  }
  const std::vector<std::string_view> entries = split_torch_entries(text);
  if (entries.size() != separated.size()) {
    return Error{"", "TORCH_CUDA_ARCH_LIST " + quote(text) +
                         " has an empty entry, which PyTorch refuses (a leading, trailing or "
                         "doubled ';' or space): write " +
                         quote(join(separated, ";"))};
  }
  const std::vector<const NamedArchitecture*> names = names_for(db, cuda);
  const KnownTargets known(db);
  std::vector<ArchTarget> targets;
  for (std::string_view entry : entries) {
    auto parsed = parse_torch_entry(entry, names, known, reading);
    if (!parsed) return parsed.error();
    targets.insert(targets.end(), parsed->begin(), parsed->end());
  }
  return ArchSet(std::move(targets));
}

std::string arch_list_beyond_matrix(std::string_view text, bool torch, const CompatDb& db) {
  for (std::string_view entry : torch ? split_torch_entries(text) : split_entries(text)) {
    const auto target = torch ? parse_torch_numeric(entry) : parse_cmake_numeric(entry);
    if (target && db.capability_beyond_known(target->cc)) return std::string(entry);
  }
  return {};
}

Expected<ArchSet> parse_cmake_arch_list(std::string_view text, const CompatDb& db,
                                        std::optional<CudaVersion> cuda) {
  const std::vector<std::string_view> entries = split_entries(text);
  if (entries.empty()) {
    return Error{"",
                 "empty CUDA_ARCHITECTURES: " + std::string(kCmakeExpected) + ", separated by ';'"};
  }
  const KnownTargets known(db);
  std::vector<ArchTarget> targets;
  for (std::string_view entry : entries) {
    if (auto t = parse_cmake_numeric(entry)) {
      if (!known.has(*t)) {
        return Error{"", "unknown CUDA architecture " + quote(entry) +
                             " in CUDA_ARCHITECTURES: " + missing_target(*t, known)};
      }
      targets.push_back(*t);
      continue;
    }
    if (entry == "all" || entry == "all-major") {
      const bool major_only = entry == "all-major";
      if (!cuda) {
        return Error{"", quote(entry) +
                             " in CUDA_ARCHITECTURES depends on the CUDA release the image was "
                             "built with, which is unknown: declare the CUDA version "
                             "(cudagate.io/cuda-version) or the architectures "
                             "(cudagate.io/arch-list)"};
      }
      const CudaTargets* known_release = db.targets_for(*cuda);
      const std::vector<ComputeCapability>* list = nullptr;
      if (known_release != nullptr) {
        list = major_only ? &known_release->all_major : &known_release->all;
      }
      if (list == nullptr || list->empty()) {
        return Error{"", quote(entry) +
                             " in CUDA_ARCHITECTURES: compat-db does not know what "
                             "CUDA " +
                             cuda->str() +
                             " can compile for; declare the architectures "
                             "(cudagate.io/arch-list)"};
      }
      const ComputeCapability highest = *std::max_element(list->begin(), list->end());
      for (const ComputeCapability& cc : *list) {
        targets.push_back(ArchTarget{cc, ArchVariant::portable, true, cc == highest});
      }
      continue;
    }
    if (iequals(entry, "native")) {
      return Error{"",
                   "\"native\" in CUDA_ARCHITECTURES names the GPUs of the host that built "
                   "the image, which the image does not record: declare the architectures "
                   "with the cudagate.io/arch-list annotation instead"};
    }
    if (iequals(entry, "OFF") || iequals(entry, "FALSE") || iequals(entry, "NO")) {
      return Error{"", "CUDA_ARCHITECTURES is " + quote(entry) +
                           ", which builds no GPU code: " + std::string(kCmakeExpected)};
    }
    return Error{"", "unknown CUDA architecture " + quote(entry) +
                         " in CUDA_ARCHITECTURES: " + std::string(kCmakeExpected)};
  }
  return ArchSet(std::move(targets));
}

std::vector<ArchTarget> targets_not_built_by(const ArchSet& set, CudaVersion cuda,
                                             const CompatDb& db) {
  std::vector<ArchTarget> out;
  const CudaTargets* release = db.targets_for(cuda);
  if (release == nullptr || release->all.empty()) return out;
  for (const ArchTarget& t : set.targets()) {
    const std::vector<ComputeCapability>* list = &release->all;
    if (t.variant == ArchVariant::arch_specific) list = &release->arch_specific;
    if (t.variant == ArchVariant::family) list = &release->family_specific;
    if (std::find(list->begin(), list->end(), t.cc) == list->end()) out.push_back(t);
  }
  return out;
}

}  // namespace cudagate
