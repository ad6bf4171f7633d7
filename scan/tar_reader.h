#pragma once
// Reading a tar stream as its bytes arrive (an image layer, decompressed):
// each member's header is read, the member is named to a visitor, and its
// content is handed over in pieces when the visitor asks for it, or skipped.
// Nothing is held but one header and the long names being gathered, so a
// layer of any size is read in constant memory.
//
// The formats image builders write, as Go's archive/tar reads them (which
// containerd and Docker use to apply layers): ustar (with its name prefix),
// GNU (long names and link names in 'L' and 'K' members, base-256 sizes) and
// PAX ('x' records for path, linkpath and size; 'g' global records are read
// and ignored, as Go does for these keys). Header checksums are verified
// (signed or unsigned sums, as Go accepts both). The stream ends at the first
// zero block, or at the input's end on a member boundary; whatever follows
// the zero blocks (record padding) is ignored.
//
// Member names are normalised as layers are applied: a leading "/" or "./"
// and a trailing "/" dropped, "." components and repeated slashes removed.
// A name that leaves the root ("../x", "a/../../x") is no member: it is
// reported to the visitor (on_problem) and its content skipped. The root
// itself ("./", as `tar -C dir .` writes it) is no member either, silently.
//
// Errors are fatal to the stream (a header that is no header, a checksum
// that does not match, a stream cut inside a member, a limit passed); each
// names the byte offset of the header in the uncompressed stream.
//
// One TarReader reads one stream, from one thread at a time.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "types/expected.h"

namespace cudagate::scan {

struct TarEntry {
  enum class Type : unsigned char { file, directory, symlink, hardlink, other };
  std::string path;  // normalised (above); never empty
  Type type = Type::file;
  std::uint64_t size = 0;            // content bytes (regular files; 0 for the rest)
  std::string link;                  // symlink target as written; hard link target normalised
  std::uint64_t offset = 0;          // the member's first header in the stream
  std::uint64_t content_offset = 0;  // its content's first byte in the stream
};

class TarVisitor {
 public:
  virtual ~TarVisitor() = default;
  // A member. true: hand me its content (on_content, then on_entry_end);
  // false: skip it (no further call for it).
  virtual bool on_entry(const TarEntry& entry) = 0;
  // The next piece of the member's content, in order; the pieces add up to
  // its size.
  virtual void on_content(std::span<const std::byte> piece) = 0;
  // The member's content is complete.
  virtual void on_entry_end() = 0;
  // A member left out (its name leaves the root); the stream goes on.
  virtual void on_problem(const Error& problem) = 0;
};

struct TarLimits {
  // Members in one stream.
  std::uint64_t max_entries = 1U << 20;
  // A long name or link name ('L', 'K') or the PAX records of one member.
  std::uint64_t max_meta_bytes = 1U << 20;
};

class TarReader {
 public:
  explicit TarReader(TarVisitor& visitor, TarLimits limits = {});

  // The next bytes of the stream, any size. An Error ends the stream; feed()
  // then returns it again.
  std::optional<Error> feed(std::span<const std::byte> bytes);

  // The input has ended: an Error when it ended inside a member or header.
  std::optional<Error> finish();

  // Members read so far (long-name and PAX members not counted).
  [[nodiscard]] std::uint64_t entries() const { return entries_; }

 private:
  enum class Phase : unsigned char { header, content, padding, ended };
  enum class Content : unsigned char { skip, deliver, long_name, long_link, pax };

  std::optional<Error> on_header();
  std::optional<Error> begin_member(const TarEntry& entry);
  void end_member();
  std::optional<Error> take_meta(std::span<const std::byte> piece);
  void apply_pax();
  [[nodiscard]] Error fail(std::string message) const;

  TarVisitor& visitor_;
  TarLimits limits_;
  Phase phase_ = Phase::header;
  Content content_ = Content::skip;
  std::byte header_[512]{};
  std::size_t header_fill_ = 0;
  std::uint64_t remaining_ = 0;  // of the member's content
  std::uint64_t padding_ = 0;    // to the next 512-byte boundary
  std::uint64_t position_ = 0;   // bytes of the stream read
  std::uint64_t member_offset_ = 0;
  std::uint64_t entries_ = 0;
  bool zero_block_seen_ = false;
  // Gathered for the next member: GNU long names, PAX records.
  std::string meta_;
  std::optional<std::string> long_name_;
  std::optional<std::string> long_link_;
  std::optional<std::string> pax_path_;
  std::optional<std::string> pax_link_;
  std::optional<std::uint64_t> pax_size_;
  std::optional<std::uint64_t> meta_offset_;  // the first header of a member with long names
  std::optional<Error> failed_;
};

// `name` normalised as a member name (above): "" for the root itself,
// nullopt when it leaves the root.
[[nodiscard]] std::optional<std::string> normalise_member_name(std::string_view name);

}  // namespace cudagate::scan
