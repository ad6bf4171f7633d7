// Parsing and evaluating NVIDIA_REQUIRE_* expressions as libnvidia-container does, so that
// cudagate's verdict matches what the runtime would do on the node.
#include "policy/requirement.h"

#include <algorithm>
#include <string>
#include <utility>

#include "types/quote.h"

namespace cudagate {
namespace {

// Requirements and image references run long; errors show more of them.
constexpr std::size_t kQuotedBytes = 128;

char lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lower_ascii(c);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return lower_ascii(x) == lower_ascii(y);
         });
}

// Splits on one separator character, dropping empty pieces, as the
// toolkit's strsep loops do.
std::vector<std::string_view> split_nonempty(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

constexpr std::string_view kOperatorChars = "<>=!";

// The toolkit takes the whole run of operator characters and picks the first
// of {=, !=, <, <=, >, >=} that the run is a prefix of, so a lone "!" reads
// as "!=". Doing the same keeps cudagate's verdict equal to the runtime's.
std::optional<RequireOp> match_operator(std::string_view run) {
  static constexpr std::pair<std::string_view, RequireOp> kOps[] = {
      {"=", RequireOp::eq},  {"!=", RequireOp::ne}, {"<", RequireOp::lt},
      {"<=", RequireOp::le}, {">", RequireOp::gt},  {">=", RequireOp::ge},
  };
  for (const auto& [spelling, op] : kOps) {
    if (run.size() <= spelling.size() && spelling.substr(0, run.size()) == run) return op;
  }
  return std::nullopt;
}

std::optional<RequireKey> match_key(std::string_view key) {
  if (iequals(key, "cuda")) return RequireKey::cuda;
  if (iequals(key, "driver")) return RequireKey::driver;
  if (iequals(key, "arch")) return RequireKey::arch;
  if (iequals(key, "brand")) return RequireKey::brand;
  return std::nullopt;
}

void trim_trailing_zeros(std::vector<int>& numbers) {
  while (!numbers.empty() && numbers.back() == 0) numbers.pop_back();
}

// A version value as the toolkit compares it: digits and dots only, starting
// with a digit; runs of dots separate parts and trailing dots are ignored.
// Parts must fit in nine digits (leading zeros aside): no driver, CUDA
// release or capability comes near that.
Expected<std::vector<int>> parse_version_value(std::string_view value, std::string_view term) {
  if (!std::all_of(value.begin(), value.end(),
                   [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    return Error{"", "version " + quote(value, kQuotedBytes) + " in term " +
                         quote(term, kQuotedBytes) + " may only contain digits and dots"};
  }
  if (value.front() == '.') {
    return Error{"", "version " + quote(value, kQuotedBytes) + " in term " +
                         quote(term, kQuotedBytes) + " must start with a digit"};
  }
  std::vector<int> numbers;
  std::size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && value[i] == '0') ++i;  // leading zeros carry no value
    int n = 0;
    int digits = 0;
    for (; i < value.size() && value[i] != '.'; ++i, ++digits) {
      if (digits == 9) {
        return Error{"", "version " + quote(value, kQuotedBytes) + " in term " +
                             quote(term, kQuotedBytes) + " has a part too large to compare"};
      }
      n = n * 10 + (value[i] - '0');
    }
    numbers.push_back(n);
    while (i < value.size() && value[i] == '.') ++i;
  }
  trim_trailing_zeros(numbers);
  return numbers;
}

Expected<RequireTerm> parse_term(std::string_view term) {
  const std::size_t op_begin = term.find_first_of(kOperatorChars);
  if (op_begin == std::string_view::npos) {
    return Error{"", "term " + quote(term, kQuotedBytes) +
                         " has no operator: expected <key><op><value>, op one of =, !=, <, <=, "
                         ">, >="};
  }
  if (op_begin == 0) {
    return Error{"", "term " + quote(term, kQuotedBytes) +
                         " has no key: expected one of cuda, driver, arch, brand before the "
                         "operator"};
  }
  std::size_t op_end = term.find_first_not_of(kOperatorChars, op_begin);
  if (op_end == std::string_view::npos) op_end = term.size();
  const std::string_view key_text = term.substr(0, op_begin);
  const std::string_view op_text = term.substr(op_begin, op_end - op_begin);
  const std::string_view value = term.substr(op_end);

  const std::optional<RequireKey> key = match_key(key_text);
  if (!key) {
    return Error{"", "unknown key " + quote(key_text, kQuotedBytes) + " in term " +
                         quote(term, kQuotedBytes) + ": expected cuda, driver, arch or brand"};
  }
  const std::optional<RequireOp> op = match_operator(op_text);
  if (!op) {
    return Error{"", "unknown operator " + quote(op_text, kQuotedBytes) + " in term " +
                         quote(term, kQuotedBytes) + ": expected =, !=, <, <=, > or >="};
  }
  if (value.empty()) {
    return Error{"", "term " + quote(term, kQuotedBytes) + " has no value after the operator"};
  }

  RequireTerm out;
  out.key = *key;
  out.op = *op;
  if (*key == RequireKey::brand) {
    if (*op != RequireOp::eq && *op != RequireOp::ne) {
      return Error{
          "", "brand in term " + quote(term, kQuotedBytes) + " can only be compared with = or !="};
    }
    out.value = lower(value);
    return out;
  }
  auto numbers = parse_version_value(value, term);
  if (!numbers) return numbers.error();
  out.value = std::string(value);
  out.numbers = std::move(*numbers);
  return out;
}

// Numeric, part by part, a missing part reading as 0 (so 12.2 == 12.2.0).
bool compare(std::initializer_list<int> fact, RequireOp op, const std::vector<int>& wanted) {
  int order = 0;
  const std::size_t n = std::max(fact.size(), wanted.size());
  for (std::size_t i = 0; i < n && order == 0; ++i) {
    const int a = i < fact.size() ? fact.begin()[i] : 0;
    const int b = i < wanted.size() ? wanted[i] : 0;
    if (a != b) order = a < b ? -1 : 1;
  }
  switch (op) {
    case RequireOp::eq:
      return order == 0;
    case RequireOp::ne:
      return order != 0;
    case RequireOp::lt:
      return order < 0;
    case RequireOp::le:
      return order <= 0;
    case RequireOp::gt:
      return order > 0;
    case RequireOp::ge:
      return order >= 0;
  }
  return false;
}

Tristate evaluate_term(const RequireTerm& term, const DeviceFacts& device) {
  const auto verdict = [](bool b) { return b ? Tristate::yes : Tristate::no; };
  switch (term.key) {
    case RequireKey::cuda:
      if (!device.max_cuda) return Tristate::unknown;
      return verdict(
          compare({device.max_cuda->major(), device.max_cuda->minor()}, term.op, term.numbers));
    case RequireKey::driver:
      if (!device.driver) return Tristate::unknown;
      return verdict(
          compare({device.driver->part(0), device.driver->part(1), device.driver->part(2)}, term.op,
                  term.numbers));
    case RequireKey::arch:
      if (!device.cc) return Tristate::unknown;
      return verdict(compare({device.cc->major(), device.cc->minor()}, term.op, term.numbers));
    case RequireKey::brand: {
      if (!device.brand) return Tristate::unknown;
      const bool equal = iequals(*device.brand, term.value);
      return verdict(term.op == RequireOp::eq ? equal : !equal);
    }
  }
  return Tristate::unknown;
}

Tristate evaluate_alternative(const RequireAlternative& alt, const DeviceFacts& device) {
  Tristate result = Tristate::yes;
  for (const RequireTerm& term : alt.terms) {
    const Tristate t = evaluate_term(term, device);
    if (t == Tristate::no) return Tristate::no;
    if (t == Tristate::unknown) result = Tristate::unknown;
  }
  return result;
}

// A variable without alternatives holds: the toolkit finds nothing to check.
Tristate evaluate_requirement(const Requirement& req, const DeviceFacts& device) {
  if (req.alternatives.empty()) return Tristate::yes;
  Tristate result = Tristate::no;
  for (const RequireAlternative& alt : req.alternatives) {
    const Tristate t = evaluate_alternative(alt, device);
    if (t == Tristate::yes) return Tristate::yes;
    if (t == Tristate::unknown) result = Tristate::unknown;
  }
  return result;
}

}  // namespace

Expected<Requirement> parse_requirement(std::string_view variable, std::string_view text) {
  Requirement req;
  req.variable = std::string(variable);
  req.text = std::string(text);
  for (std::string_view alt_text : split_nonempty(text, ' ')) {
    RequireAlternative alt;
    alt.text = std::string(alt_text);
    for (std::string_view term_text : split_nonempty(alt_text, ',')) {
      auto term = parse_term(term_text);
      if (!term) return term.error().within(req.variable);
      alt.terms.push_back(std::move(*term));
    }
    req.alternatives.push_back(std::move(alt));
  }
  return req;
}

std::string RequirementSet::str() const {
  std::string out;
  for (const Requirement& r : requirements) {
    if (!out.empty()) out += "; ";
    out += r.text;
  }
  return out;
}

RequirementResult evaluate_requirements(const RequirementSet& set, const DeviceFacts& device) {
  RequirementResult result;
  const Requirement* first_unknown = nullptr;
  for (const Requirement& req : set.requirements) {
    const Tristate t = evaluate_requirement(req, device);
    if (t == Tristate::no) {
      // The toolkit names the first alternative, whichever one failed, and
      // adds its advice only when that alternative is literally "cuda>=...".
      const std::string& first = req.alternatives.front().text;
      result.satisfied = Tristate::no;
      result.variable = req.variable;
      result.condition = "unsatisfied condition: " + first;
      if (first.starts_with("cuda>=")) {
        result.condition +=
            ", please update your driver to a newer version, or use an earlier cuda container";
      }
      return result;
    }
    if (t == Tristate::unknown && first_unknown == nullptr) first_unknown = &req;
  }
  if (first_unknown != nullptr) {
    result.satisfied = Tristate::unknown;
    result.variable = first_unknown->variable;
  }
  return result;
}

}  // namespace cudagate
