// Parsing TORCH_CUDA_ARCH_LIST and CMake CUDA_ARCHITECTURES lists into ArchSets, and the
// binary-compatibility rules that say whether their code runs on a compute capability.
#include "policy/arch_list.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <utility>

#include "compat-db/compat_db.h"
#include "types/quote.h"

namespace cudagate {
namespace {
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool consume_suffix_ci(std::string_view& text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  if (!iequals(text.substr(text.size() - suffix.size()), suffix)) return false;
  text.remove_suffix(suffix.size());
  return true;
}

bool consume_suffix(std::string_view& text, std::string_view suffix) {
  if (!text.ends_with(suffix)) return false;
  text.remove_suffix(suffix.size());
  return true;
}

// Splits on ';' and ASCII whitespace, skipping empty entries. PyTorch turns
// spaces into ';' before splitting; other whitespace (a trailing newline in a
// YAML block) carries no meaning either, so it separates too.
std::vector<std::string_view> split_entries(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const bool sep = i == text.size() || text[i] == ';' || text[i] == ' ' || text[i] == '\t' ||
                     text[i] == '\n' || text[i] == '\r' || text[i] == '\v' || text[i] == '\f';
    if (!sep) continue;
    if (i > start) out.push_back(text.substr(start, i - start));
    start = i + 1;
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
// "(PTX)" (PTX only, the spelling ArchSet::str() gives compute_XY) or nothing.
std::optional<ArchTarget> parse_torch_numeric(std::string_view entry) {
  ArchTarget t;
  if (consume_suffix_ci(entry, "+PTX")) {
    t.sass = t.ptx = true;
  } else if (consume_suffix_ci(entry, "(PTX)")) {
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

bool ArchSet::runs_on(ComputeCapability cc, ArchMatch match) const {
  for (const ArchTarget& t : targets_) {
    if (t.sass) {
      if (match == ArchMatch::exact) {
        if (t.cc == cc) return true;
      } else {
        switch (t.variant) {
          case ArchVariant::portable:
          case ArchVariant::family:
            if (cc_at_least_in_family(t.cc, cc)) return true;
            break;
          case ArchVariant::arch_specific:
            if (t.cc == cc) return true;
            break;
        }
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

std::string ArchSet::str() const {
  std::string out;
  for (const ArchTarget& t : targets_) {
    if (!out.empty()) out += ';';
    out += t.cc.str();
    out += suffix_of(t.variant);
    if (t.sass && t.ptx) {
      out += "+PTX";
    } else if (t.ptx) {
      out += "(PTX)";
    }
  }
  return out;
}

Expected<ArchSet> parse_torch_arch_list(std::string_view text, const CompatDb& db) {
  const std::vector<std::string_view> entries = split_entries(text);
  if (entries.empty()) {
    return Error{"", "empty TORCH_CUDA_ARCH_LIST: " + std::string(kTorchExpected) +
                         ", separated by ';' or spaces"};
  }
  std::vector<ArchTarget> targets;
  for (std::string_view entry : entries) {
    if (auto t = parse_torch_numeric(entry)) {
      targets.push_back(*t);
      continue;
    }
    const NamedArchitecture* named = db.architecture(entry);
    if (named == nullptr || !iequals(named->name, entry)) {
      return Error{"", "unknown CUDA arch " + quote(entry) +
                           " in TORCH_CUDA_ARCH_LIST: " + std::string(kTorchExpected)};
    }
    // A named generation expands to numeric entries only: names inside its
    // expansion would let the data recurse.
    const std::vector<std::string_view> expansion = split_entries(named->arch_list);
    if (expansion.empty()) {
      return Error{
          "", "named CUDA arch " + quote(named->name) + " has an empty arch list in compat-db"};
    }
    for (std::string_view part : expansion) {
      auto t = parse_torch_numeric(part);
      if (!t) {
        return Error{"", "named CUDA arch " + quote(named->name) + " expands to " +
                             quote(named->arch_list) + " in compat-db, whose entry " + quote(part) +
                             " is not X.Y, X.Y+PTX or X.Ya"};
      }
      targets.push_back(*t);
    }
  }
  return ArchSet(std::move(targets));
}

Expected<ArchSet> parse_cmake_arch_list(std::string_view text, const CompatDb& db,
                                        std::optional<CudaVersion> cuda) {
  const std::vector<std::string_view> entries = split_entries(text);
  if (entries.empty()) {
    return Error{"",
                 "empty CUDA_ARCHITECTURES: " + std::string(kCmakeExpected) + ", separated by ';'"};
  }
  std::vector<ArchTarget> targets;
  for (std::string_view entry : entries) {
    if (auto t = parse_cmake_numeric(entry)) {
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
      const CudaTargets* known = db.targets_for(*cuda);
      const std::vector<ComputeCapability>* list = nullptr;
      if (known != nullptr) list = major_only ? &known->all_major : &known->all;
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

}  // namespace cudagate
