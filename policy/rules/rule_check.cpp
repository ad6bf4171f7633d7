// Findings of one container on one group, worded alike for every rule.
#include "policy/rules/rule_check.h"

#include <algorithm>

namespace cudagate {
namespace {

constexpr std::string_view kFixCcUnknown =
    "label the nodes with cudagate.io/compute-capability or cudagate.io/gpu-product, or run GPU "
    "Feature Discovery";

}  // namespace

void RuleCheck::fail(Rule rule, std::string message, std::string fix) {
  result_.outcome = Outcome::incompatible;
  result_.findings.push_back(
      Finding{rule, std::string(container_), std::move(message), std::move(fix)});
}

void RuleCheck::unknown(Rule rule, std::string message, std::string_view fix) {
  if (result_.outcome == Outcome::compatible) result_.outcome = Outcome::unknown;
  result_.findings.push_back(
      Finding{rule, std::string(container_), std::move(message), std::string(fix), true});
}

void RuleCheck::note(std::string message) {
  message = "container \"" + std::string(container_) + "\": " + message;
  if (std::find(result_.notes.begin(), result_.notes.end(), message) == result_.notes.end()) {
    result_.notes.push_back(std::move(message));
  }
}

void RuleCheck::cc_unknown(Rule rule, const std::string& prefix) {
  if (!node_.product.empty() && db_.product_by_label(node_.product) == nullptr) {
    unknown(rule,
            prefix + "the node's GPU " + node_.product + " is a product " + db_.describe() +
                " does not know, and no label gives its compute capability",
            std::string(kFixUpdateMatrix) + ", or " + std::string(kFixCcUnknown));
    return;
  }
  unknown(rule, prefix + "the node's compute capability is unknown", kFixCcUnknown);
}

std::string RuleCheck::product_suffix() const {
  return node_.product.empty() ? std::string() : " (" + node_.product + ")";
}

bool RuleCheck::beyond_known_cuda(CudaVersion cuda) const {
  const auto newest = db_.newest_cuda();
  return newest && *newest < cuda;
}

}  // namespace cudagate
