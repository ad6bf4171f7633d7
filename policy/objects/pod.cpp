// Reading workloads from manifests (Pods and controllers' pod templates, in lists and
// multi-document files), and Kubernetes resource quantities as whole counts.
#include "policy/objects/pod.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "policy/objects/document.h"
#include "policy/objects/json_view.h"
#include "policy/objects/workload_reader.h"
#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::is_digit;

using nlohmann::json;
// --- Quantities ---

Error not_a_count(std::string_view text) {
  return Error{"", "expected an integer, got " + quote(text)};
}

// Multiplies `value` by base^exp, reporting overflow.
bool scale(std::uint64_t& value, std::uint64_t base, int exp) {
  for (int i = 0; i < exp; ++i) {
    if (__builtin_mul_overflow(value, base, &value)) return false;
  }
  return true;
}

}  // namespace

// The Kubernetes quantity grammar: sign, digits, optional fraction, then a
// binary suffix (Ki..Ei), a decimal suffix (n u m k M G T P E) or an
// exponent (e3). The value must be a non-negative whole number.
Expected<std::int64_t> parse_count_text(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t i = 0;
  std::string digits;
  while (i < s.size() && is_digit(s[i])) digits += s[i++];
  int exp10 = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) {
      digits += s[i++];
      --exp10;
    }
  }
  if (digits.empty()) return not_a_count(text);
  const std::string_view suffix = s.substr(i);
  int exp2 = 0;
  static constexpr std::array<std::pair<std::string_view, int>, 6> kBinary = {
      {{"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}}};
  static constexpr std::array<std::pair<std::string_view, int>, 9> kDecimal = {{{"n", -9},
                                                                                {"u", -6},
                                                                                {"m", -3},
                                                                                {"", 0},
                                                                                {"k", 3},
                                                                                {"M", 6},
                                                                                {"G", 9},
                                                                                {"T", 12},
                                                                                {"P", 15}}};
  bool known = false;
  for (const auto& [name, e] : kBinary) {
    if (suffix == name) {
      exp2 = e;
      known = true;
    }
  }
  for (const auto& [name, e] : kDecimal) {
    if (suffix == name) {
      exp10 += e;
      known = true;
    }
  }
  if (suffix == "E") {
    exp10 += 18;
    known = true;
  }
  if (!known && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view e = suffix.substr(1);
    bool e_negative = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      e_negative = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3 || !std::all_of(e.begin(), e.end(), is_digit)) {
      return not_a_count(text);
    }
    const int value = std::stoi(std::string(e));
    exp10 += e_negative ? -value : value;
    known = true;
  }
  if (!known) return not_a_count(text);

  // Strip leading zeros, then move trailing zeros into the exponent.
  const auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) return std::int64_t{0};
  digits.erase(0, first);
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  if (digits.size() > 19) return Error{"", "quantity " + quote(text) + " is too large"};
  std::uint64_t value = std::stoull(digits);
  if (exp10 < 0) {
    // A whole number only if 10^-exp10 divides value * 2^exp2.
    for (int k = 0; k < -exp10; ++k) {
      if (value % 5 != 0) return not_a_count(text);
      value /= 5;
      if (exp2 > 0) {
        --exp2;
      } else if (value % 2 == 0) {
        value /= 2;
      } else {
        return not_a_count(text);
      }
    }
    exp10 = 0;
  }
  if (negative) return Error{"", "must not be negative, got " + quote(text)};
  if (!scale(value, 10, exp10) || !scale(value, 2, exp2) ||
      value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return Error{"", "quantity " + quote(text) + " is too large"};
  }
  return static_cast<std::int64_t>(value);
}

bool is_workload_kind(std::string_view kind) {
  const auto& kLayouts = workload_reader::kLayouts;
  return std::any_of(kLayouts.begin(), kLayouts.end(),
                     [&](const workload_reader::KindLayout& l) { return l.kind == kind; });
}

bool is_extended_resource(std::string_view name) {
  const auto slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view domain = name.substr(0, slash);
  constexpr std::string_view kKube = "kubernetes.io";
  if (domain == kKube) return false;
  if (domain.size() > kKube.size() && domain.substr(domain.size() - kKube.size()) == kKube &&
      domain[domain.size() - kKube.size() - 1] == '.') {
    return false;
  }
  return true;
}

Expected<std::int64_t> parse_count_quantity(const json& value) {
  return workload_reader::count_quantity(NlohmannView(value));
}

const std::string* Workload::annotation(std::string_view key) const {
  return find_value(annotations, key);
}

Expected<Workload> workload_from_json(const json& object, std::string_view where) {
  return workload_from_view(NlohmannView(object), where);
}

Expected<std::vector<Workload>> parse_workloads(std::string_view text, std::string_view source) {
  auto docs = parse_source_documents(text, source);
  if (!docs) return docs.error();
  std::vector<Workload> out;

  // Reads one object: a workload, a List of them, or something to skip.
  auto take = [&out](const json& value, const std::string& where) -> std::optional<Error> {
    if (!value.is_object()) return std::nullopt;
    const auto kind_it = value.find("kind");
    if (kind_it == value.end() || kind_it->is_null()) return std::nullopt;
    if (!kind_it->is_string()) return Error{"kind", type_error("a string", *kind_it)}.within(where);
    const auto& kind = kind_it->get_ref<const std::string&>();
    if (is_workload_kind(kind)) {
      auto w = workload_from_json(value, where);
      if (!w) return w.error();
      out.push_back(std::move(*w));
      return std::nullopt;
    }
    if (kind.size() < 4 || kind.compare(kind.size() - 4, 4, "List") != 0) return std::nullopt;
    auto items = array_field(value, "items", "");
    if (!items) return items.error().within(where);
    if (*items == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < (*items)->size(); ++i) {
      const json& item = (**items)[i];
      const std::string item_where = where + (where.empty() ? "" : ": ") + index_path("items", i);
      if (!item.is_object()) return Error{"", type_error("an object", item)}.within(item_where);
      const auto item_kind = item.find("kind");
      if (item_kind == item.end() || !item_kind->is_string() ||
          !is_workload_kind(item_kind->get_ref<const std::string&>())) {
        continue;
      }
      auto w = workload_from_json(item, item_where);
      if (!w) return w.error();
      out.push_back(std::move(*w));
    }
    return std::nullopt;
  };

  const bool several = docs->count > 1;
  for (const auto& doc : docs->documents) {
    std::string where(source);
    if (several) where += (where.empty() ? "" : ": ") + ("document " + std::to_string(doc.index));
    if (doc.value.is_array()) {
      // A JSON array of objects reads like a List's items.
      for (std::size_t i = 0; i < doc.value.size(); ++i) {
        if (auto e = take(doc.value[i], where + (where.empty() ? "" : ": ") + index_path("", i))) {
          return *e;
        }
      }
      continue;
    }
    if (auto e = take(doc.value, where)) return *e;
  }
  return out;
}

}  // namespace cudagate
