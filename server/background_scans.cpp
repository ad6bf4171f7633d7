// The server's own scans: a thread that pulls the images lookups found no
// scan for, one at a time, within the policy's byte budgets.
#include "server/background_scans.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <span>
#include <utility>

#include "registry/image_pull.h"
#include "registry/scan_attachment.h"
#include "report/scan_report.h"
#include "scan/image_scan.h"

namespace cudagate {
namespace {

using Clock = ScanQueue::Clock;

// The layers of a pull fed to the scanner, stopped at the image's budget
// or when the server stops.
class BudgetedLayers : public LayerVisitor {
 public:
  BudgetedLayers(scan::ImageScanner& scanner, std::uint64_t max_bytes,
                 const std::atomic<bool>& stop)
      : scanner_(scanner), max_bytes_(max_bytes), stop_(stop) {}

  void begin_layer(const std::string& name, const Descriptor&) override {
    scanner_.begin_layer(name);
  }
  bool layer_bytes(std::span<const std::byte> chunk) override {
    bytes_ += chunk.size();
    if (bytes_ > max_bytes_) {
      over_budget_ = true;
      return false;
    }
    if (stop_.load()) return false;
    scanner_.feed(chunk);
    return true;
  }
  void end_layer(std::optional<Error> problem) override {
    if (problem) scanner_.add_problem(Error{"", problem->message});
    scanner_.end_layer();
  }

  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] bool over_budget() const { return over_budget_; }

 private:
  scan::ImageScanner& scanner_;
  std::uint64_t max_bytes_;
  const std::atomic<bool>& stop_;
  std::uint64_t bytes_ = 0;
  bool over_budget_ = false;
};

}  // namespace

BackgroundScans::Outcome BackgroundScans::scan_from_registry(const RegistrySettings& settings,
                                                             const ScanQueue::Job& job,
                                                             std::uint64_t max_bytes,
                                                             const std::atomic<bool>& stop) {
  scan::ImageScanner scanner;
  BudgetedLayers layers(scanner, max_bytes, stop);
  Outcome out;
  auto pulled = pull_image(settings, job.reference, job.platform, layers);
  out.bytes = layers.bytes();
  out.over_budget = layers.over_budget();
  if (!pulled) {
    out.facts = pulled.error();
    return out;
  }
  ScanOrigin origin;
  origin.source = "registry";
  origin.location = job.reference;
  origin.digest = pulled->manifest.digest;
  origin.platform = pulled->platform;
  // The facts as an attached scan carries them, read as a lookup reads
  // them: the server's scans and attached ones decide alike.
  const std::string text =
      scan_facts_json(origin, scanner.finish())
          .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out.facts = parse_scan_facts(text);
  return out;
}

BackgroundScans::BackgroundScans(RegistryClient& registry, WebhookMetrics& metrics,
                                 ScanImage scan_image)
    : registry_(registry),
      metrics_(metrics),
      scan_image_(scan_image ? std::move(scan_image) : ScanImage(&scan_from_registry)) {
  metrics_.scans_enabled();
}

BackgroundScans::~BackgroundScans() {
  stop();
}

void BackgroundScans::configure(const ScanSettings& scan, const RegistrySettings& registry) {
  {
    const std::lock_guard lock(mutex_);
    settings_ = scan;
    registry_settings_ = registry;
  }
  ScanQueue::Limits limits;
  limits.bytes_per_hour = scan.max_bytes_per_hour;
  queue_.configure(limits);
  wake_.notify_all();
}

void BackgroundScans::start() {
  const std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void BackgroundScans::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    stop_.store(true);
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const ScanFacts> BackgroundScans::scanned(const std::string& manifest_digest) {
  return queue_.find(manifest_digest);
}

void BackgroundScans::unscanned(const std::string& name, const std::string& manifest_digest,
                                const std::string& platform) {
  {
    const std::lock_guard lock(mutex_);
    if (!settings_.background || stopping_ || manifest_digest.empty()) return;
  }
  if (!queue_.want(ScanQueue::Job{name + "@" + manifest_digest, manifest_digest, platform},
                   Clock::now())) {
    return;
  }
  metrics_.scans_pending(queue_.pending());
  wake_.notify_all();
}

void BackgroundScans::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const auto job = queue_.next(Clock::now());
    if (!job) {
      if (const auto frees = queue_.budget_frees_at(Clock::now())) {
        wake_.wait_until(lock, *frees);
      } else {
        wake_.wait(lock);
      }
      continue;
    }
    const std::uint64_t max_bytes = settings_.max_image_bytes;
    const RegistrySettings registry = registry_settings_;
    lock.unlock();
    metrics_.scans_pending(queue_.pending());
    const auto start = Clock::now();
    Outcome out = scan_image_(registry, *job, max_bytes, stop_);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::shared_ptr<const ScanFacts> facts;
    std::string_view result = "scanned";
    if (out.over_budget) {
      result = "over_budget";
      spdlog::warn("scan of {} ({}) stopped after {} bytes: scan.maxImageBytes is {}",
                   job->reference, job->platform, out.bytes, max_bytes);
    } else if (!out.facts) {
      result = "failed";
      if (!stop_.load()) {
        spdlog::warn("scan of {} ({}) failed: {}", job->reference, job->platform,
                     out.facts.error().str());
      }
    } else {
      facts = std::make_shared<const ScanFacts>(std::move(*out.facts));
      spdlog::info("scanned {} ({}): {} files with GPU code, {} bytes in {:.1f} s", job->reference,
                   job->platform, facts->files.size(), out.bytes, seconds);
    }
    queue_.finish(job->digest, facts, out.bytes, Clock::now());
    if (facts != nullptr) registry_.attach_scan(job->digest, facts);
    metrics_.scan(result, static_cast<double>(out.bytes), seconds);
    metrics_.scans_pending(queue_.pending());
    lock.lock();
  }
}

}  // namespace cudagate
