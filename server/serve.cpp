#include "server/serve.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "server/cert_store.h"
#include "server/cli_common.h"
#include "server/file_watch.h"
#include "server/metrics.h"
#include "server/node_loader.h"
#include "server/routes.h"
#include "server/state.h"
#include "server/tls_server.h"

namespace cudagate {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

constexpr milliseconds kPollInterval{1000};

struct ServeOptions {
  cli::CommonOptions common;
  std::string listen = "0.0.0.0:8443";
  std::string tls_cert;
  std::string tls_key;
  std::string client_ca;
  unsigned threads = 0;  // 0: one per core
  std::string shutdown_grace = "10s";
  std::size_t max_body_bytes = ServerLimits{}.max_body_bytes;
  std::string header_timeout = "10s";
  std::string body_timeout = "30s";
  std::string idle_timeout = "120s";
  std::size_t max_connections = ServerLimits{}.max_connections;
};

// Go-style durations ("10s", "1m30s", "500ms"); a bare number is seconds.
Expected<milliseconds> parse_duration(std::string_view text, const std::string& flag,
                                      bool allow_zero) {
  const Error bad{flag,
                  "expected a duration like 10s, 500ms or 2m, got \"" + std::string(text) + "\""};
  if (text.empty()) return bad;
  bool bare = true;
  for (const char c : text) bare = bare && c >= '0' && c <= '9';
  std::string spelled(text);
  if (bare) spelled += "s";
  std::string_view rest = spelled;
  std::int64_t total = 0;
  while (!rest.empty()) {
    std::size_t digits = 0;
    std::int64_t number = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
      number = number * 10 + (rest[digits] - '0');
      if (number > 1'000'000'000) return bad;
      ++digits;
    }
    if (digits == 0) return bad;
    rest.remove_prefix(digits);
    std::int64_t unit = 0;
    if (rest.starts_with("ms")) {
      unit = 1;
      rest.remove_prefix(2);
    } else if (rest.starts_with("s")) {
      unit = 1000;
      rest.remove_prefix(1);
    } else if (rest.starts_with("m")) {
      unit = 60'000;
      rest.remove_prefix(1);
    } else if (rest.starts_with("h")) {
      unit = 3'600'000;
      rest.remove_prefix(1);
    } else {
      return bad;
    }
    total += number * unit;
  }
  if (total == 0 && !allow_zero) return Error{flag, "must be greater than zero"};
  return milliseconds(total);
}

// "0.0.0.0:8443", "[::1]:8443", ":8443" (every IPv4 address).
Expected<tcp::endpoint> parse_listen(const std::string& text) {
  const Error bad{"--listen",
                  "expected ADDR:PORT with an IP address, like 0.0.0.0:8443 or "
                  "[::1]:8443, got \"" +
                      text + "\""};
  std::string host;
  std::string port;
  if (text.starts_with("[")) {
    const auto close = text.find("]:");
    if (close == std::string::npos) return bad;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) return bad;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad;  // IPv6 needs brackets
  }
  if (host.empty()) host = "0.0.0.0";
  if (port.empty() || port.size() > 5) return bad;
  unsigned value = 0;
  for (const char c : port) {
    if (c < '0' || c > '9') return bad;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return bad;
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) return bad;
  return tcp::endpoint(address, static_cast<unsigned short>(value));
}

std::string endpoint_text(const tcp::endpoint& endpoint) {
  const std::string address = endpoint.address().to_string();
  return (endpoint.address().is_v6() ? "[" + address + "]" : address) + ":" +
         std::to_string(endpoint.port());
}

// "2027-11-29T18:31:08Z"
std::string utc_text(std::int64_t unix_seconds) {
  const auto seconds = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void publish_inventory(const Inventory& inventory, WebhookMetrics& metrics) {
  metrics.inventory(inventory.size(), inventory.gpu_nodes(), inventory.unknown_gpu_nodes(),
                    unix_now());
}

// Everything the server runs on, in destruction-safe order: the facts and
// the metrics outlive the I/O contexts whose handlers refer to them.
void serve(const ServeOptions& options) {
  cli::setup_logging(options.common);
  const auto& common = options.common;

  const auto grace = cli::value_or_fail(parse_duration(options.shutdown_grace, "--shutdown-grace",
                                                       /*allow_zero=*/true));
  ServerLimits limits;
  limits.header_timeout =
      cli::value_or_fail(parse_duration(options.header_timeout, "--header-timeout", false));
  limits.handshake_timeout = limits.header_timeout;
  limits.body_timeout =
      cli::value_or_fail(parse_duration(options.body_timeout, "--body-timeout", false));
  limits.write_timeout = limits.body_timeout;
  limits.idle_timeout =
      cli::value_or_fail(parse_duration(options.idle_timeout, "--idle-timeout", false));
  limits.max_body_bytes = options.max_body_bytes;
  limits.max_connections = options.max_connections;
  if (limits.max_body_bytes == 0) cli::fail(Error{"--max-body-bytes", "must be greater than 0"});
  if (limits.max_connections == 0) {
    cli::fail(Error{"--max-connections", "must be greater than 0"});
  }
  const tcp::endpoint endpoint = cli::value_or_fail(parse_listen(options.listen));
  if (common.nodes.empty()) {
    cli::fail(Error{"--nodes", "required: the node inventory file (kubectl get nodes -o yaml)"});
  }
  const unsigned threads =
      options.threads != 0 ? options.threads : std::max(1U, std::thread::hardware_concurrency());

  auto db =
      std::make_shared<const CompatDb>(cli::value_or_fail(cli::load_compat_db_option(common)));
  auto policy =
      std::make_shared<const Policy>(cli::value_or_fail(cli::load_policy_option(common, *db)));
  auto inventory =
      std::make_shared<const Inventory>(cli::value_or_fail(load_inventory(common.nodes, *db)));
  const TlsFiles tls_files{options.tls_cert, options.tls_key, options.client_ca};
  TlsIdentity identity = cli::value_or_fail(load_tls_identity(tls_files));

  WebhookMetrics metrics(CUDAGATE_VERSION, db->revision);
  publish_inventory(*inventory, metrics);
  metrics.certificate_expiry(static_cast<double>(identity.not_after));
  spdlog::info("TLS certificate {} (serial {}) loaded from {}, valid until {}", identity.subject,
               identity.serial, tls_files.cert, utc_text(identity.not_after));
  spdlog::info("inventory loaded from {}: {} nodes, {} with GPUs, {} with an unknown driver",
               cli::display_name(common.nodes), inventory->size(), inventory->gpu_nodes(),
               inventory->unknown_gpu_nodes());
  ServerState state(db, policy, inventory);
  CertStore certs(tls_files, std::move(identity));

  net::io_context ioc(static_cast<int>(threads));
  TlsServer server(
      ioc, threads, certs, limits,
      [&state, &metrics](const HttpRequest& request) { return route(request, state, metrics); },
      &metrics);
  if (auto error = server.listen(endpoint)) cli::fail(*error);

  // Reloads parse and index on a thread of their own, so that a large file
  // never holds up an I/O thread.
  net::io_context reload_ioc(1);
  auto reload_work = net::make_work_guard(reload_ioc);
  FileWatch watch(reload_ioc.get_executor(), kPollInterval);
  if (!common.config.empty()) {
    watch.watch({common.config}, [&] {
      auto reloaded = cli::load_policy_option(common, *db);
      if (!reloaded) {
        metrics.reload("config", "error");
        spdlog::error("policy not reloaded, keeping the previous one: {}", reloaded.error().str());
        return;
      }
      state.set_policy(std::make_shared<const Policy>(std::move(reloaded).value()));
      metrics.reload("config", "success");
      spdlog::info("policy reloaded from {}", cli::display_name(common.config));
    });
  }
  watch.watch({common.nodes}, [&] {
    auto reloaded = load_inventory(common.nodes, *db);
    if (!reloaded) {
      metrics.reload("nodes", "error");
      spdlog::error("inventory not reloaded, keeping the previous one: {}", reloaded.error().str());
      return;
    }
    auto fresh = std::make_shared<const Inventory>(std::move(reloaded).value());
    publish_inventory(*fresh, metrics);
    spdlog::info("inventory reloaded from {}: {} nodes, {} with GPUs, {} with an unknown driver",
                 cli::display_name(common.nodes), fresh->size(), fresh->gpu_nodes(),
                 fresh->unknown_gpu_nodes());
    state.set_inventory(std::move(fresh));
    release_free_memory();  // the previous inventory, when no request holds it any more
    metrics.reload("nodes", "success");
  });
  std::vector<std::string> tls_paths{tls_files.cert, tls_files.key};
  if (!tls_files.client_ca.empty()) tls_paths.push_back(tls_files.client_ca);
  watch.watch(std::move(tls_paths), [&] {
    auto reloaded = certs.reload();
    if (!reloaded) {
      metrics.reload("certificate", "error");
      spdlog::error("TLS certificate not reloaded, keeping the previous one: {}",
                    reloaded.error().str());
      return;
    }
    metrics.certificate_expiry(static_cast<double>(reloaded->not_after));
    metrics.reload("certificate", "success");
    spdlog::info("TLS certificate {} (serial {}) reloaded, valid until {}", reloaded->subject,
                 reloaded->serial, utc_text(reloaded->not_after));
  });

  net::steady_timer grace_timer(ioc);
  net::signal_set signals(ioc, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    state.begin_shutdown();
    spdlog::info("received {}: not ready, draining {} open connections (grace {} ms)",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT", server.open_connections(),
                 grace.count());
    watch.stop();
    grace_timer.expires_after(grace);
    grace_timer.async_wait([&](const boost::system::error_code& wec) {
      if (wec) return;
      spdlog::warn("shutdown grace expired with {} connections open; closing them",
                   server.open_connections());
      ioc.stop();
    });
    server.shutdown([&] {
      grace_timer.cancel();
      ioc.stop();
    });
    // A second signal ends the process without waiting.
    signals.async_wait([&](const boost::system::error_code& sec, int) {
      if (!sec) ioc.stop();
    });
  });

  std::signal(SIGPIPE, SIG_IGN);
  server.start();
  watch.start();
  std::thread reload_thread([&reload_ioc] { reload_ioc.run(); });
  state.set_certificate_loaded();
  state.set_inventory_synced();
  spdlog::info("cudagate {} serving https://{} with {} threads", CUDAGATE_VERSION,
               endpoint_text(server.local_endpoint()), threads);

  // Decision log lines are written once per batch of ready handlers.
  cli::set_log_flush_scheduler(
      [&ioc] { boost::asio::post(ioc, [] { spdlog::default_logger()->flush(); }); });
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& thread : pool) thread.join();
  cli::set_log_flush_scheduler({});

  watch.stop();
  reload_work.reset();
  reload_ioc.stop();
  reload_thread.join();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* command = app.add_subcommand("serve", "Run the HTTPS admission webhook (SPEC 5)");
  cli::add_common_options(*command, options->common);
  command->add_option("--listen", options->listen, "Address to listen on: ADDR:PORT or [IPv6]:PORT")
      ->type_name("ADDR:PORT")
      ->capture_default_str();
  command->add_option("--tls-cert", options->tls_cert, "Server certificate chain (PEM)")
      ->type_name("FILE")
      ->required();
  command->add_option("--tls-key", options->tls_key, "Server private key (PEM)")
      ->type_name("FILE")
      ->required();
  command
      ->add_option("--client-ca", options->client_ca,
                   "CA bundle (PEM): require client certificates signed by it")
      ->type_name("FILE");
  command->add_option("--threads", options->threads, "I/O threads (default: one per core)")
      ->type_name("N")
      ->check(CLI::Range(1U, 1024U));
  command
      ->add_option("--shutdown-grace", options->shutdown_grace,
                   "Time to let in-flight requests finish after SIGTERM")
      ->type_name("DURATION")
      ->capture_default_str();
  command
      ->add_option("--max-body-bytes", options->max_body_bytes,
                   "Largest request body accepted (larger: 413)")
      ->type_name("BYTES")
      ->capture_default_str();
  command
      ->add_option("--header-timeout", options->header_timeout,
                   "Time allowed for the TLS handshake and for reading a request header")
      ->type_name("DURATION")
      ->capture_default_str();
  command
      ->add_option("--body-timeout", options->body_timeout,
                   "Time allowed for reading a request body and for writing a response")
      ->type_name("DURATION")
      ->capture_default_str();
  command
      ->add_option("--idle-timeout", options->idle_timeout,
                   "How long a keep-alive connection may wait for its next request")
      ->type_name("DURATION")
      ->capture_default_str();
  command
      ->add_option("--max-connections", options->max_connections,
                   "Open connections allowed; further ones are closed at once")
      ->type_name("N")
      ->capture_default_str();
  command->callback([options] { serve(*options); });
}

}  // namespace cudagate
