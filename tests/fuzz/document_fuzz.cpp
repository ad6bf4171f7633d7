// parse_documents must answer every input with documents or an Error:
// never a crash, a hang, or a value that cannot be written back as JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/objects/document.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto docs = cudagate::parse_source_documents(text, "fuzz.yaml");
  if (!docs) {
    (void)docs.error().str();
    return 0;
  }
  for (const auto& doc : docs->documents) {
    // Strict UTF-8 handling: a string that is not UTF-8 throws here.
    (void)doc.value.dump();
  }
  return 0;
}
