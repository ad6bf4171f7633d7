// A response read header first, then its body chunk by chunk through
// Beast's buffer_body.
#include "https/streamed_exchange.h"

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/verb.hpp>
#include <vector>

#include "https/connection.h"

namespace cudagate::https {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::string describe(const beast::error_code& ec, const Endpoint& endpoint,
                     const StreamLimits& limits) {
  if (ec == http::error::body_limit) {
    return "the answer exceeds " + std::to_string(limits.max_body) + " bytes";
  }
  if (ec == http::error::header_limit) {
    return "the answer's header exceeds " + std::to_string(limits.max_header) + " bytes";
  }
  if (ec == beast::error::timeout) {
    return "nothing from " + endpoint.authority() + " within " +
           std::to_string(std::chrono::ceil<std::chrono::seconds>(limits.idle_timeout).count()) +
           " s";
  }
  if (ec == http::error::partial_message || ec == net::error::eof) {
    return endpoint.authority() + ": the connection closed before the answer ended";
  }
  return endpoint.authority() + ": " + ec.message();
}

}  // namespace

net::awaitable<Expected<StreamedResponse>> streamed_exchange(
    const net::any_io_executor& executor, const Endpoint& endpoint,
    const std::shared_ptr<const TlsClient>& tls, Request& request, const StreamLimits& limits,
    const BodySink& sink) {
  Connection connection(executor);
  if (auto failed = co_await connection.open(endpoint, tls, limits.connect_timeout)) {
    co_return *failed;
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(limits.max_body);
  parser.header_limit(limits.max_header);
  if (request.method() == http::verb::head) parser.skip(true);
  connection.tcp().expires_after(limits.idle_timeout);
  beast::error_code ec = co_await connection.write(request);
  if (!ec) {
    connection.tcp().expires_after(limits.idle_timeout);
    ec = co_await connection.read_header(parser);
  }
  if (ec) co_return Error{"", describe(ec, endpoint, limits)};

  StreamedResponse out;
  const unsigned status = parser.get().result_int();
  const bool streamed = status >= 200 && status < 300;
  std::vector<std::byte> buffer(std::max<std::size_t>(limits.chunk_bytes, 1));
  while (!parser.is_done()) {
    parser.get().body().data = buffer.data();
    parser.get().body().size = buffer.size();
    connection.tcp().expires_after(limits.idle_timeout);
    ec = co_await connection.read(parser);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return Error{"", describe(ec, endpoint, limits)};
    const std::size_t got = buffer.size() - parser.get().body().size;
    if (got == 0) continue;
    const std::span<const std::byte> chunk(buffer.data(), got);
    if (streamed) {
      if (auto stop = sink(chunk)) co_return *stop;
    } else if (out.body.size() < limits.max_kept_body) {
      const std::size_t keep = std::min(got, limits.max_kept_body - out.body.size());
      out.body.append(reinterpret_cast<const char*>(chunk.data()), keep);
    }
  }
  out.header = std::move(parser.get().base());
  co_return out;
}

}  // namespace cudagate::https
