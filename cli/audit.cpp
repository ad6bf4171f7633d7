// `cudagate audit`: every workload of a set of manifests judged against a
// node inventory and printed as one report (docs/contract.md §7.2): a
// table, decision records, PolicyReport or OpenReports objects, an HTML
// page or JUnit XML.
//
// The steps run in the order the data flows: read every input (a broken
// document is recorded and the rest still read), gather the facts about the
// images, then decide each workload once, with no lookup in between.

#include "report/audit.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/cluster_inputs.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/manifest_inputs.h"
#include "inputs/node_loader.h"
#include "kube/api_client.h"
#include "policy/objects/workload_stream.h"
#include "policy/rules/evaluate.h"
#include "report/audit_table.h"
#include "report/html_report.h"
#include "report/junit_report.h"
#include "report/policy_report.h"

namespace cudagate {
namespace {

struct AuditOptions {
  cli::CommonOptions common;
  std::vector<std::string> paths;
  std::string format = "table";
  std::string fail_on = "fail";
  bool offline = false;
  // --cluster: the workloads (and, without --nodes, the nodes) of a live cluster.
  cli::ClusterOptions cluster;
};

// Progress is shown only for runs this long, and only on a terminal.
constexpr std::size_t kProgressMinimum = 200;

// "\rauditing 1200/10000 workloads" on a terminal's stderr, at most every
// 100 ms, cleared when done.
class Progress {
 public:
  explicit Progress(std::size_t total)
      : total_(total), enabled_(total >= kProgressMinimum && ::isatty(STDERR_FILENO) != 0) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() {
    if (shown_) std::cerr << "\r\x1b[K" << std::flush;
  }

  void step(std::size_t done) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100) && done != total_) return;
    last_ = now;
    shown_ = true;
    std::cerr << "\rauditing " << done << "/" << total_ << " workloads" << std::flush;
  }

 private:
  std::size_t total_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

FailOn parse_fail_on(const std::string& text) {
  if (text == "warn") return FailOn::warn;
  if (text == "never") return FailOn::never;
  return FailOn::fail;
}

void run_audit(const AuditOptions& options) {
  cli::setup_logging(options.common);
  cli::check_cluster_options(options.cluster, !options.paths.empty(), "PATHs");
  if (!options.cluster.cluster && options.paths.empty()) {
    cli::fail(Error{"PATH", "required: manifest files or folders, '-' for stdin, or --cluster"});
  }
  if (options.common.nodes.empty() && !options.cluster.cluster) {
    cli::fail(Error{"--nodes", "required: the node inventory to audit against"});
  }
  const auto stdin_readers = std::count(options.paths.begin(), options.paths.end(), "-") +
                             (options.common.nodes == "-" ? 1 : 0);
  if (stdin_readers > 1) {
    cli::fail(Error{"-", "stdin (\"-\") can be read only once, by one PATH or by --nodes"});
  }
  const FailOn fail_on = parse_fail_on(options.fail_on);
  const std::int64_t timestamp = cli::report_time();
  const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));
  const Policy policy = cli::value_or_fail(cli::load_policy_option(options.common, db));
  cli::JudgedInputs read =
      cli::read_judged_inputs(options.cluster, options.paths, options.common.nodes, db);
  const Inventory inventory = cli::with_policy_pools(std::move(read.inventory), policy, db);
  cli::ManifestInputs& in = read.manifests;
  // Image configs from the registries, once per image, before any decision.
  std::vector<const Workload*> judged;
  judged.reserve(in.workloads.size());
  for (const auto& w : in.workloads) judged.push_back(&w.workload);
  const std::vector<RegistryFacts> registry =
      cli::registry_facts(judged, policy, inventory, options.offline);

  Audit audit;
  audit.broken = std::move(in.broken);
  audit.skipped = in.skipped;
  audit.controlled = in.controlled;
  audit.node_groups = gpu_node_groups(inventory);
  audit.workloads.reserve(in.workloads.size());
  CandidateScratch scratch;
  MetadataMemo memo;

  {
    Progress progress(in.workloads.size());
    for (std::size_t i = 0; i < in.workloads.size(); ++i) {
      PlacedWorkload& w = in.workloads[i];
      AuditedWorkload audited;
      audited.place = std::move(w.place);
      const EvaluationInputs inputs{registry[i].empty() ? nullptr : &registry[i], nullptr, &scratch,
                                    &memo, &in.claims};
      auto decision = evaluate(w.workload, inventory, policy, db, inputs);
      if (decision) {
        audited.decision = std::move(decision).value();
      } else {
        audited.decision.resource = w.workload.resource;
        audited.error = decision.error();
      }
      audit.workloads.push_back(std::move(audited));
      progress.step(i + 1);
    }
  }

  for (const Error& e : audit.broken) cli::print_error(e);
  if (options.format == "json") {
    std::cout << decision_records(audit).dump(2, ' ', false,
                                              nlohmann::json::error_handler_t::replace)
              << '\n';
  } else if (options.format == "policyreport") {
    std::cout << policy_reports_yaml(audit, ReportApi::policy_report, timestamp);
  } else if (options.format == "openreports") {
    std::cout << policy_reports_yaml(audit, ReportApi::open_reports, timestamp);
  } else if (options.format == "junit") {
    std::cout << junit_report(audit, fail_on, timestamp);
  } else if (options.format == "html") {
    std::cout << html_report(audit, timestamp);
  } else {
    std::cout << audit_table(audit, cli::stdout_wants_colour());
  }
  std::cout.flush();

  if (!audit.broken.empty()) cli::exit_with(cli::kExitUsage);
  cli::exit_with(audit_fails(audit, fail_on) ? cli::kExitFindings : cli::kExitOk);
}

}  // namespace

void add_audit_command(CLI::App& app) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit",
      "Judge every workload of a set of manifests, or of a live cluster, against a node inventory");
  audit->footer(
      "PATH is a file, a folder (read recursively: .yaml, .yml, .json) or '-' for stdin. Each\n"
      "holds Pods or pod-owning workloads, in single or multi-document YAML or JSON, Lists, or\n"
      "what `kubectl get pods,deployments,... -A -o json|yaml` prints; other objects are skipped\n"
      "and counted, and pods whose controller is in the input are reported as that controller.\n"
      "A document that cannot be read is reported on stderr with its file and line; the others\n"
      "are still audited.\n"
      "\n"
      "With --cluster, no PATH: the Pods and pod controllers of a live cluster (every\n"
      "namespace, or --namespace), listed from its API server (--kubeconfig, default\n"
      "$KUBECONFIG, or --in-cluster), against its Nodes unless --nodes is given.\n"
      "\n"
      "Exit status: 0 nothing at or above --fail-on, 1 a workload at or above it (fail: fail\n"
      "and error; warn: also partial, unknown and no-candidates), 2 bad usage or a document\n"
      "that could not be read.\n"
      "\n"
      "Examples:\n"
      "  cudagate audit manifests/ --nodes nodes.json\n"
      "  kubectl get pods,deployments -A -o json | cudagate audit - --nodes nodes.json "
      "--format policyreport\n"
      "  helm template charts/trainer | cudagate audit - --nodes nodes.yaml --format junit "
      "--fail-on warn\n"
      "  cudagate audit --cluster -n ml --format policyreport");
  audit->add_option("PATH", options->paths, "Manifest files or folders, '-' for stdin")
      ->type_name("PATH");
  cli::add_cluster_options(*audit, options->cluster,
                           "Audit what runs in a live cluster: its Pods and pod controllers, "
                           "against its Nodes (unless --nodes is given)");
  audit->add_option("--format", options->format, "Report format")
      ->check(CLI::IsMember({"table", "json", "policyreport", "openreports", "html", "junit"}))
      ->capture_default_str();
  audit
      ->add_option("--fail-on", options->fail_on,
                   "Lowest result that makes the audit exit 1 (fail, warn or never)")
      ->check(CLI::IsMember({"fail", "warn", "never"}))
      ->capture_default_str();
  audit->add_flag("--offline", options->offline,
                  "Make no registry lookups: image metadata from the manifests, the policy's "
                  "catalog and the image reference only");
  cli::add_common_options(*audit, options->common);
  audit->callback([options] { run_audit(*options); });
}

}  // namespace cudagate
