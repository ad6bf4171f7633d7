// The webhook process: facts loaded, the TLS server started, reloads and
// signals wired, and an orderly drain at the end.
#include "server/serve.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
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
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "compat-db/compat_db.h"
#include "kube/node_watcher.h"
#include "kube/object_watcher.h"
#include "registry/registry_client.h"
#include "server/cert_store.h"
#include "server/file_watch.h"
#include "server/input_files.h"
#include "server/live_claims.h"
#include "server/live_inventory.h"
#include "server/live_pools.h"
#include "server/logging.h"
#include "server/matrix_gaps.h"
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
// How long watch events gather before they are published as one inventory.
constexpr milliseconds kCoalesceEvents{100};

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

// Readiness of a watched cluster: the inventory is synced once the Nodes,
// the ResourceSlices, the ResourceClaimTemplates, the ResourceClaims and
// the NodePools have each been listed whole (or found not served).
class SyncGate {
 public:
  enum Part : unsigned { nodes = 1, slices = 2, templates = 4, claims = 8, pools = 16, all = 31 };
  explicit SyncGate(ServerState& state) : state_(state) {}
  void done(Part part) {
    if ((done_.fetch_or(part) | part) == all) state_.set_inventory_synced();
  }

 private:
  ServerState& state_;
  std::atomic<unsigned> done_{0};
};

void publish_inventory(const Inventory& inventory, const CompatDb& db, MatrixGaps& gaps,
                       WebhookMetrics& metrics) {
  metrics.inventory(inventory.size(), inventory.gpu_nodes(), inventory.unknown_gpu_nodes(),
                    unix_now());
  gaps.publish(inventory, db, metrics);
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

// Everything the server runs on, in destruction-safe order: the facts and
// the metrics outlive the I/O contexts whose handlers refer to them.
std::optional<Error> serve(const ServeSettings& settings) {
  const ServerLimits& limits = settings.limits;
  const auto grace = settings.shutdown_grace;
  const unsigned threads = std::max(1U, settings.threads);
  const bool live = settings.cluster.has_value();
  if (settings.nodes_path.empty() && !live) {
    return Error{"--nodes",
                 "required: the node inventory file (kubectl get nodes -o yaml), "
                 "or --in-cluster / --kubeconfig"};
  }

  std::string db_source;
  auto loaded_db = load_serving_matrix(settings, db_source);
  if (!loaded_db) return loaded_db.error();
  auto db = std::make_shared<const CompatDb>(std::move(loaded_db).value());
  auto loaded_policy = load_policy_file(settings.config_path, *db);
  if (!loaded_policy) return loaded_policy.error();
  auto policy = std::make_shared<const Policy>(std::move(loaded_policy).value());
  auto inventory = std::make_shared<const Inventory>();
  if (!live) {
    auto loaded_inventory = load_inventory(settings.nodes_path, *db);
    if (!loaded_inventory) return loaded_inventory.error();
    inventory = std::make_shared<const Inventory>(std::move(loaded_inventory).value());
  }
  const TlsFiles& tls_files = settings.tls;
  auto loaded_identity = load_tls_identity(tls_files);
  if (!loaded_identity) return loaded_identity.error();
  TlsIdentity identity = std::move(loaded_identity).value();

  WebhookMetrics metrics(CUDAGATE_VERSION, db->revision);
  metrics.compat_db(db->revision, db->as_of);
  spdlog::info("{}", matrix_summary(*db, db_source));
  MatrixGaps gaps;
  if (!live) publish_inventory(*inventory, *db, gaps, metrics);
  metrics.certificate_expiry(static_cast<double>(identity.not_after));
  spdlog::info("TLS certificate {} (serial {}) loaded from {}, valid until {}", identity.subject,
               identity.serial, tls_files.cert, utc_text(identity.not_after));
  if (live) {
    spdlog::info("inventory: listing and watching the nodes of {} (https://{}:{})",
                 settings.cluster->source, settings.cluster->server.host,
                 settings.cluster->server.port);
  } else {
    spdlog::info("inventory loaded from {}: {} nodes, {} with GPUs, {} with an unknown driver",
                 display_name(settings.nodes_path), inventory->size(), inventory->gpu_nodes(),
                 inventory->unknown_gpu_nodes());
  }
  ServerState state(db, policy, inventory);
  CertStore certs(tls_files, std::move(identity));

  net::io_context ioc(static_cast<int>(threads));
  // Registry lookups run on the same threads as the sessions, asynchronously.
  RegistryClient registry(ioc, &metrics);
  if (auto error = registry.configure(policy->registry)) return error;
  TlsServer server(
      ioc, threads, certs, limits,
      [&state, &metrics, &registry](const HttpRequest& request, Responder respond) {
        route(request, state, metrics, &registry, std::move(respond));
      },
      &metrics);
  if (auto error = server.listen(settings.endpoint)) return error;

  // Reloads parse and index on a thread of their own, so that a large file
  // never holds up an I/O thread.
  net::io_context reload_ioc(1);
  auto reload_work = net::make_work_guard(reload_ioc);
  FileWatch watch(reload_ioc.get_executor(), kPollInterval);
  if (!settings.config_path.empty()) {
    watch.watch({settings.config_path}, [&] {
      auto reloaded = load_policy_file(settings.config_path, *db);
      if (!reloaded) {
        metrics.reload("config", "error");
        spdlog::error("policy not reloaded, keeping the previous one: {}", reloaded.error().str());
        return;
      }
      if (auto error = registry.configure(reloaded->registry)) {
        spdlog::error("registry settings not applied, keeping the previous ones: {}", error->str());
      }
      state.set_policy(std::make_shared<const Policy>(std::move(reloaded).value()));
      metrics.reload("config", "success");
      spdlog::info("policy reloaded from {}", display_name(settings.config_path));
    });
  }
  if (!live)
    watch.watch({settings.nodes_path}, [&] {
      auto reloaded = load_inventory(settings.nodes_path, *db);
      if (!reloaded) {
        metrics.reload("nodes", "error");
        spdlog::error("inventory not reloaded, keeping the previous one: {}",
                      reloaded.error().str());
        return;
      }
      auto fresh = std::make_shared<const Inventory>(std::move(reloaded).value());
      publish_inventory(*fresh, *db, gaps, metrics);
      spdlog::info("inventory reloaded from {}: {} nodes, {} with GPUs, {} with an unknown driver",
                   display_name(settings.nodes_path), fresh->size(), fresh->gpu_nodes(),
                   fresh->unknown_gpu_nodes());
      state.set_inventory(std::move(fresh));
      release_free_memory();  // the previous inventory, when no request holds it any more
      metrics.reload("nodes", "success");
    });

  std::optional<BackgroundAudit> background_audit;
  if (settings.audit) {
    if (!live) return Error{"--audit-interval", "needs --in-cluster or --kubeconfig"};
    background_audit.emplace(*settings.cluster, *settings.audit, state, metrics, &registry);
  }
  std::optional<LiveInventory> live_inventory;
  std::optional<LiveClaims> live_claims;
  std::optional<LivePools> live_pools;
  std::optional<kube::NodeWatcher> node_watcher;
  std::optional<kube::ObjectWatcher> slice_watcher;
  std::optional<kube::ObjectWatcher> template_watcher;
  std::optional<kube::ObjectWatcher> claim_watcher;
  std::optional<kube::ObjectWatcher> pool_watcher;
  SyncGate sync(state);
  if (live) {
    live_inventory.emplace(
        reload_ioc.get_executor(), db, kCoalesceEvents, [&](const LiveInventory::Update& update) {
          publish_inventory(*update.inventory, *update.db, gaps, metrics);
          if (update.from_list) {
            spdlog::info(
                "inventory listed from the API server: {} nodes, {} with GPUs, {} with "
                "an unknown driver",
                update.inventory->size(), update.inventory->gpu_nodes(),
                update.inventory->unknown_gpu_nodes());
          } else {
            spdlog::debug("inventory updated by {} watch events: {} nodes", update.events,
                          update.inventory->size());
          }
          state.set_inventory(update.inventory, update.db);
          if (update.from_list) sync.done(SyncGate::nodes);
          if (update.slices_from_list) sync.done(SyncGate::slices);
          if (background_audit) background_audit->inventory_changed();
        });
    live_claims.emplace(
        reload_ioc.get_executor(), kCoalesceEvents, [&](const LiveClaims::Update& update) {
          spdlog::debug("claims updated: {} ResourceClaims and ResourceClaimTemplates known",
                        update.catalog->size());
          state.set_claims(update.catalog);
          if (update.templates_listed) sync.done(SyncGate::templates);
          if (update.claims_listed) sync.done(SyncGate::claims);
        });
    const auto on_step = [&](const kube::WatchAction& action) {
      using Kind = kube::WatchAction::Kind;
      const bool first = action.reason == "initial" || action.reason == "page";
      if (action.kind == Kind::list && !first) metrics.inventory_relist(action.reason);
      if (action.kind == Kind::watch && !first) metrics.inventory_watch_restart(action.reason);
      if (action.kind == Kind::wait) {
        spdlog::info("API server: retrying in {} ms ({})", action.delay.count(), action.reason);
      }
    };
    kube::NodeWatcherHandlers handlers;
    handlers.on_page = [&](std::vector<Node> nodes, bool first, bool last) {
      live_inventory->add_page(std::move(nodes), first, last);
    };
    handlers.on_changes = [&](std::vector<kube::NodeChange> changes) {
      live_inventory->apply(std::move(changes));
    };
    handlers.on_step = on_step;
    kube::WatchOptions watch_options;
    // Replicas (and restarts) retry at different moments.
    watch_options.seed = std::random_device{}();
    // One credential source (and one exec plugin run) for every watcher.
    auto credentials = std::make_shared<kube::ApiCredentials>(net::make_strand(ioc.get_executor()),
                                                              *settings.cluster);
    node_watcher.emplace(credentials, std::move(handlers), watch_options);

    // Dynamic Resource Allocation: ResourceSlices as node facts, claims and
    // templates as what pods ask for; a cluster without the API runs without.
    kube::ObjectWatcherHandlers slices;
    slices.on_page = [&](const std::vector<nlohmann::json>& items, bool first, bool last) {
      live_inventory->add_slice_page(slices_of_page(items), first, last);
    };
    slices.on_changes = [&](const std::vector<kube::ObjectChange>& changes) {
      live_inventory->apply_slices(slice_changes(changes));
    };
    slices.on_step = on_step;
    slices.on_absent = [&] { sync.done(SyncGate::slices); };
    slice_watcher.emplace(credentials, kube::ApiCallId::inventory_list_resourceslices,
                          kube::ApiCallId::inventory_watch_resourceslices, kube::kDraVersions,
                          std::move(slices), watch_options);
    const auto claim_handlers = [&](LiveClaims::Source source, SyncGate::Part part) {
      kube::ObjectWatcherHandlers out;
      out.on_page = [&, source](const std::vector<nlohmann::json>& items, bool first, bool last) {
        live_claims->add_page(source, items, first, last);
      };
      out.on_changes = [&, source](std::vector<kube::ObjectChange> changes) {
        live_claims->apply(source, std::move(changes));
      };
      out.on_step = on_step;
      out.on_absent = [&, part] { sync.done(part); };
      return out;
    };
    template_watcher.emplace(
        credentials, kube::ApiCallId::inventory_list_resourceclaimtemplates,
        kube::ApiCallId::inventory_watch_resourceclaimtemplates, kube::kDraVersions,
        claim_handlers(LiveClaims::Source::templates, SyncGate::templates), watch_options);
    claim_watcher.emplace(credentials, kube::ApiCallId::inventory_list_resourceclaims,
                          kube::ApiCallId::inventory_watch_resourceclaims, kube::kDraVersions,
                          claim_handlers(LiveClaims::Source::claims, SyncGate::claims),
                          watch_options);

    // Karpenter's NodePools: GPU pools that may have no node now; a cluster
    // without Karpenter runs without.
    live_pools.emplace(reload_ioc.get_executor(), [&](std::vector<NodePool> pools, bool listed) {
      spdlog::log(listed ? spdlog::level::info : spdlog::level::debug,
                  "NodePools {} from the API server: {}", listed ? "listed" : "updated",
                  pools.size());
      state.set_cluster_pools(std::move(pools));
      if (listed) sync.done(SyncGate::pools);
      if (background_audit) background_audit->inventory_changed();
    });
    kube::ObjectWatcherHandlers pools;
    pools.on_page = [&](std::vector<nlohmann::json> items, bool first, bool last) {
      live_pools->add_page(items, first, last);
    };
    pools.on_changes = [&](std::vector<kube::ObjectChange> changes) { live_pools->apply(changes); };
    pools.on_step = on_step;
    pools.on_absent = [&] { sync.done(SyncGate::pools); };
    pool_watcher.emplace(credentials, kube::ApiCallId::inventory_list_nodepools,
                         kube::ApiCallId::inventory_watch_nodepools, kube::kKarpenterVersions,
                         std::move(pools), watch_options);
  }

  // A newer matrix without a new binary: the --compat-db file (a mounted
  // ConfigMap) re-read on change. The policy is read again against it, and
  // every node's facts are derived again, before the new matrix is used.
  std::vector<std::string> matrix_paths;
  for (const std::string* path : {&settings.compat_db_path, &settings.compat_db_override}) {
    if (!path->empty()) matrix_paths.push_back(*path);
  }
  if (!matrix_paths.empty()) {
    watch.watch(std::move(matrix_paths), [&] {
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
      db = fresh_db;
      db_source = std::move(source);
      if (fresh_policy) state.set_policy(std::move(fresh_policy));
      if (fresh_inventory) {
        publish_inventory(*fresh_inventory, *db, gaps, metrics);
        state.set_inventory(std::move(fresh_inventory), db);
      } else {
        // The live inventory derives its nodes' facts again and publishes
        // them with the new matrix.
        live_inventory->set_db(db);
      }
      metrics.compat_db(db->revision, db->as_of);
      metrics.reload("compat-db", "success");
      spdlog::info("compat-db reloaded: {}", matrix_summary(*db, db_source));
    });
  }

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
    if (node_watcher) node_watcher->stop();
    for (auto* watcher : {&slice_watcher, &template_watcher, &claim_watcher, &pool_watcher}) {
      if (*watcher) (*watcher)->stop();
    }
    if (live_inventory) live_inventory->stop();
    if (live_claims) live_claims->stop();
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
  if (node_watcher) {
    node_watcher->start();
    slice_watcher->start();
    template_watcher->start();
    claim_watcher->start();
    pool_watcher->start();
  } else {
    state.set_inventory_synced();
  }
  if (background_audit) background_audit->start();
  spdlog::info("cudagate {} serving https://{} with {} threads", CUDAGATE_VERSION,
               endpoint_text(server.local_endpoint()), threads);

  // Decision log lines are written once per batch of ready handlers.
  set_log_flush_scheduler(
      [&ioc] { boost::asio::post(ioc, [] { spdlog::default_logger()->flush(); }); });
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& thread : pool) thread.join();
  set_log_flush_scheduler({});

  if (background_audit) background_audit->stop();
  watch.stop();
  reload_work.reset();
  reload_ioc.stop();
  reload_thread.join();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  return std::nullopt;
}

}  // namespace cudagate
