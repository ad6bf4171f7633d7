// Turning a decision into the webhook's action, and the words a person reads: denial messages,
// warnings and audit annotations that name the container, the value, the nodes and the fix.
#include "admission/enforcement.h"

#include <algorithm>
#include <cstddef>

#include "types/ascii.h"

namespace cudagate {
namespace {

// How many node names a message shows, and how many findings.
constexpr std::size_t kShownNames = 3;
constexpr std::size_t kShownStatements = 4;

// One finding as it reads across the node groups it applies to.
struct Statement {
  std::string container;  // "" when the finding is about the pod as a whole
  Rule rule = Rule::cuda_driver;
  std::string message;
  std::string fix;
  bool unknown = false;
  std::size_t nodes = 0;
  std::vector<std::string> names;
};

std::string plural(std::size_t n, std::string_view word) {
  std::string out = std::to_string(n) + " " + std::string(word);
  if (n != 1) out += 's';
  return out;
}

void add_names(std::vector<std::string>& names, const NodeNames& more) {
  for (const std::string_view n : more) {
    if (names.size() == kShownNames) return;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.emplace_back(n);
  }
}

// "(a, b, c, ...)"; "" without names.
std::string name_list(const std::vector<std::string>& names, std::size_t count) {
  if (names.empty()) return "";
  std::string out = " (";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (count > names.size()) out += ", ...";
  out += ')';
  return out;
}

std::vector<Statement> statements(const Decision& decision) {
  std::vector<Statement> out;
  for (const auto& group : decision.groups) {
    if (group.outcome == Outcome::compatible) continue;
    for (const auto& f : group.findings) {
      auto it = std::find_if(out.begin(), out.end(), [&](const Statement& s) {
        return s.container == f.container && s.rule == f.rule && s.message == f.message &&
               s.fix == f.fix && s.unknown == f.unknown;
      });
      if (it == out.end()) {
        out.push_back(Statement{f.container, f.rule, f.message, f.fix, f.unknown, 0, {}});
        it = std::prev(out.end());
      }
      it->nodes += group.count;
      add_names(it->names, group.nodes);
    }
  }
  // Failures before unknowns, each kind in the order the decision lists them.
  std::stable_partition(out.begin(), out.end(), [](const Statement& s) { return !s.unknown; });
  return out;
}

// Where the value a rule judged came from ("env", "registry", ...); "" when unknown.
std::string source_of(const Decision& decision, const Statement& s) {
  const auto c = std::find_if(decision.containers.begin(), decision.containers.end(),
                              [&](const ContainerDecision& cd) { return cd.name == s.container; });
  if (c == decision.containers.end()) return "";
  const SourcedValue* v = rule_info(s.rule).judged(*c);
  if (v == nullptr || v->value.empty() || v->source.empty() || v->source == "unknown") return "";
  return v->source;
}

std::string lead(const Statement& s) {
  return s.container.empty() ? std::string("the pod") : "container \"" + s.container + "\"";
}

// A core message reads "needs CUDA 12.4; driver 535.129.03 supports up to
// CUDA 12.2" or "compiled for 8.0 (...); no kernel image for compute
// capability 7.5": what the container has or needs, then what the nodes
// have. Split it so the node count goes between the two. A message whose
// first part is itself labelled ("NVIDIA_REQUIRE_CUDA: ...") stays whole.
std::pair<std::string, std::string> split_need(const std::string& message) {
  const auto semi = message.find("; ");
  if (semi != std::string::npos && message.substr(0, semi).find(": ") == std::string::npos) {
    return {message.substr(0, semi), message.substr(semi + 2)};
  }
  return {"", message};
}

// container "train" needs CUDA 12.4 (from env); 8 of 8 candidate nodes
// cannot run it: driver 535.129.03 supports up to CUDA 12.2. Without the
// count: container "train" needs CUDA 12.4 (from env); driver 535.129.03 ...
std::string finding_text(const Decision& decision, const Statement& s, bool with_count,
                         bool with_names) {
  const auto [need, have] = split_need(s.message);
  const std::string source = source_of(decision, s);
  std::string out = lead(s);
  if (!need.empty()) {
    out += " " + need;
    // "compiled for 8.0 (TORCH_CUDA_ARCH_LIST, env)" names its source already.
    if (!source.empty() && need.find(source) == std::string::npos) {
      out += " (from " + source + ")";
    }
    out += "; ";
  } else {
    out += ": ";
  }
  if (with_count) {
    out += std::to_string(s.nodes) + " of " + plural(decision.candidates, "candidate node");
    out += s.unknown ? " may not run it: " : " cannot run it: ";
  }
  out += have;
  if (with_names) out += name_list(s.names, s.nodes);
  return out;
}

std::string sentence(std::string text) {
  if (!text.empty() && text.back() != '.') text += '.';
  return text;
}

std::string statement_text(const Decision& decision, const Statement& s) {
  std::string out = sentence(finding_text(decision, s, true, true));
  if (!s.fix.empty()) out += " Fix: " + sentence(s.fix);
  return out;
}

std::string object_word(const Decision& decision) {
  if (decision.resource.kind.empty() || decision.resource.kind == "Pod") return "pod";
  return ascii::lower(decision.resource.kind);
}

std::vector<std::string> compatible_names(const Decision& decision) {
  std::vector<std::string> names;
  for (const auto& g : decision.groups) {
    if (g.outcome == Outcome::compatible) add_names(names, g.nodes);
  }
  return names;
}

// What cannot be known, for a verdict `unknown` that carries no findings.
std::vector<std::string> unknown_reasons(const Decision& decision) {
  std::vector<std::string> out;
  if (decision.unknown_image) {
    std::string names;
    for (const auto& c : decision.containers) {
      if (!c.gpu || !c.cuda.value.empty() || !c.archs.value.empty() || !c.require.value.empty()) {
        continue;
      }
      names += (names.empty() ? "\"" : ", \"") + c.name + "\"";
    }
    out.push_back("the CUDA version and GPU architectures of " +
                  (names.empty() ? std::string("the image") : "container " + names) +
                  " are unknown. Fix: declare them with the annotations cudagate.io/cuda-version "
                  "and cudagate.io/arch-list, or list the image in the policy's catalog");
  }
  if (decision.unknown_node) {
    out.push_back(
        "the NVIDIA driver of some candidate nodes is unknown. Fix: run GPU Feature Discovery "
        "or label the nodes with cudagate.io/driver-version");
  }
  if (decision.unknown_claim) {
    out.push_back(decision.reason +
                  ". Fix: create the ResourceClaim or ResourceClaimTemplate before the pod, or "
                  "correct the name in spec.resourceClaims");
  }
  if (out.empty()) out.push_back("some candidate nodes cannot be judged");
  return out;
}

std::string joined(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += separator;
    out += p;
  }
  return out;
}

// The full explanation, as the denial message and the audit record carry it.
std::string explanation(const Decision& decision, const std::vector<Statement>& ss) {
  std::vector<std::string> parts;
  if (decision.verdict == Verdict::no_candidates) {
    parts.push_back("no node can take this " + object_word(decision) + ": " +
                    sentence(decision.reason.empty()
                                 ? "no node of the inventory matches its node selector, affinity, "
                                   "tolerations and GPU requests"
                                 : decision.reason));
    return joined(parts, " ");
  }
  for (std::size_t i = 0; i < ss.size() && i < kShownStatements; ++i) {
    parts.push_back(statement_text(decision, ss[i]));
  }
  if (ss.size() > kShownStatements) {
    parts.push_back(plural(ss.size() - kShownStatements, "more finding") +
                    ": run cudagate check on the manifest for the full report.");
  }
  if (ss.empty()) {
    for (const auto& r : unknown_reasons(decision)) parts.push_back(sentence(r));
  }
  if (decision.verdict == Verdict::partial) {
    const auto names = compatible_names(decision);
    parts.push_back("The " + plural(decision.compatible, "compatible node") +
                    name_list(names, decision.compatible) +
                    " can run it: select them with a nodeSelector or node affinity on their GPU "
                    "labels.");
  }
  return joined(parts, " ");
}

// Warnings for the findings: one short line per finding, one per fix.
std::vector<std::string> finding_warnings(const Decision& decision,
                                          const std::vector<Statement>& ss, bool with_fixes) {
  std::vector<std::string> out;
  if (decision.verdict == Verdict::no_candidates) {
    out.push_back("cudagate: no node can take this " + object_word(decision) +
                  (decision.reason.empty() ? std::string() : ": " + decision.reason));
    return out;
  }
  for (std::size_t i = 0; i < ss.size() && i < kShownStatements; ++i) {
    out.push_back("cudagate: " + finding_text(decision, ss[i], true, false));
    if (with_fixes && !ss[i].fix.empty()) {
      out.push_back("cudagate: fix for " + lead(ss[i]) + ": " + ss[i].fix);
    }
  }
  if (ss.size() > kShownStatements) {
    out.push_back("cudagate: " + plural(ss.size() - kShownStatements, "more finding") +
                  "; run cudagate check for the full report");
  }
  if (ss.empty()) {
    for (const auto& r : unknown_reasons(decision)) out.push_back("cudagate: " + r);
  }
  return out;
}

Action strictest(Action a, Action b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

// Which policy action governs an `unknown` verdict: the strictest of the
// unknowns present; an unknown that is neither (an arch list the image does
// not declare) is a property of the image.
// A claim cudagate cannot find leaves the devices unknown: the node side.
Action unknown_action(const Decision& decision, const Policy& policy) {
  const bool node_side = decision.unknown_node || decision.unknown_claim;
  if (decision.unknown_image && node_side) {
    return strictest(policy.unknown_image, policy.unknown_node);
  }
  if (node_side) return policy.unknown_node;
  return policy.unknown_image;
}

EnforcementAction from_action(Action a) {
  switch (a) {
    case Action::deny:
      return EnforcementAction::deny;
    case Action::warn:
      return EnforcementAction::warn;
    case Action::allow:
      break;
  }
  return EnforcementAction::allow;
}

void record(Enforcement& e, std::string_view key, std::string value) {
  // A decision records about five: one allocation for them all.
  if (e.audit_annotations.empty()) e.audit_annotations.reserve(8);
  e.audit_annotations.emplace_back(std::string(key), std::move(value));
}

void record_decision(Enforcement& e, const EnforcementRequest& request,
                     EnforcementAction enforce_action) {
  record(e, kAuditMode, std::string(to_string(request.mode)));
  record(e, kAuditDecision, std::string(to_string(e.action)));
  if (request.mode != Mode::enforce) {
    record(e, kAuditEnforceDecision, std::string(to_string(enforce_action)));
  }
}

}  // namespace

std::string_view to_string(EnforcementAction action) {
  switch (action) {
    case EnforcementAction::allow:
      return "allow";
    case EnforcementAction::deny:
      return "deny";
    case EnforcementAction::warn:
      return "warn";
    case EnforcementAction::patch:
      return "patch";
  }
  return "allow";
}

Enforcement enforce(const Decision& decision, const Policy& policy,
                    const EnforcementRequest& request) {
  Enforcement e;
  if (decision.verdict == Verdict::skip) return e;

  // What enforce mode does with this verdict.
  EnforcementAction would = EnforcementAction::allow;
  bool pinned_at_creation = false;
  switch (decision.verdict) {
    case Verdict::pass:
    case Verdict::skip:
      break;
    case Verdict::fail:
      would = EnforcementAction::deny;
      break;
    case Verdict::partial:
      if (request.endpoint == Endpoint::mutate) {
        would = policy.mutate ? EnforcementAction::patch : EnforcementAction::allow;
      } else if (request.controller && policy.mutate) {
        would = EnforcementAction::warn;
        pinned_at_creation = true;
      } else {
        would = policy.partial == PartialAction::deny ? EnforcementAction::deny
                                                      : EnforcementAction::warn;
      }
      break;
    case Verdict::unknown:
      would = from_action(unknown_action(decision, policy));
      break;
    case Verdict::no_candidates:
      would = from_action(policy.no_candidates);
      break;
  }

  switch (request.mode) {
    case Mode::enforce:
      e.action = would;
      break;
    case Mode::warn:
      e.action = would == EnforcementAction::allow ? would : EnforcementAction::warn;
      break;
    case Mode::dryrun:
      e.action = EnforcementAction::allow;
      break;
  }

  const auto ss = statements(decision);
  const std::string word = object_word(decision);
  switch (e.action) {
    case EnforcementAction::allow:
      break;
    case EnforcementAction::deny:
      e.message = "cudagate: " + explanation(decision, ss);
      break;
    case EnforcementAction::warn:
      if (request.mode == Mode::warn && would == EnforcementAction::deny) {
        e.warnings.push_back("cudagate: this " + word + " would be denied in enforce mode");
      }
      if (decision.verdict == Verdict::partial) {
        if (pinned_at_creation && request.mode == Mode::enforce) {
          e.warnings.push_back("cudagate: " + std::to_string(decision.compatible) + " of " +
                               plural(decision.candidates, "candidate node") + " can run this " +
                               word + "'s pods; they will be pinned to them at creation");
        } else {
          e.warnings.push_back("cudagate: only " + std::to_string(decision.compatible) + " of " +
                               plural(decision.candidates, "candidate node") + " can run this " +
                               word + (request.controller ? "'s pods" : std::string()) +
                               "; the scheduler may pick one that cannot");
        }
      }
      for (auto& w : finding_warnings(decision, ss, true)) e.warnings.push_back(std::move(w));
      break;
    case EnforcementAction::patch: {
      const std::size_t excluded = decision.candidates - decision.compatible;
      e.pin_reason = "pinned to the " + std::to_string(decision.compatible) + " of " +
                     plural(decision.candidates, "candidate node") +
                     " that can run it; the other " + std::to_string(excluded) + " cannot";
      if (!ss.empty()) e.pin_reason += ": " + finding_text(decision, ss.front(), false, false);
      e.warnings.push_back("cudagate: " + e.pin_reason);
      break;
    }
  }

  if (e.action != EnforcementAction::deny) {
    for (const std::string& note : decision.notes) e.warnings.push_back("cudagate: " + note);
  }

  record(e, kAuditVerdict, std::string(to_string(decision.verdict)));
  record_decision(e, request, would);
  record(e, kAuditCandidates, std::to_string(decision.candidates));
  record(e, kAuditCompatible, std::to_string(decision.compatible));
  if (decision.verdict != Verdict::pass) record(e, kAuditFindings, explanation(decision, ss));
  // One key per rule, so audit queries can select on the rule that failed.
  for (const RuleInfo& rule : kRuleTable) {
    std::vector<std::string> texts;
    for (const auto& s : ss) {
      if (s.rule == rule.rule) texts.push_back(finding_text(decision, s, true, true));
    }
    if (!texts.empty()) record(e, rule.name, joined(texts, "; "));
  }
  if (e.action == EnforcementAction::patch) record(e, kAuditPinned, e.pin_reason);
  return e;
}

Enforcement enforce_unpinnable(const Decision& decision, const Policy& policy,
                               const EnforcementRequest& request, std::string_view why) {
  Enforcement e = enforce(decision, policy, request);
  if (e.action != EnforcementAction::patch) return e;
  const auto ss = statements(decision);
  const std::string what = "cannot pin this " + object_word(decision) +
                           " to the nodes that can run it: " + std::string(why);
  if (policy.partial == PartialAction::deny) {
    e.action = EnforcementAction::deny;
    e.message = "cudagate: " + explanation(decision, ss) + " " + sentence(what);
    e.warnings.clear();
  } else {
    e.action = EnforcementAction::warn;
    e.warnings = {"cudagate: " + what};
    for (auto& w : finding_warnings(decision, ss, true)) e.warnings.push_back(std::move(w));
  }
  e.pin_reason.clear();
  for (auto& [key, value] : e.audit_annotations) {
    if (key == kAuditDecision) value = std::string(to_string(e.action));
  }
  std::erase_if(e.audit_annotations, [](const auto& kv) { return kv.first == kAuditPinned; });
  record(e, kAuditError, what);
  return e;
}

Enforcement enforce_input_error(const Error& error, std::string_view subject,
                                const EnforcementRequest& request) {
  Enforcement e;
  const std::string what = "cannot evaluate " + std::string(subject) + ": " + error.str();
  switch (request.mode) {
    case Mode::enforce:
      e.action = EnforcementAction::deny;
      e.message = "cudagate: " + sentence(what);
      break;
    case Mode::warn:
      e.action = EnforcementAction::warn;
      e.warnings.push_back("cudagate: " + what);
      break;
    case Mode::dryrun:
      e.action = EnforcementAction::allow;
      break;
  }
  record_decision(e, request, EnforcementAction::deny);
  record(e, kAuditError, what);
  return e;
}

Enforcement enforce_internal_error(std::string_view what, const Policy& policy,
                                   const EnforcementRequest& request) {
  Enforcement e;
  e.internal_error = true;
  const std::string text = "internal error while evaluating the request: " + std::string(what);
  const EnforcementAction would =
      policy.on_error == Action::deny ? EnforcementAction::deny : EnforcementAction::allow;
  if (request.mode == Mode::enforce && would == EnforcementAction::deny) {
    e.action = EnforcementAction::deny;
    e.message = "cudagate: " + text;
  } else if (request.mode != Mode::dryrun) {
    e.warnings.push_back("cudagate: admitted unchecked after an " + text);
  }
  record_decision(e, request, would);
  record(e, kAuditError, text);
  return e;
}

}  // namespace cudagate
