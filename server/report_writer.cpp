// Server-side apply of the audit's reports, then the stale ones deleted.
#include "server/report_writer.h"

#include <set>
#include <string>
#include <utility>

namespace cudagate {
namespace {

using kube::ApiCallId;

struct Calls {
  ApiCallId list, apply, remove;
};

Calls calls_of(ReportApi api) {
  if (api == ReportApi::open_reports) {
    return {ApiCallId::write_list_reports, ApiCallId::write_apply_reports,
            ApiCallId::write_delete_reports};
  }
  return {ApiCallId::write_list_policyreports, ApiCallId::write_apply_policyreports,
          ApiCallId::write_delete_policyreports};
}

void failure(ReportWrite& out, Error error) {
  ++out.failed;
  if (!out.error) out.error = std::move(error);
}

}  // namespace

ReportWrite write_reports(kube::BlockingApiClient& client, ReportApi api,
                          const std::vector<nlohmann::json>& reports) {
  const Calls calls = calls_of(api);
  ReportWrite out;
  std::set<std::pair<std::string, std::string>> written;
  for (const nlohmann::json& report : reports) {
    const auto& metadata = report.at("metadata");
    if (!metadata.contains("namespace")) continue;
    std::string ns = metadata.at("namespace").get<std::string>();
    std::string name = metadata.at("name").get<std::string>();
    auto applied = client.apply(calls.apply, ns, name, report);
    if (!applied) {
      failure(out, applied.error());
      continue;
    }
    ++out.applied;
    written.emplace(std::move(ns), std::move(name));
  }
  if (out.failed > 0) return out;  // keep what is there until every report is written

  std::vector<std::pair<std::string, std::string>> stale;
  kube::ListOptions options;
  options.label_selector = "app.kubernetes.io/managed-by=" + std::string(kReportPolicy);
  auto listed = client.list(calls.list, options, [&](nlohmann::json page, bool first) {
    if (first) stale.clear();
    const auto items = page.find("items");
    if (items == page.end() || !items->is_array()) return;
    for (const auto& item : *items) {
      const auto meta = item.find("metadata");
      if (meta == item.end() || !meta->is_object()) continue;
      std::pair<std::string, std::string> key{meta->value("namespace", std::string()),
                                              meta->value("name", std::string())};
      if (!key.first.empty() && !written.contains(key)) stale.push_back(std::move(key));
    }
  });
  if (listed) {
    failure(out, *listed);
    return out;
  }
  for (const auto& [ns, name] : stale) {
    if (auto error = client.remove(calls.remove, ns, name)) {
      failure(out, *error);
    } else {
      ++out.deleted;
    }
  }
  return out;
}

}  // namespace cudagate
