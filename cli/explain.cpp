// `cudagate explain`: why a GPU pod failed after admission. It reads the
// pod (its node, container statuses and last termination messages), its
// events and the node list, recognises the failures cudagate exists for
// (policy/rules/failure_message.h), and answers with the rule, the values and
// their sources and the fix, from the same decision `check` prints; then
// what admission would have done with the pod under this policy, and which
// mode or setting would have stopped it.

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "admission/enforcement.h"
#include "cli/cluster_inputs.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/decision_text.h"
#include "inputs/input_files.h"
#include "inputs/node_loader.h"
#include "kube/api_client.h"
#include "policy/objects/document.h"
#include "policy/objects/pod_status.h"
#include "policy/rules/evaluate.h"
#include "policy/rules/failure_message.h"
#include "report/audit.h"
#include "report/decision_record.h"
#include "report/finding_text.h"

namespace cudagate {
namespace {

using nlohmann::json;

struct ExplainOptions {
  cli::CommonOptions common;
  std::vector<std::string> target;  // "pod NAME" (cluster)
  std::string pod_file;
  std::string events_file;
  std::string namespace_;
  std::string output = "text";
  bool offline = false;
  bool in_cluster = false;
  std::string kubeconfig;
};

// What explain reads, from files or from the API server.
struct ExplainInputs {
  nlohmann::json pod;
  std::string pod_where;
  PodReport report;
  std::vector<PodEvent> events;
  std::optional<Inventory> inventory;
};

// One message the cluster reported, and where.
struct Report {
  std::string origin;   // "container main: CrashLoopBackOff, last terminated with exit code 1"
  std::string message;  // the text
  std::vector<RecognisedFailure> failures;
};

// The Pod of -f: the file must hold exactly one (a Pod, or a List with one).
std::pair<json, std::string> read_pod_object(const std::string& file) {
  const std::string text = cli::value_or_fail(read_input(file));
  const std::string source = display_name(file);
  const SourceDocuments docs = cli::value_or_fail(parse_source_documents(text, source));
  std::vector<std::pair<json, std::string>> pods;
  for (const SourceDocument& doc : docs.documents) {
    const std::string where = source + ":" + std::to_string(doc.line == 0 ? 1 : doc.line);
    const json& v = doc.value;
    if (v.is_object() && v.value("kind", "") == "Pod") {
      pods.emplace_back(v, where);
    } else if (v.is_object() && v.contains("items") && v["items"].is_array()) {
      for (std::size_t i = 0; i < v["items"].size(); ++i) {
        const json& item = v["items"][i];
        if (item.is_object() && item.value("kind", "Pod") == "Pod") {
          pods.emplace_back(item, where + ": " + index_path("items", i));
        }
      }
    }
  }
  if (pods.size() != 1) {
    cli::fail(
        Error{source, "expected one Pod (what `kubectl get pod NAME -o yaml` prints), found " +
                          std::to_string(pods.size())});
  }
  return std::move(pods.front());
}

std::vector<Report> gather_reports(const PodReport& pod, const std::vector<PodEvent>& events) {
  std::vector<Report> out;
  for (const ContainerReport& c : pod.containers) {
    const std::string who = std::string(c.init ? "init container " : "container ") + c.name;
    // CrashLoopBackOff's message is the back-off delay; the reason is in the last termination.
    if (!c.message.empty() && c.reason != "CrashLoopBackOff") {
      out.push_back(Report{who + ": " + c.state + " " + c.reason, c.message, {}});
    }
    if (!c.last_message.empty() && c.last_message != c.message) {
      std::string origin = who;
      if (!c.reason.empty()) origin += " (" + c.reason + ")";
      origin += ": last terminated (" + c.last_reason + ", exit code " +
                std::to_string(c.last_exit_code) + ")";
      if (c.restarts != 0) origin += ", " + std::to_string(c.restarts) + " restarts";
      out.push_back(Report{std::move(origin), c.last_message, {}});
    }
  }
  for (const PodEvent& e : events) {
    if (e.message.empty() || e.type == "Normal") continue;
    std::string origin = "event " + e.type + " " + e.reason;
    if (e.count > 1) origin += " (x" + std::to_string(e.count) + ")";
    if (!e.source.empty()) origin += " from " + e.source;
    out.push_back(Report{std::move(origin), e.message, {}});
  }
  for (Report& r : out) r.failures = recognise_failures(r.message);
  return out;
}

// The last non-empty line of a message: where runtimes put the error itself.
std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return text;
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

// What each kind of failure means, in a person's words.
std::string meaning(const RecognisedFailure& f) {
  switch (f.kind) {
    case FailureKind::driver_insufficient:
    case FailureKind::driver_too_old:
      return "the node's driver is older than the CUDA runtime in the image needs";
    case FailureKind::requirement_unsatisfied:
      return "nvidia-container-cli refused the container: the node does not meet the image's "
             "NVIDIA_REQUIRE_* condition " +
             f.condition + (f.node_value.empty() ? "" : " (node: " + f.node_value + ")");
    case FailureKind::no_kernel_image:
      return "the image has no GPU code (SASS or PTX) this GPU can run";
    case FailureKind::forward_compat_unsupported:
      return "the image's CUDA forward-compatibility libraries need a data-center GPU";
    case FailureKind::bf16_unsupported:
      return "BF16 needs compute capability " +
             (f.cc_needed ? f.cc_needed->str() : std::string("8.0")) + " or higher" +
             (f.cc_found ? " (the GPU has " + f.cc_found->str() + ")" : "");
    case FailureKind::fp8_unsupported:
      return "FP8 needs compute capability " +
             (f.cc_needed ? f.cc_needed->str() : std::string("8.9")) + " or higher";
  }
  return "";
}

// The findings of `decision` on the node's group that are about the rule of `f`.
std::vector<const Finding*> findings_for(const RecognisedFailure& f, const Decision& decision) {
  std::vector<const Finding*> out;
  for (const GroupDecision& g : decision.groups) {
    for (const Finding& finding : g.findings) {
      if (finding.rule == f.rule) out.push_back(&finding);
    }
  }
  return out;
}

// What to tell cudagate when its values do not show the failure.
std::string missing_value_hint(const RecognisedFailure& f) {
  switch (f.kind) {
    case FailureKind::bf16_unsupported:
    case FailureKind::fp8_unsupported:
      return "annotate the pod cudagate.io/min-compute-capability: \"" +
             (f.cc_needed ? f.cc_needed->str() : std::string("8.0")) +
             "\" so that cudagate keeps it off GPUs below that";
    case FailureKind::no_kernel_image:
      return "cudagate does not know the image's architectures: set TORCH_CUDA_ARCH_LIST in the "
             "image, or annotate the pod cudagate.io/arch-list with the list it was built for";
    default:
      return "cudagate does not know the image's CUDA version: set CUDA_VERSION or "
             "NVIDIA_REQUIRE_CUDA in the image, or annotate the pod cudagate.io/cuda-version";
  }
}

const ContainerDecision* container_of(const Decision& d, const std::string& name) {
  for (const ContainerDecision& c : d.containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string values_line(const ContainerDecision& c) {
  auto one = [](const char* name, const SourcedValue& v) {
    return std::string(name) + " " +
           (v.value.empty() ? "unknown" : v.value + " (" + v.source + ")");
  };
  std::string out = one("cuda", c.cuda) + ", " + one("archs", c.archs);
  if (!c.require.value.empty()) {
    out +=
        ", require " + cli::summarise_requirement(c.require.value) + " (" + c.require.source + ")";
  }
  if (!c.min_cc.value.empty()) out += ", " + one("min cc", c.min_cc);
  return out;
}

// What admission would do with the pod (unbound, as the API server sends
// it) in `mode` on `endpoint`.
Enforcement admission_answer(const Decision& d, const Policy& policy, Mode mode,
                             Endpoint endpoint) {
  return enforce(d, policy, EnforcementRequest{mode, endpoint, false});
}

std::vector<std::string> admission_lines(const Decision& admission, const Policy& policy,
                                         const std::string& namespace_) {
  std::vector<std::string> out;
  const auto& excluded = policy.exclude_namespaces;
  if (std::find(excluded.begin(), excluded.end(), namespace_) != excluded.end()) {
    out.push_back("namespace " + namespace_ +
                  " is in the policy's excludeNamespaces: cudagate does not judge its pods; "
                  "remove it from the list to have them judged");
  }
  const Enforcement now = admission_answer(admission, policy, policy.mode, Endpoint::validate);
  out.push_back("with this policy (mode " + std::string(to_string(policy.mode)) + "), /validate " +
                (now.action == EnforcementAction::deny ? "denies it: " + now.message
                 : now.action == EnforcementAction::warn
                     ? "admits it with a warning" +
                           (now.warnings.empty() ? std::string() : ": " + now.warnings.front())
                     : std::string("admits it")));
  if (policy.mode != Mode::enforce) {
    const Enforcement e = admission_answer(admission, policy, Mode::enforce, Endpoint::validate);
    if (e.action == EnforcementAction::deny) {
      out.push_back(
          "mode: enforce would have denied it at admission (policy mode, or "
          "/validate?mode=enforce)");
    }
  }
  const Enforcement m = admission_answer(admission, policy, Mode::enforce, Endpoint::mutate);
  if (m.action == EnforcementAction::patch) {
    out.push_back(
        "/mutate in mode enforce (policy mutate: " + std::string(policy.mutate ? "true" : "false") +
        ") pins it to the " + std::to_string(admission.compatible) + " nodes that can run it" +
        (policy.mutate ? "" : ": set mutate: true"));
  }
  if (admission.verdict == Verdict::unknown) {
    out.push_back(
        "its verdict is unknown: policy unknownImage: deny (or unknownNode: deny) would deny it "
        "until the values are known");
  }
  if (admission.verdict == Verdict::pass) {
    out.push_back(
        "cudagate finds every candidate node compatible: with the values it has, no "
        "mode would have stopped it");
  }
  return out;
}

ExplainInputs read_offline(const ExplainOptions& options) {
  ExplainInputs in;
  if (options.pod_file.empty()) {
    cli::fail(Error{"-f",
                    "required: the pod, as `kubectl get pod NAME -o yaml` prints it (or "
                    "explain pod NAME -n NAMESPACE, from the API server)"});
  }
  std::tie(in.pod, in.pod_where) = read_pod_object(options.pod_file);
  in.report = cli::value_or_fail(pod_report_from_json(in.pod, in.pod_where));
  if (!options.events_file.empty()) {
    const std::string text = cli::value_or_fail(read_input(options.events_file));
    in.events =
        cli::value_or_fail(read_pod_events(text, display_name(options.events_file), in.report));
  }
  return in;
}

// `explain pod NAME -n NS`: the pod, the events of its namespace about it
// and (without --nodes) the node inventory, from the API server: the nodes
// with their ResourceSlices' devices and the NodePools, as audit --cluster
// reads them.
ExplainInputs read_cluster(const ExplainOptions& options, const CompatDb& db) {
  if (options.target.size() != 2 || options.target[0] != "pod") {
    cli::fail(Error{"explain", "expected `explain pod NAME`, or -f POD.yaml"});
  }
  if (!options.pod_file.empty() || !options.events_file.empty()) {
    cli::fail(Error{"-f",
                    "cannot be combined with `explain pod NAME`, which reads the pod and "
                    "its events from the API server"});
  }
  if (options.in_cluster && !options.kubeconfig.empty()) {
    cli::fail(Error{"--in-cluster", "give one of --in-cluster and --kubeconfig"});
  }
  const std::string& name = options.target[1];
  const std::string ns = options.namespace_.empty() ? std::string("default") : options.namespace_;
  kube::BlockingApiClient client(
      cli::cluster_config_or_fail(options.in_cluster, options.kubeconfig));
  ExplainInputs in;
  in.pod = cli::value_or_fail(client.get(kube::ApiCallId::explain_get_pod, ns, name));
  in.pod_where = "pod " + ns + "/" + name;
  in.report = cli::value_or_fail(pod_report_from_json(in.pod, in.pod_where));
  std::optional<Error> bad;
  const auto failed =
      client.list(kube::ApiCallId::explain_list_events, kube::ListOptions{ns, "", ""},
                  [&](const nlohmann::json& page, bool first) {
                    if (first) in.events.clear();
                    if (bad) return;
                    bad = read_pod_events_document(page, "events in " + ns, in.report, in.events);
                  });
  if (failed) cli::fail(*failed);
  if (bad) cli::fail(*bad);
  if (options.common.nodes.empty()) {
    in.inventory = cli::cluster_inventory(client, db, cli::kExplainInventoryCalls);
  }
  return in;
}

// What explain found, for printing.
struct Explanation {
  const PodReport& pod;
  const Workload& workload;
  const std::vector<Report>& reports;
  const Decision& on_node;    // on its node, as it ran
  const Decision& admission;  // unbound, as admission saw it
  const std::vector<std::string>& admission_text;
  const std::string& node_facts;  // "" when the pod is not bound
  bool recognised;                // some report is a failure cudagate recognises
};

// The explanation as JSON (kind Explanation).
void print_explanation_json(const Explanation& e) {
  const PodReport& pod = e.pod;
  const std::vector<Report>& reports = e.reports;
  const Decision& on_node = e.on_node;
  json out = json::object();
  out["apiVersion"] = "cudagate.io/v1alpha1";
  out["kind"] = "Explanation";
  out["pod"] = json{{"namespace", pod.namespace_},
                    {"name", pod.name},
                    {"node", pod.node_name},
                    {"phase", pod.phase}};
  json failures = json::array();
  for (const Report& r : reports) {
    for (const RecognisedFailure& f : r.failures) {
      json item{{"kind", to_string(f.kind)}, {"rule", to_string(f.rule)},
                {"origin", r.origin},        {"excerpt", f.excerpt},
                {"meaning", meaning(f)},     {"findings", json::array()}};
      if (!f.condition.empty()) item["condition"] = f.condition;
      for (const Finding* finding : findings_for(f, on_node)) {
        item["findings"].push_back(json{{"rule", to_string(finding->rule)},
                                        {"container", finding->container},
                                        {"message", finding->message},
                                        {"fix", finding->fix}});
      }
      item["reproduced"] = !item["findings"].empty();
      if (item["findings"].empty()) item["hint"] = missing_value_hint(f);
      failures.push_back(std::move(item));
    }
  }
  out["failures"] = std::move(failures);
  json unrecognised = json::array();
  for (const Report& r : reports) {
    if (r.failures.empty())
      unrecognised.push_back(json{{"origin", r.origin}, {"message", r.message}});
  }
  out["unrecognised"] = std::move(unrecognised);
  out["decision"] = to_json(on_node);
  out["admission"] = json{{"decision", to_json(e.admission)}, {"notes", e.admission_text}};
  std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

// The explanation as text for a terminal.
void print_explanation_text(const Explanation& e) {
  const PodReport& pod = e.pod;
  const std::vector<Report>& reports = e.reports;
  const Decision& on_node = e.on_node;
  const cli::Paint paint(cli::stdout_wants_colour());
  std::ostream& out = std::cout;
  out << paint.bold(workload_title(e.workload.resource));
  if (!pod.node_name.empty()) out << " on node " << pod.node_name << ": " << e.node_facts;
  if (!pod.phase.empty()) out << " (" << pod.phase << ")";
  out << "\n\n" << paint.bold("Reported failures") << '\n';
  if (reports.empty()) out << "  none: the pod's status and events carry no message\n";
  for (const Report& r : reports) {
    out << "  " << r.origin << ":\n";
    for (const RecognisedFailure& f : r.failures) {
      out << "    " << f.excerpt << '\n';
      out << "    " << paint.bold("-> " + std::string(to_string(f.kind))) << ": " << meaning(f)
          << "; cudagate rule " << to_string(f.rule) << '\n';
      const auto findings = findings_for(f, on_node);
      for (const Finding* finding : findings) {
        out << "       cudagate finds the same: [" << to_string(finding->rule) << "] "
            << finding->container << ": " << finding->message << '\n';
        if (const ContainerDecision* c = container_of(on_node, finding->container)) {
          out << "       values: " << values_line(*c) << '\n';
        }
        if (!finding->fix.empty()) {
          out << "       " << paint.bold("fix:") << ' ' << finding->fix << '\n';
        }
      }
      if (findings.empty()) {
        out << "       cudagate's decision does not show it: " << missing_value_hint(f) << '\n';
      }
    }
    if (r.failures.empty()) {
      out << "    " << shorten(last_line(r.message), 300) << '\n'
          << "    " << paint.dim("-> not a failure cudagate recognises") << '\n';
    }
  }
  if (!e.recognised) {
    out << "\n  None of these messages is a CUDA compatibility failure cudagate recognises; "
           "what it decides for the pod on its node is below.\n";
  }
  out << '\n'
      << paint.bold(pod.node_name.empty()
                        ? std::string("What cudagate decides for this pod")
                        : "What cudagate decides for this pod on " + pod.node_name)
      << '\n';
  cli::print_decision_text(out, on_node, paint);
  out << '\n' << paint.bold("At admission") << '\n';
  for (const std::string& line : e.admission_text) out << "  " << line << '\n';
}

void run_explain(const ExplainOptions& options) {
  cli::setup_logging(options.common);
  const bool cluster = !options.target.empty();
  if (!cluster && (options.in_cluster || !options.kubeconfig.empty())) {
    cli::fail(Error{options.in_cluster ? "--in-cluster" : "--kubeconfig",
                    "only with `explain pod NAME`, which reads the pod from the API server"});
  }
  if (!cluster && options.common.nodes.empty()) {
    cli::fail(Error{"--nodes", "required: the nodes, as `kubectl get nodes -o yaml` prints them"});
  }
  const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));
  const Policy policy = cli::value_or_fail(cli::load_policy_option(options.common, db));
  ExplainInputs in = cluster ? read_cluster(options, db) : read_offline(options);
  const Inventory inventory = cli::with_policy_pools(
      in.inventory ? std::move(*in.inventory)
                   : cli::value_or_fail(load_inventory(options.common.nodes, db)),
      policy, db);
  const PodReport& pod = in.report;
  const std::vector<PodEvent>& events = in.events;
  const std::string& pod_where = in.pod_where;
  Workload workload = cli::value_or_fail(workload_from_json(in.pod, pod_where));
  if (!pod.node_name.empty() && !inventory.index_of(pod.node_name)) {
    cli::fail(Error{
        options.common.nodes.empty() ? std::string("nodes") : display_name(options.common.nodes),
        "node " + cli::quote(pod.node_name) +
            " (the pod's spec.nodeName) is not in the node list"});
  }

  // On its node, as it ran; and unbound, as admission saw it.
  Workload unbound = workload;
  unbound.spec.node_name.clear();
  const std::vector<const Workload*> judged = {&workload, &unbound};
  const std::vector<RegistryFacts> registry =
      cli::registry_facts(judged, policy, inventory, options.offline);
  auto judge = [&](const Workload& w, std::size_t i) {
    const EvaluationInputs inputs{registry[i].empty() ? nullptr : &registry[i], nullptr};
    auto d = evaluate(w, inventory, policy, db, inputs);
    if (!d) cli::fail(d.error().within(pod_where));
    return std::move(d).value();
  };
  const Decision on_node = judge(workload, 0);
  const Decision admission = judge(unbound, 1);
  const std::vector<Report> reports = gather_reports(pod, events);
  const bool recognised = std::any_of(reports.begin(), reports.end(),
                                      [](const Report& r) { return !r.failures.empty(); });
  const std::vector<std::string> admission_text =
      admission_lines(admission, policy, pod.namespace_);

  std::string node_facts;
  if (!pod.node_name.empty()) {
    const std::size_t i = *inventory.index_of(pod.node_name);
    node_facts = facts_text(inventory.groups()[inventory.group_of(i)].facts);
  }

  const Explanation explanation{pod,       workload,       reports,    on_node,
                                admission, admission_text, node_facts, recognised};
  if (options.output == "json") {
    print_explanation_json(explanation);
  } else {
    print_explanation_text(explanation);
  }
  std::cout.flush();
  const bool fails = on_node.verdict != Verdict::pass && on_node.verdict != Verdict::skip;
  cli::exit_with(fails ? cli::kExitFindings : cli::kExitOk);
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* explain = app.add_subcommand(
      "explain", "Explain why a GPU pod failed, from its status, its events and its node");
  explain->footer(
      "Reads what kubectl prints: the pod (-f), its events (--events) and the nodes (--nodes).\n"
      "Recognises CUDA driver, kernel image, NVIDIA_REQUIRE_*, forward compatibility, BF16 and\n"
      "FP8 failures in the container statuses (waiting and last termination messages) and the\n"
      "events, and answers with cudagate's rule, values, sources and fix, and what admission\n"
      "would have done with the pod.\n"
      "\n"
      "Exit status: 0 cudagate finds the pod compatible with its node, 1 it does not,\n"
      "2 bad usage or unreadable input.\n"
      "\n"
      "With `pod NAME -n NAMESPACE` the pod, its events and (without --nodes) the nodes are\n"
      "read from the API server (--kubeconfig, default $KUBECONFIG or ~/.kube/config, or\n"
      "--in-cluster); `cudagate api-calls` lists the calls.\n"
      "\n"
      "Examples:\n"
      "  cudagate explain pod trainer-0 -n ml\n"
      "  kubectl get pod trainer-0 -n ml -o yaml > pod.yaml\n"
      "  kubectl get events -n ml -o yaml > events.yaml\n"
      "  kubectl get nodes -o yaml > nodes.yaml\n"
      "  cudagate explain -f pod.yaml --events events.yaml --nodes nodes.yaml");
  explain->add_option("TARGET", options->target, "pod NAME: the pod, read from the API server");
  explain->add_option("-f,--filename", options->pod_file, "The pod, as kubectl prints it")
      ->type_name("FILE");
  explain
      ->add_option("--events", options->events_file,
                   "Events (kubectl get events -o yaml|json): those about the pod are read")
      ->type_name("FILE");
  explain->add_option("-n,--namespace", options->namespace_, "Namespace of the pod (with TARGET)");
  explain->add_option("-o,--output", options->output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  explain->add_flag("--offline", options->offline, "Read no image config from registries");
  explain->add_flag("--in-cluster", options->in_cluster,
                    "With `pod NAME`: the API server from the pod's service account");
  explain
      ->add_option("--kubeconfig", options->kubeconfig,
                   "With `pod NAME`: the kubeconfig whose current context to use (default: "
                   "$KUBECONFIG, else ~/.kube/config)")
      ->type_name("FILE");
  cli::add_common_options(*explain, options->common);
  explain->callback([options] { run_explain(*options); });
}

}  // namespace cudagate
