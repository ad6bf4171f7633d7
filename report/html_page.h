#pragma once
// The building blocks of cudagate's HTML pages (the audit's matrix, the
// rollout plan's before/after matrix): one self-contained document with
// inline CSS and a Content-Security-Policy of default-src 'none', node
// group column headers, outcome cells and the verdict bar.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/objects/node.h"
#include "policy/rules/decision.h"

namespace cudagate {

// "<!DOCTYPE html>...<body>\n": the head with the policy, the shared style
// and `extra_css`, titled `title`.
[[nodiscard]] std::string html_page_start(std::string_view title, std::string_view extra_css = {});
[[nodiscard]] std::string html_page_end();

// What a node group column stands for: its count of nodes and the node
// pools whose next node has its facts, by name ("2 nodes", "NodePool gpu-t4
// (0 nodes now)", "2 nodes, NodePool gpu (a100, 2 nodes now)").
[[nodiscard]] std::string html_group_members(std::size_t nodes,
                                             const std::vector<std::string>& pools);

// A <th class="group"> for the nodes with `facts`: product, driver, max
// CUDA, compute capability, `members` (html_group_members()); `caption`,
// when given, as a first line ("before", "added").
[[nodiscard]] std::string html_group_header(const GpuFacts& facts, std::string_view members,
                                            std::string_view caption = {});

// The mark of an outcome: a check mark, a ballot x, "?".
[[nodiscard]] std::string_view html_outcome_mark(Outcome outcome);

// The hover text of a group's cell: the outcome, node count and each finding with its fix.
[[nodiscard]] std::string html_cell_title(const GroupDecision& group);

// A stacked bar of (verdict or change, count) as inline SVG; the colour of
// each comes from its name (pass, fail, breaks, heals, ...).
[[nodiscard]] std::string html_counts_bar(
    const std::vector<std::pair<std::string, std::size_t>>& counts, std::size_t total);

}  // namespace cudagate
