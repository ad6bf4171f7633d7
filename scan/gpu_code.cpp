#include "scan/gpu_code.h"

#include <algorithm>

#include "scan/elf_file.h"
#include "scan/fatbin.h"

namespace cudagate::scan {
namespace {

void sort_unique(std::vector<GpuArch>& archs) {
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
}

}  // namespace

GpuCode read_gpu_code(Bytes file, const ScanLimits& limits) {
  GpuCode code;
  code.is_elf = has_elf_magic(file);
  if (!code.is_elf) return code;
  auto elf = read_elf(file, limits);
  if (!elf) {
    code.errors.push_back(elf.error());
    return code;
  }
  if (elf->machine == kMachineCuda) {
    if (auto arch = cubin_arch(file, *elf)) {
      code.sass.push_back(*arch);
    } else {
      code.errors.push_back(arch.error());
    }
    return code;
  }
  std::uint64_t entries = 0;
  for (const ElfSection* section : fatbin_sections(*elf)) {
    if (section->size > limits.max_section_bytes) {
      code.errors.push_back(Error{section->name + "+0x0",
                                  std::to_string(section->size) +
                                      " bytes, more than the limit of " +
                                      std::to_string(limits.max_section_bytes) + ": not read"});
      continue;
    }
    auto bytes = section_bytes(file, *section);
    if (!bytes) {
      code.errors.push_back(bytes.error());
      continue;
    }
    if (bytes->empty()) {
      code.errors.push_back(Error{section->name + "+0x0", "empty section: no fatbin in it"});
      continue;
    }
    FatbinContents contents = read_fatbins(*bytes, section->name, limits, entries);
    entries += contents.entries.size();
    for (const FatbinEntry& entry : contents.entries) {
      (entry.kind == CodeKind::kPtx ? code.ptx : code.sass).push_back(entry.arch);
    }
    for (Error& error : contents.errors) code.errors.push_back(std::move(error));
  }
  sort_unique(code.sass);
  sort_unique(code.ptx);
  return code;
}

}  // namespace cudagate::scan
