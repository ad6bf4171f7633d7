// The tar stream as a state machine over 512-byte blocks: a header, the
// member's content, its padding, the next header.
#include "scan/tar_reader.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "scan/byte_reader.h"
#include "types/quote.h"

namespace cudagate::scan {
namespace {

constexpr std::size_t kBlock = 512;

// Header fields: offset and length (POSIX ustar; GNU and PAX share them).
struct Field {
  std::size_t at;
  std::size_t size;
};
constexpr Field kName{0, 100};
constexpr Field kSize{124, 12};
constexpr Field kChecksum{148, 8};
constexpr std::size_t kTypeflag = 156;
constexpr Field kLinkname{157, 100};
constexpr std::size_t kMagic = 257;  // "ustar\0" (POSIX) or "ustar  " (GNU)
constexpr Field kPrefix{345, 155};

std::string_view text_of(const std::byte* header, Field field) {
  const char* start = reinterpret_cast<const char*>(header) + field.at;
  const std::size_t length = strnlen(start, field.size);
  return {start, length};
}

// An octal field (spaces and NULs around it allowed, as Go's parseOctal
// trims them) or a base-256 one (first byte 0x80, GNU's form for sizes of
// 8 GiB and more); nullopt when it is neither or is negative.
std::optional<std::uint64_t> number_of(const std::byte* header, Field field) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(header) + field.at;
  if ((bytes[0] & 0x80U) != 0) {
    if (bytes[0] != 0x80U) return std::nullopt;  // negative, or too wide
    std::uint64_t value = 0;
    for (std::size_t i = 1; i < field.size; ++i) {
      if (value > (UINT64_MAX >> 8)) return std::nullopt;
      value = (value << 8) | bytes[i];
    }
    return value;
  }
  std::size_t i = 0;
  while (i < field.size && (bytes[i] == ' ' || bytes[i] == 0)) ++i;
  std::size_t end = field.size;
  while (end > i && (bytes[end - 1] == ' ' || bytes[end - 1] == 0)) --end;
  if (i == end) return 0;
  std::uint64_t value = 0;
  for (; i < end; ++i) {
    if (bytes[i] < '0' || bytes[i] > '7') return std::nullopt;
    if (value > (UINT64_MAX >> 3)) return std::nullopt;
    value = (value << 3) | (bytes[i] - '0');
  }
  return value;
}

bool checksum_matches(const std::byte* header) {
  const auto stored = number_of(header, kChecksum);
  if (!stored) return false;
  std::uint64_t unsigned_sum = 0;
  std::int64_t signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum.at && i < kChecksum.at + kChecksum.size;
    const auto byte =
        in_field ? static_cast<unsigned char>(' ') : std::to_integer<unsigned char>(header[i]);
    unsigned_sum += byte;
    signed_sum += static_cast<signed char>(byte);
  }
  return *stored == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

bool all_zero(const std::byte* block) {
  return std::all_of(block, block + kBlock, [](std::byte b) { return b == std::byte{0}; });
}

// Members whose size field says nothing of the stream (Go's
// isHeaderOnlyType): links, devices, directories, FIFOs.
bool header_only(char typeflag) {
  return typeflag >= '1' && typeflag <= '6';
}

TarEntry::Type type_of(char typeflag) {
  switch (typeflag) {
    case '0':
    case '\0':
    case '7':
      return TarEntry::Type::file;
    case '1':
      return TarEntry::Type::hardlink;
    case '2':
      return TarEntry::Type::symlink;
    case '5':
      return TarEntry::Type::directory;
    default:
      return TarEntry::Type::other;
  }
}

}  // namespace

std::optional<std::string> normalise_member_name(std::string_view name) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out;
  for (const std::string_view part : parts) {
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

TarReader::TarReader(TarVisitor& visitor, TarLimits limits) : visitor_(visitor), limits_(limits) {}

Error TarReader::fail(std::string message) const {
  return Error{"tar member at offset " + hex(member_offset_), std::move(message)};
}

std::optional<Error> TarReader::feed(std::span<const std::byte> bytes) {
  if (failed_) return failed_;
  while (!bytes.empty()) {
    switch (phase_) {
      case Phase::ended:
        position_ += bytes.size();
        return std::nullopt;
      case Phase::header: {
        const std::size_t n = std::min(bytes.size(), kBlock - header_fill_);
        std::memcpy(header_ + header_fill_, bytes.data(), n);
        header_fill_ += n;
        position_ += n;
        bytes = bytes.subspan(n);
        if (header_fill_ < kBlock) break;
        header_fill_ = 0;
        if (auto error = on_header()) {
          failed_ = std::move(error);
          return failed_;
        }
        break;
      }
      case Phase::content: {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), remaining_));
        const auto piece = bytes.first(n);
        if (content_ == Content::deliver) {
          visitor_.on_content(piece);
        } else if (content_ != Content::skip) {
          if (auto error = take_meta(piece)) {
            failed_ = std::move(error);
            return failed_;
          }
        }
        remaining_ -= n;
        position_ += n;
        bytes = bytes.subspan(n);
        if (remaining_ == 0) {
          end_member();
          phase_ = padding_ > 0 ? Phase::padding : Phase::header;
        }
        break;
      }
      case Phase::padding: {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), padding_));
        padding_ -= n;
        position_ += n;
        bytes = bytes.subspan(n);
        if (padding_ == 0) phase_ = Phase::header;
        break;
      }
    }
  }
  return std::nullopt;
}

std::optional<Error> TarReader::on_header() {
  member_offset_ = position_ - kBlock;
  if (all_zero(header_)) {
    // One zero block, then a second ends the archive (Go's archive/tar:
    // anything else after the first is a broken header).
    if (zero_block_seen_) phase_ = Phase::ended;
    zero_block_seen_ = true;
    return std::nullopt;
  }
  if (zero_block_seen_) return fail("a member follows a zero block");
  if (!checksum_matches(header_)) return fail("not a tar header (its checksum does not match)");
  const char typeflag = static_cast<char>(header_[kTypeflag]);
  auto size = number_of(header_, kSize);
  if (!size) return fail("the size field is not a number");
  if (header_only(typeflag)) size = 0;

  std::uint64_t content_size = *size;
  if (typeflag == 'L' || typeflag == 'K' || typeflag == 'x') {
    if (content_size > limits_.max_meta_bytes) {
      return fail("a long name or PAX header of " + std::to_string(content_size) +
                  " bytes, over the limit of " + std::to_string(limits_.max_meta_bytes));
    }
    if (!meta_offset_) meta_offset_ = member_offset_;
    meta_.clear();
    content_ = typeflag == 'L'   ? Content::long_name
               : typeflag == 'K' ? Content::long_link
                                 : Content::pax;
  } else if (typeflag == 'g') {
    content_ = Content::skip;  // global PAX records: no key read here applies
  } else {
    if (++entries_ > limits_.max_entries) {
      return fail("more than " + std::to_string(limits_.max_entries) + " members");
    }
    std::string name(text_of(header_, kName));
    // The prefix field is ustar's and PAX's; GNU headers ("ustar  ") keep
    // other things there.
    if (std::memcmp(header_ + kMagic, "ustar\0", 6) == 0) {
      const std::string_view prefix = text_of(header_, kPrefix);
      if (!prefix.empty()) name = std::string(prefix) + "/" + name;
    }
    if (long_name_) name = *std::exchange(long_name_, std::nullopt);
    if (pax_path_) name = *std::exchange(pax_path_, std::nullopt);
    std::string link(text_of(header_, kLinkname));
    if (long_link_) link = *std::exchange(long_link_, std::nullopt);
    if (pax_link_) link = *std::exchange(pax_link_, std::nullopt);
    if (pax_size_) {
      if (!header_only(typeflag)) content_size = *pax_size_;
      pax_size_.reset();
    }

    TarEntry entry;
    entry.type = type_of(typeflag);
    entry.size = entry.type == TarEntry::Type::file ? content_size : 0;
    entry.offset = meta_offset_.value_or(member_offset_);
    entry.content_offset = position_;
    meta_offset_.reset();
    auto path = normalise_member_name(name);
    if (entry.type == TarEntry::Type::hardlink) {
      auto target = normalise_member_name(link);
      entry.link = target.value_or("");
    } else {
      entry.link = std::move(link);
    }
    content_ = Content::skip;
    if (path && path->empty()) {
      content_ = Content::skip;  // the root itself ("./"): nothing to name
    } else if (!path) {
      visitor_.on_problem(
          Error{"tar member at offset " + hex(entry.offset),
                "the name " + quote(name, 256) + " leaves the image's root; left out"});
    } else {
      entry.path = std::move(*path);
      if (visitor_.on_entry(entry) && entry.type == TarEntry::Type::file) {
        content_ = Content::deliver;
      }
    }
  }

  remaining_ = content_size;
  padding_ = (kBlock - content_size % kBlock) % kBlock;
  if (remaining_ > 0) {
    phase_ = Phase::content;
  } else {
    end_member();
    phase_ = Phase::header;
  }
  return std::nullopt;
}

std::optional<Error> TarReader::take_meta(std::span<const std::byte> piece) {
  meta_.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  return std::nullopt;
}

void TarReader::end_member() {
  switch (content_) {
    case Content::deliver:
      visitor_.on_entry_end();
      break;
    case Content::long_name:
      long_name_ = meta_.substr(0, meta_.find('\0'));  // NUL-terminated in the stream
      break;
    case Content::long_link:
      long_link_ = meta_.substr(0, meta_.find('\0'));
      break;
    case Content::pax:
      apply_pax();
      break;
    case Content::skip:
      break;
  }
  content_ = Content::skip;
  meta_.clear();
}

// "<length> <key>=<value>\n" records; a record that does not parse ends the
// reading of the rest (Go refuses the member; the keys read here are the
// only ones that matter to a scan, so the member is still read by its
// header).
void TarReader::apply_pax() {
  std::string_view rest = meta_;
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos || space == 0 || space > 19) return;  // fits in 64 bits
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < space; ++i) {
      if (rest[i] < '0' || rest[i] > '9') return;
      length = length * 10 + static_cast<std::uint64_t>(rest[i] - '0');
    }
    if (length <= space + 1 || length > rest.size() || rest[length - 1] != '\n') return;
    const std::string_view record = rest.substr(space + 1, length - space - 2);
    rest.remove_prefix(length);
    const std::size_t equals = record.find('=');
    if (equals == std::string_view::npos) return;
    const std::string_view key = record.substr(0, equals);
    const std::string_view value = record.substr(equals + 1);
    if (key == "path") {
      pax_path_ = std::string(value);
    } else if (key == "linkpath") {
      pax_link_ = std::string(value);
    } else if (key == "size") {
      std::uint64_t size = 0;
      bool ok = !value.empty() && value.size() <= 19;
      for (const char c : value) ok = ok && c >= '0' && c <= '9';
      if (!ok) continue;
      for (const char c : value) size = size * 10 + static_cast<std::uint64_t>(c - '0');
      pax_size_ = size;
    }
  }
}

std::optional<Error> TarReader::finish() {
  if (failed_) return failed_;
  if (phase_ == Phase::ended) return std::nullopt;
  if (phase_ == Phase::header && header_fill_ == 0) {
    if (long_name_ || long_link_ || pax_path_ || pax_link_ || pax_size_) {
      return fail("the stream ends after a long name or PAX header, before its member");
    }
    return std::nullopt;
  }
  if (phase_ == Phase::header) {
    return Error{"tar member at offset " + hex(position_ - header_fill_),
                 "the stream ends inside a header"};
  }
  return fail("the stream ends inside the member");
}

}  // namespace cudagate::scan
