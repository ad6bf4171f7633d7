// The metrics exposition: the text format, concurrent updates all counted, the webhook's
// metric names, and output that promtool accepts.
#include "server/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace cudagate {
namespace {

struct RenderRow {
  const char* name;
  std::function<void(MetricsRegistry&)> fill;
  std::string expected;
};

TEST(MetricsRegistry, RendersTheTextFormat) {
  const std::vector<RenderRow> rows = {
      {"counter with labels, sorted by label values",
       [](MetricsRegistry& r) {
         auto& c = r.counter("x_requests_total", "Requests.", {"code"});
         c.add({"500"});
         c.add({"200"}, 2);
       },
       "# HELP x_requests_total Requests.\n# TYPE x_requests_total counter\n"
       "x_requests_total{code=\"200\"} 2\nx_requests_total{code=\"500\"} 1\n"},
      {"label values and help escaped",
       [](MetricsRegistry& r) {
         r.counter("x_total", "Back\\slash\nnewline \"quoted\".", {"v"}).add({"a\"b\\c\nd"});
       },
       "# HELP x_total Back\\\\slash\\nnewline \"quoted\".\n# TYPE x_total counter\n"
       "x_total{v=\"a\\\"b\\\\c\\nd\"} 1\n"},
      {"gauge set and fractional values",
       [](MetricsRegistry& r) {
         auto& g = r.gauge("x_seconds", "Seconds.");
         g.set({}, 1.5);
       },
       "# HELP x_seconds Seconds.\n# TYPE x_seconds gauge\nx_seconds 1.5\n"},
      {"histogram buckets are cumulative with +Inf, sum and count",
       [](MetricsRegistry& r) {
         auto& h = r.histogram("x_duration_seconds", "Durations.", {"e"}, {0.1, 1});
         h.observe({"a"}, 0.05);
         h.observe({"a"}, 0.1);  // a bound belongs to its bucket (le)
         h.observe({"a"}, 5);
       },
       "# HELP x_duration_seconds Durations.\n# TYPE x_duration_seconds histogram\n"
       "x_duration_seconds_bucket{e=\"a\",le=\"0.1\"} 2\n"
       "x_duration_seconds_bucket{e=\"a\",le=\"1.0\"} 2\n"
       "x_duration_seconds_bucket{e=\"a\",le=\"+Inf\"} 3\n"
       "x_duration_seconds_sum{e=\"a\"} 5.15\n"
       "x_duration_seconds_count{e=\"a\"} 3\n"},
      {"unlabelled histogram without observations shows zeros",
       [](MetricsRegistry& r) { r.histogram("x_seconds", "S.", {}, {1}); },
       "# HELP x_seconds S.\n# TYPE x_seconds histogram\nx_seconds_bucket{le=\"1.0\"} 0\n"
       "x_seconds_bucket{le=\"+Inf\"} 0\nx_seconds_sum 0\nx_seconds_count 0\n"},
      {"wrong label count and negative counter increments are ignored",
       [](MetricsRegistry& r) {
         auto& c = r.counter("x_total", "X.", {"a"});
         c.add({"1", "2"});
         c.add({});
         c.add({"1"}, -1);
         r.gauge("y", "Y.", {"a"}).set({}, 3);
       },
       "# HELP x_total X.\n# TYPE x_total counter\n# HELP y Y.\n# TYPE y gauge\n"},
      {"touch creates a zero series",
       [](MetricsRegistry& r) { r.counter("x_total", "X.", {"a"}).touch({"b"}); },
       "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"b\"} 0\n"},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    MetricsRegistry registry;
    row.fill(registry);
    EXPECT_EQ(registry.render(), row.expected);
  }
}

// Updates take no lock: threads add to shared and new series while another
// renders, and no increment is lost.
TEST(MetricsRegistry, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry r;
  auto& c = r.counter("x_total", "X.", {"worker", "kind"});
  auto& h = r.histogram("x_seconds", "S.", {"kind"}, {0.5});
  auto& g = r.gauge("x_open", "Open.");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    while (!done.load()) {
      const std::string text = r.render();
      ASSERT_NE(text.find("# TYPE x_seconds histogram"), std::string::npos);
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      const std::string mine = std::to_string(t);
      for (int i = 0; i < kPerThread; ++i) {
        c.add({"all", "shared"});
        c.add({mine, i % 2 == 0 ? "even" : "odd"});  // series created while others update
        h.observe({"shared"}, i % 2 == 0 ? 0.25 : 1.0);
        g.add({}, 1);
        g.add({}, -1);
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  renderer.join();

  const std::string text = r.render();
  const auto has = [&text](const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(
      has("x_total{worker=\"all\",kind=\"shared\"} " + std::to_string(kThreads * kPerThread)))
      << text;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(has("x_total{worker=\"" + std::to_string(t) + "\",kind=\"even\"} " +
                    std::to_string(kPerThread / 2)))
        << text;
  }
  const int total = kThreads * kPerThread;
  EXPECT_TRUE(has("x_seconds_bucket{kind=\"shared\",le=\"0.5\"} " + std::to_string(total / 2)))
      << text;
  EXPECT_TRUE(has("x_seconds_bucket{kind=\"shared\",le=\"+Inf\"} " + std::to_string(total)))
      << text;
  EXPECT_TRUE(has("x_seconds_count{kind=\"shared\"} " + std::to_string(total))) << text;
  EXPECT_TRUE(has("x_seconds_sum{kind=\"shared\"} " + std::to_string(total / 2 * 5 / 4))) << text;
  EXPECT_TRUE(has("x_open 0")) << text;
}

TEST(WebhookMetrics, ExposesTheContractNames) {
  WebhookMetrics metrics("1.2.3", "abc123");
  metrics.admission("validate", "fail", "deny", "enforce", 0.002);
  metrics.metadata_lookup("env", "found");
  metrics.inventory(10, 4, 1, 1700000000);
  metrics.certificate_expiry(1800000000);
  const std::string text = metrics.render();
  for (const char* line : {
           // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one series, split in two
           "cudagate_admission_requests_total{endpoint=\"validate\",verdict=\"fail\","
           "decision=\"deny\",mode=\"enforce\"} 1\n",
           "cudagate_admission_duration_seconds_count{endpoint=\"validate\"} 1\n",
           "cudagate_admission_duration_seconds_count{endpoint=\"mutate\"} 0\n",
           "cudagate_image_metadata_lookups_total{source=\"env\",result=\"found\"} 1\n",
           "cudagate_registry_request_duration_seconds_count 0\n",
           "cudagate_inventory_nodes{state=\"total\"} 10\n",
           "cudagate_inventory_nodes{state=\"gpu\"} 4\n",
           "cudagate_inventory_nodes{state=\"unknown\"} 1\n",
           "cudagate_inventory_last_sync_timestamp_seconds 1700000000\n",
           "cudagate_tls_certificate_expiry_timestamp_seconds 1800000000\n",
           "cudagate_build_info{version=\"1.2.3\",compat_db_revision=\"abc123\"} 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
}

TEST(WebhookMetrics, ImageScans) {
  WebhookMetrics metrics("1.2.3", "abc123");
  metrics.scans_enabled();
  metrics.scan("scanned", 1024, 2.5);
  metrics.scan("over_budget", 4096, 1);
  metrics.scans_pending(3);
  const std::string text = metrics.render();
  for (const char* line : {
           "cudagate_image_scans_total{result=\"scanned\"} 1\n",
           "cudagate_image_scans_total{result=\"failed\"} 0\n",
           "cudagate_image_scans_total{result=\"over_budget\"} 1\n",
           "cudagate_image_scan_bytes_total 5120\n",
           "cudagate_image_scan_duration_seconds_count 2\n",
           "cudagate_image_scans_pending 3\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
}

TEST(WebhookMetrics, PassesPromtool) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  WebhookMetrics metrics("1.2.3", "abc123");
  metrics.admission("mutate", "partial", "patch", "enforce", 0.01);
  metrics.metadata_lookup("unknown", "unknown");
  metrics.reload("config", "error");
  const auto path = std::filesystem::temp_directory_path() /
                    ("cudagate-metrics-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << metrics.render();
  const std::string command = "promtool check metrics < " + path.string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::filesystem::remove(path);
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace cudagate
