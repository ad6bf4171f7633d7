// Feeds arbitrary bytes to the reader of a manifest's referrers, as a
// registry's referrers API or referrers tag (or something posing as one)
// could answer: it reads the scan of the subject, finds none, or says why
// not, and what it reads is that subject's.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "registry/scan_attachment.h"

namespace {

constexpr std::string_view kSubject =
    "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto read = cudagate::read_referrers(text, kSubject);
  // The facts reader alone, on the same bytes (the annotation's text).
  const auto facts_alone = cudagate::parse_scan_facts(text);
  if (!facts_alone && facts_alone.error().message.empty()) __builtin_trap();
  if (!read) {
    if (read.error().message.empty()) __builtin_trap();
    return 0;
  }
  if (!read->has_value()) return 0;
  const cudagate::ScanFacts& facts = **read;
  if (facts.digest != kSubject) __builtin_trap();
  if (facts.files.size() > cudagate::kMaxScannedFiles) __builtin_trap();
  if (!std::is_sorted(facts.files.begin(), facts.files.end(),
                      [](const auto& a, const auto& b) { return a.path < b.path; })) {
    __builtin_trap();
  }
  for (const cudagate::ScannedCode& file : facts.files) {
    if (file.path.empty()) __builtin_trap();
    for (const cudagate::ArchTarget& target : file.archs.targets()) {
      if (!target.sass && !target.ptx) __builtin_trap();
      if (target.cc.major() < 1 || target.cc.major() > 99 || target.cc.minor() > 9) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
