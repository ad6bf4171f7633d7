// The background audit against an API server double on loopback over TLS: no run before the
// inventory is synced, a run that lists what runs, records each decision in the report store
// and writes the namespace's PolicyReport, a later run (soon after an inventory change) that
// forgets a workload gone, and a refused list counted as a failed run.
#include "server/background_audit.h"

#include <gtest/gtest.h>

#include <boost/beast/http/field.hpp>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_test_server.h"
#include "tests/support/loopback_cluster.h"

namespace cudagate {
namespace {

using nlohmann::json;
using ::test_support::HttpTestServer;

// The pod object of one of tests/fixtures/admission/'s reviews.
json background_audit_pod(const std::string& review) {
  return json::parse(test_support::fixture(review))["request"]["object"];
}

HttpTestServer::Answer background_audit_json(int status, const json& body) {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  answer.response.set(boost::beast::http::field::content_type, "application/json");
  answer.response.body() = body.dump();
  return answer;
}

// The API server: the pods the test sets, no controllers, an empty list of
// reports, and applies answered with the object. Requests are kept as
// "METHOD target", and a test waits for the n-th one that begins so.
class AuditApiDouble {
 public:
  AuditApiDouble()
      : server_([this](const HttpTestServer::Request& request) { return answer(request); },
                ::test_support::dev_certs()) {}

  void set_pods(std::vector<json> pods) {
    std::lock_guard lock(mutex_);
    pods_ = std::move(pods);
  }
  void refuse_pods() {
    std::lock_guard lock(mutex_);
    refuse_pods_ = true;
  }

  // Blocks until `n` requests that begin with `prefix` have come in.
  void wait_for(const std::string& prefix, std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return count_locked(prefix) >= n; });
  }
  [[nodiscard]] std::size_t count(const std::string& prefix) const {
    std::lock_guard lock(mutex_);
    return count_locked(prefix);
  }

  [[nodiscard]] kube::ClusterConfig cluster() const {
    return ::test_support::loopback_cluster(server_, "audit-token");
  }

 private:
  HttpTestServer::Answer answer(const HttpTestServer::Request& request) {
    const std::string line =
        std::string(request.method_string()) + " " + std::string(request.target());
    std::lock_guard lock(mutex_);
    seen_.push_back(line);
    changed_.notify_all();
    if (request.method() == boost::beast::http::verb::patch) {
      return background_audit_json(200, json::parse(request.body(), nullptr, false));
    }
    if (line.starts_with("GET /api/v1/pods?")) {
      if (refuse_pods_) {
        return background_audit_json(403, {{"kind", "Status"},
                                           {"status", "Failure"},
                                           {"reason", "Forbidden"},
                                           {"message", "pods is forbidden"},
                                           {"code", 403}});
      }
      return background_audit_json(
          200, {{"kind", "PodList"}, {"metadata", json::object()}, {"items", pods_}});
    }
    return background_audit_json(200, {{"metadata", json::object()}, {"items", json::array()}});
  }

  [[nodiscard]] std::size_t count_locked(const std::string& prefix) const {
    std::size_t n = 0;
    for (const auto& line : seen_) n += line.starts_with(prefix) ? 1 : 0;
    return n;
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> seen_;
  std::vector<json> pods_;
  bool refuse_pods_ = false;
  HttpTestServer server_;  // last: its threads stop before the members they use go
};

class BackgroundAuditTest : public ::testing::Test {
 protected:
  ServerState state_{std::make_shared<const CompatDb>(test_support::db()),
                     std::make_shared<const Policy>(),
                     std::make_shared<const Inventory>(test_support::fleet())};
  WebhookMetrics metrics_{"test", "rev"};
  AuditApiDouble api_;
};

// The end of a run that writes reports: its list of the reports written before.
constexpr const char* kAuditRunEnd = "GET /apis/wgpolicyk8s.io/v1alpha2/policyreports?";

std::vector<std::string> background_audit_names(const ReportStore& reports) {
  std::vector<std::string> out;
  for (const Decision& d : reports.latest()) {
    out.push_back(d.resource.kind + " " + d.resource.namespace_ + "/" + d.resource.name);
  }
  return out;
}

TEST_F(BackgroundAuditTest, NothingRunsBeforeTheInventoryIsSynced) {
  state_.set_certificate_loaded();  // ready needs the inventory too
  BackgroundAuditSettings settings;
  settings.interval = std::chrono::milliseconds(1);
  BackgroundAudit audit(api_.cluster(), settings, state_, metrics_, nullptr);
  audit.start();
  audit.inventory_changed();
  audit.stop();
  EXPECT_EQ(api_.count(""), 0U);
  EXPECT_TRUE(state_.reports().latest().empty());
  // Enabled: its series are there, at zero.
  EXPECT_NE(metrics_.render().find("cudagate_audit_runs_total{result=\"success\"} 0"),
            std::string::npos)
      << metrics_.render();
}

TEST_F(BackgroundAuditTest, RecordsWhatRunsAndForgetsWhatWentAway) {
  api_.set_pods({background_audit_pod("pod-cuda124.json"), background_audit_pod("pod-cpu.json")});
  state_.set_certificate_loaded();
  state_.set_inventory_synced();
  BackgroundAuditSettings settings;
  settings.interval = std::chrono::hours(1);  // only the first run and the change's
  settings.debounce = std::chrono::milliseconds(1);
  settings.write_reports = true;
  BackgroundAudit audit(api_.cluster(), settings, state_, metrics_, nullptr);
  audit.start();

  // The first run comes at once; its decisions are kept before it writes.
  api_.wait_for(kAuditRunEnd, 1);
  EXPECT_EQ(background_audit_names(state_.reports()),
            (std::vector<std::string>{"Pod ml/trainer-0", "Pod ml/web-0"}));
  EXPECT_EQ(api_.count("GET /api/v1/pods?limit=500"), 1U);
  EXPECT_EQ(api_.count("PATCH /apis/wgpolicyk8s.io/v1alpha2/namespaces/ml/policyreports/"
                       "cudagate?fieldManager=cudagate&force=true"),
            1U);

  // The CPU pod is gone; an inventory change brings the next run well
  // before the interval.
  api_.set_pods({background_audit_pod("pod-cuda124.json")});
  audit.inventory_changed();
  api_.wait_for(kAuditRunEnd, 2);
  audit.stop();  // lets the run finish
  EXPECT_EQ(background_audit_names(state_.reports()),
            (std::vector<std::string>{"Pod ml/trainer-0"}));
  EXPECT_EQ(api_.count("GET /api/v1/pods?limit=500"), 2U);
  const std::string text = metrics_.render();
  EXPECT_NE(text.find("cudagate_audit_runs_total{result=\"success\"} 2"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("cudagate_audit_report_writes_total{operation=\"apply\",result=\"success\"} 2"),
      std::string::npos)
      << text;
}

TEST_F(BackgroundAuditTest, ARefusedListIsAFailedRun) {
  api_.refuse_pods();
  state_.set_certificate_loaded();
  state_.set_inventory_synced();
  BackgroundAuditSettings settings;
  settings.interval = std::chrono::hours(1);
  BackgroundAudit audit(api_.cluster(), settings, state_, metrics_, nullptr);
  audit.start();
  api_.wait_for("GET /api/v1/pods?", 1);
  audit.stop();
  const std::string text = metrics_.render();
  EXPECT_NE(text.find("cudagate_audit_runs_total{result=\"error\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("cudagate_audit_runs_total{result=\"success\"} 0"), std::string::npos)
      << text;
  EXPECT_TRUE(state_.reports().latest().empty());
  // Nothing judged, so nothing written.
  EXPECT_EQ(api_.count("PATCH "), 0U);
}

}  // namespace
}  // namespace cudagate
