#pragma once
// What the admission and server tests share: the captured-shape reviews and nodes of
// tests/fixtures/admission/, the embedded compatibility matrix, and the
// T4 + A100 fleet those reviews are judged against.

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate::test_support {

// The text of tests/fixtures/admission/<name>; throws when it is missing.
inline std::string fixture(const std::string& name) {
  std::ifstream in(std::string(CUDAGATE_TEST_DATA) + "/admission/" + name);
  if (!in) throw std::runtime_error("missing fixture " + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The bytes of base64 `text` (a JSON Patch in a response); "<invalid>" when
// it holds a byte outside the alphabet, so that a bad patch fails to parse.
inline std::string base64_decode(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (const char c : text) {
    if (c == '=') break;
    const auto v = alphabet.find(c);
    if (v == std::string::npos) return "<invalid>";
    buffer = (buffer << 6U) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> static_cast<unsigned>(bits)) & 0xFFU);
    }
  }
  return out;
}

// nodes-t4-a100.json as an inventory.
inline const Inventory& fleet() {
  static const Inventory inventory = [] {
    auto nodes = parse_nodes(fixture("nodes-t4-a100.json"), "nodes-t4-a100.json");
    if (!nodes) throw std::runtime_error(nodes.error().str());
    return Inventory::build(std::move(*nodes), db());
  }();
  return inventory;
}

}  // namespace cudagate::test_support
