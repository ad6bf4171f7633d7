// Logging and exporting the values the inventory names that the matrix does not know.
#include "server/matrix_gaps.h"

#include <spdlog/spdlog.h>

#include <vector>

#include "policy/objects/node.h"

namespace cudagate {

std::string matrix_summary(const CompatDb& db, const std::string& source) {
  std::string out = "compat-db " + db.revision + " (" + source + "), as of " +
                    (db.as_of.empty() ? std::string("an unknown date") : db.as_of);
  const char* separator = "; newest ";
  for (const auto& [what, entry] : newest_entries(db)) {
    out += separator;
    out += what;
    out += ' ';
    out += entry;
    separator = ", ";
  }
  return out;
}

void MatrixGaps::publish(const Inventory& inventory, const CompatDb& db, WebhookMetrics& metrics) {
  // Facts are per group: each group's gaps count its members.
  std::map<std::pair<std::string, std::string>, std::size_t> gaps;
  std::map<std::string, std::size_t> inconsistent;
  std::size_t inconsistent_nodes = 0;
  for (const NodeGroup& group : inventory.groups()) {
    const std::size_t members = group.members.count();
    if (members == 0) continue;
    for (auto& gap : matrix_gaps(group.facts, db)) gaps[std::move(gap)] += members;
    if (!group.facts.inconsistency.empty()) {
      inconsistent[group.facts.inconsistency] += members;
      inconsistent_nodes += members;
    }
  }
  const std::lock_guard lock(mutex_);
  const bool new_matrix = db.revision != last_revision_;
  for (const auto& [gap, nodes] : gaps) {
    const auto before = last_.find(gap);
    if (!new_matrix && before != last_.end()) continue;
    spdlog::warn(
        "{} nodes have {} {}, which {} does not know: they are judged unknown where it "
        "matters; update cudagate or give --compat-db",
        nodes,
        gap.first == "driver_branch" ? std::string("driver branch")
        : gap.first == "product"     ? std::string("GPU product")
                                     : std::string("compute capability"),
        gap.second, db.describe());
  }
  for (const auto& [why, nodes] : inconsistent) {
    if (!new_matrix && last_inconsistent_.find(why) != last_inconsistent_.end()) continue;
    spdlog::warn("{} nodes are judged unknown: {}", nodes, why);
  }
  metrics.matrix_gaps(gaps);
  metrics.inconsistent_nodes(inconsistent_nodes);
  last_ = std::move(gaps);
  last_inconsistent_ = std::move(inconsistent);
  last_revision_ = db.revision;
}

}  // namespace cudagate
