#pragma once
// JSON values written as block-style YAML, for the reports that Kubernetes
// tools read as YAML (PolicyReport, Report). Strings that YAML would read
// as anything but the same string (true, 1.0, "a: b", "") are double-quoted
// with JSON's escapes, which YAML reads alike, so the text reads back as
// the value under YAML 1.1 and 1.2 alike.

#include <nlohmann/json.hpp>
#include <string>

namespace cudagate {

// `value` as one YAML document (no "---"), ending in a line break.
[[nodiscard]] std::string to_yaml(const nlohmann::json& value);

}  // namespace cudagate
