#pragma once
// Container image references, normalised as the container runtime does:
// "pytorch/pytorch:2.4.1-cuda12.4-cudnn9-runtime" is
// docker.io/pytorch/pytorch with that tag; "ubuntu" is
// docker.io/library/ubuntu:latest; "index.docker.io" is "docker.io".

#include <string>
#include <string_view>

#include "types/expected.h"

namespace cudagate {

struct ImageRef {
  std::string registry;    // "docker.io", "nvcr.io", "localhost:5000"
  std::string repository;  // "library/ubuntu", "nvidia/pytorch"
  std::string tag;         // "24.01-py3"; "latest" when neither tag nor digest is given
  std::string digest;      // "sha256:<64 hex>", may be empty

  // Grammar of the distribution reference: lower-case path components
  // separated by '/', [a-z0-9] with '.', '_', '__' or '-' runs between;
  // tag [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; digest algorithm:hex.
  static Expected<ImageRef> parse(std::string_view text);

  // "registry/repository" without tag or digest: "docker.io/nvidia/cuda".
  [[nodiscard]] std::string name() const { return registry + "/" + repository; }
  // The full normalised reference: name[:tag][@digest].
  [[nodiscard]] std::string str() const;

  friend bool operator==(const ImageRef&, const ImageRef&) = default;
};

}  // namespace cudagate
