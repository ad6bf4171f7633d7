// The label selector parser: a hand-written scanner over the grammar of
// k8s.io/apimachinery/pkg/labels, with errors that name the column.
#include "policy/objects/label_selector.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "policy/objects/k8s_names.h"
#include "types/ascii.h"
#include "types/go_int.h"
#include "types/quote.h"

namespace cudagate {
namespace {

std::optional<std::string> key_problem(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) {
    if (is_qualified_name_part(key)) return std::nullopt;
    return "a label key is at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends";
  }
  if (!is_dns1123_subdomain(key.substr(0, slash))) {
    return "a label key's prefix is a DNS subdomain (lower-case, at most 253 characters)";
  }
  if (!is_qualified_name_part(key.substr(slash + 1))) {
    return "a label key's name is at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both "
           "ends";
  }
  return std::nullopt;
}

// Characters that end a key or a value.
bool is_special(char c) {
  return c == '=' || c == '!' || c == ',' || c == '(' || c == ')' || c == '<' || c == '>' ||
         ascii::is_space(c);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<std::vector<LabelRequirement>> run() {
    std::vector<LabelRequirement> out;
    skip_space();
    if (at_end()) return fail("an empty selector would select every node: expected key=value");
    while (true) {
      auto requirement = parse_requirement();
      if (!requirement) return requirement.error();
      out.push_back(std::move(*requirement));
      skip_space();
      if (at_end()) return out;
      if (text_[pos_] != ',') return fail("expected ',' between requirements");
      ++pos_;
      skip_space();
      if (at_end()) return fail("expected a requirement after ','");
    }
  }

 private:
  Expected<LabelRequirement> parse_requirement() {
    LabelRequirement r;
    if (text_[pos_] == '!') {
      ++pos_;
      skip_space();
      auto key = parse_key();
      if (!key) return key.error();
      r.key = std::move(*key);
      r.op = LabelOp::not_exists;
      return r;
    }
    auto key = parse_key();
    if (!key) return key.error();
    r.key = std::move(*key);
    skip_space();
    if (at_end() || text_[pos_] == ',') {
      r.op = LabelOp::exists;
      return r;
    }
    if (consume("==") || consume("=")) {
      r.op = LabelOp::equals;
    } else if (consume("!=")) {
      r.op = LabelOp::not_equals;
    } else if (consume(">")) {
      r.op = LabelOp::gt;
    } else if (consume("<")) {
      r.op = LabelOp::lt;
    } else if (consume_word("notin")) {
      r.op = LabelOp::not_in;
    } else if (consume_word("in")) {
      r.op = LabelOp::in;
    } else {
      return fail("expected =, ==, !=, in, notin, >, < or ',' after key " + quote(r.key));
    }
    skip_space();
    if (r.op == LabelOp::in || r.op == LabelOp::not_in) {
      auto values = parse_set();
      if (!values) return values.error();
      r.values = std::move(*values);
      return r;
    }
    const std::size_t start = pos_;
    std::string value(scan_word());
    if (!is_label_value(value)) return fail_at(start, "invalid label value " + quote(value));
    if ((r.op == LabelOp::gt || r.op == LabelOp::lt) && !parse_go_int64(value)) {
      return fail_at(start, "expected an integer after " +
                                std::string(r.op == LabelOp::gt ? ">" : "<") + ", got " +
                                quote(value));
    }
    r.values.push_back(std::move(value));
    return r;
  }

  Expected<std::vector<std::string>> parse_set() {
    if (at_end() || text_[pos_] != '(') return fail("expected '(' to open the set of values");
    ++pos_;
    std::vector<std::string> values;
    while (true) {
      skip_space();
      const std::size_t start = pos_;
      std::string value(scan_word());
      if (!is_label_value(value)) return fail_at(start, "invalid label value " + quote(value));
      values.push_back(std::move(value));
      skip_space();
      if (at_end()) return fail("expected ')' to close the set of values");
      if (text_[pos_] == ')') {
        ++pos_;
        break;
      }
      if (text_[pos_] != ',') return fail("expected ',' or ')' in the set of values");
      ++pos_;
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }

  Expected<std::string> parse_key() {
    const std::size_t start = pos_;
    const std::string_view key = scan_word();
    if (key.empty()) return fail("expected a label key");
    if (auto problem = key_problem(key)) return fail_at(start, *problem + ", got " + quote(key));
    return std::string(key);
  }

  std::string_view scan_word() {
    const std::size_t start = pos_;
    while (!at_end() && !is_special(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  bool consume(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  // `word` followed by a space or '(' ("in(a)" is valid, "inx" a value).
  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    const std::size_t after = pos_ + word.size();
    if (after < text_.size() && !ascii::is_space(text_[after]) && text_[after] != '(') {
      return false;
    }
    pos_ = after;
    return true;
  }

  void skip_space() {
    while (!at_end() && ascii::is_space(text_[pos_])) ++pos_;
  }
  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }

  Error fail(std::string message) const { return fail_at(pos_, std::move(message)); }
  Error fail_at(std::size_t at, std::string message) const {
    return Error{"column " + std::to_string(at + 1), std::move(message)};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

bool LabelRequirement::matches(const KeyValues& labels) const {
  const std::string* value = find_value(labels, key);
  switch (op) {
    case LabelOp::exists:
      return value != nullptr;
    case LabelOp::not_exists:
      return value == nullptr;
    case LabelOp::equals:
      return value != nullptr && *value == values.front();
    case LabelOp::not_equals:
      return value == nullptr || *value != values.front();
    case LabelOp::in:
      return value != nullptr && std::binary_search(values.begin(), values.end(), *value);
    case LabelOp::not_in:
      return value == nullptr || !std::binary_search(values.begin(), values.end(), *value);
    case LabelOp::gt:
    case LabelOp::lt: {
      if (value == nullptr) return false;
      const auto have = parse_go_int64(*value);
      const auto limit = parse_go_int64(values.front());
      if (!have || !limit) return false;
      return op == LabelOp::gt ? *have > *limit : *have < *limit;
    }
  }
  return false;
}

Expected<LabelSelector> LabelSelector::parse(std::string_view text) {
  auto requirements = Parser(text).run();
  if (!requirements) return requirements.error();
  LabelSelector selector;
  selector.requirements_ = std::move(*requirements);
  return selector;
}

bool LabelSelector::matches(const KeyValues& labels) const {
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const LabelRequirement& r) { return r.matches(labels); });
}

std::string LabelSelector::str() const {
  std::string out;
  for (const LabelRequirement& r : requirements_) {
    if (!out.empty()) out += ",";
    switch (r.op) {
      case LabelOp::exists:
        out += r.key;
        break;
      case LabelOp::not_exists:
        out += "!" + r.key;
        break;
      case LabelOp::equals:
        out += r.key + "=" + r.values.front();
        break;
      case LabelOp::not_equals:
        out += r.key + "!=" + r.values.front();
        break;
      case LabelOp::gt:
        out += r.key + ">" + r.values.front();
        break;
      case LabelOp::lt:
        out += r.key + "<" + r.values.front();
        break;
      case LabelOp::in:
      case LabelOp::not_in: {
        out += r.key + (r.op == LabelOp::in ? " in (" : " notin (");
        for (std::size_t i = 0; i < r.values.size(); ++i) {
          if (i != 0) out += ",";
          out += r.values[i];
        }
        out += ")";
        break;
      }
    }
  }
  return out;
}

}  // namespace cudagate
