#pragma once
// A small Prometheus registry and its text exposition (format 0.0.4), and the
// webhook's metrics (docs/contract.md §8) built on it.
//
// Families are created once at startup; their samples are updated from any
// thread without a lock: an update finds its sample through an immutable
// index and changes it with atomic operations. A family's mutex is taken
// only to add a sample (a label set seen for the first time, which publishes
// a new index) and to render. Label values are given in the
// order of the family's label names; a call with the wrong number of values
// is a programming error and is ignored rather than rendered malformed.
// render() writes every family with HELP and TYPE lines, so the output
// passes `promtool check metrics`.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/rules/rule.h"
#include "registry/registry_client.h"

namespace cudagate {

enum class MetricType : unsigned char { counter, gauge, histogram };

class MetricFamily {
 public:
  MetricFamily(std::string name, std::string help, MetricType type,
               std::vector<std::string> label_names, std::vector<double> buckets = {});

  // Counters: adds `amount` (>= 0). Gauges: adds (may be negative).
  void add(std::initializer_list<std::string_view> labels, double amount = 1);
  // Gauges: sets the value.
  void set(std::initializer_list<std::string_view> labels, double value);
  // Histograms: records one observation.
  void observe(std::initializer_list<std::string_view> labels, double value);
  // Creates the sample at zero if absent, so a series exists before its first event.
  void touch(std::initializer_list<std::string_view> labels);

  void render(std::string& out) const;

 private:
  struct Sample {
    explicit Sample(std::size_t buckets);
    std::atomic<double> value{0};  // counter and gauge
    // Histogram: one count per bucket, the last for +Inf; not cumulative.
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts;
    std::atomic<double> sum{0};
  };
  // Label values in order; looked up by views, so that finding an existing
  // sample allocates nothing.
  struct LabelsLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::lexicographical_compare(
          a.begin(), a.end(), b.begin(), b.end(),
          [](const auto& x, const auto& y) { return std::string_view(x) < std::string_view(y); });
    }
  };
  using Samples = std::map<std::vector<std::string>, Sample, LabelsLess>;
  // The samples that exist when it is published; never changed after.
  struct Index {
    struct Entry {
      std::size_t hash;
      const std::vector<std::string>* labels;
      Sample* sample;
    };
    std::vector<Entry> entries;
  };

  static std::size_t hash(std::initializer_list<std::string_view> labels);
  // The sample of `labels`, added when missing; null for a wrong label count.
  Sample* sample(std::initializer_list<std::string_view> labels);

  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
  std::vector<double> buckets_;  // upper bounds, increasing; +Inf implied
  mutable std::mutex mutex_;     // guards samples_ (insertions) and indexes_
  Samples samples_;              // map nodes do not move: Index entries point into them
  std::vector<std::unique_ptr<const Index>> indexes_;  // every one published, kept to the end
  std::atomic<const Index*> index_{nullptr};
};

class MetricsRegistry {
 public:
  // The returned family lives as long as the registry.
  MetricFamily& counter(std::string name, std::string help, std::vector<std::string> labels = {});
  MetricFamily& gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  MetricFamily& histogram(std::string name, std::string help, std::vector<std::string> labels,
                          std::vector<double> buckets);

  // The text exposition of every family, in registration order.
  [[nodiscard]] std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// The Content-Type of render()'s output.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// The webhook's metrics. Names and labels are part of the contract
// (docs/contract.md §8).
class WebhookMetrics : public RegistryObserver {
 public:
  WebhookMetrics(std::string_view version, std::string_view compat_db_revision);

  // One admission that was recorded (not the request's own dryRun).
  void admission(std::string_view endpoint, std::string_view verdict, std::string_view decision,
                 std::string_view mode, double seconds);
  // One value of a GPU container's metadata: where it came from
  // (annotation, env, catalog, registry, inference, flag, unknown) and
  // whether it was found ("found") or stayed unknown ("unknown").
  void metadata_lookup(std::string_view source, std::string_view result);
  // The registry client's events (registry/registry_client.h).
  void registry_request(double seconds) override;
  void registry_cache(std::string_view result) override;
  void registry_lookup(std::string_view result) override;
  void registry_cache_size(std::size_t images, std::size_t configs) override;
  void inventory(std::size_t total, std::size_t gpu, std::size_t unknown, double synced_at);
  void certificate_expiry(double not_after);
  // A file re-read after a change: file is "config", "nodes", "certificate" or
  // "compat-db";
  // result is "success" or "error".
  void reload(std::string_view file, std::string_view result);
  // The API-server node watch (--in-cluster, --kubeconfig): a list begun
  // again from the first page after the first one (reason "expired": 410
  // Gone, "error", "throttled"), and a watch begun again after the first
  // one ("closed", "error", "throttled").
  void inventory_relist(std::string_view reason);
  void inventory_watch_restart(std::string_view reason);
  // The background audit (serve --audit-interval): its series exist once
  // it is enabled; the workloads of the last run by verdict (every verdict,
  // and "error" for those that could not be judged); a run ended, result
  // "success" or "error", at Unix time `at`, taking `seconds` (success);
  // reports applied or deleted in the cluster (--write-reports).
  void audit_enabled();
  void audit_workloads(const std::map<std::string, std::size_t>& by_verdict);
  void audit_run(std::string_view result, double at, double seconds);
  void audit_report_writes(std::string_view operation, std::size_t succeeded, std::size_t failed);
  // The server's own scans (policy scan.background): series created at
  // zero; one scan's end ("scanned", "failed", "over_budget"), the layer
  // bytes it read and how long it took; images waiting for a scan.
  void scans_enabled();
  void scan(std::string_view result, double bytes, double seconds);
  void scans_pending(std::size_t images);
  void connection_opened();
  void connection_closed();
  void connection_rejected();
  // The matrix in use (cudagate_compat_db_info, and build_info's revision);
  // after a reload the previous matrix's series drop to 0.
  void compat_db(std::string_view revision, std::string_view as_of);
  // Inventory nodes whose facts name what the matrix does not know, by kind
  // ("driver_branch", "product", "compute_capability") and value; a value
  // no longer seen drops to 0.
  void matrix_gaps(const std::map<std::pair<std::string, std::string>, std::size_t>& nodes);
  // Inventory nodes whose facts cannot all be true (GpuFacts::inconsistency).
  void inconsistent_nodes(std::size_t nodes);
  // An admission that met a gap in the matrix in findings of `rule`, counted
  // under its row's gap label (kRuleTable).
  void matrix_gap_admission(Rule rule);
  // An admission whose decision (deny, warn, patch, ...) came with findings
  // of `rule`: once per admission and rule, so that denials can be told
  // apart by the rule behind them.
  void admission_finding(Rule rule, std::string_view decision);

  [[nodiscard]] std::string render() const { return registry_.render(); }

 private:
  MetricsRegistry registry_;
  MetricFamily& requests_;
  MetricFamily& duration_;
  MetricFamily& lookups_;
  MetricFamily& registry_duration_;
  MetricFamily& registry_cache_;
  MetricFamily& registry_lookups_;
  MetricFamily& registry_cache_entries_;
  MetricFamily& nodes_;
  MetricFamily& last_sync_;
  MetricFamily& cert_expiry_;
  MetricFamily& build_info_;
  MetricFamily& reloads_;
  MetricFamily& relists_;
  MetricFamily& watch_restarts_;
  MetricFamily& audit_workloads_;
  MetricFamily& audit_runs_;
  MetricFamily& audit_last_run_;
  MetricFamily& audit_duration_;
  MetricFamily& audit_report_writes_;
  MetricFamily& open_connections_;
  MetricFamily& rejected_connections_;
  MetricFamily& compat_db_info_;
  MetricFamily& gap_nodes_;
  MetricFamily& gap_admissions_;
  MetricFamily& findings_;
  MetricFamily& inconsistent_nodes_;
  MetricFamily& scans_;
  MetricFamily& scan_bytes_;
  MetricFamily& scan_duration_;
  MetricFamily& scans_pending_;

  std::mutex matrix_mutex_;  // guards what follows
  std::string version_;
  std::string build_revision_;                                 // the revision build_info shows
  std::optional<std::pair<std::string, std::string>> matrix_;  // revision, date in use
  std::map<std::pair<std::string, std::string>, std::size_t> gaps_;
};

}  // namespace cudagate
