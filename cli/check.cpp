// `cudagate check`: explain one image (or the workloads of a manifest)
// against one node described by flags or against an inventory, for a person
// at a terminal (docs/contract.md §1). The answer is the decision record of
// docs/contract.md §7.1, printed as text or as JSON.

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/admission.h"
#include "admission/rule_pin.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/decision_text.h"
#include "policy/image/arch_list.h"
#include "policy/image/image_ref.h"
#include "policy/rules/decision.h"
#include "policy/rules/evaluate.h"
#include "registry/registry_client.h"
#include "report/audit.h"
#include "report/decision_record.h"
#include "types/version.h"

namespace cudagate {
namespace {

struct CheckOptions {
  cli::CommonOptions common;
  std::string image;
  std::string cuda;
  std::string arch_list;
  std::string min_cc;
  std::string driver;
  std::string gpu;
  std::vector<std::string> files;  // -f, repeatable
  std::string output = "text";
  bool offline = false;  // no registry lookups
};

// The facts of the single node that --driver / --gpu describe.
struct FlagNode {
  std::optional<DriverVersion> driver;
  const Product* product = nullptr;
};

constexpr std::string_view kFlagNodeName = "flag-node";

std::string gpu_resource_name(const Policy& policy) {
  return policy.gpu_resources.empty() ? std::string("nvidia.com/gpu")
                                      : policy.gpu_resources.front();
}

// Checks every flag value before anything is evaluated, so a typo is
// reported as the flag it came from and not as a verdict.
FlagValues validate_flags(const CheckOptions& options, const CompatDb& db) {
  FlagValues flags;
  if (!options.image.empty()) {
    auto ref = ImageRef::parse(options.image);
    if (!ref) cli::fail(ref.error().within("--image"));
  }
  if (!options.cuda.empty()) {
    if (!CudaVersion::parse(options.cuda)) {
      cli::fail(Error{"--cuda", "expected a CUDA version like 12.4 or 12.4.1, got " +
                                    cli::quote(options.cuda)});
    }
    flags.cuda = options.cuda;
  }
  if (!options.arch_list.empty()) {
    // A capability newer than the matrix knows is no error of the flag's:
    // the check answers unknown and says so.
    if (arch_list_beyond_matrix(options.arch_list, true, db).empty()) {
      auto archs = parse_torch_arch_list(options.arch_list, db);
      if (!archs) cli::fail(archs.error().within("--arch-list"));
    }
    flags.arch_list = options.arch_list;
  }
  if (!options.min_cc.empty()) {
    if (!ComputeCapability::parse(options.min_cc)) {
      cli::fail(Error{
          "--min-compute-capability",
          "expected a compute capability like 8.0 or 9.0, got " + cli::quote(options.min_cc)});
    }
    flags.min_cc = options.min_cc;
  }
  return flags;
}

FlagNode validate_node_flags(const CheckOptions& options, const CompatDb& db) {
  FlagNode node;
  if (!options.driver.empty()) {
    auto driver = DriverVersion::parse(options.driver);
    if (!driver) {
      cli::fail(
          Error{"--driver", "expected an NVIDIA driver version like 535.129.03 or 570.26, got " +
                                cli::quote(options.driver)});
    }
    node.driver = *driver;
  }
  if (!options.gpu.empty()) {
    node.product = db.product_by_name(options.gpu);
    if (node.product == nullptr) node.product = db.product_by_gfd(options.gpu);
    if (node.product == nullptr) {
      std::string known;
      const std::size_t shown = std::min<std::size_t>(db.products.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) {
        if (i != 0) known += ", ";
        known += db.products[i].name;
      }
      if (db.products.size() > shown) known += ", ...";
      cli::fail(Error{"--gpu", "unknown GPU " + cli::quote(options.gpu) +
                                   ": expected a product name such as " + known +
                                   " (cudagate db show lists them all)"});
    }
  }
  return node;
}

// One node carrying cudagate's own labels, offering one GPU.
Inventory flag_inventory(const FlagNode& facts, const Policy& policy, const CompatDb& db) {
  Node node;
  node.name = std::string(kFlagNodeName);
  if (facts.driver) node.labels.emplace_back("cudagate.io/driver-version", facts.driver->str());
  if (facts.product != nullptr)
    node.labels.emplace_back("cudagate.io/gpu-product", facts.product->name);
  std::sort(node.labels.begin(), node.labels.end());
  node.allocatable.emplace_back(gpu_resource_name(policy), 1);
  std::vector<Node> nodes;
  nodes.push_back(std::move(node));
  return Inventory::build(nodes, db);
}

// The Pod that stands for --image: one container asking for one GPU. It
// tolerates the GPU taint, as the ExtendedResourceToleration admission
// plugin adds to every pod that requests an extended resource, so that a
// fleet of tainted GPU nodes answers the question "which GPU nodes can run
// this image".
Workload flag_workload(const CheckOptions& options, const Policy& policy) {
  Workload workload;
  workload.resource = ResourceRef{"v1", "Pod", "default", "check"};
  workload.spec_pointer = "/spec";
  ContainerSpec container;
  container.name = "main";
  container.image = options.image;
  const std::string resource = gpu_resource_name(policy);
  container.resources.emplace_back(resource, 1);
  workload.spec.containers.push_back(std::move(container));
  workload.spec.tolerations.push_back(Toleration{resource, "Exists", "", ""});
  return workload;
}

// The requests of `object` (a ResourceClaim or ResourceClaimTemplate as
// written) whose device class is a GPU class, as the JSON of their ways.
std::vector<nlohmann::json*> gpu_ways(nlohmann::json& object, const Policy& policy) {
  std::vector<nlohmann::json*> out;
  nlohmann::json* spec = object.contains("spec") ? &object["spec"] : nullptr;
  if (spec != nullptr && object.value("kind", "") == "ResourceClaimTemplate") {
    spec = spec->contains("spec") ? &(*spec)["spec"] : nullptr;
  }
  if (spec == nullptr || !spec->contains("devices") || !(*spec)["devices"].contains("requests")) {
    return out;
  }
  auto is_gpu = [&](const nlohmann::json& way) {
    const std::string device_class = way.value("deviceClassName", "");
    return std::find(policy.dra_device_classes.begin(), policy.dra_device_classes.end(),
                     device_class) != policy.dra_device_classes.end();
  };
  for (nlohmann::json& request : (*spec)["devices"]["requests"]) {
    if (request.contains("exactly")) {
      if (is_gpu(request["exactly"])) out.push_back(&request["exactly"]);
    } else if (request.contains("firstAvailable")) {
      for (nlohmann::json& way : request["firstAvailable"]) {
        if (is_gpu(way)) out.push_back(&way);
      }
    } else if (is_gpu(request)) {
      out.push_back(&request);  // v1beta1
    }
  }
  return out;
}

// `-o claims`: the claims and templates the judged pods name, each GPU
// request with the selector of the rules added (selectors are ANDed, so a
// template that pods of several images name admits the devices all can
// use). A pod whose selector cannot be written is an error on stderr.
bool print_claims(std::ostream& out, const std::vector<std::pair<Workload, std::string>>& workloads,
                  const std::vector<Decision>& decisions, const ClaimCatalog& claims,
                  const Policy& policy, const CompatDb& db) {
  bool ok = true;
  std::map<std::string, nlohmann::json> changed;  // by kind/namespace/name, in order
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const Workload& w = workloads[i].first;
    const Decision& d = decisions[i];
    if (w.spec.resource_claims.empty() || d.verdict == Verdict::skip ||
        d.verdict == Verdict::no_candidates || d.unknown_claim) {
      continue;
    }
    auto selector = rule_device_selector(d, policy, db);
    if (!selector) {
      cli::print_error(selector.error().within(workload_title(w.resource)));
      ok = false;
      continue;
    }
    const std::string ns = w.resource.namespace_.empty() ? "default" : w.resource.namespace_;
    for (const PodClaim& pod_claim : w.spec.resource_claims) {
      const bool from_template = !pod_claim.template_name.empty();
      const std::string kind = from_template ? "ResourceClaimTemplate" : "ResourceClaim";
      const std::string& name = from_template ? pod_claim.template_name : pod_claim.claim_name;
      const ClaimSpec* claim = claims.find(kind, ns, name);
      if (claim == nullptr || claim->object.is_null()) continue;
      std::string key = kind;
      key.append("/").append(ns).append("/").append(name);
      auto [it, added] = changed.try_emplace(key, claim->object);
      for (nlohmann::json* way : gpu_ways(it->second, policy)) {
        nlohmann::json& list = (*way)["selectors"];
        if (!list.is_array()) list = nlohmann::json::array();
        const nlohmann::json entry = {{"cel", {{"expression", *selector}}}};
        if (std::find(list.begin(), list.end(), entry) == list.end()) list.push_back(entry);
      }
      it->second["metadata"]["annotations"]["cudagate.io/device-selector"] =
          "added for the GPU containers of " + workload_title(w.resource);
    }
  }
  nlohmann::json list = {
      {"apiVersion", "v1"}, {"kind", "List"}, {"items", nlohmann::json::array()}};
  for (auto& [key, object] : changed) list["items"].push_back(std::move(object));
  out << list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  return ok;
}

void print_summary(std::ostream& out, const std::vector<Decision>& decisions) {
  std::map<Verdict, std::size_t> counts;
  for (const auto& d : decisions) ++counts[d.verdict];
  out << '\n' << decisions.size() << " workloads:";
  bool first = true;
  for (const auto& [verdict, count] : counts) {
    out << (first ? " " : ", ") << count << ' ' << to_string(verdict);
    first = false;
  }
  out << '\n';
}

// ------------------------------------------------------------------- command

void run_check(const CheckOptions& options) {
  cli::setup_logging(options.common);
  const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));

  const bool node_flags = !options.driver.empty() || !options.gpu.empty();
  if (node_flags && !options.common.nodes.empty()) {
    cli::fail(
        Error{"--nodes", "cannot be combined with --driver or --gpu, which describe one node"});
  }
  if (!node_flags && options.common.nodes.empty()) {
    cli::fail(Error{"--nodes",
                    "required: give an inventory with --nodes FILE, or one node with "
                    "--driver and/or --gpu"});
  }
  if (!options.files.empty() && !options.image.empty()) {
    cli::fail(Error{"--image", "cannot be combined with -f, whose workloads name their images"});
  }
  if (options.files.empty() && options.image.empty() && options.cuda.empty() &&
      options.arch_list.empty() && options.min_cc.empty()) {
    cli::fail(Error{"", "nothing to check: give --image, --cuda, --arch-list or -f FILE"});
  }
  const auto stdin_readers = std::count(options.files.begin(), options.files.end(), "-") +
                             (options.common.nodes == "-" ? 1 : 0);
  if (stdin_readers > 1) {
    cli::fail(Error{"-f", "stdin (\"-\") can be read only once, by one -f or by --nodes"});
  }
  const FlagValues flags = validate_flags(options, db);
  const FlagNode node = validate_node_flags(options, db);
  const Policy policy = cli::value_or_fail(cli::load_policy_option(options.common, db));

  const Inventory inventory = cli::with_policy_pools(
      node_flags ? flag_inventory(node, policy, db)
                 : cli::value_or_fail(load_inventory_file(options.common.nodes, db)),
      policy, db);
  // Each workload with the name of the file it came from ("" for --image).
  std::vector<std::pair<Workload, std::string>> workloads;
  if (options.files.empty()) workloads.emplace_back(flag_workload(options, policy), "");
  std::vector<ClaimSpec> claim_list;
  for (const auto& file : options.files) {
    for (auto& w : cli::value_or_fail(load_workloads_file(file, &claim_list))) {
      workloads.emplace_back(std::move(w), display_name(file));
    }
  }
  ClaimCatalog claims;
  for (ClaimSpec& claim : claim_list) claims.add(std::move(claim));

  // Image configs from the registry, gathered before the decisions, with
  // the server's client and budget (docs/contract.md §6).
  std::vector<const Workload*> judged;
  judged.reserve(workloads.size());
  for (const auto& w : workloads) judged.push_back(&w.first);
  const std::vector<RegistryFacts> registry_facts =
      cli::registry_facts(judged, policy, inventory, options.offline);

  const bool any_flag = flags.cuda || flags.arch_list || flags.min_cc;
  std::vector<Decision> decisions;
  decisions.reserve(workloads.size());
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const auto& [workload, file] = workloads[i];
    EvaluationInputs inputs{registry_facts[i].empty() ? nullptr : &registry_facts[i],
                            any_flag ? &flags : nullptr};
    inputs.claims = &claims;
    auto decision = evaluate(workload, inventory, policy, db, inputs);
    if (!decision) {
      std::string where = file;
      if (!where.empty()) where += ": ";
      where += workload_title(workload.resource);
      cli::fail(decision.error().within(where));
    }
    spdlog::debug("{}: {} ({} of {} candidate nodes compatible)", workload_title(workload.resource),
                  to_string(decision->verdict), decision->compatible, decision->candidates);
    decisions.push_back(std::move(decision).value());
  }

  if (options.output == "claims") {
    const bool ok = print_claims(std::cout, workloads, decisions, claims, policy, db);
    std::cout.flush();
    cli::exit_with(ok ? cli::kExitOk : cli::kExitFindings);
    return;
  }
  if (options.output == "json") {
    nlohmann::json out;
    if (decisions.size() == 1) {
      out = to_json(decisions.front());
    } else {
      out = nlohmann::json::array();
      for (const auto& d : decisions) out.push_back(to_json(d));
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  } else {
    const cli::Paint paint(cli::stdout_wants_colour());
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      if (i != 0) std::cout << '\n';
      cli::print_decision_text(std::cout, decisions[i], paint);
    }
    if (decisions.size() > 1) print_summary(std::cout, decisions);
  }
  std::cout.flush();

  const bool failed = std::any_of(decisions.begin(), decisions.end(), [](const Decision& d) {
    return d.verdict != Verdict::pass && d.verdict != Verdict::skip;
  });
  cli::exit_with(failed ? cli::kExitFindings : cli::kExitOk);
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* check = app.add_subcommand(
      "check",
      "Explain whether an image or the workloads of a manifest can run on a node or an inventory");
  check->footer(
      "Exit status: 0 pass or skip, 1 any other verdict, 2 bad usage or unreadable input.\n"
      "\n"
      "Examples:\n"
      "  cudagate check --image nvcr.io/nvidia/pytorch:24.01-py3 --driver 535.129.03 --gpu T4\n"
      "  cudagate check --cuda 12.4 --arch-list \"8.0;9.0\" --nodes nodes.json\n"
      "  cudagate check -f pod.yaml --nodes nodes.json");
  check->add_option("--image", options->image,
                    "Image to check, as the only container of a Pod asking for one GPU");
  check->add_option("--cuda", options->cuda, "CUDA runtime version of the image (e.g. 12.4)")
      ->type_name("VERSION");
  check
      ->add_option("--arch-list", options->arch_list,
                   "Architectures the image was compiled for, TORCH_CUDA_ARCH_LIST syntax "
                   "(e.g. \"8.0;9.0+PTX\")")
      ->type_name("LIST");
  check
      ->add_option("--min-compute-capability", options->min_cc,
                   "Lowest compute capability the workload needs (e.g. 8.0 for BF16)")
      ->type_name("CC");
  check
      ->add_option("--driver", options->driver,
                   "Driver version of the one node to check against (e.g. 535.129.03)")
      ->type_name("VERSION");
  check
      ->add_option("--gpu", options->gpu,
                   "GPU product of the one node to check against (e.g. T4, A100, H100)")
      ->type_name("PRODUCT");
  check
      ->add_option("-f,--filename", options->files,
                   "Manifest (YAML or JSON, '-' for stdin; repeatable): every workload in it is "
                   "checked")
      ->type_name("FILE");
  check->add_flag("--offline", options->offline,
                  "Read no image config from registries (policy registry: settings otherwise)");
  check
      ->add_option("-o,--output", options->output,
                   "Output format: text, json, or claims (the ResourceClaims and "
                   "ResourceClaimTemplates of -f that GPU pods name, with a CEL selector added "
                   "that admits only devices that can run them)")
      ->check(CLI::IsMember({"text", "json", "claims"}))
      ->capture_default_str();
  cli::add_common_options(*check, options->common);
  check->callback([options] { run_check(*options); });
}

}  // namespace cudagate
