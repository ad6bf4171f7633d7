#pragma once
// The server's own scans (policy scan.background; docs/scan.md, "Scans done
// by the server"). A registry lookup that finds no scan attached to an
// image manifest tells this (ScanSource::unscanned); the image is queued
// (server/scan_queue.h) and scanned on a thread of its own, one image at a
// time, pulled from its registry with the policy's registry settings and
// read as `cudagate scan` reads it. An admission never waits for a scan:
// the facts go to the registry client's cache (RegistryClient::attach_scan)
// and are kept by manifest digest for later lookups (ScanSource::scanned),
// so the next admission of that digest is judged on them.
//
// Bounds: scan.maxImageBytes of layer bytes (as stored) per image, past
// which the scan stops ("over_budget") and is not tried again for
// ScanQueue::kRetryAfter; scan.maxBytesPerHour for all scans, past which
// the next waits for the hour's window. A scan's problems inside layers
// and files are kept, as the command keeps them; a pull that fails is a
// failure, logged and counted (cudagate_image_scans_total).
//
// Thread-safety: every member may be called from any thread; stop() (also
// from the destructor) ends a scan in progress at its next chunk of bytes
// and joins the thread.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "policy/config/policy.h"
#include "registry/registry_client.h"
#include "server/metrics.h"
#include "server/scan_queue.h"
#include "types/expected.h"

namespace cudagate {

class BackgroundScans : public ScanSource {
 public:
  // What one scan read, and how it ended.
  struct Outcome {
    Expected<ScanFacts> facts = Error{};
    std::uint64_t bytes = 0;   // layer bytes read, as stored
    bool over_budget = false;  // stopped at the image's byte budget
  };
  // Scans one image: the registry pull by default. `stop` asks it to end.
  using ScanImage =
      std::function<Outcome(const RegistrySettings& settings, const ScanQueue::Job& job,
                            std::uint64_t max_bytes, const std::atomic<bool>& stop)>;

  // `registry` and `metrics` must outlive this.
  BackgroundScans(RegistryClient& registry, WebhookMetrics& metrics, ScanImage scan_image = {});
  ~BackgroundScans() override;
  BackgroundScans(const BackgroundScans&) = delete;
  BackgroundScans& operator=(const BackgroundScans&) = delete;

  // The policy's settings, at start and after each reload: off stops
  // queueing new images (a scan in progress ends as it would).
  void configure(const ScanSettings& scan, const RegistrySettings& registry);
  void start();
  void stop();

  std::shared_ptr<const ScanFacts> scanned(const std::string& manifest_digest) override;
  void unscanned(const std::string& name, const std::string& manifest_digest,
                 const std::string& platform) override;

  // The registry pull that ScanImage defaults to.
  static Outcome scan_from_registry(const RegistrySettings& settings, const ScanQueue::Job& job,
                                    std::uint64_t max_bytes, const std::atomic<bool>& stop);

 private:
  void loop();

  RegistryClient& registry_;
  WebhookMetrics& metrics_;
  ScanImage scan_image_;
  ScanQueue queue_;

  std::mutex mutex_;  // what follows
  std::condition_variable wake_;
  ScanSettings settings_;
  RegistrySettings registry_settings_;
  bool stopping_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cudagate
