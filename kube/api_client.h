#pragma once
// A Kubernetes API client for single requests: GET of one object, a LIST
// of any collection page by page (limit and continue), server-side apply
// (PATCH application/apply-patch+yaml, fieldManager=cudagate, force=true)
// and DELETE. Every request is a row of the API call table
// (kube/api_calls.h), which gives its path; the node inventory's
// list-and-watch is node_watcher.h.
//
// ApiClient is asynchronous, on the caller's io_context (a strand of its
// own; handlers are called on it and must not block it for long). Its
// requests go over connections it keeps alive (https/pool.h), at most
// eight at once and none idle longer than 90 s, so that a list of many
// pages or a burst of applies pays one TLS handshake, not one a request.
// BlockingApiClient runs the same client on an io_context of its own in the
// calling thread, for the CLI and for work already off the I/O threads.
//
// Failures are retried within the request: a 429 waits its Retry-After (at
// most max_retry_after; without one, the backoff), a 5xx or a connection
// failure waits a capped exponential backoff with jitter, up to
// max_attempts in all; a 401 makes the credentials be read again (token
// file, exec plugin) and is retried once; a list whose continue token has
// expired (410) is listed again from its first page. What still fails is
// an Error naming the server, the call and the status ("API server
// 10.0.0.1: list pods: 403 Forbidden: pods is forbidden: ...").
//
// Lifetime: the client must outlive the io_context's run() or stop() must
// have been called; after stop() no handler is called. Not copyable.

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kube/api_calls.h"
#include "kube/cluster_config.h"
#include "types/expected.h"

namespace cudagate::kube {

struct ApiClientOptions {
  unsigned page_size = 500;  // list limit
  unsigned max_attempts = 5;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30'000};
  std::chrono::seconds max_retry_after{60};
  // For one whole request: connect, send, read the response.
  std::chrono::seconds request_timeout{60};
  std::size_t max_response_bytes = std::size_t{1} << 30;
  std::uint64_t seed = 0;  // the backoff's jitter
};

// What a list names besides its collection.
struct ListOptions {
  std::string namespace_;  // "" = every namespace (or a cluster-scoped collection)
  std::string label_selector;
  // Another version of the call's group ("" = the row's; see kDraVersions).
  std::string version;
};

// Whether a request failed because the server has no such collection or
// object (404 Not Found): for a collection, an API the cluster does not serve.
[[nodiscard]] bool is_not_found(const Error& error);

// The server's answer to one request, whatever its status.
struct ApiResponse {
  int status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retry_after;
};

// A list page's items with the kind and apiVersion of the call filled in
// (the API server leaves them out of list items); `first`: the list
// (re)starts with this page, and what the pages before it gave is void.
using ListPageHandler = std::function<void(nlohmann::json page, bool first)>;
using ObjectHandler = std::function<void(Expected<nlohmann::json> object)>;
using DoneHandler = std::function<void(std::optional<Error> error)>;

class ApiClient {
 public:
  ApiClient(const boost::asio::any_io_executor& executor, ClusterConfig config,
            ApiClientOptions options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // GET of one object; a 404 is an Error.
  void get(ApiCallId call, const std::string& namespace_, const std::string& name,
           ObjectHandler handler);
  // Every page of the collection, in order; then done (nullopt: the list is whole).
  void list(ApiCallId call, ListOptions options, ListPageHandler on_page, DoneHandler done);
  // Server-side apply of `object` (its apiVersion, kind and metadata.name
  // must be the call's and `name`'s); the handler gets the object as the
  // server stored it.
  void apply(ApiCallId call, const std::string& namespace_, const std::string& name,
             const nlohmann::json& object, ObjectHandler handler);
  // DELETE; an object already gone (404) is done.
  void remove(ApiCallId call, const std::string& namespace_, const std::string& name,
              DoneHandler done);

  // Cancels what is in flight; thread-safe. No handler is called after it.
  void stop();

  // One request with its retries, the raw response of its last attempt
  // (any status), or an Error when it never got one. `target` is below the
  // server's path prefix, query included.
  void request(ApiCallId call, std::string method, std::string target, std::string content_type,
               std::string body, std::function<void(Expected<ApiResponse>)> handler);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

class BlockingApiClient {
 public:
  explicit BlockingApiClient(ClusterConfig config, ApiClientOptions options = {});
  ~BlockingApiClient();
  BlockingApiClient(const BlockingApiClient&) = delete;
  BlockingApiClient& operator=(const BlockingApiClient&) = delete;

  [[nodiscard]] Expected<nlohmann::json> get(ApiCallId call, const std::string& namespace_,
                                             const std::string& name);
  [[nodiscard]] std::optional<Error> list(ApiCallId call, const ListOptions& options,
                                          const ListPageHandler& on_page);
  [[nodiscard]] Expected<nlohmann::json> apply(ApiCallId call, const std::string& namespace_,
                                               const std::string& name,
                                               const nlohmann::json& object);
  [[nodiscard]] std::optional<Error> remove(ApiCallId call, const std::string& namespace_,
                                            const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The request target of a list page below the server's prefix:
// "/api/v1/namespaces/NS/pods?limit=500&labelSelector=...&continue=...".
[[nodiscard]] std::string list_target(ApiCallId call, const ListOptions& options,
                                      unsigned page_size, std::string_view continue_token);

// The query of a server-side apply: "?fieldManager=cudagate&force=true".
inline constexpr std::string_view kApplyQuery = "?fieldManager=cudagate&force=true";
inline constexpr std::string_view kApplyContentType = "application/apply-patch+yaml";

// Percent-encoding of a query value (RFC 3986 unreserved characters kept).
[[nodiscard]] std::string query_escape(std::string_view value);

}  // namespace cudagate::kube
