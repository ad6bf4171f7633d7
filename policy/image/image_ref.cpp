// Parsing container image references with the container runtime's grammar and normalisation, so
// that a reference cudagate accepts names the image the node would pull.
#include "policy/image/image_ref.h"

#include <algorithm>
#include <string>

#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate {
namespace {

using ascii::is_alnum;
using ascii::is_digit;
using ascii::is_hex;
using ascii::is_lower_alnum;
using ascii::is_lower_hex;
using ascii::is_upper;

// Requirements and image references run long; errors show more of them.
constexpr std::size_t kQuotedBytes = 128;

// Docker Hub's names as the runtime normalises them.
constexpr std::string_view kDockerHub = "docker.io";
constexpr std::string_view kDockerHubAliases[] = {"index.docker.io", "registry-1.docker.io"};
constexpr std::string_view kOfficialPrefix = "library/";
constexpr std::string_view kDefaultTag = "latest";
constexpr std::size_t kMaxTag = 128;
constexpr std::size_t kMaxName = 255;
bool is_word(char c) {
  return is_alnum(c) || c == '_';
}

// [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*
bool valid_path_component(std::string_view c) {
  if (c.empty() || !is_lower_alnum(c.front()) || !is_lower_alnum(c.back())) return false;
  std::size_t i = 0;
  while (i < c.size()) {
    if (is_lower_alnum(c[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < c.size() && !is_lower_alnum(c[i])) ++i;
    const std::string_view sep = c.substr(start, i - start);
    const bool ok = sep == "." || sep == "_" || sep == "__" ||
                    std::all_of(sep.begin(), sep.end(), [](char x) { return x == '-'; });
    if (!ok) return false;
  }
  return true;
}

// [a-zA-Z0-9] or [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
bool valid_domain_component(std::string_view c) {
  if (c.empty() || !is_alnum(c.front()) || !is_alnum(c.back())) return false;
  return std::all_of(c.begin(), c.end(), [](char x) { return is_alnum(x) || x == '-'; });
}

// host[:port], host = domain-name | [IPv6]
bool valid_registry(std::string_view domain) {
  std::string_view host = domain;
  std::string_view port;
  if (!domain.empty() && domain.front() == '[') {
    const std::size_t close = domain.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    const std::string_view addr = domain.substr(1, close - 1);
    if (!std::all_of(addr.begin(), addr.end(), [](char x) { return is_hex(x) || x == ':'; })) {
      return false;
    }
    const std::string_view rest = domain.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
      if (port.empty()) return false;
    }
    host = {};
  } else if (const std::size_t colon = domain.find(':'); colon != std::string_view::npos) {
    host = domain.substr(0, colon);
    port = domain.substr(colon + 1);
    if (port.empty()) return false;
  }
  if (!std::all_of(port.begin(), port.end(), is_digit)) return false;
  if (host.empty()) return domain.front() == '[';
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = host.find('.', start);
    const std::string_view comp =
        host.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!valid_domain_component(comp)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// [\w][\w.-]{0,127}
Expected<std::string> check_tag(std::string_view tag, std::string_view text) {
  if (tag.empty()) {
    return Error{"",
                 "image reference " + quote(text, kQuotedBytes) + " has an empty tag after ':'"};
  }
  if (tag.size() > kMaxTag) {
    return Error{"", "tag of image reference " + quote(text, kQuotedBytes) + " is " +
                         std::to_string(tag.size()) + " characters long, more than the " +
                         std::to_string(kMaxTag) + " allowed"};
  }
  const bool ok = is_word(tag.front()) && std::all_of(tag.begin(), tag.end(), [](char c) {
                    return is_word(c) || c == '.' || c == '-';
                  });
  if (!ok) {
    return Error{"", "invalid tag " + quote(tag, kQuotedBytes) + " in image reference " +
                         quote(text, kQuotedBytes) +
                         ": a tag is letters, digits, '_', '.' and '-', not starting with "
                         "'.' or '-'"};
  }
  return std::string(tag);
}

// algorithm:hex. The runtime accepts only the algorithms go-digest knows,
// each with its fixed length of lower-case hex.
Expected<std::string> check_digest(std::string_view digest, std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Error{"", "invalid digest " + quote(digest, kQuotedBytes) + " in image reference " +
                         quote(text, kQuotedBytes) + ": " + why};
  };
  const std::size_t colon = digest.find(':');
  if (colon == std::string_view::npos) return bad("expected <algorithm>:<hex> such as sha256:...");
  const std::string_view algorithm = digest.substr(0, colon);
  const std::string_view hex = digest.substr(colon + 1);
  std::size_t want = 0;
  if (algorithm == "sha256") {
    want = 64;
  } else if (algorithm == "sha384") {
    want = 96;
  } else if (algorithm == "sha512") {
    want = 128;
  } else {
    return bad("unsupported algorithm " + quote(algorithm, kQuotedBytes) +
               ", expected sha256, sha384 or sha512");
  }
  if (hex.size() != want || !std::all_of(hex.begin(), hex.end(), is_lower_hex)) {
    return bad(
        std::string(algorithm) + " needs " + std::to_string(want) + " lower-case hex digits, got " +
        std::to_string(hex.size()) + " characters" +
        (std::all_of(hex.begin(), hex.end(), is_lower_hex) ? "" : " that are not all 0-9a-f"));
  }
  return std::string(digest);
}

}  // namespace

Expected<ImageRef> ImageRef::parse(std::string_view text) {
  if (text.empty()) return Error{"", "empty image reference"};
  // An image ID is not a name; the runtime refuses to read it as one.
  if (text.size() == 64 && std::all_of(text.begin(), text.end(), is_lower_hex)) {
    return Error{"", "image reference " + quote(text, kQuotedBytes) +
                         " is a 64-character hexadecimal image ID, not a repository name"};
  }

  ImageRef ref;
  std::string_view name = text;
  if (const std::size_t at = name.find('@'); at != std::string_view::npos) {
    auto digest = check_digest(name.substr(at + 1), text);
    if (!digest) return digest.error();
    ref.digest = std::move(*digest);
    name = name.substr(0, at);
  }
  const std::size_t last_slash = name.rfind('/');
  const std::size_t tag_colon =
      name.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (tag_colon != std::string_view::npos) {
    auto tag = check_tag(name.substr(tag_colon + 1), text);
    if (!tag) return tag.error();
    ref.tag = std::move(*tag);
    name = name.substr(0, tag_colon);
  } else if (ref.digest.empty()) {
    ref.tag = std::string(kDefaultTag);
  }
  if (name.empty()) {
    return Error{"", "image reference " + quote(text, kQuotedBytes) + " has no repository name"};
  }

  // The first component names a registry only when it looks like a host:
  // a '.' or ':', "localhost", or upper case (never valid in a repository).
  std::string_view remote = name;
  std::string registry(kDockerHub);
  if (const std::size_t slash = name.find('/'); slash != std::string_view::npos) {
    const std::string_view first = name.substr(0, slash);
    const bool is_host = first.find_first_of(".:") != std::string_view::npos ||
                         first == "localhost" || std::any_of(first.begin(), first.end(), is_upper);
    if (is_host) {
      if (!valid_registry(first)) {
        return Error{"", "invalid registry " + quote(first, kQuotedBytes) + " in image reference " +
                             quote(text, kQuotedBytes) +
                             ": expected a host name or [IPv6] address with an "
                             "optional :port"};
      }
      registry = std::string(first);
      remote = name.substr(slash + 1);
    }
  }
  for (std::string_view alias : kDockerHubAliases) {
    if (registry == alias) registry = std::string(kDockerHub);
  }

  if (std::any_of(remote.begin(), remote.end(), is_upper)) {
    return Error{"", "repository name " + quote(remote, kQuotedBytes) + " in image reference " +
                         quote(text, kQuotedBytes) + " must be lower-case"};
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = remote.find('/', start);
    const std::string_view comp = remote.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (comp.empty()) {
      return Error{"", "image reference " + quote(text, kQuotedBytes) +
                           " has an empty path component (a leading, trailing or doubled '/')"};
    }
    if (!valid_path_component(comp)) {
      return Error{"", "invalid path component " + quote(comp, kQuotedBytes) +
                           " in image reference " + quote(text, kQuotedBytes) +
                           ": expected lower-case letters and digits, separated by one '.', "
                           "one or two '_', or '-'"};
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }

  ref.registry = std::move(registry);
  ref.repository = std::string(remote);
  if (ref.registry == kDockerHub && remote.find('/') == std::string_view::npos) {
    ref.repository.insert(0, kOfficialPrefix);
  }
  if (ref.name().size() > kMaxName) {
    return Error{"", "repository name of image reference " + quote(text, kQuotedBytes) +
                         " is longer than " + std::to_string(kMaxName) + " characters"};
  }
  return ref;
}

std::string ImageRef::str() const {
  std::string out = name();
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

}  // namespace cudagate
