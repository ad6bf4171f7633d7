// The pool: turns, idle connections by endpoint, and one exchange with its
// one retry on a connection the server had closed.
#include "https/pool.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "https/connection.h"

namespace cudagate::https {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct Pool::State {
  State(const net::any_io_executor& ex, PoolLimits pool_limits)
      : executor(ex), limits(pool_limits) {}

  net::any_io_executor executor;
  PoolLimits limits;

  mutable std::mutex mutex;  // everything below
  bool closed = false;
  std::size_t in_use = 0;
  std::size_t opened = 0;
  std::deque<std::shared_ptr<net::steady_timer>> waiting;
  struct Idle {
    std::shared_ptr<Connection> connection;
    std::chrono::steady_clock::time_point since;
  };
  // By key, oldest first.
  std::map<std::string, std::vector<Idle>> idle;
  std::vector<std::weak_ptr<Connection>> busy;

  // Waits for a turn; false when the pool was closed.
  net::awaitable<bool> acquire() {
    while (true) {
      std::shared_ptr<net::steady_timer> timer;
      {
        std::lock_guard lock(mutex);
        if (closed) co_return false;
        if (in_use < limits.max_connections) {
          ++in_use;
          co_return true;
        }
        timer = std::make_shared<net::steady_timer>(executor,
                                                    std::chrono::steady_clock::time_point::max());
        waiting.push_back(timer);
      }
      beast::error_code ec;
      co_await timer->async_wait(net::redirect_error(net::use_awaitable, ec));
    }
  }

  void release() {
    std::shared_ptr<net::steady_timer> next;
    {
      std::lock_guard lock(mutex);
      --in_use;
      if (!waiting.empty()) {
        next = std::move(waiting.front());
        waiting.pop_front();
      }
    }
    if (next) next->cancel();
  }

  // The connection idle the shortest time, unless it has been idle too long
  // (then it and every older one are closed).
  std::shared_ptr<Connection> take_idle(const std::string& key) {
    std::lock_guard lock(mutex);
    auto it = idle.find(key);
    if (it == idle.end() || it->second.empty()) return nullptr;
    auto& list = it->second;
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(list, [&](const Idle& i) { return now - i.since >= limits.max_idle_time; });
    if (list.empty()) return nullptr;
    auto c = std::move(list.back().connection);
    list.pop_back();
    return c;
  }

  void keep_idle(const std::string& key, std::shared_ptr<Connection> c) {
    std::lock_guard lock(mutex);
    if (closed) return;
    auto& list = idle[key];
    if (list.size() < limits.max_idle_per_endpoint) {
      list.push_back(Idle{std::move(c), std::chrono::steady_clock::now()});
    }
  }

  void mark_busy(const std::shared_ptr<Connection>& c, bool fresh) {
    std::lock_guard lock(mutex);
    std::erase_if(busy, [](const auto& w) { return w.expired(); });
    busy.push_back(c);
    if (fresh) ++opened;
  }

  bool is_closed() const {
    std::lock_guard lock(mutex);
    return closed;
  }
};

Pool::Pool(const net::any_io_executor& executor, PoolLimits limits)
    : state_(std::make_shared<State>(executor, limits)) {}

Pool::~Pool() = default;

namespace {

std::string describe(const beast::error_code& ec, const Endpoint& endpoint,
                     const ExchangeLimits& limits) {
  if (ec == http::error::body_limit) {
    return "the answer exceeds " + std::to_string(limits.max_body) + " bytes";
  }
  if (ec == http::error::header_limit) {
    return "the answer's header exceeds " + std::to_string(limits.max_header) + " bytes";
  }
  if (ec == beast::error::timeout) {
    return "no answer from " + endpoint.authority() + " within " +
           std::to_string(std::chrono::ceil<std::chrono::seconds>(limits.timeout).count()) + " s";
  }
  return endpoint.authority() + ": " + ec.message();
}

}  // namespace

net::awaitable<Expected<Response>> Pool::exchange(Endpoint endpoint,
                                                  std::shared_ptr<const TlsClient> tls,
                                                  Request& request, ExchangeLimits limits) {
  const std::shared_ptr<State> state = state_;
  if (!co_await state->acquire()) co_return Error{"", "the client was stopped"};
  struct Turn {
    State* state;
    ~Turn() { state->release(); }
  } turn{state.get()};

  std::string key = endpoint.key();
  key += '\n';
  key += std::to_string(reinterpret_cast<std::uintptr_t>(tls.get()));
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Connection> c = attempt == 0 ? state->take_idle(key) : nullptr;
    const bool reused = c != nullptr;
    if (!c) c = std::make_shared<Connection>(state->executor);
    state->mark_busy(c, !reused);
    if (!reused) {
      if (auto failed = co_await c->open(endpoint, tls, state->limits.connect_timeout)) {
        co_return *failed;
      }
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(limits.max_body);
    parser.header_limit(limits.max_header);
    c->tcp().expires_after(limits.timeout);
    beast::error_code ec = co_await c->write(request);
    if (!ec) ec = co_await c->read(parser);
    if (state->is_closed()) co_return Error{"", "the client was stopped"};
    if (ec) {
      // A kept connection the server had closed: the request was not
      // processed, so it goes once more on a new connection.
      if (reused && !parser.got_some() && ec != beast::error::timeout) continue;
      co_return Error{"", describe(ec, endpoint, limits)};
    }
    Response response = parser.release();
    if (response.keep_alive() && request.keep_alive()) state->keep_idle(key, std::move(c));
    co_return response;
  }
  co_return Error{"", endpoint.authority() + ": the connection closed twice"};
}

void Pool::close() {
  std::vector<std::shared_ptr<Connection>> cancelled;
  std::deque<std::shared_ptr<net::steady_timer>> waiting;
  {
    std::lock_guard lock(state_->mutex);
    state_->closed = true;
    state_->idle.clear();
    for (const auto& w : state_->busy) {
      if (auto c = w.lock()) cancelled.push_back(std::move(c));
    }
    state_->busy.clear();
    waiting.swap(state_->waiting);
  }
  for (const auto& c : cancelled) c->cancel();
  for (const auto& t : waiting) t->cancel();
}

void Pool::drop_idle() {
  std::lock_guard lock(state_->mutex);
  state_->idle.clear();
}

std::size_t Pool::idle_connections() const {
  std::lock_guard lock(state_->mutex);
  std::size_t n = 0;
  for (const auto& entry : state_->idle) n += entry.second.size();
  return n;
}

std::size_t Pool::connections_opened() const {
  std::lock_guard lock(state_->mutex);
  return state_->opened;
}

}  // namespace cudagate::https
