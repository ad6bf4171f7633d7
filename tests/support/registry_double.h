#pragma once
// A registry for the registry client's and puller's tests: a loopback
// HttpTestServer (TLS with the development certificates, or plain HTTP)
// that answers each target as routed and keeps every request it saw as
// "target authorization". A target no route names answers 404 with the
// registry's error body.

#include <boost/beast/http/field.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/dev_certs.h"
#include "tests/support/http_test_server.h"

namespace test_support {

class RegistryDouble {
 public:
  using Route = std::function<HttpTestServer::Answer(const HttpTestServer::Request&)>;

  // `unknown`: the error code of the 404 for a target no route names.
  explicit RegistryDouble(bool tls, std::string unknown = "NAME_UNKNOWN")
      : unknown_(std::move(unknown)),
        server_([this](const HttpTestServer::Request& request) { return answer(request); },
                tls ? dev_certs() : std::string()) {}

  void route(const std::string& target, Route route) {
    std::lock_guard lock(mutex_);
    routes_[target] = std::move(route);
  }
  void serve(const std::string& target, int status, const std::string& body,
             std::string_view content_type = "") {
    route(target, [status, body, type = std::string(content_type)](const auto&) {
      return http_answer(status, body, type);
    });
  }

  [[nodiscard]] std::string host() const { return "127.0.0.1:" + server_.port(); }
  [[nodiscard]] std::string port() const { return server_.port(); }
  [[nodiscard]] std::vector<std::string> seen() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  // The Accept header of the first request.
  [[nodiscard]] std::string first_accept() const {
    std::lock_guard lock(mutex_);
    return first_accept_;
  }

 private:
  HttpTestServer::Answer answer(const HttpTestServer::Request& request) {
    namespace http = boost::beast::http;
    Route route;
    {
      std::lock_guard lock(mutex_);
      const std::string target(request.target());
      seen_.push_back(target + " " + std::string(request[http::field::authorization]));
      if (seen_.size() == 1) first_accept_ = std::string(request[http::field::accept]);
      if (const auto it = routes_.find(target); it != routes_.end()) route = it->second;
    }
    if (!route) return http_answer(404, R"({"errors":[{"code":")" + unknown_ + R"("}]})");
    return route(request);
  }

  std::string unknown_;
  mutable std::mutex mutex_;
  std::map<std::string, Route> routes_;
  std::vector<std::string> seen_;
  std::string first_accept_;
  HttpTestServer server_;  // last: its threads stop before the members they use go
};

}  // namespace test_support
