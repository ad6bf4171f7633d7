// Parsing and evaluating NVIDIA_REQUIRE_* expressions as libnvidia-container does, so that
// cudagate's verdict matches what the runtime would do on the node.
#include "policy/image/requirement.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::iequals;
using ascii::lower;

// Requirements and image references run long; errors show more of them.
constexpr std::size_t kTermQuotedBytes = 128;

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

// A version value as the toolkit compares it (dsl_compare_version): digits
// and dots only, starting with a digit; runs of dots separate parts and
// trailing dots are ignored. strtoumax reads each part, so a part at or above
// UINTMAX_MAX (2^64-1 here) is an error, as the toolkit's check has it.
std::optional<std::string> parse_version_value(std::string_view value, std::string_view term,
                                               std::vector<std::uint64_t>& numbers) {
  if (!std::all_of(value.begin(), value.end(),
                   [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    return "version " + quote(value, kTermQuotedBytes) + " in term " +
           quote(term, kTermQuotedBytes) + " may only contain digits and dots";
  }
  if (value.front() == '.') {
    return "version " + quote(value, kTermQuotedBytes) + " in term " +
           quote(term, kTermQuotedBytes) + " must start with a digit";
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  numbers.clear();
  std::size_t i = 0;
  while (i < value.size()) {
    std::uint64_t n = 0;
    bool overflow = false;
    for (; i < value.size() && value[i] != '.'; ++i) {
      const auto digit = static_cast<std::uint64_t>(value[i] - '0');
      if (n > (kMax - digit) / 10) overflow = true;
      if (!overflow) n = n * 10 + digit;
    }
    if (overflow || n == kMax) {
      return "version " + quote(value, kTermQuotedBytes) + " in term " +
             quote(term, kTermQuotedBytes) + " has a part too large to compare";
    }
    numbers.push_back(n);
    while (i < value.size() && value[i] == '.') ++i;
  }
  while (!numbers.empty() && numbers.back() == 0) numbers.pop_back();
  return std::nullopt;
}

// Reads one term; a term the toolkit rejects keeps its reason in `error`.
RequireTerm parse_term(std::string_view term) {
  RequireTerm out;
  out.text = std::string(term);
  const std::size_t op_begin = term.find_first_of(kOperatorChars);
  if (op_begin == std::string_view::npos) {
    out.error = "term " + quote(term, kTermQuotedBytes) +
                " has no operator: expected <key><op><value>, op one of =, !=, <, <=, >, >=";
    return out;
  }
  if (op_begin == 0) {
    out.error = "term " + quote(term, kTermQuotedBytes) +
                " has no key: expected one of cuda, driver, arch, brand before the operator";
    return out;
  }
  std::size_t op_end = term.find_first_not_of(kOperatorChars, op_begin);
  if (op_end == std::string_view::npos) op_end = term.size();
  const std::string_view key_text = term.substr(0, op_begin);
  const std::string_view op_text = term.substr(op_begin, op_end - op_begin);
  const std::string_view value = term.substr(op_end);

  // The toolkit checks the operator and the value before it looks the key up.
  const std::optional<RequireOp> op = match_operator(op_text);
  if (!op) {
    out.error = "unknown operator " + quote(op_text, kTermQuotedBytes) + " in term " +
                quote(term, kTermQuotedBytes) + ": expected =, !=, <, <=, > or >=";
    return out;
  }
  if (value.empty()) {
    out.error = "term " + quote(term, kTermQuotedBytes) + " has no value after the operator";
    return out;
  }
  const std::optional<RequireKey> key = match_key(key_text);
  if (!key) {
    out.error = "unknown key " + quote(key_text, kTermQuotedBytes) + " in term " +
                quote(term, kTermQuotedBytes) + ": expected cuda, driver, arch or brand";
    return out;
  }
  out.key = *key;
  out.op = *op;
  if (*key == RequireKey::brand) {
    if (*op != RequireOp::eq && *op != RequireOp::ne) {
      out.error =
          "brand in term " + quote(term, kTermQuotedBytes) + " can only be compared with = or !=";
    }
    out.value = lower(value);
    return out;
  }
  out.value = std::string(value);
  if (auto error = parse_version_value(value, term, out.numbers)) out.error = std::move(*error);
  return out;
}

// Numeric, part by part, a missing part reading as 0 (so 12.2 == 12.2.0).
bool compare(std::initializer_list<std::uint64_t> fact, RequireOp op,
             const std::vector<std::uint64_t>& wanted) {
  int order = 0;
  const std::size_t n = std::max(fact.size(), wanted.size());
  for (std::size_t i = 0; i < n && order == 0; ++i) {
    const std::uint64_t a = i < fact.size() ? fact.begin()[i] : 0;
    const std::uint64_t b = i < wanted.size() ? wanted[i] : 0;
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

std::uint64_t u(int part) {
  return static_cast<std::uint64_t>(part < 0 ? 0 : part);
}

// A valid term on the node.
Tristate evaluate_term(const RequireTerm& term, const DeviceFacts& device) {
  const auto verdict = [](bool b) { return b ? Tristate::yes : Tristate::no; };
  switch (term.key) {
    case RequireKey::cuda: {
      if (!device.max_cuda) return Tristate::unknown;
      const bool holds = compare({u(device.max_cuda->major()), u(device.max_cuda->minor())},
                                 term.op, term.numbers);
      if (!device.max_cuda_floor) return verdict(holds);
      // The driver's CUDA is the floor or newer: ">=" and ">" that hold at
      // the floor hold above it, "<" and "<=" that fail there fail above it,
      // and "=" fails above a floor already past the value.
      switch (term.op) {
        case RequireOp::ge:
        case RequireOp::gt:
          return holds ? Tristate::yes : Tristate::unknown;
        case RequireOp::lt:
        case RequireOp::le:
          return holds ? Tristate::unknown : Tristate::no;
        case RequireOp::eq:
          return compare({u(device.max_cuda->major()), u(device.max_cuda->minor())}, RequireOp::gt,
                         term.numbers)
                     ? Tristate::no
                     : Tristate::unknown;
        case RequireOp::ne:
          return compare({u(device.max_cuda->major()), u(device.max_cuda->minor())}, RequireOp::gt,
                         term.numbers)
                     ? Tristate::yes
                     : Tristate::unknown;
      }
      return Tristate::unknown;
    }
    case RequireKey::driver:
      if (!device.driver) return Tristate::unknown;
      return verdict(
          compare({u(device.driver->part(0)), u(device.driver->part(1)), u(device.driver->part(2))},
                  term.op, term.numbers));
    case RequireKey::arch:
      if (!device.cc) return Tristate::unknown;
      return verdict(
          compare({u(device.cc->major()), u(device.cc->minor())}, term.op, term.numbers));
    case RequireKey::brand: {
      if (!device.brand) return Tristate::unknown;
      const bool equal = iequals(*device.brand, term.value);
      return verdict(term.op == RequireOp::eq ? equal : !equal);
    }
  }
  return Tristate::unknown;
}

// Where one variable's evaluation can end on a node whose facts may be
// unknown: each flag is one possible end; `invalid` is the first invalid
// term (in evaluation order) that some path reaches.
struct Ends {
  bool holds = false;
  bool fails = false;
  const RequireTerm* invalid = nullptr;

  void add(const Ends& other) {
    holds = holds || other.holds;
    fails = fails || other.fails;
    if (invalid == nullptr) invalid = other.invalid;
  }
};

// dsl_evaluate, for every way the unknown facts could go. Groups are
// walked from the last to the first, so that "what happens from group g on
// after a failed group" is known when group g-1 needs it. A group fails at
// its first false term and hands over to the next group; it holds when
// every term is true; an empty group stops there with the value of the
// last term evaluated (true only when it comes first).
Ends evaluate_requirement(const Requirement& req, const DeviceFacts& device) {
  // After a failed group, reaching the end (or an empty group) fails.
  Ends after_failure{false, true, nullptr};
  for (std::size_t g = req.alternatives.size(); g-- > 0;) {
    const RequireAlternative& alt = req.alternatives[g];
    if (alt.terms.empty()) {
      after_failure = Ends{false, true, nullptr};
      continue;
    }
    Ends from_term{true, false, nullptr};  // past the last term: the group holds
    for (std::size_t k = alt.terms.size(); k-- > 0;) {
      const RequireTerm& term = alt.terms[k];
      if (!term.valid()) {
        from_term = Ends{false, false, &term};
        continue;
      }
      const Tristate t = evaluate_term(term, device);
      Ends here;
      if (t != Tristate::no) here.add(from_term);
      // Added first, the rest of this group names its invalid term before
      // later groups do: it comes first in evaluation order.
      if (t != Tristate::yes) here.add(after_failure);
      from_term = here;
    }
    after_failure = from_term;
  }
  // Before any term is evaluated the toolkit's result is "true": a value
  // without groups, or starting with an empty group, holds.
  if (req.alternatives.empty() || req.alternatives.front().terms.empty()) {
    return Ends{true, false, nullptr};
  }
  return after_failure;
}

}  // namespace

int RequireTerm::part(std::size_t i) const {
  if (i >= numbers.size()) return 0;
  return numbers[i] > static_cast<std::uint64_t>(std::numeric_limits<int>::max())
             ? std::numeric_limits<int>::max()
             : static_cast<int>(numbers[i]);
}

const RequireTerm* Requirement::first_invalid() const {
  for (const RequireAlternative& alt : alternatives) {
    for (const RequireTerm& term : alt.terms) {
      if (!term.valid()) return &term;
    }
  }
  return nullptr;
}

Requirement parse_requirement(std::string_view variable, std::string_view text) {
  Requirement req;
  req.variable = std::string(variable);
  req.text = std::string(text);
  for (std::string_view alt_text : split_nonempty(text, ' ')) {
    RequireAlternative alt;
    alt.text = std::string(alt_text);
    for (std::string_view term_text : split_nonempty(alt_text, ',')) {
      alt.terms.push_back(parse_term(term_text));
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
    const Ends ends = evaluate_requirement(req, device);
    if (!ends.holds) {
      // Every path fails; one that reaches an invalid term is reported as
      // such, the image's defect rather than the node's.
      result.satisfied = Tristate::no;
      result.variable = req.variable;
      if (ends.invalid != nullptr) {
        result.invalid = ends.invalid;
        return result;
      }
      // The toolkit names the value's first space-separated token, whichever
      // group failed, and adds its advice only when that token is literally
      // "cuda>=...".
      const std::string_view first = std::string_view(req.text).substr(0, req.text.find(' '));
      result.condition = "unsatisfied condition: " + std::string(first);
      if (first.starts_with("cuda>=")) {
        result.condition +=
            ", please update your driver to a newer version, or use an earlier cuda container";
      }
      return result;
    }
    if ((ends.fails || ends.invalid != nullptr) && first_unknown == nullptr) first_unknown = &req;
  }
  if (first_unknown != nullptr) {
    result.satisfied = Tristate::unknown;
    result.variable = first_unknown->variable;
  }
  return result;
}

}  // namespace cudagate
