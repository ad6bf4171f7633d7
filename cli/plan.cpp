// `cudagate plan`: what a driver rollout, a node pool change or an image
// change does to a set of workloads, before it is made. The command reads
// the inputs and the changes, hands both fleets to the pure plan
// (policy/plan/rollout_plan.h) and prints it; nothing is changed anywhere.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/cluster_inputs.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/manifest_inputs.h"
#include "inputs/input_files.h"
#include "inputs/node_loader.h"
#include "policy/plan/fleet_change.h"
#include "policy/plan/rollout_plan.h"
#include "report/plan_report.h"

namespace cudagate {
namespace {

struct PlanOptions {
  cli::CommonOptions common;
  std::vector<std::string> paths;
  std::vector<std::string> set_driver;
  std::vector<std::string> remove_nodes;
  std::vector<std::string> add_nodes;
  std::vector<std::string> set_image;
  std::string format = "table";
  bool order = false;
  bool offline = false;
  // --cluster: the workloads (and, without --nodes, the nodes) of a live cluster.
  cli::ClusterOptions cluster;
};

// Every change, parsed before anything is read, so that a typo is bad usage.
FleetChanges parse_changes(const PlanOptions& options, std::vector<ImageChange>& images) {
  FleetChanges changes;
  for (const std::string& text : options.set_driver) {
    auto change = DriverChange::parse(text);
    if (!change) cli::fail(change.error().within("--set-driver"));
    changes.drivers.push_back(std::move(*change));
  }
  for (const std::string& text : options.remove_nodes) {
    auto selector = LabelSelector::parse(text);
    if (!selector) cli::fail(selector.error().within("--remove-nodes " + cli::quote(text)));
    changes.removals.emplace_back(std::move(*selector), text);
  }
  for (const std::string& text : options.set_image) {
    auto change = ImageChange::parse(text);
    if (!change) cli::fail(change.error().within("--set-image"));
    images.push_back(std::move(*change));
  }
  return changes;
}

void run_plan(const PlanOptions& options) {
  cli::setup_logging(options.common);
  cli::check_cluster_options(options.cluster, !options.paths.empty(), "-f");
  if (!options.cluster.cluster && options.paths.empty()) {
    cli::fail(Error{"-f", "required: manifest files or folders, '-' for stdin, or --cluster"});
  }
  if (options.common.nodes.empty() && !options.cluster.cluster) {
    cli::fail(Error{"--nodes", "required: the node inventory the rollout starts from"});
  }
  if (options.set_driver.empty() && options.remove_nodes.empty() && options.add_nodes.empty() &&
      options.set_image.empty()) {
    cli::fail(Error{"",
                    "nothing to plan: give --set-driver, --remove-nodes, --add-nodes or "
                    "--set-image"});
  }
  const auto stdin_readers = std::count(options.paths.begin(), options.paths.end(), "-") +
                             std::count(options.add_nodes.begin(), options.add_nodes.end(), "-") +
                             (options.common.nodes == "-" ? 1 : 0);
  if (stdin_readers > 1) {
    cli::fail(Error{"-", "stdin (\"-\") can be read only once, by one -f, --nodes or --add-nodes"});
  }
  std::vector<ImageChange> images;
  FleetChanges changes = parse_changes(options, images);
  const std::int64_t timestamp = cli::report_time();
  const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));
  const Policy policy = cli::value_or_fail(cli::load_policy_option(options.common, db));
  cli::JudgedInputs read =
      cli::read_judged_inputs(options.cluster, options.paths, options.common.nodes, db);
  const Inventory inventory = cli::with_policy_pools(std::move(read.inventory), policy, db);
  cli::ManifestInputs& in = read.manifests;
  std::vector<Node> before_nodes;
  before_nodes.reserve(inventory.size());
  for (std::size_t i = 0; i < inventory.size(); ++i) before_nodes.push_back(inventory.node(i));
  for (const std::string& file : options.add_nodes) {
    const std::string text = cli::value_or_fail(read_input(file));
    for (Node& n : cli::value_or_fail(parse_nodes(text, display_name(file), &db))) {
      changes.additions.push_back(std::move(n));
    }
  }
  const std::vector<Node> after_nodes =
      cli::value_or_fail(apply_fleet_changes(before_nodes, changes, db));

  std::vector<Workload> before;
  PlanInputs inputs;
  before.reserve(in.workloads.size());
  for (PlacedWorkload& w : in.workloads) {
    before.push_back(std::move(w.workload));
    inputs.places.push_back(std::move(w.place));
  }
  const std::vector<Workload> after = cli::value_or_fail(apply_image_changes(before, images));

  // Image configs once for both sides, before any decision.
  std::vector<const Workload*> judged;
  judged.reserve(before.size() + after.size());
  for (const Workload& w : before) judged.push_back(&w);
  for (const Workload& w : after) judged.push_back(&w);
  const std::vector<RegistryFacts> registry =
      cli::registry_facts(judged, policy, inventory, options.offline);
  for (std::size_t i = 0; i < before.size(); ++i) {
    inputs.before_registry.push_back(registry[i].empty() ? nullptr : &registry[i]);
    const RegistryFacts& a = registry[before.size() + i];
    inputs.after_registry.push_back(a.empty() ? nullptr : &a);
  }
  inputs.before_nodes = &before_nodes;
  inputs.after_nodes = &after_nodes;
  inputs.before_workloads = &before;
  inputs.after_workloads = &after;
  inputs.order = options.order;
  const RolloutPlan plan = plan_rollout(inputs, policy, db);

  for (const Error& e : in.broken) cli::print_error(e);
  if (options.format == "json") {
    std::cout << plan_json(plan).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << '\n';
  } else if (options.format == "junit") {
    std::cout << plan_junit(plan, timestamp);
  } else if (options.format == "html") {
    std::cout << plan_html(plan, timestamp);
  } else {
    std::cout << plan_table(plan, cli::stdout_wants_colour());
  }
  std::cout.flush();
  if (!in.broken.empty()) cli::exit_with(cli::kExitUsage);
  cli::exit_with(plan.count(PlanChange::breaks) != 0 ? cli::kExitFindings : cli::kExitOk);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* plan = app.add_subcommand(
      "plan", "Show what a driver rollout, node pool or image change does to a set of workloads");
  plan->footer(
      "Judges the workloads against the inventory as it is and as the changes leave it, and\n"
      "prints per workload the change (breaks, narrows, heals, widens, unchanged) and per node\n"
      "group what runs there before and after. Nothing is changed anywhere.\n"
      "\n"
      "SELECTOR is a label selector as kubectl reads it (a=b,c!=d,e in (x,y),!f,g), matched\n"
      "against the nodes of --nodes (never the added ones). WORKLOAD is\n"
      "[NAMESPACE/]KIND/NAME[:CONTAINER].\n"
      "\n"
      "With --cluster instead of -f: the Pods and pod controllers of a live cluster (the\n"
      "current context of --kubeconfig, $KUBECONFIG, or --in-cluster), against its Nodes\n"
      "unless --nodes is given; nothing in the cluster is changed.\n"
      "\n"
      "Exit status: 0 nothing breaks, 1 a workload breaks, 2 bad usage or unreadable input.\n"
      "\n"
      "Examples:\n"
      "  cudagate plan -f manifests/ --nodes nodes.json --set-driver pool=t4=570.124.06\n"
      "  cudagate plan -f manifests/ --nodes nodes.json --remove-nodes pool=a100 \\\n"
      "      --add-nodes h100-pool.yaml --order --format html > plan.html\n"
      "  cudagate plan --cluster -n ml --set-driver pool=t4=570.124.06\n"
      "  cudagate plan -f deploy.yaml --nodes nodes.json \\\n"
      "      --set-image ml/Deployment/trainer:main=nvcr.io/nvidia/pytorch:24.05-py3");
  plan->add_option("-f,--filename", options->paths,
                   "Manifest files or folders, '-' for stdin (repeatable)")
      ->type_name("PATH");
  plan->add_option("--set-driver", options->set_driver,
                   "Nodes that get a new driver: SELECTOR=VERSION (repeatable)")
      ->type_name("SELECTOR=VERSION");
  plan->add_option("--remove-nodes", options->remove_nodes,
                   "Nodes that leave the fleet (repeatable)")
      ->type_name("SELECTOR");
  plan->add_option("--add-nodes", options->add_nodes,
                   "Node objects that join the fleet, as kubectl prints them (repeatable)")
      ->type_name("FILE");
  plan->add_option("--set-image", options->set_image,
                   "A container's new image: WORKLOAD=IMAGE (repeatable)")
      ->type_name("WORKLOAD=IMAGE");
  plan->add_option("--format", options->format, "Report format")
      ->check(CLI::IsMember({"table", "json", "html", "junit"}))
      ->capture_default_str();
  plan->add_flag("--order", options->order,
                 "Also say which node groups can move first without breaking anything, and what "
                 "must be rebuilt before the others can");
  plan->add_flag("--offline", options->offline,
                 "Make no registry lookups: image metadata from the manifests, the policy's "
                 "catalog and the image reference only");
  cli::add_cluster_options(*plan, options->cluster,
                           "Plan for what runs in a live cluster: its Pods and pod controllers, "
                           "against its Nodes (unless --nodes is given)");
  cli::add_common_options(*plan, options->common);
  plan->callback([options] { run_plan(*options); });
}

}  // namespace cudagate
