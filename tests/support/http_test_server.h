#pragma once
// An HTTP/1.1 server on loopback for the client's tests, plain or TLS (with
// the development certificates certs/dev-certs.sh makes), that answers each
// request as the test says and counts what the client did: connections
// accepted, requests, and the most requests in flight at once.
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
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
  };
  using Handler = std::function<Answer(const Request&)>;

  // `certs`: a folder with server.crt and server.key, or "" for plain HTTP.
  HttpTestServer(Handler handler, const std::string& certs = "")
      : handler_(std::move(handler)),
        acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    if (!certs.empty()) {
      tls_.emplace(boost::asio::ssl::context::tls_server);
      tls_->use_certificate_chain_file(certs + "/server.crt");
      tls_->use_private_key_file(certs + "/server.key", boost::asio::ssl::context::pem);
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
      ++accepted_;
      sockets_.push_back(socket);
      threads_.emplace_back([this, socket] { serve(socket); });
    }
  }

  template <typename Stream>
  void exchange_loop(Stream& stream) {
    boost::beast::flat_buffer buffer;
    while (true) {
      Request request;
      boost::system::error_code ec;
      boost::beast::http::read(stream, buffer, request, ec);
      if (ec) return;
      {
        std::lock_guard lock(mutex_);
        ++requests_;
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
      boost::beast::http::write(stream, answer.response, ec);
      if (ec || answer.close_after || !answer.response.keep_alive()) return;
    }
  }

  void serve(const std::shared_ptr<boost::asio::ip::tcp::socket>& socket) {
    if (!tls_) {
      exchange_loop(*socket);
    } else {
      boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream(*socket, *tls_);
      boost::system::error_code ec;
      stream.handshake(boost::asio::ssl::stream_base::server, ec);
      if (!ec) exchange_loop(stream);
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
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> sockets_;
  std::vector<std::thread> threads_;
};

}  // namespace test_support
