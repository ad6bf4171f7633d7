#pragma once
// One HTTPS request to the API server over a connection of its own, as
// every Kubernetes call of cudagate makes it (api_client.h, node_watcher.h):
// the TLS context from the credentials (the cluster's CA or the system's,
// the client certificate, SNI and host-name verification as the config
// says), the request's standard headers and bearer token, and the
// resolve-connect-handshake-write sequence. The response is read by the
// caller, which knows whether it is a whole body or a stream.
//
// ApiCredentials wraps a CredentialSource for asynchronous callers: an exec
// plugin runs on a thread of its own, never on an I/O thread.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kube/cluster_config.h"
#include "kube/credentials.h"
#include "types/expected.h"

namespace cudagate::kube {

inline constexpr std::chrono::seconds kConnectTimeout{30};

struct ApiConnection {
  // Throws what Asio throws when the certificates cannot be used; open()
  // turns that into an Error.
  ApiConnection(const boost::asio::strand<boost::asio::any_io_executor>& strand,
                boost::asio::ssl::context context);

  boost::asio::ssl::context ssl_context;
  boost::beast::ssl_stream<boost::beast::tcp_stream> stream;
  boost::asio::ip::tcp::resolver resolver;
  boost::beast::http::request<boost::beast::http::string_body> request;
  boost::beast::flat_buffer buffer;
  bool cancelled = false;

  // Cancels the resolve or whatever is in flight on the socket.
  void cancel();
};

// A connection for `method` `target` (below the server's path prefix) with
// the headers every request carries; an Error when TLS cannot be set up
// with the configured certificates.
[[nodiscard]] Expected<std::shared_ptr<ApiConnection>> open_connection(
    const boost::asio::strand<boost::asio::any_io_executor>& strand, const ClusterConfig& config,
    const Credentials& credentials, boost::beast::http::verb method, const std::string& target);

// Resolves, connects, handshakes and writes the request; then `done` with
// an error and what failed ("cannot connect"), or no error. Each phase has
// kConnectTimeout. Handlers run on the connection's strand.
void send_request(const std::shared_ptr<ApiConnection>& connection, const ClusterConfig& config,
                  std::function<void(const boost::system::error_code&, std::string_view)> done);

// The Retry-After header in seconds, when it is one.
[[nodiscard]] std::optional<std::chrono::seconds> retry_after(
    const boost::beast::http::response_header<>& header);

// The message of a Status error body, or the body's start.
[[nodiscard]] std::string status_message(const std::string& body);

// Credentials for an asynchronous client: current() now, or after running
// an exec plugin on a thread of its own; `handler` is called on `strand`.
// Clients on one strand may share one (the server's watchers do): callers
// that ask while the plugin runs wait for that run, which runs once.
class ApiCredentials {
 public:
  ApiCredentials(boost::asio::strand<boost::asio::any_io_executor> strand, ClusterConfig config);
  ~ApiCredentials();  // waits for a plugin still running (kExecTimeout at most)
  ApiCredentials(const ApiCredentials&) = delete;
  ApiCredentials& operator=(const ApiCredentials&) = delete;

  // Call on the strand. `handler` gets the credentials to present now, or
  // why there are none.
  void async_current(std::function<void(Expected<Credentials>)> handler);
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
