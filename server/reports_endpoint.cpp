// The /reports endpoint: the kept decisions rendered by the report layer.
#include "server/reports_endpoint.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "report/audit.h"
#include "report/html_report.h"
#include "report/policy_report.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;

HttpResponse body_response(std::string body, std::string_view content_type) {
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

}  // namespace

HttpResponse reports_response(const std::string& format, const std::string& namespace_,
                              const ServerState& state) {
  if (format != "json" && format != "policyreport" && format != "openreports" && format != "html") {
    return json_error(
        http::status::bad_request,
        "unknown format \"" + format + "\": expected json, policyreport, openreports or html");
  }
  Audit audit;
  for (Decision& d : state.reports().latest(namespace_)) {
    audit.workloads.push_back(AuditedWorkload{std::move(d), "", std::nullopt});
  }
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  if (format == "policyreport") {
    return body_response(policy_reports_yaml(audit, ReportApi::policy_report, now),
                         "application/yaml");
  }
  if (format == "openreports") {
    return body_response(policy_reports_yaml(audit, ReportApi::open_reports, now),
                         "application/yaml");
  }
  if (format == "html") return body_response(html_report(audit, now), "text/html; charset=utf-8");
  return body_response(
      decision_records(audit).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
      "application/json");
}

}  // namespace cudagate
