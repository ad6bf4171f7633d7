#pragma once
// The list-and-watch protocol of a Kubernetes collection, as client-go's
// reflector speaks it, without any I/O: a state machine that is told what
// happened (a page arrived, an event arrived, the stream ended, the server
// answered an error, the connection failed) and answers with the next
// thing to do (list a page, watch from a resourceVersion, or wait).
//
//   start ──> list(page 1) ──> list(continue) ... ──> watch(rv) ──> watch(rv') ...
//                 ^                                       │
//                 └──── 410 Gone / ERROR 410 / expired ───┘
//
// Errors and closed streams retry the same step after a wait: capped
// exponential backoff with jitter (half the delay fixed, half random), reset
// by success; 429 waits Retry-After when the server gives one. A stream that
// closes after delivering something is resumed at once from the last
// resourceVersion seen (events and bookmarks both advance it).
//
// The seed makes the jitter reproducible. Not thread-safe; the I/O layer
// drives it from one strand.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace cudagate::kube {

struct WatchOptions {
  unsigned page_size = 500;
  // How long the server keeps a watch open before ending it (timeoutSeconds).
  std::chrono::seconds watch_timeout{300};
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
  std::uint64_t seed = 0;
};

struct WatchAction {
  enum class Kind : unsigned char { list, watch, wait };
  Kind kind = Kind::list;
  // list: the continue token of the page ("" for the first one).
  // watch: the resourceVersion to watch from.
  std::string token;
  // wait: how long; then call resume().
  std::chrono::milliseconds delay{0};
  // Why this action: "initial", "page", "resume", "expired" (410: a
  // relist), "error", "closed", "throttled". Metrics count relists and
  // watch restarts by it.
  std::string_view reason;

  // The request target for list and watch, below the API prefix
  // ("/api/v1/nodes?limit=500&continue=..."), with `collection` the path.
  [[nodiscard]] std::string target(std::string_view collection, const WatchOptions& options) const;
};

class WatchProtocol {
 public:
  explicit WatchProtocol(WatchOptions options = {});

  // The first action: list the first page.
  [[nodiscard]] WatchAction start();

  // A list page arrived and was handed on; `continue_token` and
  // `resource_version` are its metadata.continue and metadata.resourceVersion.
  // Next: the following page, or (after the last) the watch.
  [[nodiscard]] WatchAction page(std::string_view continue_token,
                                 std::string_view resource_version);

  // A watch event (ADDED, MODIFIED, DELETED or BOOKMARK) was applied; its
  // object's resourceVersion is the point to resume from.
  void event(std::string_view resource_version);
  // An ERROR event: its Status code (410: the resourceVersion expired).
  // The stream is dropped; the action says what follows.
  [[nodiscard]] WatchAction error_event(int code);
  // The watch stream ended cleanly (server timeout, API server restart).
  [[nodiscard]] WatchAction stream_closed();
  // The server answered a list or watch with a non-200 status;
  // `retry_after` is its Retry-After header, when it had one.
  [[nodiscard]] WatchAction http_status(int status,
                                        std::optional<std::chrono::seconds> retry_after);
  // The connection failed (resolve, connect, TLS, read, timeout) or the
  // response could not be read.
  [[nodiscard]] WatchAction transport_error();
  // After a wait: the step that was waiting.
  [[nodiscard]] WatchAction resume();

  // True once a whole list has been received (the inventory is complete).
  [[nodiscard]] bool synced() const { return synced_; }
  [[nodiscard]] bool listing() const { return phase_ == Phase::listing; }
  [[nodiscard]] const std::string& resource_version() const { return resource_version_; }
  // The next backoff delay's upper bound (for logs).
  [[nodiscard]] std::chrono::milliseconds backoff() const { return backoff_; }
  [[nodiscard]] const WatchOptions& options() const { return options_; }

 private:
  enum class Phase : unsigned char { listing, watching };

  WatchAction list_from_start(std::string_view reason);
  WatchAction current_step(std::string_view reason) const;
  WatchAction wait(std::chrono::milliseconds delay, std::string_view reason);
  WatchAction back_off(std::string_view reason);

  WatchOptions options_;
  std::mt19937_64 random_;
  Phase phase_ = Phase::listing;
  std::string continue_token_;    // the page being listed
  std::string resource_version_;  // the watch's resume point
  bool synced_ = false;
  bool delivered_ = false;  // the current watch stream delivered an event
  std::chrono::milliseconds backoff_;
  // After a wait: the step to retry, and why it is retried.
  std::string_view pending_reason_;
};

}  // namespace cudagate::kube
