#pragma once
// Credentials for asynchronous callers of the API server (api_client.h,
// collection_watcher.h): current() at once, or after an exec plugin has
// run on a thread of its own, never on an I/O thread.
//
// Clients on one strand may share one ApiCredentials (the server's watchers
// do): callers that ask while the plugin runs wait for that run, which runs
// once.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "kube/cluster_config.h"
#include "kube/credentials.h"
#include "types/expected.h"

namespace cudagate::kube {

class ApiCredentials {
 public:
  ApiCredentials(boost::asio::strand<boost::asio::any_io_executor> strand, ClusterConfig config);
  ~ApiCredentials();  // waits for a plugin still running (kExecTimeout at most)
  ApiCredentials(const ApiCredentials&) = delete;
  ApiCredentials& operator=(const ApiCredentials&) = delete;

  // Call on the strand. `handler` gets the credentials to present now, or
  // why there are none, on the strand (at once when no plugin must run).
  void async_current(std::function<void(Expected<Credentials>)> handler);

  // The same for a coroutine on the strand (co_await
  // credentials.current(net::use_awaitable)); the answer always comes from
  // the strand's queue, never on the caller's stack.
  template <typename Token>
  auto current(Token&& token) {
    return boost::asio::async_initiate<Token, void(Expected<Credentials>)>(
        [this](auto handler) {
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          async_current([this, shared](Expected<Credentials> answer) {
            boost::asio::post(strand_, [shared, answer = std::move(answer)]() mutable {
              (*shared)(std::move(answer));
            });
          });
        },
        token);
  }

  // The server refused them (401); call on the strand.
  void invalidate() { source_.invalidate(); }
  [[nodiscard]] const ClusterConfig& config() const { return source_.config(); }
  [[nodiscard]] const boost::asio::strand<boost::asio::any_io_executor>& strand() const {
    return strand_;
  }

 private:
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  CredentialSource source_;
  std::thread exec_thread_;
  // On the strand: the callers waiting for the plugin's run in flight.
  std::vector<std::function<void(Expected<Credentials>)>> waiting_;
};

[[nodiscard]] std::int64_t unix_now();

}  // namespace cudagate::kube
