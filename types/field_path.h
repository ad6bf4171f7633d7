#pragma once
// Naming a place inside a document, the one way every reader's errors do:
// the matrix's loader, the policy file, Kubernetes objects and manifests,
// kubeconfig files and AdmissionReviews. A path is the JSON path of a value
// ("spec.containers[2].image"); a place is the file, the line where it is
// known, and the path ("policy.yaml:12: images[0].archs").
//
// Pure string functions: no state, safe from any thread.

#include <cstddef>
#include <string>
#include <string_view>

namespace cudagate {

// "spec" + "containers" -> "spec.containers"; "" + "spec" -> "spec".
[[nodiscard]] std::string field_path(std::string_view path, std::string_view key);

// "spec.containers" + 2 -> "spec.containers[2]".
[[nodiscard]] std::string index_path(std::string_view path, std::size_t index);

// "policy.yaml:12: images[0]": `source`, then ":<line>" when `line` is
// positive (1-based), then ": <path>" when `path` is not empty; the parts
// that are empty are left out with their separators ("images[0]" alone,
// "policy.yaml:12").
[[nodiscard]] std::string place(std::string_view source, int line, std::string_view path);

}  // namespace cudagate
