// Failure recognition: line by line, each known phrase searched in the
// lower-cased line.
#include "policy/rules/failure_message.h"

#include <algorithm>

#include "policy/rules/decision.h"
#include "types/ascii.h"

namespace cudagate {
namespace {

using ascii::lower;

constexpr std::size_t kExcerptLimit = 300;
constexpr std::size_t kNumberSearch = 24;  // bytes after a phrase in which its number may start

std::string excerpt_of(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  line.remove_prefix(first);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  std::string out(line.substr(0, kExcerptLimit));
  if (line.size() > kExcerptLimit) {
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0U) == 0x80U)
      out.pop_back();
    if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80U) != 0) out.pop_back();
    out += "...";
  }
  return out;
}

// "8.0" or "89" (Triton's "arch < 89") at or after `from` (within a few
// bytes), as a compute capability.
std::optional<ComputeCapability> cc_at(std::string_view line, std::size_t from) {
  std::size_t i = from;
  const std::size_t limit = std::min(line.size(), from + kNumberSearch);
  while (i < limit && !ascii::is_digit(line[i])) ++i;
  if (i >= limit) return std::nullopt;
  std::size_t j = i;
  while (j < line.size() && ascii::is_digit(line[j])) ++j;
  std::string_view whole = line.substr(i, j - i);
  if (j + 1 < line.size() && line[j] == '.' && ascii::is_digit(line[j + 1])) {
    std::size_t k = j + 1;
    while (k < line.size() && ascii::is_digit(line[k])) ++k;
    auto cc = ComputeCapability::parse(line.substr(i, k - i));
    if (cc) return *cc;
    return std::nullopt;
  }
  if (whole.size() == 2 || whole.size() == 3) {  // "89", "100": sm numbers
    const std::string text = std::string(whole.substr(0, whole.size() - 1)) + "." +
                             std::string(whole.substr(whole.size() - 1));
    auto cc = ComputeCapability::parse(text);
    if (cc) return *cc;
  }
  return std::nullopt;
}

std::optional<ComputeCapability> cc_after(std::string_view line, std::string_view phrase) {
  const auto at = line.find(phrase);
  if (at == std::string_view::npos) return std::nullopt;
  return cc_at(line, at + phrase.size());
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

bool says_unsupported(std::string_view l) {
  return contains(l, "not supported") || contains(l, "only supported") ||
         contains(l, "unsupported") || contains(l, "requires") || contains(l, "required") ||
         contains(l, "not available");
}

void recognise_line(std::string_view line, std::vector<RecognisedFailure>& out) {
  const std::string l = lower(line);
  auto add = [&](FailureKind kind, Rule rule) -> RecognisedFailure* {
    for (const auto& f : out) {
      if (f.kind == kind) return nullptr;
    }
    RecognisedFailure f;
    f.kind = kind;
    f.rule = rule;
    f.excerpt = excerpt_of(line);
    out.push_back(std::move(f));
    return &out.back();
  };

  if (contains(l, "unsatisfied condition:")) {
    const auto at =
        l.find("unsatisfied condition:") + std::string_view("unsatisfied condition:").size();
    std::size_t b = at;
    while (b < l.size() && l[b] == ' ') ++b;
    std::size_t e = b;
    while (e < l.size() && l[e] != ',' && l[e] != ' ' && l[e] != ':' && l[e] != '"' &&
           l[e] != '\\') {
      ++e;
    }
    const std::string condition(line.substr(b, e - b));
    const std::string key = lower(condition.substr(0, condition.find_first_of("<>=!")));
    auto* f = add(FailureKind::requirement_unsatisfied,
                  key == "arch" ? Rule::gpu_arch : Rule::cuda_driver);
    if (f != nullptr) {
      f->condition = condition;
      if (key == "cuda" && l.compare(b + 4, 2, ">=") == 0) {
        auto cuda = CudaVersion::parse(condition.substr(6));
        if (cuda) f->cuda_needed = *cuda;
      }
      // The Go hook adds what the node has: "cuda>=12.4 (cuda=12.2)".
      if (e < l.size() && l.compare(e, 2, " (") == 0) {
        const auto close = l.find(')', e + 2);
        if (close != std::string::npos && close - e < 40) {
          f->node_value = std::string(line.substr(e + 2, close - e - 2));
        }
      }
    }
  }
  if (contains(l, "cuda driver version is insufficient")) {
    add(FailureKind::driver_insufficient, Rule::cuda_driver);
  }
  if (contains(l, "nvidia driver on your system is too old")) {
    add(FailureKind::driver_too_old, Rule::cuda_driver);
  }
  if (contains(l, "no kernel image is available for execution")) {
    add(FailureKind::no_kernel_image, Rule::gpu_arch);
  }
  if (contains(l, "forward compatibility was attempted on non supported hw")) {
    add(FailureKind::forward_compat_unsupported, Rule::cuda_driver);
  }
  if ((contains(l, "bfloat16") || contains(l, "bf16")) && says_unsupported(l)) {
    if (auto* f = add(FailureKind::bf16_unsupported, Rule::gpu_feature)) {
      f->cc_needed = cc_after(l, "at least");
      if (!f->cc_needed) f->cc_needed = ComputeCapability(8, 0);
      f->cc_found = cc_after(l, "has compute capability");
    }
  }
  if ((contains(l, "fp8") || contains(l, "float8")) && says_unsupported(l)) {
    if (auto* f = add(FailureKind::fp8_unsupported, Rule::gpu_feature)) {
      f->cc_needed = cc_after(l, "arch < ");
      if (!f->cc_needed) f->cc_needed = cc_after(l, "capability");
      if (!f->cc_needed) f->cc_needed = ComputeCapability(8, 9);
    }
  }
}

}  // namespace

std::string_view to_string(FailureKind kind) {
  switch (kind) {
    case FailureKind::driver_insufficient:
      return "driver-insufficient";
    case FailureKind::driver_too_old:
      return "driver-too-old";
    case FailureKind::no_kernel_image:
      return "no-kernel-image";
    case FailureKind::requirement_unsatisfied:
      return "requirement-unsatisfied";
    case FailureKind::forward_compat_unsupported:
      return "forward-compat-unsupported";
    case FailureKind::bf16_unsupported:
      return "bf16-unsupported";
    case FailureKind::fp8_unsupported:
      return "fp8-unsupported";
  }
  return "unknown";
}

std::vector<RecognisedFailure> recognise_failures(std::string_view text) {
  std::vector<RecognisedFailure> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    const std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    recognise_line(line, out);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace cudagate
