#pragma once
// An OCI content descriptor (image-spec descriptor.md): what a manifest,
// an index or a referrers list says of one piece of content.
//
// A value; no I/O.

#include <cstdint>
#include <map>
#include <string>

namespace cudagate {

struct Descriptor {
  std::string media_type;
  std::string digest;  // "sha256:<64 hex>"
  std::uint64_t size = 0;
  std::string artifact_type;                       // "" when none
  std::map<std::string, std::string> annotations;  // sorted by key, as JSON objects print
  friend bool operator==(const Descriptor&, const Descriptor&) = default;
};

}  // namespace cudagate
