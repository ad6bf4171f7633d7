// Credentials for asynchronous callers: an exec plugin run on a thread of
// its own, its answer posted back to the strand of those who wait for it.
#include "kube/api_credentials.h"

#include <boost/asio/post.hpp>
#include <utility>

namespace cudagate::kube {

namespace net = boost::asio;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ApiCredentials::ApiCredentials(net::strand<net::any_io_executor> strand, ClusterConfig config)
    : strand_(std::move(strand)), source_(std::move(config)) {}

ApiCredentials::~ApiCredentials() {
  if (exec_thread_.joinable()) exec_thread_.join();
}

void ApiCredentials::async_current(std::function<void(Expected<Credentials>)> handler) {
  if (!waiting_.empty()) {
    waiting_.push_back(std::move(handler));  // the run in flight answers it too
    return;
  }
  if (source_.exec_due(unix_now())) {
    if (exec_thread_.joinable()) exec_thread_.join();  // the previous run, finished
    waiting_.push_back(std::move(handler));
    // The io_context has work while the plugin runs, so that a caller
    // running it until it has none (BlockingApiClient) waits for the answer.
    auto work = net::prefer(strand_.get_inner_executor(), net::execution::outstanding_work.tracked);
    exec_thread_ =
        std::thread([this, plugin = *source_.config().exec, work = std::move(work)]() mutable {
          auto credential = run_exec_plugin(plugin, kExecTimeout);
          net::post(strand_,
                    [this, credential = std::move(credential), work = std::move(work)]() mutable {
                      auto waiting = std::exchange(waiting_, {});
                      Expected<Credentials> result = Error{"", ""};
                      if (!credential) {
                        result = Error{"API server " + source_.config().server.host,
                                       "no credentials: " + credential.error().str()};
                      } else {
                        source_.set_exec(std::move(*credential));
                        if (source_.exec_due(unix_now())) {
                          result = Error{"API server " + source_.config().server.host,
                                         "the exec plugin's credential has already expired"};
                        } else {
                          result = source_.current(unix_now());
                        }
                      }
                      for (auto& waiter : waiting) waiter(result);
                    });
        });
    return;
  }
  auto credentials = source_.current(unix_now());
  if (!credentials) {
    handler(Error{"API server " + source_.config().server.host,
                  "no credentials: " + credentials.error().str()});
    return;
  }
  handler(std::move(credentials));
}

}  // namespace cudagate::kube
