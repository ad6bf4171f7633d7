// The background audit's thread: wait for the interval or an inventory
// change, list what runs, judge it, record it, write the reports.
#include "server/background_audit.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kube/api_client.h"
#include "kube/cluster_workloads.h"
#include "policy/rules/evaluate.h"
#include "policy/rules/images_wanted.h"
#include "report/audit.h"
#include "server/report_writer.h"

namespace cudagate {
namespace {

using Clock = std::chrono::steady_clock;

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Each workload's image configs as the registry cache has them; the images
// it does not have yet are added to `wanted`, to be looked up for the next run.
std::vector<RegistryFacts> cached_facts(const std::vector<PlacedWorkload>& workloads,
                                        const Snapshot& snapshot, RegistryClient* registry,
                                        std::vector<ImageWanted>& wanted) {
  std::vector<RegistryFacts> facts(workloads.size());
  const Policy& policy = *snapshot.policy;
  if (registry == nullptr || !policy.registry.enabled) return facts;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const Workload& workload = workloads[i].workload;
    for (ImageWanted& image : images_wanted(workload, gpu_containers(workload, policy),
                                            snapshot.fleet_platform, policy)) {
      RegistryClient::Answer answer = registry->cached(image.image, image.platform);
      if (answer.config) {
        facts[i].add(image.image, std::move(answer.config));
      } else if (answer.state == RegistryClient::Answer::State::miss &&
                 std::find(wanted.begin(), wanted.end(), image) == wanted.end()) {
        wanted.push_back(std::move(image));
      }
    }
  }
  return facts;
}

}  // namespace

BackgroundAudit::BackgroundAudit(kube::ClusterConfig cluster, BackgroundAuditSettings settings,
                                 ServerState& state, WebhookMetrics& metrics,
                                 RegistryClient* registry)
    : cluster_(std::move(cluster)),
      settings_(settings),
      state_(state),
      metrics_(metrics),
      registry_(registry) {}

BackgroundAudit::~BackgroundAudit() {
  stop();
}

void BackgroundAudit::start() {
  metrics_.audit_enabled();
  {
    std::lock_guard lock(mutex_);
    next_run_ = Clock::now();
  }
  thread_ = std::thread([this] { loop(); });
}

void BackgroundAudit::inventory_changed() {
  std::lock_guard lock(mutex_);
  const auto soon = Clock::now() + std::min(settings_.debounce, settings_.interval);
  if (soon < next_run_) {
    next_run_ = soon;
    wake_.notify_all();
  }
}

void BackgroundAudit::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void BackgroundAudit::loop() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      // The first run waits for the first whole node list.
      while (!stopped_ && (Clock::now() < next_run_ || !state_.ready())) {
        if (Clock::now() >= next_run_) {
          wake_.wait_for(lock, std::chrono::milliseconds(200));
        } else {
          wake_.wait_until(lock, next_run_);
        }
      }
      if (stopped_) return;
      next_run_ = Clock::now() + settings_.interval;
    }
    run_once();
  }
}

void BackgroundAudit::run_once() {
  const auto started = Clock::now();
  const auto snapshot = state_.snapshot();
  kube::BlockingApiClient client(cluster_);
  auto listed = kube::list_cluster_workloads(client, kube::kBackgroundAuditLists, "");
  if (!listed) {
    metrics_.audit_run("error", unix_seconds(), 0);
    spdlog::warn("background audit: {}", listed.error().str());
    return;
  }
  for (const Error& e : listed->broken) spdlog::warn("background audit: left out {}", e.str());
  std::vector<PlacedWorkload>& workloads = listed->workloads;
  const std::size_t controlled = drop_controlled(workloads);

  std::vector<ImageWanted> wanted;
  const std::vector<RegistryFacts> registry = cached_facts(workloads, *snapshot, registry_, wanted);
  if (!wanted.empty()) {
    // Filled in for the next run; this one judges them without.
    registry_->lookup(wanted, snapshot->policy->registry.timeout, [] {});
  }

  Audit audit;
  audit.workloads.reserve(workloads.size());
  CandidateScratch scratch;
  MetadataMemo memo;
  std::map<std::string, std::size_t> by_verdict;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const EvaluationInputs inputs{registry[i].empty() ? nullptr : &registry[i], nullptr, &scratch,
                                  &memo};
    auto decision = evaluate(workloads[i].workload, *snapshot->inventory, *snapshot->policy,
                             *snapshot->db, inputs);
    AuditedWorkload audited;
    if (decision) {
      ++by_verdict[std::string(to_string(decision->verdict))];
      state_.reports().record(*decision);
      audited.decision = std::move(decision).value();
    } else {
      ++by_verdict["error"];
      audited.decision.resource = workloads[i].workload.resource;
      audited.error = decision.error();
    }
    audit.workloads.push_back(std::move(audited));
  }
  // Workloads that went away leave /reports with the run that no longer finds them.
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const AuditedWorkload& w : audit.workloads) {
    const ResourceRef& r = w.decision.resource;
    seen.emplace(r.namespace_, r.kind, r.name);
  }
  for (const auto& [ns, kind, name] : last_seen_) {
    if (seen.contains({ns, kind, name})) continue;
    ResourceRef gone;
    gone.namespace_ = ns;
    gone.kind = kind;
    gone.name = name;
    state_.reports().forget(gone);
  }
  last_seen_ = std::move(seen);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  metrics_.audit_workloads(by_verdict);

  if (settings_.write_reports) {
    const auto now = static_cast<std::int64_t>(unix_seconds());
    const auto reports =
        policy_reports(audit, settings_.report_api, now, settings_.max_report_results);
    const ReportWrite written = write_reports(client, settings_.report_api, reports);
    metrics_.audit_report_writes("apply", written.applied, written.failed);
    metrics_.audit_report_writes("delete", written.deleted, 0);
    if (written.error) {
      spdlog::warn("background audit: {} reports not written: {}", written.failed,
                   written.error->str());
    }
  }
  metrics_.audit_run("success", unix_seconds(), seconds);
  spdlog::info(
      "background audit: {} workloads judged ({} reported as their controller) in {:.3f} s",
      audit.workloads.size(), controlled, seconds);
}

}  // namespace cudagate
