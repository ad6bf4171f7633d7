#pragma once
// An HTTP/1.1 server on loopback for the client's tests, plain or TLS (with
// the development certificates certs/dev-certs.sh makes), that answers each
// request as the test says and counts what the client did: connections
// accepted, requests and the connection each came on, and the most
// requests in flight at once.
//
// A thread per connection, blocking I/O: the tests exercise the client, and
// the server only has to be simple to trust. stop() (and the destructor)
// closes every socket and joins every thread.

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace test_support {

class HttpTestServer {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;

  struct Answer {
    Response response;
    // After writing the response, close the connection without a word
    // (what a server does to an idle kept-alive connection).
    bool close_after = false;
    // Write nothing until stop().
    bool hang = false;
    // Write the header and the body as the first chunk of a chunked body,
    // then nothing more until stop(): a response still streaming (a watch).
    bool stream = false;
  };
  using Handler = std::function<Answer(const Request&)>;

  // `certs`: a folder with server.crt and server.key, or "" for plain HTTP.
  // `client_ca`: with TLS, a CA file that must have signed a client
  // certificate, without which the handshake fails; "" asks for none.
  HttpTestServer(Handler handler, const std::string& certs = "", const std::string& client_ca = "")
      : handler_(std::move(handler)),
        acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    if (!certs.empty()) {
      tls_.emplace(boost::asio::ssl::context::tls_server);
      tls_->use_certificate_chain_file(certs + "/server.crt");
      tls_->use_private_key_file(certs + "/server.key", boost::asio::ssl::context::pem);
      if (!client_ca.empty()) {
        tls_->load_verify_file(client_ca);
        tls_->set_verify_mode(boost::asio::ssl::verify_peer |
                              boost::asio::ssl::verify_fail_if_no_peer_cert);
      }
    }
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~HttpTestServer() { stop(); }
  HttpTestServer(const HttpTestServer&) = delete;
  HttpTestServer& operator=(const HttpTestServer&) = delete;

  [[nodiscard]] std::string port() const {
    return std::to_string(acceptor_.local_endpoint().port());
  }

  [[nodiscard]] int accepted() const {
    std::lock_guard lock(mutex_);
    return accepted_;
  }
  [[nodiscard]] int requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  // For each request in the order they came, the connection it came on:
  // 1 for the first one accepted, 2 for the second, ...
  [[nodiscard]] std::vector<int> connections_by_request() const {
    std::lock_guard lock(mutex_);
    return connections_by_request_;
  }
  [[nodiscard]] int most_in_flight() const {
    std::lock_guard lock(mutex_);
    return most_in_flight_;
  }

  // Blocks a handler until `n` requests are in flight at once, or `total`
  // requests have come in all (or stop()).
  void wait_for_in_flight(int n, int total) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopped_ || in_flight_ >= n || requests_ >= total; });
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
      changed_.notify_all();
      // The descriptor's shutdown wakes the thread blocked on it; the
      // socket object itself stays its thread's alone.
      for (auto& socket : sockets_) ::shutdown(socket->native_handle(), SHUT_RDWR);
    }
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  void accept_loop() {
    while (true) {
      auto socket = std::make_shared<boost::asio::ip::tcp::socket>(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(*socket, ec);
      std::lock_guard lock(mutex_);
      if (ec || stopped_) return;
      const int connection = ++accepted_;
      sockets_.push_back(socket);
      threads_.emplace_back([this, socket, connection] { serve(socket, connection); });
    }
  }

  template <typename Stream>
  void exchange_loop(Stream& stream, int connection) {
    boost::beast::flat_buffer buffer;
    while (true) {
      Request request;
      boost::system::error_code ec;
      boost::beast::http::read(stream, buffer, request, ec);
      if (ec) return;
      {
        std::lock_guard lock(mutex_);
        ++requests_;
        connections_by_request_.push_back(connection);
        ++in_flight_;
        most_in_flight_ = std::max(most_in_flight_, in_flight_);
        changed_.notify_all();
      }
      Answer answer = handler_(request);
      if (answer.hang) {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopped_; });
        return;
      }
      answer.response.version(11);
      answer.response.prepare_payload();
      {
        std::lock_guard lock(mutex_);
        --in_flight_;
      }
      if (answer.stream) {
        write_streaming(stream, answer.response);
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopped_; });
        return;
      }
      boost::beast::http::write(stream, answer.response, ec);
      if (ec || answer.close_after || !answer.response.keep_alive()) return;
    }
  }

  template <typename Stream>
  static void write_streaming(Stream& stream, Response& response) {
    std::string first = std::move(response.body());
    response.body().clear();
    response.content_length(boost::none);
    response.chunked(true);
    boost::beast::http::response_serializer<boost::beast::http::string_body> serializer(response);
    boost::system::error_code ec;
    boost::beast::http::write_header(stream, serializer, ec);
    if (!ec && !first.empty()) {
      boost::asio::write(stream, boost::beast::http::make_chunk(boost::asio::buffer(first)), ec);
    }
  }

  void serve(const std::shared_ptr<boost::asio::ip::tcp::socket>& socket, int connection) {
    if (!tls_) {
      exchange_loop(*socket, connection);
    } else {
      boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream(*socket, *tls_);
      boost::system::error_code ec;
      stream.handshake(boost::asio::ssl::stream_base::server, ec);
      if (!ec) exchange_loop(stream, connection);
    }
    boost::system::error_code ignored;
    socket->shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  }

  Handler handler_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::optional<boost::asio::ssl::context> tls_;
  std::thread accept_thread_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopped_ = false;
  int accepted_ = 0;
  int requests_ = 0;
  int in_flight_ = 0;
  int most_in_flight_ = 0;
  std::vector<int> connections_by_request_;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> sockets_;
  std::vector<std::thread> threads_;
};

// An answer of `status` with `body` and, given, a Content-Type.
inline HttpTestServer::Answer http_answer(int status, std::string body,
                                          std::string_view content_type = "") {
  HttpTestServer::Answer answer;
  answer.response.result(status);
  if (!content_type.empty()) {
    answer.response.set(boost::beast::http::field::content_type, content_type);
  }
  answer.response.body() = std::move(body);
  return answer;
}

}  // namespace test_support
