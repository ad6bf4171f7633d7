#pragma once
// Keeping up with the cluster's Nodes: performs the WatchProtocol over
// HTTPS with Boost.Beast on the caller's io_context, one request at a
// time, on a strand of its own.
//
// A list is handed on a page at a time (on_page), so that the fleet is never
// held as Node objects whole; `first` starts a list (a relist starts again
// from its first page), and the list is complete with `last`: the receiver
// keeps serving the previous list until then. Watch events are handed on
// as they are decoded, a read's worth at a time (on_changes). Both are
// called on the watcher's strand; the receiver must not block it for long.
// on_step reports each list and watch started and each wait, for metrics
// and logs.
//
// An exec credential plugin runs on a thread of its own, and the request
// waits for its credential without holding an I/O thread.
//
// Lifetime: the NodeWatcher must outlive the io_context's run(); stop()
// cancels the request in flight and the wait, after which no handler is
// called; the destructor waits for a plugin still running (kExecTimeout at
// most). Requests hold the connection they use, never the watcher's
// members, past stop().

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kube/api_connection.h"
#include "kube/cluster_config.h"
#include "kube/watch_protocol.h"
#include "policy/node.h"

namespace cudagate::kube {

struct NodeChange {
  enum class Kind : unsigned char { upsert, remove };
  Kind kind = Kind::upsert;
  std::string name;
  Node node;  // upsert
};

struct NodeWatcherHandlers {
  std::function<void(std::vector<Node> nodes, bool first, bool last)> on_page;
  std::function<void(std::vector<NodeChange> changes)> on_changes;
  std::function<void(const WatchAction& action)> on_step;
};

class NodeWatcher {
 public:
  NodeWatcher(const boost::asio::any_io_executor& executor, ClusterConfig config,
              NodeWatcherHandlers handlers, WatchOptions options = {});
  ~NodeWatcher();
  NodeWatcher(const NodeWatcher&) = delete;
  NodeWatcher& operator=(const NodeWatcher&) = delete;

  // Begins the first list. Call once.
  void start();
  // Cancels what is in flight; thread-safe, may be called more than once.
  void stop();

 private:
  struct Request;
  void perform(WatchAction action);
  // Sends the list or watch request of `action` (after the exec plugin, when due).
  void send(WatchAction action);
  // True when `request` was cancelled or `ec` failed it (then logged and
  // retried after a wait).
  bool failed(const std::shared_ptr<Request>& request, const boost::system::error_code& ec,
              std::string_view what);
  void read_header(const std::shared_ptr<Request>& request);
  void read_body(const std::shared_ptr<Request>& request);
  // Hands on the events `bytes` complete; false when the stream ended.
  bool deliver_events(const std::shared_ptr<Request>& request, std::string_view bytes);
  void finish(const std::shared_ptr<Request>& request, boost::system::error_code ec);

  boost::asio::strand<boost::asio::any_io_executor> strand_;
  ApiCredentials credentials_;
  NodeWatcherHandlers handlers_;
  WatchProtocol protocol_;
  boost::asio::steady_timer wait_timer_;
  std::shared_ptr<Request> current_;
  bool stopped_ = false;
};

}  // namespace cudagate::kube
