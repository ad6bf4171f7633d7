// The list-and-watch state machine: which request comes next, and how long
// to wait before it.
#include "kube/watch_protocol.h"

#include <algorithm>

namespace cudagate::kube {
namespace {

// Percent-encoding of a query value (continue tokens are base64 with '=').
std::string query_escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

// Retry-After beyond this is taken as this: a watcher that sleeps for an
// hour is worse than one that asks again.
constexpr std::chrono::milliseconds kMaxRetryAfter{600'000};

}  // namespace

std::string WatchAction::target(std::string_view collection, const WatchOptions& options) const {
  std::string out(collection);
  if (kind == Kind::list) {
    out += "?limit=" + std::to_string(options.page_size);
    if (!token.empty()) out += "&continue=" + query_escape(token);
  } else if (kind == Kind::watch) {
    out +=
        "?watch=1&resourceVersion=" + query_escape(token) +
        "&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(options.watch_timeout.count());
  }
  return out;
}

WatchProtocol::WatchProtocol(WatchOptions options)
    : options_(options), random_(options.seed), backoff_(options.initial_backoff) {}

WatchAction WatchProtocol::start() {
  return list_from_start("initial");
}

WatchAction WatchProtocol::list_from_start(std::string_view reason) {
  phase_ = Phase::listing;
  continue_token_.clear();
  return current_step(reason);
}

WatchAction WatchProtocol::current_step(std::string_view reason) const {
  WatchAction action;
  action.reason = reason;
  if (phase_ == Phase::listing) {
    action.kind = WatchAction::Kind::list;
    action.token = continue_token_;
  } else {
    action.kind = WatchAction::Kind::watch;
    action.token = resource_version_;
  }
  return action;
}

WatchAction WatchProtocol::wait(std::chrono::milliseconds delay, std::string_view reason) {
  pending_reason_ = reason;
  WatchAction action;
  action.kind = WatchAction::Kind::wait;
  action.delay = delay;
  action.reason = reason;
  return action;
}

WatchAction WatchProtocol::back_off(std::string_view reason) {
  const auto half = backoff_.count() / 2;
  std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(half, 0));
  const std::chrono::milliseconds delay(backoff_.count() - half + jitter(random_));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  return wait(delay, reason);
}

WatchAction WatchProtocol::page(std::string_view continue_token,
                                std::string_view resource_version) {
  backoff_ = options_.initial_backoff;
  if (!continue_token.empty()) {
    continue_token_ = std::string(continue_token);
    return current_step("page");
  }
  continue_token_.clear();
  resource_version_ = std::string(resource_version);
  phase_ = Phase::watching;
  synced_ = true;
  delivered_ = false;
  return current_step("initial");
}

void WatchProtocol::event(std::string_view resource_version) {
  if (!resource_version.empty()) resource_version_ = std::string(resource_version);
  delivered_ = true;
  backoff_ = options_.initial_backoff;
}

WatchAction WatchProtocol::error_event(int code) {
  if (code == 410) return list_from_start("expired");
  return back_off("error");
}

WatchAction WatchProtocol::stream_closed() {
  if (phase_ == Phase::watching && delivered_) {
    delivered_ = false;
    return current_step("closed");
  }
  return back_off("closed");
}

WatchAction WatchProtocol::http_status(int status,
                                       std::optional<std::chrono::seconds> retry_after) {
  if (status == 410) return list_from_start("expired");
  if (status == 429 || (status == 503 && retry_after)) {
    if (retry_after) {
      const std::chrono::milliseconds delay =
          std::min<std::chrono::milliseconds>(*retry_after, kMaxRetryAfter);
      return wait(delay, "throttled");
    }
    return back_off("throttled");
  }
  return back_off("error");
}

WatchAction WatchProtocol::transport_error() {
  return back_off("error");
}

WatchAction WatchProtocol::resume() {
  if (phase_ == Phase::watching) delivered_ = false;
  return current_step(pending_reason_);
}

}  // namespace cudagate::kube
