// The decision as text for a person at a terminal, as `check` and
// `explain` print it.
#include "cli/decision_text.h"

#include <algorithm>

#include "report/audit.h"
#include "types/ascii.h"

namespace cudagate::cli {
namespace {

constexpr std::size_t kTextNodeNames = 5;  // node names shown per group in text

std::string verdict_word(Verdict verdict, const Paint& paint) {
  std::string word = ascii::upper(to_string(verdict));
  switch (verdict) {
    case Verdict::pass:
      return paint.green(word);
    case Verdict::fail:
      return paint.red(word);
    case Verdict::skip:
      return paint.dim(word);
    case Verdict::partial:
    case Verdict::unknown:
    case Verdict::no_candidates:
      return paint.yellow(word);
  }
  return word;
}

std::string outcome_word(Outcome outcome, const Paint& paint) {
  std::string word(to_string(outcome));
  switch (outcome) {
    case Outcome::compatible:
      return paint.green(word);
    case Outcome::incompatible:
      return paint.red(word);
    case Outcome::unknown:
      return paint.yellow(word);
  }
  return word;
}

std::string headline(const Decision& decision, const Paint& paint) {
  std::string line = verdict_word(decision.verdict, paint) + "  " +
                     paint.bold(workload_title(decision.resource)) + ": ";
  switch (decision.verdict) {
    case Verdict::skip:
      return line + (decision.reason.empty() ? "not checked" : decision.reason);
    case Verdict::no_candidates:
      return line +
             (decision.reason.empty() ? "no node of the inventory can take it" : decision.reason);
    default:
      break;
  }
  line += std::to_string(decision.compatible) + " of " + std::to_string(decision.candidates) +
          " candidate nodes can run it";
  std::size_t unknown = 0;
  for (const auto& group : decision.groups) {
    if (group.outcome == Outcome::unknown) unknown += group.count;
  }
  if (unknown != 0) line += ", " + std::to_string(unknown) + " unknown";
  return line;
}

void print_value(std::ostream& out, std::string_view name, const SourcedValue& value,
                 const Paint& paint, bool summarise = false) {
  out << "    " << name << std::string(name.size() < 9 ? 9 - name.size() : 1, ' ');
  if (value.value.empty()) {
    out << paint.dim("unknown") << '\n';
    return;
  }
  out << (summarise ? summarise_requirement(value.value) : value.value) << "  "
      << paint.dim("(" + value.source + ")") << '\n';
}

std::string facts_line(const GpuFacts& facts) {
  auto or_unknown = [](const std::string& s) { return s.empty() ? std::string("unknown") : s; };
  std::string line = "driver " + (facts.driver ? facts.driver->str() : "unknown") + ", max CUDA " +
                     max_cuda_text(facts) + ", compute capability " +
                     (facts.cc ? facts.cc->str() : "unknown") + ", product " +
                     or_unknown(facts.product);
  if (facts.devices.empty()) return line;
  // DRA devices: each kind, as the node's ResourceSlices publish it.
  line += "; DRA devices:";
  for (std::size_t i = 0; i < facts.devices.size(); ++i) {
    const DeviceKind& kind = facts.devices[i];
    const DeviceAttribute* product = kind.attribute(std::string(kNvidiaDraDriver) + "/productName");
    line += (i == 0 ? " " : ", ") + std::to_string(kind.count) + " " + kind.type + " " +
            (product != nullptr ? product->value : std::string("(no productName)"));
  }
  return line;
}

std::string node_list(const GroupDecision& group) {
  std::string out = std::to_string(group.count) + (group.count == 1 ? " node" : " nodes");
  if (group.nodes.empty()) return out;
  out += ": ";
  const std::size_t shown = std::min(group.nodes.size(), kTextNodeNames);
  for (std::size_t i = 0; i < shown; ++i) {
    out += i == 0 ? "" : ", ";
    out += group.nodes[i];
  }
  if (group.count > shown) out += ", +" + std::to_string(group.count - shown) + " more";
  return out;
}

}  // namespace

void print_decision_text(std::ostream& out, const Decision& decision, const Paint& paint) {
  out << headline(decision, paint) << '\n';
  for (const auto& container : decision.containers) {
    if (!container.gpu) continue;
    out << '\n' << "  container " << paint.bold(container.name);
    if (!container.image.empty()) out << "  " << container.image;
    out << '\n';
    print_value(out, "cuda", container.cuda, paint);
    print_value(out, "archs", container.archs, paint);
    print_value(out, "require", container.require, paint, /*summarise=*/true);
    if (!container.min_cc.value.empty()) print_value(out, "min cc", container.min_cc, paint);
  }
  for (const auto& group : decision.groups) {
    out << '\n'
        << "  " << outcome_word(group.outcome, paint) << "  " << node_list(group) << '\n'
        << "    " << facts_line(group.facts) << '\n';
    for (const auto& finding : group.findings) {
      out << "    " << (finding.unknown ? paint.yellow("? ") : paint.red("x ")) << "["
          << to_string(finding.rule) << "] " << finding.container << ": " << finding.message
          << '\n';
      if (!finding.fix.empty()) out << "      " << paint.bold("fix:") << ' ' << finding.fix << '\n';
    }
  }
  if (decision.unknown_image) {
    out << '\n'
        << "  note: nothing is known about the image's CUDA version or architectures; pass "
           "--cuda and --arch-list, or annotate the pod with cudagate.io/cuda-version and "
           "cudagate.io/arch-list\n";
  }
  if (decision.unknown_node) {
    out << '\n'
        << "  note: some candidate GPU nodes have no known driver version; run GPU Feature "
           "Discovery or label them cudagate.io/driver-version\n";
  }
  for (const std::string& note : decision.notes) {
    out << '\n' << "  " << paint.yellow("note:") << ' ' << note << '\n';
  }
  for (const std::string& claim : decision.claims) out << '\n' << "  claim: " << claim << '\n';
}

}  // namespace cudagate::cli
