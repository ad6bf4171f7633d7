#pragma once
// One request whose response body is read as it arrives, a chunk at a
// time, never held whole: an image layer of many GiB goes from the socket
// to its reader through one buffer of StreamLimits::chunk_bytes.
//
//   streamed_exchange(executor, endpoint, tls, request, limits, sink)
//     opens a connection of its own (https/connection.h), sends `request`,
//     reads the response's header, then its body: a 2xx body goes to
//     `sink` chunk by chunk, in order; any other status's body (an error
//     document, a redirect's page) is kept in StreamedResponse::body up to
//     max_kept_body bytes, the rest read and dropped. A HEAD request's
//     response has no body. The connection is closed at the end.
//
// Deadlines: connect_timeout for each step of opening the connection;
// idle_timeout for writing the request, for the header, and again for each
// chunk of the body, so that a body that keeps coming may take as long as
// it needs while a server that stops sending is given up on.
//
// Errors have no place; their message names the endpoint and what failed,
// as https/pool.h's do. An Error the sink returns ends the exchange and is
// returned as it is.
//
// Thread-safety: the coroutine uses its own connection. Every argument is
// taken by reference and must stay valid until it completes (co_await it
// where it is called).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "https/endpoint.h"
#include "https/pool.h"
#include "https/tls_client.h"
#include "types/expected.h"

namespace cudagate::https {

struct StreamLimits {
  std::chrono::steady_clock::duration connect_timeout = std::chrono::seconds(30);
  std::chrono::steady_clock::duration idle_timeout = std::chrono::seconds(60);
  std::uint64_t max_body = std::uint64_t{1} << 40;  // a 2xx body, streamed
  std::uint32_t max_header = 64 * 1024;
  std::size_t max_kept_body = 64 * 1024;  // a body not streamed
  std::size_t chunk_bytes = 1 << 20;
};

using ResponseHeader = boost::beast::http::response_header<>;

struct StreamedResponse {
  ResponseHeader header;
  std::string body;  // a non-2xx status's body, cut at max_kept_body
};

// One chunk of a 2xx body; an Error stops the exchange.
using BodySink = std::function<std::optional<Error>(std::span<const std::byte>)>;

[[nodiscard]] boost::asio::awaitable<Expected<StreamedResponse>> streamed_exchange(
    const boost::asio::any_io_executor& executor, const Endpoint& endpoint,
    const std::shared_ptr<const TlsClient>& tls, Request& request, const StreamLimits& limits,
    const BodySink& sink);

}  // namespace cudagate::https
