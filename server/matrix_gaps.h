#pragma once
// What the inventory names that the compatibility matrix does not know: a
// driver branch newer than its newest, a GPU product it has no entry for, a
// compute capability beyond the newest it can name. Such nodes are judged
// `unknown` where the gap matters; this tells the operator which values
// they are, at start and whenever the set changes (one log line per
// value), and exports them as cudagate_compat_db_unknown_nodes. Nodes whose
// facts cannot all be true (a driver past its GPU's last branch) are logged
// the same way and counted in cudagate_inventory_inconsistent_nodes.
//
// publish() may be called from any thread.

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "server/metrics.h"

namespace cudagate {

// "compat-db 0123456789abcdef (embedded), as of 2026-12-04; newest CUDA
// release 13.5 GA (13.5.0), driver branch 620 (CUDA 13.5), ...".
[[nodiscard]] std::string matrix_summary(const CompatDb& db, const std::string& source);

class MatrixGaps {
 public:
  void publish(const Inventory& inventory, const CompatDb& db, WebhookMetrics& metrics);

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::size_t> last_;  // (kind, value) -> nodes
  std::map<std::string, std::size_t> last_inconsistent_;             // why -> nodes
  std::string last_revision_;
};

}  // namespace cudagate
