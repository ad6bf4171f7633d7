// handle_admission must answer every request body: an AdmissionReview
// answer (200) or a JSON error (400), never a crash or a hang. The body is
// read by two parsers, simdjson on the hot path and nlohmann::json as the
// reference; whenever they are given the same bytes they must give the same
// answer, byte for byte, on /validate and on /mutate (patches included).
// A review in which nothing names an nvidia.com resource or a claim asks
// for no GPU (docs/contract.md §2.1) and must be admitted untouched,
// whatever else it holds.
//
// The mutator is structure-aware: a body that is JSON (the seeds are
// AdmissionReviews from the fixtures) is mutated as a document, a value at
// a time (another type, a value that matters to a GPU decision, a key
// removed or added, an element repeated, the bytes of one string), so that
// most inputs stay reviews and reach the decision; one in eight is mutated
// as bytes, for the parsers' own edges.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/admission.h"
#include "compat-db/compat_db.h"
#include "policy/config/policy.h"
#include "policy/inventory/inventory.h"
#include "policy/objects/node.h"
#include "tests/support/embedded_compat_db.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using cudagate::test_support::db;

// T4s on R535 and A100s on R550, tainted as GPU pools are, and a CPU node:
// enough for every verdict, pins included.
const cudagate::Inventory& fleet() {
  static const cudagate::Inventory inventory = [] {
    constexpr std::string_view kNodes = R"({"kind": "NodeList", "items": [
      {"metadata": {"name": "cpu-1", "labels": {"kubernetes.io/hostname": "cpu-1"}}},
      {"metadata": {"name": "t4-1", "labels": {"kubernetes.io/hostname": "t4-1",
         "nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.compute.major": "7",
         "nvidia.com/gpu.compute.minor": "5", "nvidia.com/cuda.driver-version.full": "535.129.03",
         "pool": "t4"}},
       "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
       "status": {"allocatable": {"nvidia.com/gpu": "1"}}},
      {"metadata": {"name": "a100-1", "labels": {"kubernetes.io/hostname": "a100-1",
         "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.compute.major": "8",
         "nvidia.com/gpu.compute.minor": "0", "nvidia.com/cuda.driver-version.full": "550.54.15",
         "pool": "a100"}},
       "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
       "status": {"allocatable": {"nvidia.com/gpu": "8"}}}]})";
    auto nodes = cudagate::parse_nodes(kNodes, "nodes");
    if (!nodes) std::abort();
    return cudagate::Inventory::build(std::move(*nodes), db());
  }();
  return inventory;
}

using Json = nlohmann::ordered_json;

// Every value of the document, containers included, in document order.
void values(Json& value, std::vector<Json*>& out) {
  out.push_back(&value);
  if (value.is_structured()) {
    for (auto& child : value) values(child, out);
  }
}

// Values and keys a GPU decision reads, and shapes it does not expect.
Json interesting(std::minstd_rand& rng) {
  static const std::vector<Json> kValues = {
      "nvidia.com/gpu",
      "nvidia.com/mig-1g.10gb",
      "gpu.nvidia.com",
      "TORCH_CUDA_ARCH_LIST",
      "CUDA_VERSION",
      "NVIDIA_REQUIRE_CUDA",
      "NVIDIA_DISABLE_REQUIRE",
      "cudagate.io/cuda",
      "cudagate.io/arch-list",
      "12.4",
      "12.4.1",
      "8.0;8.6+PTX",
      "7.5 8.0 9.0a",
      "cuda>=12.4 brand=tesla,driver>=535,driver<536",
      "nvcr.io/nvidia/pytorch:24.05-py3",
      "nvidia/cuda:12.4.1-runtime-ubuntu22.04@sha256:" + std::string(64, 'a'),
      "Pod",
      "Deployment",
      "CREATE",
      "UPDATE",
      "",
      "1",
      "-1",
      "0.5",
      "1e309",
      1,
      8,
      -1,
      1e300,
      true,
      nullptr,
      Json::object(),
      Json::array(),
      Json::parse(R"({"limits": {"nvidia.com/gpu": 1}})"),
      Json::parse(R"([{"name": "CUDA_VERSION", "value": "12.4.1"}])"),
      Json::parse(R"([{"name": "gpu"}])"),
  };
  return kValues[rng() % kValues.size()];
}

const char* interesting_key(std::minstd_rand& rng) {
  static const char* const kKeys[] = {
      "kind",         "apiVersion",     "metadata",       "annotations",
      "spec",         "containers",     "image",          "env",
      "name",         "value",          "resources",      "limits",
      "requests",     "nvidia.com/gpu", "claims",         "resourceClaims",
      "nodeSelector", "affinity",       "initContainers", "template",
      "uid",          "object",         "dryRun",         "operation"};
  return kKeys[rng() % std::size(kKeys)];
}

void mutate_document(Json& doc, std::minstd_rand& rng) {
  std::vector<Json*> all;
  values(doc, all);
  Json& target = *all[rng() % all.size()];
  switch (rng() % 6) {
    case 0:  // a value of another type, or one a decision reads
      target = interesting(rng);
      break;
    case 1:  // a key or an element removed
      if (target.is_object() && !target.empty()) {
        auto it = target.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng() % target.size()));
        target.erase(it.key());
      } else if (target.is_array() && !target.empty()) {
        target.erase(target.begin() + static_cast<std::ptrdiff_t>(rng() % target.size()));
      }
      break;
    case 2:  // a key added, or an element
      if (target.is_object()) {
        target[interesting_key(rng)] = interesting(rng);
      } else if (target.is_array()) {
        target.push_back(target.empty() ? interesting(rng) : target[rng() % target.size()]);
      }
      break;
    case 3:  // an element repeated in place
      if (target.is_array() && !target.empty()) {
        const std::size_t i = rng() % target.size();
        const Json copy = target[i];
        target.insert(target.begin() + static_cast<std::ptrdiff_t>(i), copy);
      }
      break;
    case 4:  // the bytes of a string
      if (target.is_string()) {
        std::string text = target.get<std::string>();
        const std::size_t used = text.size();
        text.resize(used + 16);
        text.resize(
            LLVMFuzzerMutate(reinterpret_cast<std::uint8_t*>(text.data()), used, text.size()));
        target = text;
      }
      break;
    default:  // a value of the document copied over another
      target = *all[rng() % all.size()];
      break;
  }
}

// Never deny what is not ours to judge: nothing in the review, as the JSON
// reads (escapes decoded, the last of repeated keys), names an nvidia.com
// resource or device class, or a claim.
bool asks_for_no_gpu(std::string_view body) {
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded()) return false;
  std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text.find("nvidia.com") == std::string::npos && text.find("claim") == std::string::npos;
}

void require_untouched(const std::string& answer) {
  const auto doc = nlohmann::json::parse(answer, nullptr, false);
  if (doc.is_discarded() || !doc.contains("response")) std::abort();
  const auto& response = doc["response"];
  if (response.value("allowed", false) != true || response.contains("patch")) std::abort();
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  Json doc =
      Json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (doc.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
  mutate_document(doc, rng);
  const std::string text = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::copy(text.begin(), text.end(), data);
  return text.size();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const cudagate::Policy policy;
  const cudagate::AdmissionContext context{db(), policy, fleet()};
  const bool no_gpu = asks_for_no_gpu(body);
  static cudagate::AdmissionWorkspace workspace;
  for (const auto endpoint : {cudagate::Endpoint::validate, cudagate::Endpoint::mutate}) {
    const cudagate::AdmissionOutcome fast = cudagate::handle_admission(
        endpoint, "", body, context, workspace, cudagate::ReviewParser::fast);
    const cudagate::AdmissionOutcome reference = cudagate::handle_admission(
        endpoint, "", body, context, workspace, cudagate::ReviewParser::reference);
    if (fast.http_status != 200 && fast.http_status != 400) std::abort();
    if (!nlohmann::json::accept(fast.body)) std::abort();
    if (fast.http_status != reference.http_status || fast.body != reference.body ||
        fast.verdict != reference.verdict || fast.decision != reference.decision ||
        fast.uid != reference.uid || fast.kind != reference.kind || fast.name != reference.name ||
        fast.namespace_ != reference.namespace_) {
      std::abort();
    }
    if (no_gpu && fast.http_status == 200) require_untouched(fast.body);
  }
  return 0;
}
