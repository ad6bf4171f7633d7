#include "scan/elf_file.h"

#include <cstddef>
#include <string_view>

namespace cudagate::scan {
namespace {

constexpr std::uint64_t kElfHeaderSize = 64;
constexpr std::uint64_t kSectionHeaderSize = 64;
constexpr std::uint16_t kSectionIndexEscape = 0xffff;  // SHN_XINDEX

Error elf_error(std::string where, std::string message) {
  return Error{std::move(where), std::move(message)};
}

// The NUL-terminated name at `offset` of the string table `table`.
std::optional<std::string> elf_section_name(Bytes table, std::uint32_t offset) {
  if (offset >= table.size()) return std::nullopt;
  std::string name;
  for (std::size_t i = offset; i < table.size(); ++i) {
    const auto c = std::to_integer<char>(table[i]);
    if (c == '\0') return name;
    name += c;
  }
  return std::nullopt;
}

}  // namespace

bool has_elf_magic(Bytes bytes) {
  return bytes.size() >= 4 && bytes[0] == std::byte{0x7f} && bytes[1] == std::byte{'E'} &&
         bytes[2] == std::byte{'L'} && bytes[3] == std::byte{'F'};
}

Expected<ElfFile> read_elf(Bytes bytes, const ScanLimits& limits) {
  if (!has_elf_magic(bytes)) return elf_error("ELF header", "not an ELF file (no \\x7fELF magic)");
  if (bytes.size() < kElfHeaderSize) {
    return elf_error("ELF header", "truncated: " + std::to_string(bytes.size()) +
                                       " bytes, the 64-bit header needs 64");
  }
  const auto elf_class = std::to_integer<unsigned>(bytes[4]);
  const auto data = std::to_integer<unsigned>(bytes[5]);
  if (elf_class != 2) {
    return elf_error("ELF header", elf_class == 1
                                       ? "a 32-bit ELF file: only 64-bit files are read"
                                       : "unknown ELF class " + std::to_string(elf_class));
  }
  if (data != 1) {
    return elf_error("ELF header", data == 2 ? "a big-endian ELF file: only little-endian is read"
                                             : "unknown ELF byte order " + std::to_string(data));
  }
  ElfFile elf;
  elf.abi_version = std::to_integer<std::uint8_t>(bytes[8]);
  elf.machine = *read_le<std::uint16_t>(bytes, 18);
  elf.flags = *read_le<std::uint32_t>(bytes, 48);
  const std::uint64_t section_table = *read_le<std::uint64_t>(bytes, 40);
  const std::uint16_t entry_size = *read_le<std::uint16_t>(bytes, 58);
  std::uint64_t count = *read_le<std::uint16_t>(bytes, 60);
  std::uint32_t names_index = *read_le<std::uint16_t>(bytes, 62);
  if (section_table == 0) return elf;  // no section table: nothing to look in
  if (entry_size != kSectionHeaderSize) {
    return elf_error("ELF header",
                     "section header size " + std::to_string(entry_size) + ", expected 64");
  }
  // More than 0xff00 sections, or a names index past 0xff00: the real values
  // are in section 0 (sh_size, sh_link).
  if (count == 0 || names_index == kSectionIndexEscape) {
    auto first = sub_span(bytes, section_table, kSectionHeaderSize);
    if (!first) {
      return elf_error("ELF header", "section table at " + hex(section_table) +
                                         " lies beyond the file's " + std::to_string(bytes.size()) +
                                         " bytes");
    }
    if (count == 0) count = *read_le<std::uint64_t>(*first, 32);
    if (names_index == kSectionIndexEscape) names_index = *read_le<std::uint32_t>(*first, 40);
  }
  if (count > limits.max_sections) {
    return elf_error("ELF header", std::to_string(count) + " sections, more than the limit of " +
                                       std::to_string(limits.max_sections));
  }
  auto table = sub_span(bytes, section_table, count * kSectionHeaderSize);
  if (!table) {
    return elf_error("ELF header", "section table of " + std::to_string(count) + " entries at " +
                                       hex(section_table) + " runs past the file's " +
                                       std::to_string(bytes.size()) + " bytes");
  }
  std::vector<std::uint32_t> name_offsets;
  elf.sections.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const Bytes header = table->subspan(i * kSectionHeaderSize, kSectionHeaderSize);
    ElfSection section;
    name_offsets.push_back(*read_le<std::uint32_t>(header, 0));
    section.type = *read_le<std::uint32_t>(header, 4);
    section.offset = *read_le<std::uint64_t>(header, 24);
    section.size = *read_le<std::uint64_t>(header, 32);
    elf.sections.push_back(std::move(section));
  }
  if (names_index == 0) return elf;  // SHN_UNDEF: the sections have no names
  if (names_index >= count) {
    return elf_error("ELF header", "section names index " + std::to_string(names_index) +
                                       " is not below the section count " + std::to_string(count));
  }
  auto names = section_bytes(bytes, elf.sections[names_index]);
  if (!names) return names.error().within("section header " + std::to_string(names_index));
  for (std::uint64_t i = 1; i < count; ++i) {
    auto name = elf_section_name(*names, name_offsets[i]);
    if (!name) {
      return elf_error("section header " + std::to_string(i),
                       "name offset " + std::to_string(name_offsets[i]) +
                           " is outside the section names table of " +
                           std::to_string(names->size()) + " bytes");
    }
    elf.sections[i].name = std::move(*name);
  }
  return elf;
}

Expected<Bytes> section_bytes(Bytes file, const ElfSection& section) {
  if (section.type == kSectionNoBits) return Bytes{};
  auto bytes = sub_span(file, section.offset, section.size);
  if (!bytes) {
    return elf_error(section.name.empty() ? "section" : section.name,
                     std::to_string(section.size) + " bytes at " + hex(section.offset) +
                         " run past the file's " + std::to_string(file.size()) + " bytes");
  }
  return *bytes;
}

std::vector<const ElfSection*> fatbin_sections(const ElfFile& elf) {
  std::vector<const ElfSection*> loaded;
  std::vector<const ElfSection*> relocatable;
  for (const ElfSection& section : elf.sections) {
    if (section.name == ".nv_fatbin") loaded.push_back(&section);
    if (section.name == "__nv_relfatbin") relocatable.push_back(&section);
  }
  return loaded.empty() ? relocatable : loaded;
}

std::optional<bool> nv_compat_arch_specific(Bytes compat) {
  constexpr unsigned kAttrArchSpecific = 0x09;
  std::uint64_t at = 0;
  while (at + 2 <= compat.size()) {
    const auto format = std::to_integer<unsigned>(compat[at]);
    const auto attribute = std::to_integer<unsigned>(compat[at + 1]);
    switch (format) {
      case 1:
        at += 2;
        break;
      case 2:
        if (attribute == kAttrArchSpecific && at + 3 <= compat.size()) {
          return std::to_integer<unsigned>(compat[at + 2]) != 0;
        }
        at += 4;
        break;
      case 3:
        at += 4;
        break;
      case 4: {
        auto size = read_le<std::uint16_t>(compat, at + 2);
        if (!size) return std::nullopt;
        at += 4 + std::uint64_t{*size};
        break;
      }
      default:
        return std::nullopt;  // a format this reader does not know: no answer
    }
  }
  return std::nullopt;
}

Expected<GpuArch> cubin_arch(Bytes file, const ElfFile& elf) {
  if (elf.machine != kMachineCuda) {
    return elf_error("ELF header", "machine " + std::to_string(elf.machine) +
                                       " is not EM_CUDA (190): not a cubin");
  }
  constexpr std::uint8_t kAbiV8 = 8;
  const bool v8 = elf.abi_version >= kAbiV8;
  const unsigned sm = v8 ? (elf.flags >> 8) & 0xffU : elf.flags & 0xffU;
  bool arch_specific = v8 ? (elf.flags & 0x8U) != 0 : (elf.flags & 0x800U) != 0;
  if (sm < 10) {
    return elf_error("ELF header", "e_flags " + hex(elf.flags) + " name no SM architecture");
  }
  for (const ElfSection& section : elf.sections) {
    if (section.name != ".nv.compat") continue;
    auto bytes = section_bytes(file, section);
    if (!bytes) return bytes.error();
    if (auto said = nv_compat_arch_specific(*bytes)) arch_specific = *said;
  }
  return GpuArch::from_sm(sm, arch_specific ? ArchVariant::kArchSpecific : ArchVariant::kPlain);
}

}  // namespace cudagate::scan
