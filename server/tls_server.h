#pragma once
// The HTTPS listener and its sessions: HTTP/1.1 (Boost.Beast's parser) over
// a TLS stream (server/tls_stream.h), asynchronous throughout.
//
// Each connection is a session, on its own strand when more than one thread
// runs the io_context. It takes the TLS context current when it is accepted
// (see CertStore) and keeps it until it closes.
// A timer is re-armed before every phase, so a slow or silent peer is cut
// off without affecting others:
//   handshake              limits.handshake_timeout
//   first request header   limits.header_timeout, from the end of the handshake
//   later request header   limits.idle_timeout for its first byte, then
//                          limits.header_timeout for the rest of the header
//   body                   limits.body_timeout
//   response               limits.write_timeout
// A body larger than max_body_bytes is answered 413 (as soon as its
// Content-Length is read), a header larger than max_header_bytes 431, a
// malformed request 400; after these the rest of the request is drained
// briefly so that the client can read the answer, then the connection
// closes. Connections beyond max_connections are closed as soon as they are
// accepted. A peer that closes without TLS close_notify is ordinary, not an
// error; a client speaking plain HTTP fails the handshake and is closed
// without an answer.
//
// The request handler runs on one of the threads that run the io_context,
// never at once with another handler of the same session; it must not block
// for long (an asynchronous handler answers later instead). An exception from it
// is answered 500. Error answers carry a JSON body {"error": "..."}.
//
// Thread-safety: listen() and start() are called once, before the io_context
// runs; shutdown() and open_connections() may be called from any thread.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "server/cert_store.h"
#include "server/metrics.h"
#include "server/padded_body.h"
#include "types/expected.h"

namespace cudagate {

struct ServerLimits {
  std::size_t max_body_bytes = std::size_t{4} * 1024 * 1024;
  std::size_t max_header_bytes = std::size_t{16} * 1024;
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  // Longer than the 90 s after which Go clients (the API server) drop idle
  // connections themselves, so that the client closes first and never
  // sends a request on a connection the server is closing.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  std::size_t max_connections = 1024;
};

// A request's body keeps its padding (server/padded_body.h): the review
// parser reads it where it lies.
using HttpRequest = boost::beast::http::request<PaddedStringBody>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;

// How an asynchronous handler answers: call it once, from any thread, with
// the response. The request it was handed with stays valid until then; the
// session waits for it (within its deadline, limits.write_timeout from the
// end of the request), and a responder dropped without a call leaves the
// connection to that deadline.
class Responder {
 public:
  struct Target {
    virtual ~Target() = default;
    virtual void respond(HttpResponse&& response) = 0;
  };
  explicit Responder(std::shared_ptr<Target> target) : target_(std::move(target)) {}
  void operator()(HttpResponse&& response) const { target_->respond(std::move(response)); }

 private:
  std::shared_ptr<Target> target_;
};
using AsyncRequestHandler = std::function<void(const HttpRequest&, Responder)>;

// A response with the JSON body {"error": message}.
[[nodiscard]] HttpResponse json_error(boost::beast::http::status status, std::string_view message);

class TlsServer {
 public:
  // `certs` and `metrics` (which may be null) must outlive the server and
  // every session it starts. `io_threads` is the number of threads that
  // will run `ioc`; with one, sessions do without strands.
  TlsServer(boost::asio::io_context& ioc, unsigned io_threads, const CertStore& certs,
            ServerLimits limits, RequestHandler handler, WebhookMetrics* metrics);
  // The same with a handler that may answer later (after a registry lookup).
  TlsServer(boost::asio::io_context& ioc, unsigned io_threads, const CertStore& certs,
            ServerLimits limits, AsyncRequestHandler handler, WebhookMetrics* metrics);
  ~TlsServer();
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;

  // Opens, binds and listens. The error names the address.
  [[nodiscard]] std::optional<Error> listen(const boost::asio::ip::tcp::endpoint& endpoint);
  // The bound address (the actual port when listening on port 0).
  [[nodiscard]] boost::asio::ip::tcp::endpoint local_endpoint() const;

  void start();

  // Stops accepting and closes idle connections; a request being read or
  // answered finishes, and its connection closes after the response.
  // `on_drained` is called once, on an io_context thread, when no connection
  // is left. The caller bounds the wait (--shutdown-grace).
  void shutdown(std::function<void()> on_drained);

  [[nodiscard]] std::size_t open_connections() const;

  // Public only so that the sessions in tls_server.cpp can name it.
  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace cudagate
