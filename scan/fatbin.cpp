#include "scan/fatbin.h"

#include <string>

#include "scan/elf_file.h"

namespace cudagate::scan {
namespace {

constexpr std::uint64_t kContainerHeaderSize = 16;
constexpr std::uint64_t kEntryHeaderSize = 64;
constexpr std::uint16_t kKindPtx = 1;
constexpr std::uint16_t kKindElf = 2;
constexpr std::uint16_t kKindConcatenated = 0x100;
constexpr std::uint64_t kFlagLz4 = 0x2000;
constexpr std::uint64_t kFlagZstd = 0x8000;
constexpr std::uint64_t kFlagArchSpecific = 0x100000;
constexpr std::uint64_t kFlagFamily = 0x200000;
constexpr std::uint64_t kFlagCompatCopy = 0x1000000;
constexpr unsigned kMaxSm = 999;

// The fields of one entry header this reader uses.
struct FatbinHeader {
  std::uint16_t kind = 0;
  std::uint32_t header_size = 0;
  std::uint64_t payload_size = 0;
  std::uint16_t version_minor = 0;
  std::uint16_t version_major = 0;
  std::uint32_t sm = 0;
  std::uint64_t flags = 0;
};

// The first 64 bytes of `header` (the caller checks there are 64).
FatbinHeader fatbin_header(Bytes header) {
  FatbinHeader h;
  h.kind = *read_le<std::uint16_t>(header, 0);
  h.header_size = *read_le<std::uint32_t>(header, 4);
  h.payload_size = *read_le<std::uint64_t>(header, 8);
  h.version_minor = *read_le<std::uint16_t>(header, 24);
  h.version_major = *read_le<std::uint16_t>(header, 26);
  h.sm = *read_le<std::uint32_t>(header, 28);
  h.flags = *read_le<std::uint64_t>(header, 40);
  return h;
}

Compression fatbin_compression(std::uint64_t flags) {
  if ((flags & kFlagZstd) != 0) return Compression::kZstd;
  if ((flags & kFlagLz4) != 0) return Compression::kLz4;
  return Compression::kNone;
}

ArchVariant fatbin_flag_variant(std::uint64_t flags) {
  if ((flags & kFlagArchSpecific) != 0) return ArchVariant::kArchSpecific;
  if ((flags & kFlagFamily) != 0) return ArchVariant::kFamilySpecific;
  return ArchVariant::kPlain;
}

// The `.nv.compat` copy a header carries with flag 0x1000000, or nothing.
std::optional<Bytes> fatbin_compat_copy(Bytes header) {
  auto offset = read_le<std::uint32_t>(header, kEntryHeaderSize);
  auto length = read_le<std::uint32_t>(header, kEntryHeaderSize + 4);
  if (!offset || !length) return std::nullopt;
  return sub_span(header, *offset, *length);
}

class FatbinReader {
 public:
  FatbinReader(Bytes section, std::string_view name, const ScanLimits& limits,
               std::uint64_t entries_before)
      : section_(section), name_(name), limits_(limits), entries_before_(entries_before) {}

  FatbinContents read() {
    std::uint64_t at = 0;
    while (at < section_.size()) {
      if (section_[at] == std::byte{0}) {
        ++at;
        continue;
      }
      auto next = read_container(at);
      if (!next) break;
      at = *next;
    }
    return std::move(contents_);
  }

 private:
  void fail(std::uint64_t offset, std::string message) {
    contents_.errors.push_back(Error{std::string(name_) + "+" + hex(offset), std::move(message)});
  }

  // Reads the container at `at`; the offset past it, or nothing when the
  // section's reading must stop.
  std::optional<std::uint64_t> read_container(std::uint64_t at) {
    const std::uint64_t left = section_.size() - at;
    if (left < kContainerHeaderSize) {
      fail(at, "truncated fatbin header: " + std::to_string(left) + " bytes, 16 needed");
      return std::nullopt;
    }
    const auto magic = *read_le<std::uint32_t>(section_, at);
    if (magic != kFatbinMagic) {
      fail(at, "expected the fatbin magic 0xba55ed50, found " + hex(magic));
      return std::nullopt;
    }
    const std::uint64_t header_size = *read_le<std::uint16_t>(section_, at + 6);
    const std::uint64_t body_size = *read_le<std::uint64_t>(section_, at + 8);
    if (header_size < kContainerHeaderSize || header_size > left ||
        body_size > left - header_size) {
      fail(at, "fatbin of " + std::to_string(header_size) + "+" + std::to_string(body_size) +
                   " bytes runs past the section's end (" + std::to_string(left) + " bytes left)");
      return std::nullopt;
    }
    const std::uint64_t end = at + header_size + body_size;
    read_entries(at + header_size, end);
    return end;
  }

  void read_entries(std::uint64_t at, std::uint64_t end) {
    while (at < end) {
      const std::uint64_t left = end - at;
      if (left < kEntryHeaderSize) {
        fail(at, "truncated entry header: " + std::to_string(left) +
                     " bytes left in the fatbin, 64 needed");
        return;
      }
      const FatbinHeader h = fatbin_header(section_.subspan(at, kEntryHeaderSize));
      if (h.header_size < kEntryHeaderSize || h.header_size > left ||
          h.payload_size > left - h.header_size) {
        fail(at, "entry of " + std::to_string(h.header_size) + "+" +
                     std::to_string(h.payload_size) + " bytes runs past the fatbin's end (" +
                     std::to_string(left) + " bytes left)");
        return;
      }
      const Bytes header = section_.subspan(at, h.header_size);
      const Bytes payload = section_.subspan(at + h.header_size, h.payload_size);
      if (!read_entry(at, h, header, payload)) return;
      at += h.header_size + h.payload_size;
    }
  }

  // False when the entry limit is met: the reading stops.
  bool read_entry(std::uint64_t at, const FatbinHeader& h, Bytes header, Bytes payload) {
    switch (h.kind) {
      case kKindPtx:
      case kKindElf:
        return add_code(at, h, header, payload, false);
      case kKindConcatenated:
        return read_concatenated(at, h, header, payload);
      default:
        fail(at, "entry of unknown kind " + hex(h.kind) + " skipped");
        return true;
    }
  }

  bool read_concatenated(std::uint64_t at, const FatbinHeader& outer, Bytes header, Bytes payload) {
    auto count = read_le<std::uint32_t>(header, kEntryHeaderSize);
    auto total = read_le<std::uint32_t>(header, kEntryHeaderSize + 4);
    if (!count || !total || *total < 8 || *total > header.size() - kEntryHeaderSize) {
      fail(at, "concatenated entry without a table of its cubins' headers");
      return true;
    }
    const Bytes table = header.subspan(kEntryHeaderSize + 8, *total - 8);
    std::uint64_t pos = 0;
    for (std::uint32_t i = 0; i < *count; ++i) {
      const std::uint64_t where = at + kEntryHeaderSize + 8 + pos;
      if (table.size() - pos < kEntryHeaderSize) {
        fail(where, "truncated header of cubin " + std::to_string(i) + " of " +
                        std::to_string(*count) + " in a concatenated entry");
        return true;
      }
      FatbinHeader h = fatbin_header(table.subspan(pos, kEntryHeaderSize));
      std::uint64_t length = kEntryHeaderSize;
      if ((h.flags & kFlagCompatCopy) != 0) {
        auto offset = read_le<std::uint32_t>(table, pos + kEntryHeaderSize);
        auto size = read_le<std::uint32_t>(table, pos + kEntryHeaderSize + 4);
        auto padded = offset && size ? align8(std::uint64_t{*offset} + *size + 1) : std::nullopt;
        if (!padded || *offset < kEntryHeaderSize + 8 || *padded > table.size() - pos) {
          fail(where, "header of cubin " + std::to_string(i) +
                          " in a concatenated entry runs past its table");
          return true;
        }
        length = *padded;
      }
      // The cubins share the outer entry's payload and its compression.
      h.flags |= outer.flags & (kFlagLz4 | kFlagZstd);
      const Bytes sub_header = table.subspan(pos, length);
      const std::uint64_t cubin_offset = *read_le<std::uint32_t>(sub_header, 4);
      Bytes cubin;
      if (fatbin_compression(h.flags) == Compression::kNone) {
        auto bytes = sub_span(payload, cubin_offset, h.payload_size);
        if (!bytes) {
          fail(where, "cubin " + std::to_string(i) + " lies outside its concatenated payload");
          return true;
        }
        cubin = *bytes;
      }
      if (h.kind != kKindPtx && h.kind != kKindElf) {
        fail(where, "cubin " + std::to_string(i) + " of unknown kind " + hex(h.kind) +
                        " in a concatenated entry skipped");
      } else if (!add_code(where, h, sub_header, cubin, true)) {
        return false;
      }
      pos += length;
    }
    return true;
  }

  bool add_code(std::uint64_t at, const FatbinHeader& h, Bytes header, Bytes payload,
                bool concatenated) {
    if (entries_before_ + contents_.entries.size() >= limits_.max_entries) {
      fail(at, "more than the limit of " + std::to_string(limits_.max_entries) +
                   " fatbin entries: the rest is not read");
      return false;
    }
    if (h.sm < 10 || h.sm > kMaxSm) {
      fail(at, "entry for architecture " + std::to_string(h.sm) + " skipped");
      return true;
    }
    FatbinEntry entry;
    entry.kind = h.kind == kKindPtx ? CodeKind::kPtx : CodeKind::kSass;
    entry.compression = fatbin_compression(h.flags);
    entry.offset = at;
    entry.concatenated = concatenated;
    entry.arch = GpuArch::from_sm(h.sm, fatbin_flag_variant(h.flags));
    if (entry.kind == CodeKind::kSass) {
      if (entry.compression == Compression::kNone) {
        entry.arch = plain_cubin_arch(at, entry.arch, payload);
      } else if (entry.arch.variant == ArchVariant::kPlain) {
        entry.arch.variant = compressed_cubin_variant(h, header);
      }
    }
    contents_.entries.push_back(entry);
    return true;
  }

  // The architecture of an uncompressed cubin, read from the cubin; `f`
  // from the header (see fatbin.h).
  GpuArch plain_cubin_arch(std::uint64_t at, GpuArch said, Bytes payload) {
    auto elf = read_elf(payload, limits_);
    if (!elf) {
      fail(at, "its cubin: " + elf.error().str());
      return said;
    }
    auto arch = cubin_arch(payload, *elf);
    if (!arch) {
      fail(at, "its cubin: " + arch.error().str());
      return said;
    }
    GpuArch read = *arch;
    if (read.variant == ArchVariant::kPlain && said.variant == ArchVariant::kFamilySpecific) {
      read.variant = ArchVariant::kFamilySpecific;
    }
    if (read != said) {
      fail(at, "the entry header says " + said.str() + ", its cubin " + read.str() +
                   ": the cubin's is taken");
    }
    return read;
  }

  static ArchVariant compressed_cubin_variant(const FatbinHeader& h, Bytes header) {
    if ((h.flags & kFlagCompatCopy) != 0) {
      if (auto copy = fatbin_compat_copy(header)) {
        if (auto specific = nv_compat_arch_specific(*copy)) {
          return *specific ? ArchVariant::kArchSpecific : ArchVariant::kPlain;
        }
      }
    }
    constexpr unsigned kFirstSmWithVariants = 90;
    const bool before_abi_1_8 =
        h.version_major < 1 || (h.version_major == 1 && h.version_minor < 8);
    if (h.sm >= kFirstSmWithVariants && before_abi_1_8) return ArchVariant::kUnknown;
    return ArchVariant::kPlain;
  }

  Bytes section_;
  std::string_view name_;
  const ScanLimits& limits_;
  std::uint64_t entries_before_;
  FatbinContents contents_;
};

}  // namespace

FatbinContents read_fatbins(Bytes section, std::string_view section_name, const ScanLimits& limits,
                            std::uint64_t entries_before) {
  return FatbinReader(section, section_name, limits, entries_before).read();
}

}  // namespace cudagate::scan
