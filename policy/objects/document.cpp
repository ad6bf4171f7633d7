// Reading JSON and YAML text into JSON values, YAML scalars typed as Kubernetes' go-yaml v2
// decoder types them, and the field readers whose errors name the field path.
#include "policy/objects/document.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "types/ascii.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::is_digit;

using nlohmann::json;

// Deeper nesting than any Kubernetes object has; the limit keeps recursive
// code (conversion here, copies and comparisons of the values later) far
// from the stack's end, and stops self-referencing YAML aliases.
constexpr int kMaxDepth = 512;

std::string place(std::string_view source, int line, int column = 0) {
  std::string out(source);
  if (line > 0) {
    out += out.empty() ? "line " : ":";
    out += std::to_string(line);
    if (column > 0) {
      out += ':';
      out += std::to_string(column);
    }
  }
  return out;
}
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::array<std::uint32_t, 5> kMin = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// --- YAML scalar resolution, as go-yaml v2 (resolve.go) does it. ---

// strconv.ParseInt(s, 0, 64) / ParseUint(s, 0, 64): an optional sign (signed
// only), then 0x/0o/0b prefixes or a leading 0 for octal, else decimal.
struct GoInt {
  bool negative = false;
  std::uint64_t magnitude = 0;
};

std::optional<GoInt> parse_go_int(std::string_view s) {
  GoInt out;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    out.negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() >= 2 && s[0] == '0') {
    const char p = s[1];
    if (p == 'x' || p == 'X') {
      base = 16;
      s.remove_prefix(2);
    } else if (p == 'o' || p == 'O') {
      base = 8;
      s.remove_prefix(2);
    } else if (p == 'b' || p == 'B') {
      base = 2;
      s.remove_prefix(2);
    } else {
      base = 8;
      s.remove_prefix(1);
    }
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : s) {
    int digit = 0;
    if (is_digit(c)) {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    if (digit >= base) return std::nullopt;
    const auto b = static_cast<std::uint64_t>(base);
    if (value >
        (std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(digit)) / b) {
      return std::nullopt;
    }
    value = value * b + static_cast<std::uint64_t>(digit);
  }
  out.magnitude = value;
  return out;
}

// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ (go-yaml's yamlStyleFloat).
bool yaml_style_float(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const std::size_t int_start = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  const bool int_digits = i > int_start;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t frac_start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (!int_digits && i == frac_start) return false;
  } else if (!int_digits) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t exp_start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == exp_start) return false;
  }
  return i == s.size();
}

std::optional<double> parse_float(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

enum class Special : unsigned char { none, not_json };

// The JSON value of a plain scalar; `special` is set for .inf/.nan, which
// JSON cannot carry.
json resolve_plain(const std::string& in, Special& special) {
  special = Special::none;
  if (in.empty()) return nullptr;
  static constexpr std::array<std::string_view, 11> kTrue = {
      "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
  static constexpr std::array<std::string_view, 11> kFalse = {
      "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
  static constexpr std::array<std::string_view, 4> kNull = {"~", "null", "Null", "NULL"};
  static constexpr std::array<std::string_view, 12> kNotJson = {".nan",  ".NaN",  ".NAN",  ".inf",
                                                                ".Inf",  ".INF",  "+.inf", "+.Inf",
                                                                "+.INF", "-.inf", "-.Inf", "-.INF"};
  for (auto t : kTrue) {
    if (in == t) return true;
  }
  for (auto f : kFalse) {
    if (in == f) return false;
  }
  for (auto n : kNull) {
    if (in == n) return nullptr;
  }
  for (auto n : kNotJson) {
    if (in == n) {
      special = Special::not_json;
      return in;
    }
  }
  const char first = in[0];
  if (first == '.') {
    if (yaml_style_float(in)) {
      if (auto f = parse_float(in)) return *f;
    }
    return in;
  }
  if (!is_digit(first) && first != '+' && first != '-') return in;

  std::string plain;
  plain.reserve(in.size());
  for (char c : in) {
    if (c != '_') plain += c;
  }
  if (auto v = parse_go_int(plain)) {
    constexpr auto kMaxSigned =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (v->negative) {
      if (v->magnitude <= kMaxSigned) return -static_cast<std::int64_t>(v->magnitude);
      if (v->magnitude == kMaxSigned + 1) return std::numeric_limits<std::int64_t>::min();
    } else if (v->magnitude <= kMaxSigned) {
      return static_cast<std::int64_t>(v->magnitude);
    } else if (plain[0] != '+') {
      return v->magnitude;  // ParseUint: beyond int64, no sign allowed
    }
  }
  if (yaml_style_float(plain)) {
    if (auto f = parse_float(plain)) return *f;
  }
  return in;
}

// Thrown by the event handler to stop the parser at the first problem; it
// never leaves parse_yaml.
struct YamlStop {
  Error error;
};

// Builds JSON values straight from yaml-cpp's parser events. Reading events
// instead of YAML::Node trees lets aliases be copied by value (an alias to
// a node that contains it is an error, not a cycle) and bounds the work.
class JsonBuilder : public YAML::EventHandler {
 public:
  // `line_offset` is added to every line in errors: the lines before the
  // text that this parser reads.
  JsonBuilder(std::string_view source, std::size_t& budget, int line_offset)
      : source_(source), budget_(budget), line_offset_(line_offset) {}

  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    spend(mark, 1);
    add(mark, Item{nullptr, 1, anchor, "null", false, false});
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) fail(mark, "an alias refers to a node that contains it");
    spend(mark, it->second.cost);
    const json& value = it->second.value;
    std::string key = value.is_string() ? value.get<std::string>() : value.dump();
    add(mark, Item{value, it->second.cost, YAML::NullAnchor, std::move(key), false,
                   value.is_structured()});
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    spend(mark, value.size() + 1);
    if (!valid_utf8(value)) fail(mark, "invalid UTF-8 in " + quote(value));
    json resolved;
    // yaml-cpp tags plain scalars "?" and quoted or block scalars "!".
    if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "tag:yaml.org,2002:binary") {
      resolved = value;
    } else {
      Special special = Special::none;
      resolved = resolve_plain(value, special);
      if (special == Special::not_json) {
        fail(mark, quote(value) + " is not a number JSON can hold; quote it to keep it a string");
      }
    }
    const bool merge = tag == "?" && value == "<<";
    add(mark, Item{std::move(resolved), value.size() + 1, anchor, value, merge, false});
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    push(mark, anchor, json::array());
  }
  void OnSequenceEnd() override { pop(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    push(mark, anchor, json::object());
  }
  void OnMapEnd() override {
    Frame& frame = stack_.back();
    // Merge keys (<<: *base) add the keys the mapping does not set itself;
    // of a list of merged mappings, the earlier one wins.
    for (auto& [value, mark] : frame.merges) {
      std::vector<json*> sources;
      if (value.is_object()) sources.push_back(&value);
      if (value.is_array()) {
        for (json& item : value) sources.push_back(&item);
      }
      if (sources.empty())
        fail(mark, "a merge key (<<) must refer to a mapping or a list of mappings");
      for (json* src : sources) {
        if (!src->is_object()) {
          fail(mark, "a merge key (<<) must refer to a mapping or a list of mappings");
        }
        for (auto& [k, v] : src->items()) {
          if (!frame.value.contains(k)) frame.value[k] = std::move(v);
        }
      }
    }
    pop();
  }

  [[nodiscard]] bool has_root() const { return has_root_; }
  [[nodiscard]] json& root() { return root_; }
  [[nodiscard]] const YAML::Mark& start() const { return start_; }
  [[nodiscard]] const YAML::Mark& root_mark() const { return root_mark_; }

 private:
  struct Item {
    json value;
    std::size_t cost;
    YAML::anchor_t anchor;
    std::string key;  // the text when used as a mapping key
    bool merge;       // the plain key "<<"
    bool collection;
  };
  struct Frame {
    json value;
    YAML::Mark mark;
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::size_t cost = 1;
    bool have_key = false;
    bool merge_key = false;
    std::string key;
    std::vector<std::pair<json, YAML::Mark>> merges;
  };
  struct Anchored {
    json value;
    std::size_t cost = 0;
  };

  [[noreturn]] void fail(const YAML::Mark& mark, std::string message) const {
    throw YamlStop{Error{place(source_, mark.is_null() ? 0 : mark.line + 1 + line_offset_),
                         std::move(message)}};
  }

  // Aliases copy values, so a small text can stand for an enormous one
  // ("billion laughs"); the budget bounds the work by the text's size.
  void spend(const YAML::Mark& mark, std::size_t units) {
    if (units > budget_) {
      fail(mark, "the document expands to too large a value (aliases repeated too often)");
    }
    budget_ -= units;
  }

  void push(const YAML::Mark& mark, YAML::anchor_t anchor, json value) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxDepth)) {
      fail(mark, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    spend(mark, 1);
    Frame frame;
    frame.value = std::move(value);
    frame.mark = mark;
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }

  void pop() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    add(frame.mark, Item{std::move(frame.value), frame.cost, frame.anchor, "", false, true});
  }

  void add(const YAML::Mark& mark, Item item) {
    if (item.anchor != YAML::NullAnchor) anchors_[item.anchor] = Anchored{item.value, item.cost};
    if (stack_.empty()) {
      root_mark_ = mark;
      root_ = std::move(item.value);
      has_root_ = true;
      return;
    }
    Frame& frame = stack_.back();
    frame.cost += item.cost;
    if (frame.value.is_array()) {
      frame.value.push_back(std::move(item.value));
      return;
    }
    if (!frame.have_key) {
      if (item.collection) fail(mark, "a mapping key must be a string, not a collection");
      frame.have_key = true;
      frame.merge_key = item.merge;
      frame.key = std::move(item.key);
      return;
    }
    if (frame.merge_key) {
      frame.merges.emplace_back(std::move(item.value), mark);
    } else {
      frame.value[frame.key] = std::move(item.value);
    }
    frame.have_key = false;
    frame.merge_key = false;
  }

  std::string_view source_;
  std::size_t& budget_;
  int line_offset_ = 0;
  YAML::Mark start_;
  YAML::Mark root_mark_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  json root_;
  bool has_root_ = false;
};

std::string_view skip_bom_and_blanks(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::size_t i = 0;
  while (i < text.size() &&
         (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
    ++i;
  return text.substr(i);
}

std::pair<int, int> line_column(std::string_view text, std::size_t offset) {
  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

Expected<SourceDocuments> parse_json(std::string_view text, std::string_view source) {
  if (const std::size_t at = json_too_deep_at(text, kMaxDepth); at != std::string_view::npos) {
    const auto [line, column] = line_column(text, at);
    return Error{place(source, line, column),
                 "nesting deeper than " + std::to_string(kMaxDepth) + " levels"};
  }
  try {
    SourceDocuments out;
    out.documents.push_back(SourceDocument{json::parse(text), 1, 1});
    out.count = 1;
    return out;
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset of the last character read.
    const auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string message = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ".
    if (const auto col = message.find("column "); col != std::string::npos) {
      if (const auto colon = message.find(": ", col); colon != std::string::npos) {
        message = message.substr(colon + 2);
      }
    }
    return Error{place(source, line, column), "invalid JSON: " + message};
  } catch (const std::exception& e) {
    return Error{std::string(source), std::string("invalid JSON: ") + e.what()};
  }
}

// `line_offset`: the lines before `text` in its file; `last_line`: the
// line an error at the end of `text` is reported on (yaml-cpp places an
// unclosed collection after the text's end, in the next document).
Expected<SourceDocuments> parse_yaml(std::string_view text, std::string_view source,
                                     int line_offset = 0,
                                     int last_line = std::numeric_limits<int>::max()) {
  auto line_of = [line_offset, last_line](const YAML::Mark& mark) {
    return mark.is_null() ? 0 : std::min(mark.line + 1 + line_offset, last_line);
  };
  SourceDocuments out;
  std::size_t budget = 16 * text.size() + 65536;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    int last_pos = -1;
    while (true) {
      JsonBuilder builder(source, budget, line_offset);
      if (!parser.HandleNextDocument(builder)) break;
      const YAML::Mark& start = builder.start();
      // yaml-cpp 0.7 can report the same empty document for ever at a token
      // it cannot place (a ',' outside a flow collection): stop there.
      if (start.pos == last_pos && builder.root().is_null()) {
        return Error{place(source, line_of(start)), "invalid YAML: unexpected character"};
      }
      last_pos = start.pos;
      ++out.count;
      if (!builder.has_root() || builder.root().is_null()) continue;
      const YAML::Mark& at = builder.root_mark();
      out.documents.push_back(SourceDocument{std::move(builder.root()), out.count, line_of(at)});
    }
  } catch (const YamlStop& stop) {
    return stop.error;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp stops at its own depth limit with the message "bad file".
    return Error{place(source, line_of(e.mark)), "invalid YAML: nesting too deep"};
  } catch (const YAML::Exception& e) {
    return Error{place(source, line_of(e.mark)), "invalid YAML: " + e.msg};
  } catch (const std::exception& e) {
    return Error{std::string(source), std::string("invalid YAML: ") + e.what()};
  }
  return out;
}

// A line that starts a YAML document: "---" alone or followed by a blank.
bool is_document_marker(std::string_view line) {
  return line.substr(0, 3) == "---" && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' ||
                                        line[3] == '\r' || line[3] == '\n');
}

// One JSON value: the text starts as one, and no line of it starts a YAML
// document (JSON strings hold no raw line breaks, so a "---" line is one).
// JSON documents between "---" lines are a YAML stream, read as YAML.
bool is_json_text(std::string_view text) {
  const std::string_view body = skip_bom_and_blanks(text);
  if (body.empty() || (body[0] != '{' && body[0] != '[')) return false;
  for (std::size_t pos = body.find("\n---"); pos != std::string_view::npos;
       pos = body.find("\n---", pos + 1)) {
    if (is_document_marker(body.substr(pos + 1, 4))) return false;
  }
  return true;
}

}  // namespace

Expected<SourceDocuments> parse_source_documents(std::string_view text, std::string_view source) {
  // nlohmann skips the blanks and a byte order mark itself, so offsets in
  // its errors count from the start of the text as given.
  if (is_json_text(text)) return parse_json(text, source);
  return parse_yaml(text, source);
}

namespace {

// One `---`-separated part of a YAML stream and the lines before it.
struct YamlChunk {
  std::string_view text;
  int first_line = 0;  // 0-based
  int last_line = 0;   // 1-based: the last line that is not blank
};

std::vector<YamlChunk> split_yaml_stream(std::string_view text) {
  std::vector<YamlChunk> chunks;
  std::size_t chunk_start = 0;
  int chunk_line = 0;
  bool has_directive = false;
  bool has_content = false;
  int last_line = 0;
  std::size_t pos = 0;
  int line_number = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::size_t next = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(pos, next - pos);
    // Directives (%YAML, %TAG) belong to the document after them, so a
    // chunk holding only directives, comments and blanks runs on.
    if (is_document_marker(line) && pos != chunk_start && (has_content || !has_directive)) {
      chunks.push_back(
          YamlChunk{text.substr(chunk_start, pos - chunk_start), chunk_line, last_line});
      chunk_start = pos;
      chunk_line = line_number;
      has_directive = false;
      has_content = false;
    }
    const std::size_t first = line.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos) last_line = line_number + 1;
    if (first != std::string_view::npos && line[first] != '#') {
      if (first == 0 && line[0] == '%') {
        has_directive = true;
      } else {
        has_content = true;
      }
    }
    pos = next;
    ++line_number;
  }
  if (chunk_start < text.size()) {
    chunks.push_back(YamlChunk{text.substr(chunk_start), chunk_line, last_line});
  }
  return chunks;
}

}  // namespace

std::vector<Expected<SourceDocument>> parse_document_stream(std::string_view text,
                                                            std::string_view source) {
  std::vector<Expected<SourceDocument>> out;
  if (is_json_text(text)) {
    auto parsed = parse_json(text, source);
    if (!parsed) {
      out.emplace_back(parsed.error());
    } else {
      for (auto& doc : parsed->documents) out.emplace_back(std::move(doc));
    }
    return out;
  }
  std::size_t index = 0;
  for (const YamlChunk& chunk : split_yaml_stream(text)) {
    auto parsed = parse_yaml(chunk.text, source, chunk.first_line, chunk.last_line);
    if (!parsed) {
      ++index;
      out.emplace_back(parsed.error());
      continue;
    }
    for (auto& doc : parsed->documents) {
      doc.index += index;
      out.emplace_back(std::move(doc));
    }
    index += parsed->count;
  }
  return out;
}

Expected<std::vector<json>> parse_documents(std::string_view text, std::string_view source) {
  auto parsed = parse_source_documents(text, source);
  if (!parsed) return parsed.error();
  std::vector<json> out;
  out.reserve(parsed->documents.size());
  for (auto& doc : parsed->documents) out.push_back(std::move(doc.value));
  return out;
}

std::string type_error(std::string_view expected, const json& got) {
  return "expected " + std::string(expected) + ", got " + got.type_name();
}

Expected<std::string> string_field(const json& object, std::string_view key, std::string_view path,
                                   bool required) {
  if (!object.is_object()) return Error{std::string(path), type_error("an object", object)};
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    if (required) return Error{field_path(path, key), "is required"};
    return std::string();
  }
  if (!it->is_string()) return Error{field_path(path, key), type_error("a string", *it)};
  return it->get<std::string>();
}

namespace {

Expected<const json*> typed_field(const json& object, std::string_view key, std::string_view path,
                                  bool want_object) {
  if (!object.is_object()) return Error{std::string(path), type_error("an object", object)};
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return static_cast<const json*>(nullptr);
  if (want_object ? !it->is_object() : !it->is_array()) {
    return Error{field_path(path, key), type_error(want_object ? "an object" : "a list", *it)};
  }
  return &*it;
}

}  // namespace

Expected<const json*> object_field(const json& object, std::string_view key,
                                   std::string_view path) {
  return typed_field(object, key, path, true);
}

Expected<const json*> array_field(const json& object, std::string_view key, std::string_view path) {
  return typed_field(object, key, path, false);
}

}  // namespace cudagate
