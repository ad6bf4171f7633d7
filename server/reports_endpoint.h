#pragma once
// GET /reports (docs/contract.md §7.2): the latest decision per workload
// the webhook judged (ServerState::reports()), in the formats of
// `cudagate audit`:
//
//   format=json          (default) an array of decision records, application/json
//   format=policyreport  YAML PolicyReports, one per namespace, application/yaml
//   format=openreports   YAML OpenReports Reports, application/yaml
//   format=html          the HTML matrix, text/html
//   namespace=NAME       only the workloads of that namespace
//
// Another format is 400 with a JSON error naming the ones there are.

#include <string>

#include "server/state.h"
#include "server/tls_server.h"

namespace cudagate {

[[nodiscard]] HttpResponse reports_response(const std::string& format,
                                            const std::string& namespace_,
                                            const ServerState& state);

}  // namespace cudagate
