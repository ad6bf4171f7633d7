#pragma once
// A decision (docs/contract.md §7.1) as text: the verdict line, per GPU
// container the values used and their sources, per group of nodes the
// outcome, the findings and their fixes, and notes on what is unknown.

#include <ostream>

#include "cli/common.h"
#include "policy/rules/decision.h"

namespace cudagate::cli {

void print_decision_text(std::ostream& out, const Decision& decision, const Paint& paint);

}  // namespace cudagate::cli
