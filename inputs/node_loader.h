#pragma once
// Loading the node inventory file (--nodes) fast and in little memory.
//
// `kubectl get nodes -o json` of a large fleet is tens of megabytes (about
// 4.5 KB a node). It is read in chunks; each item of the list is parsed on
// its own with simdjson and read by the same mapping as every node
// (policy/objects/node_reader.h), and the nodes are indexed (InventoryBuilder) on a
// second thread while the next ones are read, so the list never sits in
// memory whole, as text or as a document. Anything else (YAML,
// a single Node, a shape this reader does not take, any error) is read by
// load_inventory_file, which reads the whole file and gives the errors:
// the result, or the error, is the same either way.

#include <optional>
#include <string>

#include "compat-db/compat_db.h"
#include "policy/inventory/inventory.h"
#include "types/expected.h"

namespace cudagate {

// The inventory of a JSON node list (NodeList or List) read item by item;
// nullopt when the file is not one this reader takes, or holds anything it
// would have to report (the caller then reads it the ordinary way).
[[nodiscard]] std::optional<Inventory> load_node_list_streaming(const std::string& path,
                                                                const CompatDb& db);

// load_node_list_streaming, else load_inventory_file; then the memory
// the reading freed is returned (release_free_memory).
Expected<Inventory> load_inventory(const std::string& path, const CompatDb& db);

// Gives the heap's free memory back to the system and merges its free
// chunks (glibc's malloc_trim; nothing elsewhere). For after a large
// inventory was read, or replaced.
void release_free_memory();

}  // namespace cudagate
