// The `cudagate serve` subcommand: its flags, checked and turned into the
// settings of the webhook (server/serve.h), which does the serving.
#include "server/serve.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "kube/cluster_config.h"
#include "types/duration.h"

namespace cudagate {
namespace {

using std::chrono::milliseconds;

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
  bool in_cluster = false;
  std::string kubeconfig;
  std::string audit_interval;  // "": no background audit
  bool write_reports = false;
  std::string report_api = "policyreport";
  std::size_t max_report_results = BackgroundAuditSettings{}.max_report_results;
  std::string compat_db_override;
};

// The cluster to watch: --in-cluster, --kubeconfig, or $KUBECONFIG when no
// --nodes file is given; nullopt for a --nodes file.
std::optional<kube::ClusterConfig> cluster_of(const ServeOptions& options) {
  const bool file = !options.common.nodes.empty();
  const int sources =
      (file ? 1 : 0) + (options.in_cluster ? 1 : 0) + (options.kubeconfig.empty() ? 0 : 1);
  if (sources > 1) {
    cli::fail(Error{"--nodes", "give one of --nodes, --in-cluster and --kubeconfig"});
  }
  const auto env = kube::process_environment();
  if (options.in_cluster || !options.kubeconfig.empty() || (!file && env.contains("KUBECONFIG"))) {
    return cli::cluster_config_or_fail(options.in_cluster, options.kubeconfig);
  }
  return std::nullopt;
}

// A duration flag (types/duration.h: "10s", "1m30s", "500ms"); a bare
// number is seconds.
Expected<milliseconds> flag_duration(std::string_view text, const std::string& flag,
                                     bool allow_zero) {
  const Error bad{flag,
                  "expected a duration like 10s, 500ms or 2m, got \"" + std::string(text) + "\""};
  bool bare = !text.empty();
  for (const char c : text) bare = bare && c >= '0' && c <= '9';
  const auto total = parse_duration(bare ? std::string(text) + "s" : std::string(text));
  if (!total) return bad;
  if (total->count() == 0 && !allow_zero) return Error{flag, "must be greater than zero"};
  return *total;
}

void run_serve(const ServeOptions& options) {
  cli::setup_logging(options.common);
  const auto& common = options.common;

  ServeSettings settings;
  settings.shutdown_grace = cli::value_or_fail(
      flag_duration(options.shutdown_grace, "--shutdown-grace", /*allow_zero=*/true));
  ServerLimits& limits = settings.limits;
  limits.header_timeout =
      cli::value_or_fail(flag_duration(options.header_timeout, "--header-timeout", false));
  limits.handshake_timeout = limits.header_timeout;
  limits.body_timeout =
      cli::value_or_fail(flag_duration(options.body_timeout, "--body-timeout", false));
  limits.write_timeout = limits.body_timeout;
  limits.idle_timeout =
      cli::value_or_fail(flag_duration(options.idle_timeout, "--idle-timeout", false));
  limits.max_body_bytes = options.max_body_bytes;
  limits.max_connections = options.max_connections;
  if (limits.max_body_bytes == 0) cli::fail(Error{"--max-body-bytes", "must be greater than 0"});
  if (limits.max_connections == 0) {
    cli::fail(Error{"--max-connections", "must be greater than 0"});
  }
  settings.endpoint = cli::value_or_fail(parse_listen(options.listen));
  settings.threads =
      options.threads != 0 ? options.threads : std::max(1U, std::thread::hardware_concurrency());
  settings.config_path = common.config;
  settings.nodes_path = common.nodes;
  settings.cluster = cluster_of(options);
  if (!options.audit_interval.empty()) {
    BackgroundAuditSettings audit;
    audit.interval =
        cli::value_or_fail(flag_duration(options.audit_interval, "--audit-interval", false));
    audit.write_reports = options.write_reports;
    audit.report_api =
        options.report_api == "openreports" ? ReportApi::open_reports : ReportApi::policy_report;
    audit.max_report_results = options.max_report_results;
    if (audit.max_report_results == 0) {
      cli::fail(Error{"--max-report-results", "must be greater than 0"});
    }
    if (!settings.cluster) {
      cli::fail(Error{"--audit-interval", "needs the cluster: --in-cluster or --kubeconfig"});
    }
    settings.audit = audit;
  } else if (options.write_reports) {
    cli::fail(Error{"--write-reports", "needs --audit-interval"});
  }
  settings.compat_db_path = common.compat_db;
  settings.compat_db_override = options.compat_db_override;
  settings.tls = TlsFiles{options.tls_cert, options.tls_key, options.client_ca};
  if (auto error = serve(settings)) cli::fail(*error);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* command =
      app.add_subcommand("serve", "Run the HTTPS admission webhook (docs/contract.md §5)");
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
      ->add_option("--compat-db-override", options->compat_db_override,
                   "A matrix file used instead of the embedded one (or --compat-db) while it "
                   "exists; re-read when it is created, changed or removed")
      ->type_name("FILE");
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
  command->add_flag("--in-cluster", options->in_cluster,
                    "List and watch the nodes of the cluster this pod runs in (service account "
                    "token and CA, KUBERNETES_SERVICE_HOST/PORT)");
  command
      ->add_option("--kubeconfig", options->kubeconfig,
                   "List and watch the nodes of the kubeconfig's current context (default with "
                   "neither --nodes nor --in-cluster: $KUBECONFIG)")
      ->type_name("FILE");
  command
      ->add_option("--audit-interval", options->audit_interval,
                   "Audit what runs in the cluster this often (Pods and pod controllers listed "
                   "from the API server), into /reports and the metrics; off by default")
      ->type_name("DURATION");
  command->add_flag("--write-reports", options->write_reports,
                    "With --audit-interval: keep one PolicyReport (or Report) per namespace in "
                    "the cluster, by server-side apply");
  command
      ->add_option("--report-api", options->report_api,
                   "The reports --write-reports writes: policyreport (wgpolicyk8s.io/v1alpha2 "
                   "PolicyReport) or openreports (openreports.io/v1alpha1 Report)")
      ->check(CLI::IsMember({"policyreport", "openreports"}))
      ->capture_default_str();
  command
      ->add_option("--max-report-results", options->max_report_results,
                   "Results a written report holds at most; a namespace with more gets "
                   "reports cudagate-1, cudagate-2, ...")
      ->type_name("N")
      ->capture_default_str();
  command->callback([options] { run_serve(*options); });
}

}  // namespace cudagate
