#pragma once
// Keeping up with one collection of the API server (Nodes, ResourceSlices,
// ResourceClaims, ...): performs the WatchProtocol over cudagate's HTTPS
// client on the caller's io_context, one request at a time, each a
// coroutine on the credentials' strand. What is listed and watched, and what
// becomes of the objects, is the WatchedCollection's: the watcher hands it
// each list page's body and each watch event's text, and asks it where to
// send the requests.
//
// List pages go through the watcher's own pool (https/pool.h) of one
// kept-alive connection: a large collection is many pages, and a relist
// follows every expired watch, so the pages of a list and a relist soon
// after reuse one TLS connection instead of a handshake each (a connection
// idle longer than the pool's max_idle_time, as after a watch of minutes,
// is opened anew, as the API server closes idle ones itself). A watch holds
// a connection of its own (https/connection.h) for minutes, its events
// read as they arrive, so it never occupies the pooled one.
//
// A list is handed on a page at a time, so that a large collection is never
// held whole; a page begins a list when it has no continue token (a relist
// starts again from its first page), and the list is complete with the
// page the collection is told is the last. Watch events are handed on as
// they are decoded, and flushed a read's worth at a time. All of it is
// called on the watcher's strand; the collection must not block it for
// long. on_step reports each list and watch started and each wait, for
// metrics and logs.
//
// A collection the server does not serve (404) is the collection's to
// judge (on_not_found): retried as any error, listed again from the start
// (it moved to another API version), or given up for good (the cluster
// has no such API: no error, nothing more is asked).
//
// An exec credential plugin runs on a thread of its own, and the request
// waits for its credential without holding an I/O thread; watchers that
// share their credentials share its runs.
//
// Lifetime: the watcher and its collection must outlive the io_context's
// run(); stop() cancels the request in flight (a list's exchange in the
// pool too: the pool is closed) and the wait, after which no handler is
// called; the destructor waits for a plugin still running
// (kExecTimeout at most). A request stop() cancelled touches none of the
// watcher's members again.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "https/pool.h"
#include "kube/api_credentials.h"
#include "kube/api_transport.h"
#include "kube/cluster_config.h"
#include "kube/object_events.h"
#include "kube/watch_protocol.h"
#include "types/expected.h"

namespace cudagate::kube {

class WatchedCollection {
 public:
  virtual ~WatchedCollection() = default;

  // "nodes", "resourceslices": for logs.
  [[nodiscard]] virtual std::string_view name() const = 0;
  // The request target of a list or watch `action`.
  [[nodiscard]] virtual std::string target(const WatchAction& action,
                                           const WatchOptions& options) const = 0;

  struct PageMeta {
    std::string continue_token;
    std::string resource_version;
  };
  // A list page's body: its objects are read and kept until deliver_page;
  // an Error when the body is not a page of the collection.
  [[nodiscard]] virtual Expected<PageMeta> read_page(std::string body) = 0;
  // The page read last, handed on: `first` begins a list, `last` ends it.
  virtual void deliver_page(bool first, bool last) = 0;

  // One watch event's text, read: what changed is kept for
  // flush_events(); the envelope (type, resourceVersion, an error's code
  // and message) is returned, its object possibly taken. An Error skips
  // the event (logged).
  [[nodiscard]] virtual Expected<EventEnvelope> read_event(std::string_view text) = 0;
  // The events read since the last flush, handed on in order.
  virtual void flush_events() = 0;

  // The server refused a list with `status` (not 404, 410); retried after
  // a wait in any case.
  virtual void on_refused(int status) { (void)status; }

  enum class NotFound : unsigned char { retry, relist, absent };
  // The server answered 404 to a list or watch.
  [[nodiscard]] virtual NotFound on_not_found() { return NotFound::retry; }
};

class CollectionWatcher {
 public:
  // `credentials` may be shared with other watchers; the watcher runs on
  // its strand.
  CollectionWatcher(std::shared_ptr<ApiCredentials> credentials, WatchedCollection& collection,
                    std::function<void(const WatchAction& action)> on_step,
                    WatchOptions options = {});
  ~CollectionWatcher();
  CollectionWatcher(const CollectionWatcher&) = delete;
  CollectionWatcher& operator=(const CollectionWatcher&) = delete;

  // Begins the first list. Call once.
  void start();
  // Cancels what is in flight; thread-safe, may be called more than once.
  void stop();

 private:
  struct Request;
  void perform(WatchAction action);
  // The list or watch request of `request->action`, its answer read and
  // handed on, then the next action performed.
  boost::asio::awaitable<void> run(std::shared_ptr<Request> request);
  // The request failed before its response (logged); retried after a wait.
  void fail(std::string_view what);
  // Hands on the events `bytes` complete; false when the stream ended.
  bool deliver_events(const std::shared_ptr<Request>& request, std::string_view bytes);
  void finish(const std::shared_ptr<Request>& request, boost::system::error_code ec);

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::shared_ptr<ApiCredentials> credentials_;
  WatchedCollection& collection_;
  std::function<void(const WatchAction& action)> on_step_;
  WatchProtocol protocol_;
  ApiTls tls_;
  https::Pool pool_;  // list pages; on the strand
  boost::asio::steady_timer wait_timer_;
  std::shared_ptr<Request> current_;
  bool stopped_ = false;
};

// One collection kept up with: its handlers, the collection that reads its
// pages and events into them, and the CollectionWatcher that lists and
// watches it (NodeWatcher for Nodes, ObjectWatcher for other objects).
// `Collection` is a WatchedCollection made from a reference to its
// `Handlers` (which have an on_step) and `args`.
template <typename Collection>
class Watcher {
 public:
  using Handlers = typename Collection::Handlers;

  // `credentials` may be shared with other watchers (one strand for all).
  template <typename... Args>
  Watcher(std::shared_ptr<ApiCredentials> credentials, Handlers handlers, WatchOptions options,
          Args&&... args)
      : handlers_(std::move(handlers)),
        collection_(handlers_, std::forward<Args>(args)...),
        watcher_(std::move(credentials), collection_, handlers_.on_step, options) {}
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Begins the first list. Call once.
  void start() { watcher_.start(); }
  // Cancels what is in flight; thread-safe, may be called more than once.
  void stop() { watcher_.stop(); }

 private:
  Handlers handlers_;
  Collection collection_;
  CollectionWatcher watcher_;
};

}  // namespace cudagate::kube
