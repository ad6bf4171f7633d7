// gpu-feature: the node's compute capability is at least the one the
// image's features need (bf16, fp8, or a minimum the image or pod states).
#include "policy/rules/rule_check.h"

namespace cudagate {

void check_gpu_feature(RuleCheck& c) {
  const ContainerMetadata& md = c.metadata();
  const GpuFacts& node = c.node();
  if (!md.min_cc.value) return;
  if (!node.cc) {
    c.cc_unknown(Rule::gpu_feature, "");
    return;
  }
  const ComputeCapability need = *md.min_cc.value;
  if (need <= *node.cc) return;
  c.fail(Rule::gpu_feature,
         "needs compute capability " + need.str() + " (" + md.min_cc.name + "); node has " +
             node.cc->str(),
         "run on a GPU of compute capability " + need.str() + " or newer");
}

const SourcedValue* gpu_feature_value(const ContainerDecision& container) {
  return &container.min_cc;
}

}  // namespace cudagate
