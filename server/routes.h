#pragma once
// The webhook's HTTP endpoints (docs/contract.md §5): what each method and
// path gets.
//
//   POST /validate, POST /mutate   handle_admission() with the URL's `mode`
//                                  parameter, or the mode as a last path
//                                  segment (/validate/warn, /mutate/dryrun:
//                                  webhook configurations cannot carry a
//                                  query); 405 for other methods, 415
//                                  unless Content-Type is application/json
//                                  (parameters such as charset allowed)
//   GET  /healthz                  200 "ok" while the process serves
//   GET  /readyz                   200 "ok" once the certificate and the
//                                  inventory are loaded; 503 before, and
//                                  from the moment shutdown begins
//   GET  /metrics                  Prometheus text exposition
//   GET  /reports                  the latest decision per workload
//                                  (reports_endpoint.h), ?format= and
//                                  ?namespace=
//   anything else                  404
// Error answers are JSON {"error": "..."}.
//
// Each admission is judged against one snapshot of the state, recorded in
// the metrics and in /reports (ServerState::reports()) and logged as one
// structured line (uid, namespace, kind, name, verdict, decision, mode,
// duration_ms), unless the request is the API server's dryRun, which is
// evaluated and recorded nowhere. Request bodies are never logged.
//
// route() is safe to call concurrently from any thread; `state`, `metrics`
// and `workspaces` (the memory admissions reuse) must outlive the calls.

#include "registry/registry_client.h"
#include "server/admission_workspaces.h"
#include "server/metrics.h"
#include "server/state.h"
#include "server/tls_server.h"

namespace cudagate {

[[nodiscard]] HttpResponse route(const HttpRequest& request, const ServerState& state,
                                 WebhookMetrics& metrics, AdmissionWorkspaces& workspaces);

// The same, with image configs from `registry` (may be null: none), in the
// admission layer's three steps: the review is read once; the configs of
// its images are gathered from the registry cache and, for those it misses,
// looked up for as long as the policy's registry.timeout allows; the review
// is decided with what came, the rest unknown (docs/contract.md §6).
// `respond` is called once; `request`, `state`, `metrics`, `workspaces` and
// `registry` must stay valid until then.
void route(const HttpRequest& request, const ServerState& state, WebhookMetrics& metrics,
           AdmissionWorkspaces& workspaces, RegistryClient* registry, Responder respond);

}  // namespace cudagate
