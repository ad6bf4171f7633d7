// The webhook process in four steps: the facts it starts from loaded and
// checked, the server and the watched cluster started, the input files
// watched for reloads, and the run until a signal, with an orderly drain.
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
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "inputs/input_files.h"
#include "inputs/node_loader.h"
#include "registry/registry_client.h"
#include "server/background_scans.h"
#include "server/cert_store.h"
#include "server/file_watch.h"
#include "server/live_cluster.h"
#include "server/logging.h"
#include "server/matrix_gaps.h"
#include "server/metrics.h"
#include "server/routes.h"
#include "server/state.h"
#include "server/tls_server.h"

namespace cudagate {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

constexpr milliseconds kPollInterval{1000};

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

// The matrix to serve with: the override file while it exists, else the
// --compat-db file, else the embedded one; `source` names it for the logs.
Expected<CompatDb> load_serving_matrix(const ServeSettings& settings, std::string& source) {
  std::error_code error;
  if (!settings.compat_db_override.empty() &&
      std::filesystem::exists(settings.compat_db_override, error)) {
    source = display_name(settings.compat_db_override);
    return load_compat_db_file(settings.compat_db_override);
  }
  source = settings.compat_db_path.empty() ? std::string("embedded")
                                           : display_name(settings.compat_db_path);
  return load_compat_db_file(settings.compat_db_path);
}

// A new matrix with the policy and, for a --nodes file, the inventory read
// again against it: all three are used together or not at all.
struct MatrixFacts {
  std::shared_ptr<const CompatDb> db;
  std::shared_ptr<const Policy> policy;        // null without --config
  std::shared_ptr<const Inventory> inventory;  // null for a watched cluster
};

Expected<MatrixFacts> reread_against(std::shared_ptr<const CompatDb> db,
                                     const ServeSettings& settings) {
  MatrixFacts facts{std::move(db), nullptr, nullptr};
  if (!settings.config_path.empty()) {
    auto policy = load_policy_file(settings.config_path, *facts.db);
    if (!policy) return policy.error().within("the policy against the new matrix");
    facts.policy = std::make_shared<const Policy>(std::move(policy).value());
  }
  if (!settings.cluster) {
    auto inventory = load_inventory(settings.nodes_path, *facts.db);
    if (!inventory) return inventory.error().within("the inventory against the new matrix");
    facts.inventory = std::make_shared<const Inventory>(std::move(inventory).value());
  }
  return facts;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

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

namespace {

// What serving starts from, each read and checked before anything is
// served: the matrix, the policy, a --nodes file's inventory (empty for a
// watched cluster) and the TLS identity.
struct StartFacts {
  std::shared_ptr<const CompatDb> db;
  std::string db_source;  // the matrix's name for the logs
  std::shared_ptr<const Policy> policy;
  std::shared_ptr<const Inventory> inventory;
  TlsIdentity identity;
};

Expected<StartFacts> load_start_facts(const ServeSettings& settings) {
  if (settings.nodes_path.empty() && !settings.cluster) {
    return Error{"--nodes",
                 "required: the node inventory file (kubectl get nodes -o yaml), "
                 "or --in-cluster / --kubeconfig"};
  }
  StartFacts facts;
  auto db = load_serving_matrix(settings, facts.db_source);
  if (!db) return db.error();
  facts.db = std::make_shared<const CompatDb>(std::move(db).value());
  auto policy = load_policy_file(settings.config_path, *facts.db);
  if (!policy) return policy.error();
  facts.policy = std::make_shared<const Policy>(std::move(policy).value());
  facts.inventory = std::make_shared<const Inventory>();
  if (!settings.cluster) {
    auto inventory = load_inventory(settings.nodes_path, *facts.db);
    if (!inventory) return inventory.error();
    facts.inventory = std::make_shared<const Inventory>(std::move(inventory).value());
  }
  auto identity = load_tls_identity(settings.tls);
  if (!identity) return identity.error();
  facts.identity = std::move(identity).value();
  return facts;
}

// What the reloads change, and where they publish.
struct Served {
  std::shared_ptr<const CompatDb> db;
  std::string db_source;
  ServerState& state;
  WebhookMetrics& metrics;
  MatrixGaps gaps;

  void publish(const Inventory& inventory, const CompatDb& matrix) {
    metrics.inventory(inventory.size(), inventory.gpu_nodes(), inventory.unknown_gpu_nodes(),
                      unix_now());
    gaps.publish(inventory, matrix, metrics);
  }
};

// Each input file re-read when it changes, on the reload thread: the policy
// (with its registry settings), a --nodes file, the matrix (with the policy
// and the nodes' facts read again against it) and the TLS certificate. A
// file that no longer reads keeps what was served, and says why.
void watch_inputs(FileWatch& watch, const ServeSettings& settings, Served& served,
                  RegistryClient& registry, BackgroundScans& scans, CertStore& certs,
                  LiveCluster* live) {
  ServerState& state = served.state;
  WebhookMetrics& metrics = served.metrics;
  if (!settings.config_path.empty()) {
    watch.watch({settings.config_path}, [&settings, &served, &state, &metrics, &registry, &scans] {
      auto reloaded = load_policy_file(settings.config_path, *served.db);
      if (!reloaded) {
        metrics.reload("config", "error");
        spdlog::error("policy not reloaded, keeping the previous one: {}", reloaded.error().str());
        return;
      }
      if (auto error = registry.configure(reloaded->registry)) {
        spdlog::error("registry settings not applied, keeping the previous ones: {}", error->str());
      }
      scans.configure(reloaded->scan, reloaded->registry);
      state.set_policy(std::make_shared<const Policy>(std::move(reloaded).value()));
      metrics.reload("config", "success");
      spdlog::info("policy reloaded from {}", display_name(settings.config_path));
    });
  }
  if (live == nullptr) {
    watch.watch({settings.nodes_path}, [&settings, &served, &state, &metrics] {
      auto reloaded = load_inventory(settings.nodes_path, *served.db);
      if (!reloaded) {
        metrics.reload("nodes", "error");
        spdlog::error("inventory not reloaded, keeping the previous one: {}",
                      reloaded.error().str());
        return;
      }
      auto fresh = std::make_shared<const Inventory>(std::move(reloaded).value());
      served.publish(*fresh, *served.db);
      spdlog::info("inventory reloaded from {}: {} nodes, {} with GPUs, {} with an unknown driver",
                   display_name(settings.nodes_path), fresh->size(), fresh->gpu_nodes(),
                   fresh->unknown_gpu_nodes());
      state.set_inventory(std::move(fresh));
      release_free_memory();  // the previous inventory, when no request holds it any more
      metrics.reload("nodes", "success");
    });
  }

  // A newer matrix without a new binary: the --compat-db file (a mounted
  // ConfigMap) re-read on change. The policy is read again against it, and
  // every node's facts are derived again, before the new matrix is used.
  std::vector<std::string> matrix_paths;
  for (const std::string* path : {&settings.compat_db_path, &settings.compat_db_override}) {
    if (!path->empty()) matrix_paths.push_back(*path);
  }
  if (!matrix_paths.empty()) {
    watch.watch(std::move(matrix_paths), [&settings, &served, &state, &metrics, live] {
      std::string source;
      auto loaded = load_serving_matrix(settings, source);
      auto fresh =
          loaded ? reread_against(std::make_shared<const CompatDb>(std::move(*loaded)), settings)
                 : Expected<MatrixFacts>(loaded.error());
      if (!fresh) {
        metrics.reload("compat-db", "error");
        spdlog::error("compat-db not reloaded, keeping the previous one: {}", fresh.error().str());
        return;
      }
      auto [fresh_db, fresh_policy, fresh_inventory] = std::move(fresh).value();
      served.db = fresh_db;
      served.db_source = std::move(source);
      if (fresh_policy) state.set_policy(std::move(fresh_policy));
      if (fresh_inventory) {
        served.publish(*fresh_inventory, *served.db);
        state.set_inventory(std::move(fresh_inventory), served.db);
      } else {
        // The live inventory derives its nodes' facts again and publishes
        // them with the new matrix.
        live->set_db(served.db);
      }
      metrics.compat_db(served.db->revision, served.db->as_of);
      metrics.reload("compat-db", "success");
      spdlog::info("compat-db reloaded: {}", matrix_summary(*served.db, served.db_source));
    });
  }

  const TlsFiles& tls_files = settings.tls;
  std::vector<std::string> tls_paths{tls_files.cert, tls_files.key};
  if (!tls_files.client_ca.empty()) tls_paths.push_back(tls_files.client_ca);
  watch.watch(std::move(tls_paths), [&certs, &metrics] {
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
}

// On SIGTERM or SIGINT: not ready, the watches and reloads stopped, and the
// open connections drained within the grace, after which the I/O threads
// stop; a second signal stops them at once.
void stop_on_signal(net::signal_set& signals, net::steady_timer& grace_timer, net::io_context& ioc,
                    TlsServer& server, ServerState& state, FileWatch& watch, LiveCluster* live,
                    milliseconds grace) {
  signals.async_wait([&signals, &grace_timer, &ioc, &server, &state, &watch, live, grace](
                         const boost::system::error_code& ec, int signal) {
    if (ec) return;
    state.begin_shutdown();
    spdlog::info("received {}: not ready, draining {} open connections (grace {} ms)",
                 signal == SIGTERM ? "SIGTERM" : "SIGINT", server.open_connections(),
                 grace.count());
    watch.stop();
    if (live != nullptr) live->stop();
    grace_timer.expires_after(grace);
    grace_timer.async_wait([&ioc, &server](const boost::system::error_code& wec) {
      if (wec) return;
      spdlog::warn("shutdown grace expired with {} connections open; closing them",
                   server.open_connections());
      ioc.stop();
    });
    server.shutdown([&grace_timer, &ioc] {
      grace_timer.cancel();
      ioc.stop();
    });
    // A second signal ends the process without waiting.
    signals.async_wait([&ioc](const boost::system::error_code& sec, int) {
      if (!sec) ioc.stop();
    });
  });
}

// `threads` threads run `ioc` until it stops, with decision log lines
// written once per batch of ready handlers.
void run_io(net::io_context& ioc, unsigned threads) {
  set_log_flush_scheduler(
      [&ioc] { boost::asio::post(ioc, [] { spdlog::default_logger()->flush(); }); });
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& thread : pool) thread.join();
  set_log_flush_scheduler({});
}

}  // namespace

// Everything the server runs on, in destruction-safe order: the facts and
// the metrics outlive the I/O contexts whose handlers refer to them.
std::optional<Error> serve(const ServeSettings& settings) {
  const unsigned threads = std::max(1U, settings.threads);
  const bool live = settings.cluster.has_value();
  if (settings.audit && !live) {
    return Error{"--audit-interval", "needs --in-cluster or --kubeconfig"};
  }
  auto start = load_start_facts(settings);
  if (!start) return start.error();
  StartFacts& facts = *start;

  WebhookMetrics metrics(CUDAGATE_VERSION, facts.db->revision);
  metrics.compat_db(facts.db->revision, facts.db->as_of);
  spdlog::info("{}", matrix_summary(*facts.db, facts.db_source));
  ServerState state(facts.db, facts.policy, facts.inventory);
  Served served{facts.db, facts.db_source, state, metrics, {}};
  if (!live) served.publish(*facts.inventory, *facts.db);
  const TlsFiles& tls_files = settings.tls;
  metrics.certificate_expiry(static_cast<double>(facts.identity.not_after));
  spdlog::info("TLS certificate {} (serial {}) loaded from {}, valid until {}",
               facts.identity.subject, facts.identity.serial, tls_files.cert,
               utc_text(facts.identity.not_after));
  if (live) {
    spdlog::info("inventory: listing and watching the nodes of {} (https://{}:{})",
                 settings.cluster->source, settings.cluster->server.host,
                 settings.cluster->server.port);
  } else {
    spdlog::info("inventory loaded from {}: {} nodes, {} with GPUs, {} with an unknown driver",
                 display_name(settings.nodes_path), facts.inventory->size(),
                 facts.inventory->gpu_nodes(), facts.inventory->unknown_gpu_nodes());
  }
  CertStore certs(tls_files, std::move(facts.identity));

  net::io_context ioc(static_cast<int>(threads));
  // Registry lookups run on the same threads as the sessions, asynchronously.
  RegistryClient registry(ioc, &metrics);
  if (auto error = registry.configure(facts.policy->registry)) return error;
  // Images with no attached scan are scanned here when the policy asks.
  BackgroundScans scans(registry, metrics);
  scans.configure(facts.policy->scan, facts.policy->registry);
  registry.set_scan_source(&scans);
  AdmissionWorkspaces workspaces;
  TlsServer server(
      ioc, threads, certs, settings.limits,
      [&state, &metrics, &workspaces, &registry](const HttpRequest& request, Responder respond) {
        route(request, state, metrics, workspaces, &registry, std::move(respond));
      },
      &metrics);
  if (auto error = server.listen(settings.endpoint)) return error;

  // Reloads and watch events are folded in on a thread of their own, so
  // that a large file or fleet never holds up an I/O thread.
  net::io_context reload_ioc(1);
  auto reload_work = net::make_work_guard(reload_ioc);
  FileWatch watch(reload_ioc.get_executor(), kPollInterval);
  std::optional<BackgroundAudit> background_audit;
  if (settings.audit) {
    background_audit.emplace(*settings.cluster, *settings.audit, state, metrics, &registry);
  }
  std::optional<LiveCluster> cluster;
  if (live) {
    cluster.emplace(
        ioc.get_executor(), reload_ioc.get_executor(), *settings.cluster, facts.db, state, metrics,
        LiveCluster::Handlers{[&served](const Inventory& inventory, const CompatDb& db) {
                                served.publish(inventory, db);
                              },
                              [&background_audit] {
                                if (background_audit) background_audit->inventory_changed();
                              }});
  }
  LiveCluster* live_cluster = cluster ? &*cluster : nullptr;
  watch_inputs(watch, settings, served, registry, scans, certs, live_cluster);

  net::steady_timer grace_timer(ioc);
  net::signal_set signals(ioc, SIGTERM, SIGINT);
  stop_on_signal(signals, grace_timer, ioc, server, state, watch, live_cluster,
                 settings.shutdown_grace);

  std::signal(SIGPIPE, SIG_IGN);
  server.start();
  watch.start();
  std::thread reload_thread([&reload_ioc] { reload_ioc.run(); });
  state.set_certificate_loaded();
  if (cluster) {
    cluster->start();
  } else {
    state.set_inventory_synced();
  }
  if (background_audit) background_audit->start();
  scans.start();
  spdlog::info("cudagate {} serving https://{} with {} threads", CUDAGATE_VERSION,
               endpoint_text(server.local_endpoint()), threads);
  run_io(ioc, threads);

  if (background_audit) background_audit->stop();
  registry.set_scan_source(nullptr);
  scans.stop();
  watch.stop();
  reload_work.reset();
  reload_ioc.stop();
  reload_thread.join();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  return std::nullopt;
}

}  // namespace cudagate
