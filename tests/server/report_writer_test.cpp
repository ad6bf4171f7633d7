// Writing the audit's reports into a cluster, against an API server double on loopback over
// TLS: every namespaced report applied server-side, then the reports cudagate wrote before and
// no longer writes deleted, for PolicyReports and OpenReports; a failed apply leaves the old
// reports in place, and each failure is counted with the first one's error.
#include "server/report_writer.h"

#include <gtest/gtest.h>

#include <boost/beast/http/field.hpp>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"
#include "tests/support/loopback_cluster.h"

namespace cudagate {
namespace {

using nlohmann::json;
using ::test_support::HttpTestServer;

kube::ClusterConfig report_writer_cluster(const HttpTestServer& server) {
  return ::test_support::loopback_cluster(server, "audit-token");
}

json report_writer_report(const char* api_version, const char* kind, const std::string& ns,
                          const std::string& name) {
  json metadata = {{"name", name}, {"labels", {{"app.kubernetes.io/managed-by", "cudagate"}}}};
  if (!ns.empty()) metadata["namespace"] = ns;
  return {{"apiVersion", api_version}, {"kind", kind}, {"metadata", metadata}, {"results", {}}};
}

// The double: answers a request as `answer` says and keeps "METHOD target"
// of each, with the body of each apply.
class ReportApiDouble {
 public:
  using Answer = std::function<HttpTestServer::Answer(const HttpTestServer::Request&)>;
  explicit ReportApiDouble(Answer answer)
      : server_(
            [this, answer = std::move(answer)](const HttpTestServer::Request& request) {
              {
                std::lock_guard lock(mutex_);
                seen_.push_back(std::string(request.method_string()) + " " +
                                std::string(request.target()));
                if (request.method() == boost::beast::http::verb::patch) {
                  applied_.push_back(json::parse(request.body(), nullptr, false));
                }
              }
              return answer(request);
            },
            ::test_support::dev_certs()) {}

  [[nodiscard]] std::vector<std::string> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  [[nodiscard]] std::vector<json> applied() const {
    std::lock_guard lock(mutex_);
    return applied_;
  }
  [[nodiscard]] const HttpTestServer& server() const { return server_; }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> seen_;
  std::vector<json> applied_;
  HttpTestServer server_;  // last: its threads stop before the members they use go
};

HttpTestServer::Answer report_writer_json(int status, const json& body) {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  answer.response.set(boost::beast::http::field::content_type, "application/json");
  answer.response.body() = body.dump();
  return answer;
}

// What the cluster holds before the write: one report still written, two
// stale, and an item without a namespace, which is not cudagate's to delete.
json report_writer_listed(const char* api_version, const char* kind) {
  return {{"apiVersion", api_version},
          {"kind", std::string(kind) + "List"},
          {"metadata", json::object()},
          {"items",
           {report_writer_report(api_version, kind, "ml", "cudagate"),
            report_writer_report(api_version, kind, "ml", "cudagate-1"),
            report_writer_report(api_version, kind, "gone", "cudagate"),
            report_writer_report(api_version, kind, "", "cudagate")}}};
}

// Applies answer with the object, deletes with a Status, the list as above.
HttpTestServer::Answer report_writer_cluster_answers(const HttpTestServer::Request& request,
                                                     const char* api_version, const char* kind) {
  if (request.method() == boost::beast::http::verb::patch) {
    return report_writer_json(200, json::parse(request.body(), nullptr, false));
  }
  if (request.method() == boost::beast::http::verb::delete_) {
    return report_writer_json(200, {{"kind", "Status"}, {"status", "Success"}});
  }
  return report_writer_json(200, report_writer_listed(api_version, kind));
}

TEST(ReportWriter, AppliesEveryNamespacedReportThenDeletesTheStaleOnes) {
  struct Row {
    ReportApi api;
    const char* api_version;
    const char* kind;
    const char* prefix;  // the collection's path, without the namespace
    const char* resource;
  };
  const Row rows[] = {
      {ReportApi::policy_report, "wgpolicyk8s.io/v1alpha2", "PolicyReport",
       "/apis/wgpolicyk8s.io/v1alpha2", "policyreports"},
      {ReportApi::open_reports, "openreports.io/v1alpha1", "Report",
       "/apis/openreports.io/v1alpha1", "reports"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.kind);
    ReportApiDouble api([&row](const HttpTestServer::Request& request) {
      return report_writer_cluster_answers(request, row.api_version, row.kind);
    });
    kube::BlockingApiClient client(report_writer_cluster(api.server()));
    const std::vector<json> reports = {
        report_writer_report(row.api_version, row.kind, "ml", "cudagate"),
        report_writer_report(row.api_version, row.kind, "team", "cudagate"),
        // Cluster-scoped: workloads listed from a cluster have a namespace.
        report_writer_report(row.api_version, std::string("Cluster").append(row.kind).c_str(), "",
                             "cudagate"),
    };
    const ReportWrite written = write_reports(client, row.api, reports);
    EXPECT_EQ(written.applied, 2U);
    EXPECT_EQ(written.deleted, 2U);
    EXPECT_EQ(written.failed, 0U);
    EXPECT_FALSE(written.error.has_value()) << written.error->str();

    const std::string p = row.prefix;
    const std::string r = row.resource;
    const std::vector<std::string> expected = {
        "PATCH " + p + "/namespaces/ml/" + r + "/cudagate?fieldManager=cudagate&force=true",
        "PATCH " + p + "/namespaces/team/" + r + "/cudagate?fieldManager=cudagate&force=true",
        "GET " + p + "/" + r + "?limit=500&labelSelector=app.kubernetes.io%2Fmanaged-by%3Dcudagate",
        "DELETE " + p + "/namespaces/ml/" + r + "/cudagate-1",
        "DELETE " + p + "/namespaces/gone/" + r + "/cudagate",
    };
    EXPECT_EQ(api.seen(), expected);
    const auto applied = api.applied();
    ASSERT_EQ(applied.size(), 2U);
    EXPECT_EQ(applied[0], reports[0]);
    EXPECT_EQ(applied[1], reports[1]);
  }
}

TEST(ReportWriter, FailuresAreCountedAndAFailedApplyDeletesNothing) {
  struct Row {
    const char* what;
    // "METHOD target-prefix" answered 403; the rest as the cluster would.
    const char* refused;
    std::size_t applied, deleted, failed;
    std::size_t requests;
  };
  const Row rows[] = {
      {"an apply refused", "PATCH /apis/wgpolicyk8s.io/v1alpha2/namespaces/team/", 1, 0, 1, 2},
      {"the list refused", "GET /apis/wgpolicyk8s.io/v1alpha2/policyreports", 2, 0, 1, 3},
      {"a delete refused", "DELETE /apis/wgpolicyk8s.io/v1alpha2/namespaces/gone/", 2, 1, 1, 5},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.what);
    const std::string refused = row.refused;
    ReportApiDouble api([&refused](const HttpTestServer::Request& request) {
      const std::string line =
          std::string(request.method_string()) + " " + std::string(request.target());
      if (line.starts_with(refused)) {
        return report_writer_json(403, {{"kind", "Status"},
                                        {"status", "Failure"},
                                        {"reason", "Forbidden"},
                                        {"message", "policyreports is forbidden"},
                                        {"code", 403}});
      }
      return report_writer_cluster_answers(request, "wgpolicyk8s.io/v1alpha2", "PolicyReport");
    });
    kube::BlockingApiClient client(report_writer_cluster(api.server()));
    const std::vector<json> reports = {
        report_writer_report("wgpolicyk8s.io/v1alpha2", "PolicyReport", "ml", "cudagate"),
        report_writer_report("wgpolicyk8s.io/v1alpha2", "PolicyReport", "team", "cudagate"),
    };
    const ReportWrite written = write_reports(client, ReportApi::policy_report, reports);
    EXPECT_EQ(written.applied, row.applied);
    EXPECT_EQ(written.deleted, row.deleted);
    EXPECT_EQ(written.failed, row.failed);
    ASSERT_TRUE(written.error.has_value());
    EXPECT_NE(written.error->str().find("403"), std::string::npos) << written.error->str();
    EXPECT_NE(written.error->str().find("policyreports is forbidden"), std::string::npos)
        << written.error->str();
    // A refused request is not retried.
    EXPECT_EQ(api.seen().size(), row.requests);
  }
}

}  // namespace
}  // namespace cudagate
