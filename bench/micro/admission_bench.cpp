// The admission path, piece by piece and whole, on gen.py's request bodies
// (bench/data) against gen.py's kind of fleet (fleet.h):
//   decode     the AdmissionReview body -> request fields and the workload;
//              on the hot path, the parse (with and without managedFields
//              built) and the workload read from its document, apart
//   evaluate   covered by decision_bench.cpp
//   patch      /mutate of a partial pod: the pin and its JSON Patch
//   encode     the response review, serialised
//   handle     handle_admission(), everything an HTTP request pays for
//              besides TLS and HTTP.
// The 13 KB gpu-pod body is what the load comparison (bench/load/compare.sh) sends.

#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

#include "admission/admission.h"
#include "admission/admission_response.h"
#include "admission/admission_review.h"
#include "admission/pin_affinity.h"
#include "admission/review_text.h"
#include "admission/simd_json_view.h"
#include "bench/micro/fleet.h"
#include "policy/objects/pod.h"
#include "policy/objects/workload_reader.h"
#include "policy/rules/evaluate.h"
#include "policy/rules/metadata.h"

namespace cudagate::bench {
namespace {

// gpu-pod asking for CUDA 12.8 from an image cudagate knows nothing else
// about: of its candidate A100 nodes only the R570 ones qualify, so the
// decision is partial and /mutate pins it.
const std::string& partial_body() {
  static const std::string text = [] {
    std::string b = body("gpu-pod");
    auto replace = [&b](std::string_view from, std::string_view to) {
      const auto at = b.find(from);
      if (at == std::string::npos) std::abort();
      b.replace(at, from.size(), to);
    };
    replace(R"("CUDA_VERSION","value":"12.4.1")", R"("CUDA_VERSION","value":"12.8.0")");
    // An image without catalog facts: no forward compatibility to lean on.
    replace(R"("image":"nvcr.io/nvidia/pytorch:24.05-py3")",
            R"("image":"registry.example.com/ml/train:v1")");
    return b;
  }();
  return text;
}

void BM_DecodeReview(benchmark::State& state, const std::string& name) {
  const std::string& text = body(name);
  for (auto _ : state) {
    auto request = decode_admission_review(text);
    if (!request) {
      state.SkipWithError(request.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(request);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK_CAPTURE(BM_DecodeReview, gpu_pod, std::string("gpu-pod"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DecodeReview, gpu_pod_nomf, std::string("gpu-pod-nomf"))
    ->Unit(benchmark::kMicrosecond);

// The decoded object -> workload facts.
void BM_WorkloadFromJson(benchmark::State& state) {
  auto request = decode_admission_review(body("gpu-pod"));
  if (!request) std::abort();
  for (auto _ : state) {
    auto workload = workload_from_json(request->object, "Pod");
    if (!workload) {
      state.SkipWithError(workload.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(workload);
  }
}
BENCHMARK(BM_WorkloadFromJson)->Unit(benchmark::kMicrosecond);

// The hot path's halves of decode: simdjson's parse of the body, then the
// workload read from its document as handle_admission reads it.

// Parses `text` again and again with one parser of type P, reused.
template <class P>
void parse_each(benchmark::State& state, const std::string& text) {
  P parser(std::size_t{64} * 1024, kMaxReviewDepth);
  for (auto _ : state) {
    auto root = parser.parse(text);
    if (!root) {
      state.SkipWithError("simdjson refused the body");
      return;
    }
    benchmark::DoNotOptimize(root);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_ParseFast(benchmark::State& state, const std::string& name) {
  parse_each<ReviewTextParser>(state, body(name));
}
BENCHMARK_CAPTURE(BM_ParseFast, gpu_pod, std::string("gpu-pod"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ParseFast, gpu_pod_nomf, std::string("gpu-pod-nomf"))
    ->Unit(benchmark::kMicrosecond);

// simdjson's ordinary parse of the same body, managedFields built: what
// BM_ParseFast saves, measured in the same run.
void BM_ParseWhole(benchmark::State& state) {
  parse_each<PaddedDomParser>(state, body("gpu-pod"));
}
BENCHMARK(BM_ParseWhole)->Unit(benchmark::kMicrosecond);

void BM_WorkloadFromView(benchmark::State& state) {
  // The review body's view, as the webhook reads it.
  ReviewTextParser parser(std::size_t{64} * 1024, kMaxReviewDepth);
  const auto root = parser.parse(body("gpu-pod"));
  if (!root) std::abort();
  const SimdJsonView object = root->find("request").find("object");
  WorkloadReadOptions options;
  options.keep_env = metadata_reads_env;
  for (auto _ : state) {
    auto workload = workload_from_view(object, "", options);
    if (!workload) {
      state.SkipWithError(workload.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(workload);
  }
}
BENCHMARK(BM_WorkloadFromView)->Unit(benchmark::kMicrosecond);

void BM_PinAffinity(benchmark::State& state) {
  const Inventory& inv = inventory(static_cast<int>(state.range(0)));
  auto request = decode_admission_review(partial_body());
  if (!request) std::abort();
  auto workload = workload_from_json(request->object, "Pod");
  if (!workload) std::abort();
  const Policy policy;
  auto decision = evaluate(*workload, inv, policy, db(), {});
  if (!decision || decision->verdict != Verdict::partial) {
    state.SkipWithError("the pod is not partial on this fleet");
    return;
  }
  for (auto _ : state) {
    auto pin = pin_affinity(request->object, *workload, *decision, inv, db(), "bench");
    if (!pin) {
      state.SkipWithError(pin.error().str().c_str());
      return;
    }
    benchmark::DoNotOptimize(pin);
  }
  state.counters["nodes"] = static_cast<double>(inv.size());
}
BENCHMARK(BM_PinAffinity)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_EncodeResponse(benchmark::State& state) {
  for (auto _ : state) {
    AdmissionResponse response = AdmissionResponse::allowed();
    response.with_audit_annotation("verdict", "pass");
    response.with_audit_annotation("mode", "enforce");
    response.with_audit_annotation("decision", "allow");
    const std::string text =
        response
            .complete(ReviewVersion::v1, "705ab4f5-6393-11e8-b7cc-42010a800002", Endpoint::validate)
            .dump();
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_EncodeResponse)->Unit(benchmark::kMicrosecond);

void BM_HandleAdmission(benchmark::State& state, Endpoint endpoint, const std::string* text) {
  const Inventory& inv = inventory(static_cast<int>(state.range(0)));
  const Policy policy;
  const AdmissionContext context{db(), policy, inv};
  AdmissionWorkspace workspace;
  std::string decision;
  for (auto _ : state) {
    AdmissionOutcome outcome = handle_admission(endpoint, "", *text, context, workspace);
    if (outcome.http_status != 200) {
      state.SkipWithError(outcome.body.c_str());
      return;
    }
    decision = to_string(outcome.decision);
    benchmark::DoNotOptimize(outcome);
  }
  state.SetLabel(decision);
  state.counters["nodes"] = static_cast<double>(inv.size());
}
BENCHMARK_CAPTURE(BM_HandleAdmission, validate_gpu_pod, Endpoint::validate, &body("gpu-pod"))
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_HandleAdmission, validate_gpu_pod_deny, Endpoint::validate,
                  &body("gpu-pod-deny"))
    ->Arg(1000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_HandleAdmission, validate_cpu_pod, Endpoint::validate, &body("cpu-pod"))
    ->Arg(1000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_HandleAdmission, mutate_partial_pod, Endpoint::mutate, &partial_body())
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace cudagate::bench
