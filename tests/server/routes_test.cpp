// The HTTP endpoints: answers by method, path and Content-Type, readiness, and which admissions
// the metrics count (not the API server's dryRun ones; a bad body as an error).
#include "server/routes.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "compat-db/compat_db.h"
#include "tests/support/embedded_compat_db.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;

std::string review(const std::string& uid, bool dry_run) {
  const nlohmann::json gvk = {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}};
  return nlohmann::json{{"kind", "AdmissionReview"},
                        {"apiVersion", "admission.k8s.io/v1"},
                        {"request",
                         {{"uid", uid},
                          {"kind", gvk},
                          {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                          {"name", "web"},
                          {"namespace", "default"},
                          {"operation", "CREATE"},
                          {"userInfo", {{"username", "admin"}}},
                          {"object",
                           {{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"metadata", {{"name", "web"}, {"namespace", "default"}}},
                            {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}}},
                          {"oldObject", nullptr},
                          {"dryRun", dry_run}}}}
      .dump();
}

class RoutesTest : public ::testing::Test {
 protected:
  RoutesTest() { reset_state(); }

  void reset_state() {
    state_ = std::make_unique<ServerState>(std::make_shared<const CompatDb>(test_support::db()),
                                           std::make_shared<const Policy>(),
                                           std::make_shared<const Inventory>());
  }

  HttpResponse call(http::verb method, const std::string& target,
                    const std::string& content_type = "", const std::string& body = "") {
    HttpRequest request{method, target, 11};
    if (!content_type.empty()) request.set(http::field::content_type, content_type);
    request.body() = body;
    request.prepare_payload();
    return route(request, *state_, metrics_, workspaces_);
  }

  std::unique_ptr<ServerState> state_;
  WebhookMetrics metrics_{"test", "rev"};
  AdmissionWorkspaces workspaces_;
};

TEST_F(RoutesTest, MethodPathAndContentType) {
  struct Row {
    http::verb method;
    const char* target;
    const char* content_type;
    http::status status;
    const char* allow;  // expected Allow header for 405
  };
  const Row rows[] = {
      {http::verb::get, "/healthz", "", http::status::ok, ""},
      {http::verb::get, "/healthz?verbose=1", "", http::status::ok, ""},
      {http::verb::post, "/healthz", "", http::status::method_not_allowed, "GET"},
      {http::verb::get, "/metrics", "", http::status::ok, ""},
      {http::verb::delete_, "/metrics", "", http::status::method_not_allowed, "GET"},
      {http::verb::get, "/validate", "", http::status::method_not_allowed, "POST"},
      {http::verb::put, "/mutate", "application/json", http::status::method_not_allowed, "POST"},
      {http::verb::post, "/validate", "", http::status::unsupported_media_type, ""},
      {http::verb::post, "/validate", "text/plain", http::status::unsupported_media_type, ""},
      {http::verb::post, "/mutate", "application/json-patch+json",
       http::status::unsupported_media_type, ""},
      {http::verb::post, "/validate", "application/json", http::status::ok, ""},
      {http::verb::post, "/validate", "Application/JSON; charset=utf-8", http::status::ok, ""},
      {http::verb::post, "/mutate?timeout=10s", "application/json", http::status::ok, ""},
      {http::verb::get, "/", "", http::status::not_found, ""},
      {http::verb::get, "/validate/", "", http::status::not_found, ""},
      {http::verb::post, "/reports", "application/json", http::status::method_not_allowed, "GET"},
      {http::verb::get, "/reports", "", http::status::ok, ""},
      {http::verb::get, "/report", "", http::status::not_found, ""},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(std::string(http::to_string(row.method)) + " " + row.target + " " +
                 row.content_type);
    const auto res = call(row.method, row.target, row.content_type, review("u-1", false));
    EXPECT_EQ(res.result(), row.status) << res.body();
    EXPECT_EQ(res[http::field::allow], row.allow);
    if (row.status != http::status::ok) {
      EXPECT_EQ(res[http::field::content_type], "application/json");
      const auto body = nlohmann::json::parse(res.body(), nullptr, false);
      ASSERT_TRUE(body.is_object()) << res.body();
      EXPECT_TRUE(body["error"].is_string());
    }
  }
}

TEST_F(RoutesTest, Readiness) {
  struct Row {
    bool certificate;
    bool inventory;
    bool shutdown;
    http::status status;
  };
  const Row rows[] = {
      {false, false, false, http::status::service_unavailable},
      {true, false, false, http::status::service_unavailable},
      {false, true, false, http::status::service_unavailable},
      {true, true, false, http::status::ok},
      {true, true, true, http::status::service_unavailable},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(::testing::Message() << row.certificate << row.inventory << row.shutdown);
    reset_state();
    if (row.certificate) state_->set_certificate_loaded();
    if (row.inventory) state_->set_inventory_synced();
    if (row.shutdown) state_->begin_shutdown();
    EXPECT_EQ(call(http::verb::get, "/readyz").result(), row.status);
  }
}

TEST_F(RoutesTest, AdmissionsAreCountedExceptDryRun) {
  auto res = call(http::verb::post, "/validate?timeout=10s&mode=warn", "application/json",
                  review("u-2", false));
  ASSERT_EQ(res.result(), http::status::ok) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["response"]["uid"], "u-2");
  res = call(http::verb::post, "/mutate", "application/json", review("u-3", true));
  ASSERT_EQ(res.result(), http::status::ok) << res.body();
  EXPECT_EQ(nlohmann::json::parse(res.body())["response"]["uid"], "u-3");

  const std::string text = metrics_.render();
  EXPECT_NE(text.find("cudagate_admission_requests_total{endpoint=\"validate\",verdict=\"skip\","
                      "decision=\"allow\",mode=\"warn\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cudagate_admission_requests_total{endpoint=\"mutate\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("cudagate_admission_duration_seconds_count{endpoint=\"mutate\"} 0"),
            std::string::npos)
      << text;
}

// Webhook configurations cannot carry a query, so the mode may be the last
// path segment; other paths under /validate and /mutate stay unknown.
TEST_F(RoutesTest, ModeAsAPathSegment) {
  for (const std::string_view mode : {"enforce", "warn", "dryrun"}) {
    for (const std::string_view endpoint : {"validate", "mutate"}) {
      const std::string target = "/" + std::string(endpoint) + "/" + std::string(mode);
      SCOPED_TRACE(target);
      const auto res = call(http::verb::post, target, "application/json", review("u-9", false));
      ASSERT_EQ(res.result(), http::status::ok) << res.body();
      EXPECT_NE(metrics_.render().find("endpoint=\"" + std::string(endpoint) +
                                       "\",verdict=\"skip\",decision=\"allow\",mode=\"" +
                                       std::string(mode) + "\"}"),
                std::string::npos);
    }
  }
  EXPECT_EQ(call(http::verb::post, "/validate/nonsense", "application/json", review("u-9", false))
                .result(),
            http::status::bad_request);
  for (const std::string_view target : {"/validate/", "/validate/warn/x", "/validatewarn"}) {
    SCOPED_TRACE(target);
    EXPECT_EQ(call(http::verb::post, std::string(target), "application/json", review("u-9", false))
                  .result(),
              http::status::not_found);
  }
  EXPECT_EQ(call(http::verb::get, "/mutate/warn").result(), http::status::method_not_allowed);
}

TEST_F(RoutesTest, BadBodyIsCountedAsAnError) {
  const auto res = call(http::verb::post, "/validate", "application/json", "{not json");
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_NE(metrics_.render().find("cudagate_admission_requests_total{endpoint=\"validate\","
                                   "verdict=\"skip\",decision=\"error\""),
            std::string::npos);
}

}  // namespace
}  // namespace cudagate
