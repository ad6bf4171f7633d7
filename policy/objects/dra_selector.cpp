// The CEL subset of DRA selectors (policy/objects/dra_selector.h): a recursive-descent
// parser into a tree of DraSelector::Node, and its evaluation on a device kind.
#include "policy/objects/dra_selector.h"

#include <array>
#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate {
namespace {

// A semantic version's numbers; nullopt for a pre-release or malformed text.
std::optional<std::array<long, 3>> semver_of(std::string_view text) {
  std::array<long, 3> parts{0, 0, 0};
  std::size_t part = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (true) {
    long value = 0;
    const auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || next == p || value < 0) return std::nullopt;
    parts[part++] = value;
    p = next;
    if (p == end) break;
    if (*p != '.' || part == 3) return std::nullopt;
    ++p;
  }
  if (part != 3) return std::nullopt;
  return parts;
}

}  // namespace

struct DraSelector::Node {
  enum class Op : unsigned char { and_, or_, not_, compare, constant };
  Op op = Op::constant;
  std::vector<std::shared_ptr<const Node>> children;
  // compare: `subject` is "driver" or a qualified attribute name.
  std::string subject;
  std::string relation;                                        // ==, !=, <, <=, >, >=
  DeviceAttribute::Type type = DeviceAttribute::Type::string;  // of the literal
  std::string literal;
  bool constant = false;
};

namespace {

using SelectorNode = DraSelector::Node;

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  std::shared_ptr<const SelectorNode> parse(std::string* why) {
    auto node = disjunction();
    skip_space();
    if (node && pos_ != text_.size()) node = fail("unexpected " + quote(rest()));
    if (!node && why != nullptr) *why = error_;
    return node;
  }

 private:
  std::shared_ptr<const SelectorNode> fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return nullptr;
  }
  std::string rest() const { return std::string(text_.substr(pos_, 24)); }
  void skip_space() {
    while (pos_ < text_.size() && ascii::is_space(text_[pos_])) {
      ++pos_;
    }
  }
  bool eat(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  std::shared_ptr<const SelectorNode> combine(
      SelectorNode::Op op, std::string_view token,
      std::shared_ptr<const SelectorNode> (SelectorParser::*next)()) {
    auto first = (this->*next)();
    if (!first) return nullptr;
    if (skip_space(), text_.substr(pos_, token.size()) != token) return first;
    auto node = std::make_shared<SelectorNode>();
    node->op = op;
    node->children.push_back(first);
    while (eat(token)) {
      auto more = (this->*next)();
      if (!more) return nullptr;
      node->children.push_back(more);
    }
    return node;
  }
  std::shared_ptr<const SelectorNode> disjunction() {
    return combine(SelectorNode::Op::or_, "||", &SelectorParser::conjunction);
  }
  std::shared_ptr<const SelectorNode> conjunction() {
    return combine(SelectorNode::Op::and_, "&&", &SelectorParser::unary);
  }
  std::shared_ptr<const SelectorNode> unary() {
    if (++depth_ > 64) return fail("nested too deeply");
    std::shared_ptr<const SelectorNode> out;
    if (eat("!") && !eat("=")) {
      auto inner = unary();
      if (!inner) return nullptr;
      auto node = std::make_shared<SelectorNode>();
      node->op = SelectorNode::Op::not_;
      node->children.push_back(inner);
      out = node;
    } else if (eat("(")) {
      out = disjunction();
      if (out && !eat(")")) out = fail("expected )");
    } else if (eat("true")) {
      out = constant(true);
    } else if (eat("false")) {
      out = constant(false);
    } else {
      out = comparison();
    }
    --depth_;
    return out;
  }
  static std::shared_ptr<const SelectorNode> constant(bool value) {
    auto node = std::make_shared<SelectorNode>();
    node->constant = value;
    return node;
  }
  std::optional<std::string> string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\'')) return std::nullopt;
    const char quote_char = text_[pos_];
    const std::size_t close = text_.find(quote_char, pos_ + 1);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view body = text_.substr(pos_ + 1, close - pos_ - 1);
    if (body.find('\\') != std::string_view::npos) return std::nullopt;
    pos_ = close + 1;
    return std::string(body);
  }
  std::optional<std::string> identifier() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (ascii::is_alnum(text_[pos_]) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (pos_ == start) return std::nullopt;
    return std::string(text_.substr(start, pos_ - start));
  }
  std::optional<std::string> relation() {
    for (std::string_view r : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (eat(r)) return std::string(r);
    }
    return std::nullopt;
  }
  // semver("1.2.3") or semver("1.2.3", true).
  std::optional<std::string> semver_literal() {
    if (!eat("semver") || !eat("(")) return std::nullopt;
    auto text = string_literal();
    if (!text) return std::nullopt;
    if (eat(",")) {
      if (!eat("true") && !eat("false")) return std::nullopt;
    }
    if (!eat(")") || !semver_of(*text)) return std::nullopt;
    return text;
  }
  std::shared_ptr<const SelectorNode> comparison() {
    if (!eat("device") || !eat(".")) return fail("expected device.driver or device.attributes");
    auto node = std::make_shared<SelectorNode>();
    node->op = SelectorNode::Op::compare;
    auto field = identifier();
    if (field == "driver") {
      node->subject = "driver";
    } else if (field == "attributes") {
      if (!eat("[")) return fail("expected device.attributes[\"domain\"]");
      auto domain = string_literal();
      if (!domain || !eat("]")) return fail("expected device.attributes[\"domain\"]");
      std::optional<std::string> name;
      if (eat(".")) {
        name = identifier();
      } else if (eat("[")) {
        name = string_literal();
        if (name && !eat("]")) name.reset();
      }
      if (!name) return fail("expected an attribute name");
      node->subject = *domain + "/" + *name;
    } else {
      return fail("device." + field.value_or("") + " is not read");
    }
    // A version attribute's methods.
    if (eat(".")) {
      auto method = identifier();
      if (!method || !eat("(")) return fail("expected a method call");
      auto version = semver_literal();
      if (!version || !eat(")")) return fail("expected semver(\"x.y.z\")");
      node->type = DeviceAttribute::Type::version;
      node->literal = *version;
      if (*method == "isGreaterThan") {
        node->relation = ">";
      } else if (*method == "isLessThan") {
        node->relation = "<";
      } else if (*method == "compareTo") {
        auto r = relation();
        skip_space();
        long n = 0;
        const bool negative = eat("-");
        const auto [next, ec] =
            std::from_chars(text_.data() + pos_, text_.data() + text_.size(), n);
        if (!r || ec != std::errc() || n > 1) return fail("expected compareTo(..) <op> -1, 0 or 1");
        pos_ = static_cast<std::size_t>(next - text_.data());
        // compareTo gives -1, 0 or 1: "compareTo(v) >= 0" is "attribute >= v".
        const long value = negative ? -n : n;
        node->relation = compare_to_relation(*r, value);
        if (node->relation.empty()) return constant(compare_to_constant(*r, value));
      } else {
        return fail("." + *method + "() is not read");
      }
      return node;
    }
    auto r = relation();
    if (!r || (*r != "==" && *r != "!=")) return fail("expected == or !=");
    node->relation = *r;
    if (auto s = string_literal()) {
      node->literal = *s;
    } else if (auto v = semver_literal()) {
      node->type = DeviceAttribute::Type::version;
      node->literal = *v;
    } else if (eat("true")) {
      node->type = DeviceAttribute::Type::boolean;
      node->literal = "true";
    } else if (eat("false")) {
      node->type = DeviceAttribute::Type::boolean;
      node->literal = "false";
    } else {
      skip_space();
      long n = 0;
      const auto [next, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), n);
      if (ec != std::errc()) return fail("expected a literal");
      pos_ = static_cast<std::size_t>(next - text_.data());
      node->type = DeviceAttribute::Type::integer;
      node->literal = std::to_string(n);
    }
    if (node->subject == "driver" && node->type != DeviceAttribute::Type::string) {
      return fail("device.driver is a string");
    }
    return node;
  }
  // attribute.compareTo(v) <r> n as attribute <relation> v; "" when the
  // comparison's value does not depend on the attribute.
  static std::string compare_to_relation(const std::string& r, long n) {
    if (n == 0) return r;
    if (n == 1) {
      if (r == "==" || r == ">=") return ">";
      if (r == "!=" || r == "<") return "<=";
      return "";
    }
    if (n == -1) {
      if (r == "==" || r == "<=") return "<";
      if (r == "!=" || r == ">") return ">=";
      return "";
    }
    return "";
  }
  // The value of compareTo(v) <r> n where it is the same for every
  // attribute (compareTo gives -1, 0 or 1): "<= 1" and ">= -1" hold, "> 1"
  // and "< -1" do not.
  static bool compare_to_constant(const std::string& r, long n) {
    return n == 1 ? r == "<=" : r == ">=";
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::string error_;
};

std::optional<bool> eval(const SelectorNode& node, const DeviceKind& kind) {
  switch (node.op) {
    case SelectorNode::Op::constant:
      return node.constant;
    case SelectorNode::Op::not_: {
      auto v = eval(*node.children.front(), kind);
      if (!v) return std::nullopt;
      return !*v;
    }
    case SelectorNode::Op::and_:
    case SelectorNode::Op::or_: {
      // CEL's logical operators are commutative over errors: a false (true)
      // operand decides && (||) whatever the others are.
      const bool decisive = node.op == SelectorNode::Op::or_;
      bool unknown = false;
      for (const auto& child : node.children) {
        auto v = eval(*child, kind);
        if (!v) {
          unknown = true;
        } else if (*v == decisive) {
          return decisive;
        }
      }
      if (unknown) return std::nullopt;
      return !decisive;
    }
    case SelectorNode::Op::compare:
      break;
  }
  std::string value;
  DeviceAttribute::Type type = DeviceAttribute::Type::string;
  if (node.subject == "driver") {
    value = kind.driver;
  } else if (const DeviceAttribute* a = kind.attribute(node.subject)) {
    value = a->value;
    type = a->type;
  } else {
    return std::nullopt;  // no such attribute: a CEL error
  }
  if (type != node.type) return std::nullopt;
  if (type == DeviceAttribute::Type::version) {
    const auto a = semver_of(value);
    const auto b = semver_of(node.literal);
    if (!a || !b) return std::nullopt;
    const auto& r = node.relation;
    if (r == "==") return *a == *b;
    if (r == "!=") return *a != *b;
    if (r == "<") return *a < *b;
    if (r == "<=") return *a <= *b;
    if (r == ">") return *a > *b;
    return *a >= *b;
  }
  return node.relation == "==" ? value == node.literal : value != node.literal;
}

}  // namespace

std::optional<DraSelector> DraSelector::parse(std::string_view text, std::string* why) {
  SelectorParser parser(text);
  auto root = parser.parse(why);
  if (!root) return std::nullopt;
  DraSelector out;
  out.root_ = std::move(root);
  return out;
}

std::optional<bool> DraSelector::matches(const DeviceKind& kind) const {
  return eval(*root_, kind);
}

}  // namespace cudagate
