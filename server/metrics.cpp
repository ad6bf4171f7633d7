// The Prometheus registry's lock-free sample updates and its text exposition, and the
// webhook's own metric families (docs/contract.md §8) with their names, labels and
// buckets.
#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <utility>

namespace cudagate {
namespace {

// Prometheus floats: integers without a fraction (counts, timestamps), others
// with enough digits to round-trip.
void append_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    out += std::to_string(static_cast<long long>(value));
  } else {
    // The shortest text that reads back as the same double: "0.1", not
    // "0.10000000000000001".
    char buffer[32];
    const auto result =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general);
    out.append(buffer, result.ptr);
  }
}

void append_escaped(std::string& out, std::string_view value, bool is_help) {
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && !is_help) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_labels(std::string& out, const std::vector<std::string>& names,
                   const std::vector<std::string>& values, std::string_view extra_name = {},
                   std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    append_escaped(out, values[i], false);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

std::string bucket_bound(double bound) {
  std::string text;
  append_number(text, bound);
  // Whole-number bounds render as "1.0" so that `le` values read the same as
  // other clients' and are unambiguously floats.
  if (text.find_first_of(".eIN") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

MetricFamily::MetricFamily(std::string name, std::string help, MetricType type,
                           std::vector<std::string> label_names, std::vector<double> buckets)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      buckets_(std::move(buckets)) {
  std::sort(buckets_.begin(), buckets_.end());
}

MetricFamily::Sample::Sample(std::size_t buckets)
    : counts(buckets == 0 ? nullptr : std::make_unique<std::atomic<std::uint64_t>[]>(buckets)) {}

std::size_t MetricFamily::hash(std::initializer_list<std::string_view> labels) {
  std::size_t h = labels.size();
  for (const std::string_view value : labels) {
    h = h * 1099511628211U ^ std::hash<std::string_view>()(value);
  }
  return h;
}

MetricFamily::Sample* MetricFamily::sample(std::initializer_list<std::string_view> labels) {
  if (labels.size() != label_names_.size()) return nullptr;
  const std::size_t h = hash(labels);
  const auto same = [&labels](const std::vector<std::string>& values) {
    return std::equal(labels.begin(), labels.end(), values.begin(), values.end(),
                      [](std::string_view a, const std::string& b) { return a == b; });
  };
  if (const Index* index = index_.load(std::memory_order_acquire)) {
    for (const Index::Entry& e : index->entries) {
      if (e.hash == h && same(*e.labels)) return e.sample;
    }
  }
  const std::lock_guard lock(mutex_);
  if (const auto it = samples_.find(labels); it != samples_.end()) return &it->second;
  const std::size_t buckets = type_ == MetricType::histogram ? buckets_.size() + 1 : 0;
  const auto it =
      samples_.try_emplace(std::vector<std::string>(labels.begin(), labels.end()), buckets).first;
  auto index = std::make_unique<Index>();
  if (const Index* old = index_.load(std::memory_order_relaxed)) *index = *old;
  index->entries.push_back(Index::Entry{h, &it->first, &it->second});
  index_.store(index.get(), std::memory_order_release);
  indexes_.push_back(std::move(index));
  return &it->second;
}

void MetricFamily::add(std::initializer_list<std::string_view> labels, double amount) {
  if (type_ == MetricType::histogram) return;
  if (type_ == MetricType::counter && !(amount >= 0)) return;
  if (Sample* s = sample(labels)) s->value.fetch_add(amount, std::memory_order_relaxed);
}

void MetricFamily::set(std::initializer_list<std::string_view> labels, double value) {
  if (type_ != MetricType::gauge) return;
  if (Sample* s = sample(labels)) s->value.store(value, std::memory_order_relaxed);
}

void MetricFamily::observe(std::initializer_list<std::string_view> labels, double value) {
  if (type_ != MetricType::histogram || std::isnan(value)) return;
  Sample* s = sample(labels);
  if (s == nullptr) return;
  const auto bucket = std::lower_bound(buckets_.begin(), buckets_.end(), value) - buckets_.begin();
  s->counts[static_cast<std::size_t>(bucket)].fetch_add(1, std::memory_order_relaxed);
  s->sum.fetch_add(value, std::memory_order_relaxed);
}

void MetricFamily::touch(std::initializer_list<std::string_view> labels) {
  (void)sample(labels);
}

void MetricFamily::render(std::string& out) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  append_escaped(out, help_, true);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += type_name(type_);
  out += '\n';

  // _count is the sum of the buckets read, so that it equals the +Inf
  // bucket even while observations land during the render.
  const auto histogram = [&](const std::vector<std::string>& labels, const Sample* s) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= buckets_.size(); ++i) {
      if (s != nullptr) cumulative += s->counts[i].load(std::memory_order_relaxed);
      out += name_;
      out += "_bucket";
      append_labels(out, label_names_, labels, "le",
                    i < buckets_.size() ? bucket_bound(buckets_[i]) : "+Inf");
      out += ' ';
      append_number(out, static_cast<double>(cumulative));
      out += '\n';
    }
    out += name_;
    out += "_sum";
    append_labels(out, label_names_, labels);
    out += ' ';
    append_number(out, s != nullptr ? s->sum.load(std::memory_order_relaxed) : 0.0);
    out += '\n';
    out += name_;
    out += "_count";
    append_labels(out, label_names_, labels);
    out += ' ';
    append_number(out, static_cast<double>(cumulative));
    out += '\n';
  };

  const std::lock_guard lock(mutex_);
  // A histogram without any labelled series still exposes its empty series,
  // so dashboards see zero rather than no data.
  if (type_ == MetricType::histogram && samples_.empty() && label_names_.empty()) {
    histogram({}, nullptr);
    return;
  }
  for (const auto& [labels, s] : samples_) {
    if (type_ == MetricType::histogram) {
      histogram(labels, &s);
      continue;
    }
    out += name_;
    append_labels(out, label_names_, labels);
    out += ' ';
    append_number(out, s.value.load(std::memory_order_relaxed));
    out += '\n';
  }
}

MetricFamily& MetricsRegistry::counter(std::string name, std::string help,
                                       std::vector<std::string> labels) {
  const std::lock_guard lock(mutex_);
  return *families_.emplace_back(std::make_unique<MetricFamily>(
      std::move(name), std::move(help), MetricType::counter, std::move(labels)));
}

MetricFamily& MetricsRegistry::gauge(std::string name, std::string help,
                                     std::vector<std::string> labels) {
  const std::lock_guard lock(mutex_);
  return *families_.emplace_back(std::make_unique<MetricFamily>(
      std::move(name), std::move(help), MetricType::gauge, std::move(labels)));
}

MetricFamily& MetricsRegistry::histogram(std::string name, std::string help,
                                         std::vector<std::string> labels,
                                         std::vector<double> buckets) {
  const std::lock_guard lock(mutex_);
  return *families_.emplace_back(
      std::make_unique<MetricFamily>(std::move(name), std::move(help), MetricType::histogram,
                                     std::move(labels), std::move(buckets)));
}

std::string MetricsRegistry::render() const {
  std::string out;
  const std::lock_guard lock(mutex_);
  for (const auto& family : families_) family->render(out);
  return out;
}

namespace {
// Admission latency is dominated by evaluation (sub-millisecond) and, once
// registry lookups exist, by their budget (seconds).
const std::vector<double> kAdmissionBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                               0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kRegistryBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                              0.5,   1,    2.5,   5,    10};
}  // namespace

WebhookMetrics::WebhookMetrics(std::string_view version, std::string_view compat_db_revision)
    : requests_(registry_.counter("cudagate_admission_requests_total",
                                  "Admission requests answered, by endpoint, verdict, decision "
                                  "and enforcement mode (requests with dryRun excluded).",
                                  {"endpoint", "verdict", "decision", "mode"})),
      duration_(registry_.histogram("cudagate_admission_duration_seconds",
                                    "Time to answer an admission request, by endpoint.",
                                    {"endpoint"}, kAdmissionBuckets)),
      lookups_(registry_.counter("cudagate_image_metadata_lookups_total",
                                 "Image metadata values of GPU containers, by the source that "
                                 "gave them and whether one was found.",
                                 {"source", "result"})),
      registry_duration_(registry_.histogram("cudagate_registry_request_duration_seconds",
                                             "Duration of requests to OCI registries.", {},
                                             kRegistryBuckets)),
      registry_cache_(registry_.counter("cudagate_registry_cache_requests_total",
                                        "Image configs asked of the registry cache, by result: "
                                        "hit, stale (answered, refreshed in the background), "
                                        "failure (a recent failure), miss.",
                                        {"result"})),
      registry_lookups_(registry_.counter("cudagate_registry_lookups_total",
                                          "Image lookups that reached a registry, by result.",
                                          {"result"})),
      registry_cache_entries_(registry_.gauge("cudagate_registry_cache_entries",
                                              "What the registry cache holds: image resolutions "
                                              "and configs by digest.",
                                              {"kind"})),
      nodes_(registry_.gauge("cudagate_inventory_nodes",
                             "Nodes in the inventory: total, with GPUs, and GPU nodes whose "
                             "driver is unknown.",
                             {"state"})),
      last_sync_(registry_.gauge("cudagate_inventory_last_sync_timestamp_seconds",
                                 "Unix time of the last successful inventory load.")),
      cert_expiry_(registry_.gauge("cudagate_tls_certificate_expiry_timestamp_seconds",
                                   "Unix time at which the served TLS certificate expires.")),
      build_info_(registry_.gauge("cudagate_build_info",
                                  "Build information: version and compat-db revision.",
                                  {"version", "compat_db_revision"})),
      reloads_(registry_.counter("cudagate_file_reloads_total",
                                 "Files re-read after a change, by file and result.",
                                 {"file", "result"})),
      relists_(registry_.counter("cudagate_inventory_relists_total",
                                 "Lists of a watched collection (Nodes; with DRA, ResourceSlices, "
                                 "ResourceClaims and ResourceClaimTemplates) begun again after "
                                 "the first, by reason (expired: 410 Gone).",
                                 {"reason"})),
      watch_restarts_(registry_.counter("cudagate_inventory_watch_restarts_total",
                                        "Watches of a watched collection (Nodes; with DRA, "
                                        "ResourceSlices, ResourceClaims and "
                                        "ResourceClaimTemplates) begun again, by reason.",
                                        {"reason"})),
      audit_workloads_(registry_.gauge(
          "cudagate_audit_workloads",
          "Workloads running in the cluster by verdict at the last background audit (error: "
          "could not be judged).",
          {"verdict"})),
      audit_runs_(registry_.counter("cudagate_audit_runs_total",
                                    "Background audits run, by result.", {"result"})),
      audit_last_run_(registry_.gauge("cudagate_audit_last_run_timestamp_seconds",
                                      "Unix time at which the last successful background audit "
                                      "ended.")),
      audit_duration_(registry_.gauge("cudagate_audit_last_run_duration_seconds",
                                      "How long the last successful background audit took.")),
      audit_report_writes_(registry_.counter(
          "cudagate_audit_report_writes_total",
          "PolicyReport or Report objects applied or deleted in the cluster, by result.",
          {"operation", "result"})),
      open_connections_(
          registry_.gauge("cudagate_open_connections", "Client connections currently open.")),
      rejected_connections_(registry_.counter(
          "cudagate_rejected_connections_total",
          "Connections closed at once because --max-connections were already open.")),
      compat_db_info_(registry_.gauge("cudagate_compat_db_info",
                                      "The compatibility matrix in use: its revision and the "
                                      "date its data was checked (1; 0 for one reloaded away).",
                                      {"revision", "as_of"})),
      gap_nodes_(registry_.gauge("cudagate_compat_db_unknown_nodes",
                                 "Inventory nodes whose facts name what the compatibility "
                                 "matrix does not know, by kind (driver_branch, product, "
                                 "compute_capability) and value.",
                                 {"kind", "value"})),
      gap_admissions_(registry_.counter("cudagate_compat_db_gap_admissions_total",
                                        "Admissions judged unknown because the compatibility "
                                        "matrix does not know a driver branch, product, CUDA "
                                        "release or compute capability, by rule.",
                                        {"rule"})),
      findings_(registry_.counter("cudagate_admission_findings_total",
                                  "Admissions whose decision came with findings of a rule "
                                  "(cuda-driver, gpu-arch, gpu-feature), by rule and decision; "
                                  "once per admission and rule (requests with dryRun excluded).",
                                  {"rule", "decision"})),
      inconsistent_nodes_(registry_.gauge(
          "cudagate_inventory_inconsistent_nodes",
          "Inventory nodes whose facts cannot all be true, such as a driver newer than the last "
          "branch of the GPU's architecture; their decisions are unknown.")),
      scans_(registry_.counter("cudagate_image_scans_total",
                               "Images scanned by the server itself, by result.", {"result"})),
      scan_bytes_(registry_.counter("cudagate_image_scan_bytes_total",
                                    "Layer bytes (as stored) read by the server's own scans.")),
      scan_duration_(registry_.histogram("cudagate_image_scan_duration_seconds",
                                         "Time one of the server's own scans took.", {},
                                         {1, 5, 15, 60, 300, 900, 3600})),
      scans_pending_(registry_.gauge("cudagate_image_scans_pending",
                                     "Images waiting for the server to scan them.")),
      version_(version),
      build_revision_(compat_db_revision) {
  build_info_.set({version, compat_db_revision}, 1);
  inconsistent_nodes_.touch({});
  for (const RuleInfo& rule : kRuleTable) {
    if (rule.gap_label == rule.rule) gap_admissions_.touch({rule.name});
    for (const char* decision : {"deny", "warn"}) findings_.touch({rule.name, decision});
  }
  duration_.touch({"validate"});
  duration_.touch({"mutate"});
  for (const char* state : {"total", "gpu", "unknown"}) nodes_.touch({state});
  last_sync_.touch({});
  for (const char* kind : {"images", "configs"}) registry_cache_entries_.touch({kind});
  cert_expiry_.touch({});
  open_connections_.touch({});
  rejected_connections_.touch({});
}

void WebhookMetrics::admission(std::string_view endpoint, std::string_view verdict,
                               std::string_view decision, std::string_view mode, double seconds) {
  requests_.add({endpoint, verdict, decision, mode});
  duration_.observe({endpoint}, seconds);
}

void WebhookMetrics::metadata_lookup(std::string_view source, std::string_view result) {
  lookups_.add({source, result});
}

void WebhookMetrics::registry_request(double seconds) {
  registry_duration_.observe({}, seconds);
}

void WebhookMetrics::registry_cache(std::string_view result) {
  registry_cache_.add({result});
}

void WebhookMetrics::registry_lookup(std::string_view result) {
  registry_lookups_.add({result});
}

void WebhookMetrics::registry_cache_size(std::size_t images, std::size_t configs) {
  registry_cache_entries_.set({"images"}, static_cast<double>(images));
  registry_cache_entries_.set({"configs"}, static_cast<double>(configs));
}

void WebhookMetrics::inventory(std::size_t total, std::size_t gpu, std::size_t unknown,
                               double synced_at) {
  nodes_.set({"total"}, static_cast<double>(total));
  nodes_.set({"gpu"}, static_cast<double>(gpu));
  nodes_.set({"unknown"}, static_cast<double>(unknown));
  last_sync_.set({}, synced_at);
}

void WebhookMetrics::certificate_expiry(double not_after) {
  cert_expiry_.set({}, not_after);
}

void WebhookMetrics::reload(std::string_view file, std::string_view result) {
  reloads_.add({file, result});
}

void WebhookMetrics::audit_enabled() {
  for (const char* verdict :
       {"pass", "partial", "fail", "unknown", "no-candidates", "skip", "error"}) {
    audit_workloads_.touch({verdict});
  }
  for (const char* result : {"success", "error"}) audit_runs_.touch({result});
  audit_last_run_.touch({});
  audit_duration_.touch({});
}

void WebhookMetrics::scans_enabled() {
  for (const char* result : {"scanned", "failed", "over_budget"}) scans_.touch({result});
  scan_bytes_.touch({});
  scans_pending_.touch({});
}

void WebhookMetrics::scan(std::string_view result, double bytes, double seconds) {
  scans_.add({result});
  scan_bytes_.add({}, bytes);
  scan_duration_.observe({}, seconds);
}

void WebhookMetrics::scans_pending(std::size_t images) {
  scans_pending_.set({}, static_cast<double>(images));
}

void WebhookMetrics::audit_workloads(const std::map<std::string, std::size_t>& by_verdict) {
  for (const char* verdict :
       {"pass", "partial", "fail", "unknown", "no-candidates", "skip", "error"}) {
    const auto it = by_verdict.find(verdict);
    audit_workloads_.set({verdict}, it == by_verdict.end() ? 0.0 : static_cast<double>(it->second));
  }
}

void WebhookMetrics::audit_run(std::string_view result, double at, double seconds) {
  audit_runs_.add({result});
  if (result == "success") {
    audit_last_run_.set({}, at);
    audit_duration_.set({}, seconds);
  }
}

void WebhookMetrics::audit_report_writes(std::string_view operation, std::size_t succeeded,
                                         std::size_t failed) {
  if (succeeded > 0)
    audit_report_writes_.add({operation, "success"}, static_cast<double>(succeeded));
  if (failed > 0) audit_report_writes_.add({operation, "error"}, static_cast<double>(failed));
}

void WebhookMetrics::inventory_relist(std::string_view reason) {
  relists_.add({reason});
}

void WebhookMetrics::inventory_watch_restart(std::string_view reason) {
  watch_restarts_.add({reason});
}

void WebhookMetrics::connection_opened() {
  open_connections_.add({}, 1);
}
void WebhookMetrics::connection_closed() {
  open_connections_.add({}, -1);
}
void WebhookMetrics::connection_rejected() {
  rejected_connections_.add({});
}

void WebhookMetrics::compat_db(std::string_view revision, std::string_view as_of) {
  const std::lock_guard lock(matrix_mutex_);
  if (matrix_ && (matrix_->first != revision || matrix_->second != as_of)) {
    compat_db_info_.set({matrix_->first, matrix_->second}, 0);
  }
  compat_db_info_.set({revision, as_of}, 1);
  matrix_.emplace(revision, as_of);
  if (build_revision_ != revision) {
    build_info_.set({version_, build_revision_}, 0);
    build_info_.set({version_, revision}, 1);
    build_revision_ = revision;
  }
}

void WebhookMetrics::matrix_gaps(
    const std::map<std::pair<std::string, std::string>, std::size_t>& nodes) {
  const std::lock_guard lock(matrix_mutex_);
  for (const auto& [key, count] : gaps_) {
    if (nodes.find(key) == nodes.end()) gap_nodes_.set({key.first, key.second}, 0);
  }
  for (const auto& [key, count] : nodes) {
    gap_nodes_.set({key.first, key.second}, static_cast<double>(count));
  }
  gaps_ = nodes;
}

void WebhookMetrics::inconsistent_nodes(std::size_t nodes) {
  inconsistent_nodes_.set({}, static_cast<double>(nodes));
}

void WebhookMetrics::admission_finding(Rule rule, std::string_view decision) {
  findings_.add({to_string(rule), decision});
}

void WebhookMetrics::matrix_gap_admission(Rule rule) {
  gap_admissions_.add({to_string(rule_info(rule).gap_label)});
}

}  // namespace cudagate
