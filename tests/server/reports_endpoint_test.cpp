// GET /reports: what the webhook judged, in each format, by namespace; other formats refused.
#include "server/reports_endpoint.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "compat-db/compat_db.h"
#include "server/routes.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;

class ReportsEndpointTest : public ::testing::Test {
 protected:
  ReportsEndpointTest() {
    state_ = std::make_unique<ServerState>(std::make_shared<const CompatDb>(test_support::db()),
                                           std::make_shared<const Policy>(),
                                           std::make_shared<const Inventory>());
    for (const char* ns : {"ml", "web"}) {
      Decision d;
      d.resource = ResourceRef{"v1", "Pod", ns, std::string("p-") + ns};
      d.verdict = Verdict::skip;
      d.reason = "no GPU container";
      state_->reports().record(d);
    }
  }

  HttpResponse get(const std::string& target) {
    HttpRequest request{http::verb::get, target, 11};
    return route(request, *state_, metrics_, workspaces_);
  }

  std::unique_ptr<ServerState> state_;
  WebhookMetrics metrics_{"test", "test"};
  AdmissionWorkspaces workspaces_;
};

TEST_F(ReportsEndpointTest, JsonByDefaultAndByNamespace) {
  auto res = get("/reports");
  ASSERT_EQ(res.result(), http::status::ok);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  auto records = nlohmann::json::parse(res.body());
  ASSERT_EQ(records.size(), 2U);
  EXPECT_EQ(records[0]["resource"]["name"], "p-ml");
  EXPECT_EQ(records[0]["verdict"], "skip");

  records = nlohmann::json::parse(get("/reports?format=json&namespace=web").body());
  ASSERT_EQ(records.size(), 1U);
  EXPECT_EQ(records[0]["resource"]["namespace"], "web");
}

TEST_F(ReportsEndpointTest, EachFormat) {
  auto res = get("/reports?format=policyreport");
  EXPECT_EQ(res[http::field::content_type], "application/yaml");
  EXPECT_NE(res.body().find("kind: PolicyReport\n"), std::string::npos);
  EXPECT_NE(res.body().find("namespace: web\n"), std::string::npos);
  res = get("/reports?format=openreports&namespace=ml");
  EXPECT_NE(res.body().find("apiVersion: openreports.io/v1alpha1\n"), std::string::npos);
  EXPECT_EQ(res.body().find("namespace: web"), std::string::npos);
  res = get("/reports?format=html");
  EXPECT_EQ(res[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_NE(res.body().find("<table id=\"matrix\">"), std::string::npos);
}

TEST_F(ReportsEndpointTest, UnknownFormatAndWrongMethod) {
  auto res = get("/reports?format=xml");
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_NE(res.body().find("unknown format \\\"xml\\\""), std::string::npos) << res.body();
  HttpRequest post{http::verb::post, "/reports", 11};
  EXPECT_EQ(route(post, *state_, metrics_, workspaces_).result(), http::status::method_not_allowed);
}

}  // namespace
}  // namespace cudagate
