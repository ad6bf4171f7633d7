// Parsing and printing CUDA, driver and compute capability versions, with errors that quote
// the text they could not read.
#include "types/version.h"

#include <charconv>
#include <string>

#include "types/quote.h"

namespace cudagate {
namespace {

// Splits "a.b.c" into at most `max_parts` non-negative integers below 100000.
// Returns the number of parts, or 0 when the text is not of that form.
int split_numeric(std::string_view text, int* out, int max_parts) {
  int count = 0;
  std::size_t pos = 0;
  while (true) {
    if (count == max_parts) return 0;
    const std::size_t dot = text.find('.', pos);
    const std::string_view part =
        text.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (part.empty() || part.size() > 5) return 0;
    for (char c : part) {
      if (c < '0' || c > '9') return 0;
    }
    int value = 0;
    std::from_chars(part.data(), part.data() + part.size(), value);
    out[count++] = value;
    if (dot == std::string_view::npos) return count;
    pos = dot + 1;
  }
}
}  // namespace

Expected<CudaVersion> CudaVersion::parse(std::string_view text) {
  int parts[3] = {0, 0, 0};
  const int n = split_numeric(text, parts, 3);
  // The header promises parts below 1000; larger ones are typos, not releases.
  if (n == 0 || parts[0] > 999 || parts[1] > 999 || parts[2] > 999) {
    return Error{"", "expected a CUDA version like 12.4 or 12.4.1, got " + quote(text)};
  }
  CudaVersion v(parts[0], n >= 2 ? parts[1] : 0);
  v.update_ = n == 3 ? parts[2] : -1;
  return v;
}

std::string CudaVersion::str() const {
  return std::to_string(major_) + "." + std::to_string(minor_);
}

Expected<DriverVersion> DriverVersion::parse(std::string_view text) {
  DriverVersion v;
  const int n = split_numeric(text, v.parts_, 3);
  if (n < 2) {
    return Error{"", "expected a driver version like 535.129.03 or 570.26, got " + quote(text)};
  }
  v.count_ = n;
  v.text_ = std::string(text);
  return v;
}

Expected<ComputeCapability> ComputeCapability::parse(std::string_view text) {
  int parts[2] = {0, 0};
  const int n = split_numeric(text, parts, 2);
  if (n == 0 || parts[0] == 0 || parts[0] > 99 || parts[1] > 9) {
    return Error{"", "expected a compute capability like 8.0 or 9.0, got " + quote(text)};
  }
  return ComputeCapability(parts[0], parts[1]);
}

std::string ComputeCapability::str() const {
  return std::to_string(major_) + "." + std::to_string(minor_);
}

}  // namespace cudagate
