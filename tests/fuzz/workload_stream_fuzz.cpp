// read_workload_stream must answer every input with workloads, errors and a
// count of other objects: never a crash or a hang. For JSON that simdjson
// takes, reading the document through its view (as `cudagate audit` does)
// must give exactly the workloads, places, controllers and errors that
// nlohmann's gives.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "admission/simd_json_view.h"
#include "policy/objects/document.h"
#include "policy/objects/workload_stream.h"

namespace {

std::string summary(const cudagate::WorkloadStream& s) {
  std::string out = std::to_string(s.skipped) + " skipped\n";
  for (const auto& w : s.workloads) {
    const auto& r = w.workload.resource;
    out += w.place + " " + r.api_version + " " + r.kind + " " + r.namespace_ + "/" + r.name + " " +
           std::to_string(w.workload.spec.containers.size()) + " containers";
    if (w.controller) out += " of " + w.controller->kind + " " + w.controller->name;
    out += "\n";
  }
  for (const auto& e : s.broken) out += e.str() + "\n";
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const cudagate::WorkloadStream reference = cudagate::read_workload_stream(text, "fuzz");
  const std::string expected = summary(reference);

  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (text[first] != '{' && text[first] != '[')) return 0;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.allocate(text.size(), 256) != simdjson::SUCCESS ||
      parser.parse(text).get(root) != simdjson::SUCCESS) {
    return 0;
  }
  cudagate::WorkloadStream fast;
  cudagate::read_workload_document(cudagate::SimdJsonView(parser.doc), "fuzz:1", fast);
  if (summary(fast) != expected) std::abort();
  return 0;
}
