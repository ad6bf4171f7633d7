#pragma once
// Base64 (RFC 4648): the standard alphabet with padding, as Go's
// encoding/json writes []byte (JSON Patches in admission responses) and as
// docker writes the auth of a dockerconfigjson file.

#include <optional>
#include <string>
#include <string_view>

namespace cudagate {

[[nodiscard]] std::string base64_encode(std::string_view bytes);
// Accepts missing padding and the URL-safe alphabet's '-' and '_';
// nullopt for any other character or a truncated final group.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace cudagate
