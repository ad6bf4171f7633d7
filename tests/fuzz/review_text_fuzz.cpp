// The review parser's managedFields skip against simdjson's ordinary parse.
// The input is the text of request.object.metadata.managedFields, set in a
// fixed review, so that every mutation reaches the check that decides
// whether the field may be skipped. The two parsers must accept and refuse
// the same texts, give the same document but for managedFields, and skip
// only in a text that nlohmann::json accepts; a text read where it lies
// (a padded body) gives what its copy gives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "admission/admission_review.h"
#include "admission/padded_text.h"
#include "admission/review_text.h"
#include "admission/simd_json_view.h"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static cudagate::ReviewTextParser skipping(1024, cudagate::kMaxReviewDepth);
  static cudagate::ReviewTextParser skipping_in_place(1024, cudagate::kMaxReviewDepth);
  static cudagate::PaddedDomParser plain(1024, cudagate::kMaxReviewDepth);
  const std::string managed(reinterpret_cast<const char*>(data), size);
  const std::string text =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
      R"("object":{"kind":"Pod","metadata":{"name":"p","managedFields":)" +
      managed + R"(,"namespace":"n"},"spec":{"containers":[{"name":"c"}]}}}})";

  bool skipped = false;
  const auto fast = skipping.parse(text, &skipped);
  const json fast_doc = fast ? cudagate::to_nlohmann(*fast) : json();
  // The same text held as the server holds a body, read where it lies.
  const cudagate::PaddedString held(text);
  bool skipped_in_place = false;
  const auto in_place = skipping_in_place.parse(held.padded(), &skipped_in_place);
  if (in_place.has_value() != fast.has_value() || skipped_in_place != skipped) std::abort();
  if (in_place && cudagate::to_nlohmann(*in_place) != fast_doc) std::abort();
  const auto reference = plain.parse(text);
  if (fast.has_value() != reference.has_value()) std::abort();
  if (!fast) return 0;
  json expected = cudagate::to_nlohmann(*reference);
  if (skipped) {
    // Skipped: the whole text is valid JSON to the reference parser too
    // (the input may close the field and go on with more members).
    if (!json::accept(text)) std::abort();
    expected["request"]["object"]["metadata"]["managedFields"] = json::array();
  }
  if (fast_doc != expected) std::abort();
  return 0;
}
