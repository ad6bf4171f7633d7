// Feeds arbitrary bytes to the ELF reader and to read_gpu_code() (ELF
// sections, fatbins, cubins) and checks what they give back: the lists
// sorted and unique, no error from a file that is not ELF, and every
// section the reader keeps either inside the file or refused by
// section_bytes().
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "scan/elf_file.h"
#include "scan/gpu_code.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cudagate::scan;
  const Bytes file(reinterpret_cast<const std::byte*>(data), size);

  const GpuCode code = read_gpu_code(file);
  if (!code.is_elf && !code.errors.empty()) __builtin_trap();
  for (const auto* list : {&code.sass, &code.ptx}) {
    if (std::adjacent_find(list->begin(), list->end(), [](const GpuArch& a, const GpuArch& b) {
          return !(a < b);
        }) != list->end()) {
      __builtin_trap();
    }
    for (const GpuArch& arch : *list) {
      if (arch.capability.major() < 1 || arch.capability.minor() > 9) __builtin_trap();
    }
  }

  if (auto elf = read_elf(file)) {
    for (const ElfSection& section : elf->sections) {
      auto bytes = section_bytes(file, section);
      if (bytes && !bytes->empty() &&
          (bytes->data() < file.data() || bytes->data() + bytes->size() > file.data() + size)) {
        __builtin_trap();
      }
    }
    if (elf->machine == kMachineCuda) (void)cubin_arch(file, *elf);
  }
  return 0;
}
