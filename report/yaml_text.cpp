// Block YAML from JSON values: mappings and sequences indented by two,
// scalars plain where YAML reads them back unchanged, quoted elsewhere.
#include "report/yaml_text.h"

#include <array>
#include <string_view>

#include "types/ascii.h"

namespace cudagate {
namespace {

using nlohmann::json;

// Words YAML 1.1 or 1.2 reads as null or booleans.
bool is_reserved_word(std::string_view s) {
  static constexpr std::array<std::string_view, 22> kWords = {
      "null", "Null", "NULL", "~",  "true", "True", "TRUE", "false", "False", "FALSE", "yes",
      "Yes",  "YES",  "no",   "No", "NO",   "on",   "On",   "ON",    "off",   "Off",   "OFF"};
  for (const auto w : kWords) {
    if (s == w) return true;
  }
  return s == "y" || s == "Y" || s == "n" || s == "N";
}

// A plain scalar that YAML reads back as this same string: letters, digits
// and a few marks, not starting with an indicator, not a number or a word
// YAML gives another type.
bool plain_safe(std::string_view s) {
  if (s.empty() || is_reserved_word(s)) return false;
  // Starting with a digit, a sign or a dot may read as a number (.5, .inf).
  const char first = s.front();
  if (!ascii::is_alpha(first) && first != '/' && first != '_') return false;
  for (const char c : s) {
    if (ascii::is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '(' ||
        c == ')' || c == '+' || c == '=' || c == '<' || c == '>' || c == ';') {
      continue;
    }
    if (c == ' ') continue;
    return false;
  }
  // A trailing blank would be lost.
  return s.back() != ' ';
}

void scalar(std::string& out, const json& value) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    out += plain_safe(s) ? s : value.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out += value.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool is_collection(const json& value) {
  return (value.is_object() || value.is_array()) && !value.empty();
}

// A value on the rest of its line: a scalar, or an empty mapping or sequence.
void leaf(std::string& out, const json& value) {
  if (value.is_object()) {
    out += "{}";
  } else if (value.is_array()) {
    out += "[]";
  } else {
    scalar(out, value);
  }
  out += '\n';
}

void indent(std::string& out, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
}

void write_node(std::string& out, const json& value, int depth);

// Members of a non-empty mapping, each on its own line at `depth`; the
// first line's indentation is already written when `inline_first`.
void write_object(std::string& out, const json& value, int depth, bool inline_first) {
  bool first = true;
  for (const auto& [key, member] : value.items()) {
    if (!(first && inline_first)) indent(out, depth);
    first = false;
    scalar(out, json(key));
    out += ':';
    if (is_collection(member)) {
      out += '\n';
      // Sequences under a key sit at the key's indentation, as kubectl writes them.
      write_node(out, member, member.is_array() ? depth : depth + 1);
    } else {
      out += ' ';
      leaf(out, member);
    }
  }
}

void write_array(std::string& out, const json& value, int depth) {
  for (const auto& item : value) {
    indent(out, depth);
    out += "- ";
    if (item.is_object() && !item.empty()) {
      write_object(out, item, depth + 1, /*inline_first=*/true);
    } else if (item.is_array() && !item.empty()) {
      out += '\n';
      write_array(out, item, depth + 1);
    } else {
      leaf(out, item);
    }
  }
}

void write_node(std::string& out, const json& value, int depth) {
  if (value.is_object()) {
    write_object(out, value, depth, false);
  } else {
    write_array(out, value, depth);
  }
}

}  // namespace

std::string to_yaml(const json& value) {
  std::string out;
  if (is_collection(value)) {
    write_node(out, value, 0);
  } else {
    leaf(out, value);
  }
  return out;
}

}  // namespace cudagate
