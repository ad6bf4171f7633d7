#pragma once
// The syntax of Kubernetes label keys and values, as the API server and
// the label selector parser check them
// (k8s.io/apimachinery/pkg/util/validation: IsQualifiedName,
// IsDNS1123Subdomain, IsValidLabelValue).

#include <string_view>

namespace cudagate {

// The name part of a qualified name: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?,
// at most 63 characters.
[[nodiscard]] bool is_qualified_name_part(std::string_view text);

// A lower-case RFC 1123 subdomain: dot-separated labels of [a-z0-9-] that
// start and end alphanumeric, at most 253 characters.
[[nodiscard]] bool is_dns1123_subdomain(std::string_view text);

// A label key (IsQualifiedName): a name part, optionally after a DNS-1123
// subdomain prefix and one '/'.
[[nodiscard]] bool is_label_key(std::string_view key);

// A label value (IsValidLabelValue): empty, or a qualified name part.
[[nodiscard]] bool is_label_value(std::string_view value);

}  // namespace cudagate
