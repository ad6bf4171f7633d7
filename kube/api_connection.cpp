// One HTTPS request to the API server: TLS set up from the credentials,
// the standard headers, and the connect sequence, shared by every caller.
#include "kube/api_connection.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <nlohmann/json.hpp>
#include <utility>

namespace cudagate::kube {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// A TLS 1.2+ client context that verifies the server with `credentials`'
// CA (or the system's) and presents its client certificate, if any.
ssl::context client_context(const Credentials& credentials, const ClusterConfig& config) {
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (config.insecure_skip_tls_verify) {
    ctx.set_verify_mode(ssl::verify_none);
  } else {
    ctx.set_verify_mode(ssl::verify_peer);
    if (credentials.ca_pem.empty()) {
      ctx.set_default_verify_paths();
    } else {
      ctx.add_certificate_authority(net::buffer(credentials.ca_pem));
    }
  }
  if (!credentials.client_cert_pem.empty()) {
    ctx.use_certificate_chain(net::buffer(credentials.client_cert_pem));
    ctx.use_private_key(net::buffer(credentials.client_key_pem), ssl::context::pem);
  }
  return ctx;
}

}  // namespace

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ApiConnection::ApiConnection(const net::strand<net::any_io_executor>& strand, ssl::context context)
    : ssl_context(std::move(context)), stream(strand, ssl_context), resolver(strand) {}

void ApiConnection::cancel() {
  cancelled = true;
  resolver.cancel();
  beast::get_lowest_layer(stream).cancel();
}

Expected<std::shared_ptr<ApiConnection>> open_connection(
    const net::strand<net::any_io_executor>& strand, const ClusterConfig& config,
    const Credentials& credentials, http::verb method, const std::string& target) {
  std::shared_ptr<ApiConnection> connection;
  try {
    connection = std::make_shared<ApiConnection>(strand, client_context(credentials, config));
  } catch (const std::exception& e) {
    return Error{"API server " + config.server.host,
                 std::string("cannot set up TLS with the configured certificates: ") + e.what()};
  }
  const std::string& host = config.server.host;
  const std::string verify_name = config.tls_server_name.empty() ? host : config.tls_server_name;
  if (!is_ip_address(verify_name)) {
    SSL_set_tlsext_host_name(connection->stream.native_handle(), verify_name.c_str());
  }
  if (!config.insecure_skip_tls_verify) {
    connection->stream.set_verify_callback(ssl::host_name_verification(verify_name));
  }
  auto& req = connection->request;
  req.method(method);
  req.target(config.server.path_prefix + target);
  req.version(11);
  const bool v6 = host.find(':') != std::string::npos;
  req.set(http::field::host,
          (v6 ? "[" + host + "]" : host) + ":" + std::to_string(config.server.port));
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, std::string("cudagate/") + CUDAGATE_KUBE_VERSION);
  req.set(http::field::connection, "close");
  if (!credentials.token.empty()) {
    req.set(http::field::authorization, "Bearer " + credentials.token);
  }
  return connection;
}

void send_request(const std::shared_ptr<ApiConnection>& connection, const ClusterConfig& config,
                  std::function<void(const boost::system::error_code&, std::string_view)> done) {
  auto finish = std::make_shared<decltype(done)>(std::move(done));
  connection->resolver.async_resolve(
      config.server.host, std::to_string(config.server.port),
      [connection, finish](const boost::system::error_code& ec,
                           const tcp::resolver::results_type& results) {
        if (ec) return (*finish)(ec, "cannot resolve the server's name");
        beast::get_lowest_layer(connection->stream).expires_after(kConnectTimeout);
        beast::get_lowest_layer(connection->stream)
            .async_connect(results, [connection, finish](const boost::system::error_code& cec,
                                                         const tcp::endpoint&) {
              if (cec) return (*finish)(cec, "cannot connect");
              beast::get_lowest_layer(connection->stream).expires_after(kConnectTimeout);
              connection->stream.async_handshake(
                  ssl::stream_base::client,
                  [connection, finish](const boost::system::error_code& hec) {
                    if (hec) return (*finish)(hec, "TLS handshake failed");
                    beast::get_lowest_layer(connection->stream).expires_after(kConnectTimeout);
                    http::async_write(
                        connection->stream, connection->request,
                        [connection, finish](const boost::system::error_code& wec, std::size_t) {
                          (*finish)(wec, wec ? "cannot send the request" : "");
                        });
                  });
            });
      });
}

std::optional<std::chrono::seconds> retry_after(const http::response_header<>& header) {
  const auto it = header.find(http::field::retry_after);
  if (it == header.end()) return std::nullopt;
  const std::string_view value = it->value();
  if (value.empty() || value.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return std::chrono::seconds(n);
}

std::string status_message(const std::string& body) {
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object()) {
    const auto it = doc.find("message");
    if (it != doc.end() && it->is_string()) return it->get<std::string>();
  }
  return body.substr(0, 200);
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
