// A response body read chunk by chunk: a 2xx body handed to the sink in
// pieces no larger than the buffer, another status's body kept (cut at its
// bound) and never streamed, the sink's error ending the exchange. Every
// argument of the coroutine is a named object of the caller: GCC 12
// destroys a temporary of a co_await expression while the coroutine still
// refers to it.
#include "https/streamed_exchange.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/http_test_server.h"

namespace cudagate::https {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using test_support::HttpTestServer;

HttpTestServer::Answer streamed_answer(int status, std::string body) {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  answer.response.body() = std::move(body);
  return answer;
}

struct StreamRun {
  std::optional<Expected<StreamedResponse>> result;
  std::vector<std::size_t> chunks;
  std::string body;
};

StreamRun stream_from(const HttpTestServer& server, const StreamLimits& limits,
                      const std::optional<Error>& stop = std::nullopt) {
  StreamRun run;
  net::io_context ioc;
  const Endpoint endpoint{"127.0.0.1", server.port(), false, ""};
  const auto executor = ioc.get_executor();
  const std::shared_ptr<const TlsClient> no_tls;
  Request request{http::verb::get, "/blob", 11};
  request.set(http::field::host, "127.0.0.1");
  const BodySink sink = [&run, stop](std::span<const std::byte> chunk) {
    run.chunks.push_back(chunk.size());
    run.body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    return stop;
  };
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        run.result.emplace(
            co_await streamed_exchange(executor, endpoint, no_tls, request, limits, sink));
      },
      net::detached);
  ioc.run();
  return run;
}

TEST(StreamedExchange, ABodyComesInChunksOfTheBuffer) {
  const std::string blob(100000, 'z');
  HttpTestServer server([&](const auto&) { return streamed_answer(200, blob); });
  StreamLimits limits;
  limits.chunk_bytes = 4096;
  const StreamRun run = stream_from(server, limits);
  ASSERT_TRUE(run.result && *run.result) << run.result->error().str();
  EXPECT_EQ((*run.result)->header.result_int(), 200U);
  EXPECT_EQ(run.body, blob);
  EXPECT_GT(run.chunks.size(), 1U);
  for (const std::size_t size : run.chunks) EXPECT_LE(size, 4096U);
  EXPECT_EQ((*run.result)->body, "");
}

TEST(StreamedExchange, AnotherStatusKeepsItsBodyCut) {
  HttpTestServer server([](const auto&) { return streamed_answer(404, std::string(5000, 'e')); });
  StreamLimits limits;
  limits.max_kept_body = 100;
  const StreamRun run = stream_from(server, limits);
  ASSERT_TRUE(run.result && *run.result);
  EXPECT_EQ((*run.result)->header.result_int(), 404U);
  EXPECT_EQ((*run.result)->body, std::string(100, 'e'));
  EXPECT_TRUE(run.chunks.empty());
}

TEST(StreamedExchange, LimitsAndTheSinksErrorEndIt) {
  HttpTestServer server([](const auto&) { return streamed_answer(200, std::string(5000, 'b')); });
  StreamLimits small;
  small.max_body = 1000;
  const StreamRun over = stream_from(server, small);
  ASSERT_TRUE(over.result && !*over.result);
  EXPECT_EQ(over.result->error().message, "the answer exceeds 1000 bytes");

  StreamLimits chunked;
  chunked.chunk_bytes = 100;
  const StreamRun stopped = stream_from(server, chunked, Error{"layer 1", "stop here"});
  ASSERT_TRUE(stopped.result && !*stopped.result);
  EXPECT_EQ(stopped.result->error().str(), "layer 1: stop here");
  EXPECT_EQ(stopped.chunks.size(), 1U);
}

}  // namespace
}  // namespace cudagate::https
