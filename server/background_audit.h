#pragma once
// The background audit (serve --audit-interval): what already runs in the
// cluster judged again, every interval and soon after the node inventory
// changes, so that a driver rollout that leaves running workloads without
// a node that can run them shows in GET /reports and in the metrics before
// those pods restart and fail.
//
// Each run lists the Pods and pod controllers of every namespace from the
// API server (kube/cluster_workloads.h; one list a run, not a watch: a watch
// of every Pod would keep the cluster's pods in memory for a judgement
// made once an interval), judges each workload once (a Pod of a controller
// as that controller) against the current inventory and policy, and
// records the decisions in the ReportStore and the metrics; with
// write_reports, it also keeps one PolicyReport or Report per namespace in
// the cluster (server/report_writer.h). Image configs come from the
// registry cache only: an image not cached is looked up in the background
// for the next run, so a run never waits for a registry.
//
// It runs on a thread of its own, never on an I/O thread, and uses a
// blocking API client. start() once; stop() (also from the destructor)
// lets a run in progress finish (its requests are bounded by the client's
// timeouts) and joins the thread.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#include "kube/cluster_config.h"
#include "registry/registry_client.h"
#include "report/policy_report.h"
#include "server/metrics.h"
#include "server/state.h"

namespace cudagate {

struct BackgroundAuditSettings {
  std::chrono::milliseconds interval{0};
  bool write_reports = false;
  ReportApi report_api = ReportApi::policy_report;
  // Results a written report holds at most (a namespace with more gets
  // numbered reports).
  std::size_t max_report_results = 1000;
  // An inventory change runs the audit this long after it (changes within
  // it share one run), unless the next interval's run comes sooner.
  std::chrono::milliseconds debounce{10'000};
};

class BackgroundAudit {
 public:
  // `state`, `metrics` and `registry` (may be null) must outlive this.
  BackgroundAudit(kube::ClusterConfig cluster, BackgroundAuditSettings settings, ServerState& state,
                  WebhookMetrics& metrics, RegistryClient* registry);
  ~BackgroundAudit();
  BackgroundAudit(const BackgroundAudit&) = delete;
  BackgroundAudit& operator=(const BackgroundAudit&) = delete;

  // Starts the thread; the first run comes once the inventory is synced.
  void start();
  // The node inventory changed (thread-safe).
  void inventory_changed();
  // Thread-safe; joins the thread.
  void stop();

 private:
  void loop();
  void run_once();

  kube::ClusterConfig cluster_;
  BackgroundAuditSettings settings_;
  ServerState& state_;
  WebhookMetrics& metrics_;
  RegistryClient* registry_;

  std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  bool stopped_ = false;
  std::chrono::steady_clock::time_point next_run_{};
  std::thread thread_;
};

}  // namespace cudagate
