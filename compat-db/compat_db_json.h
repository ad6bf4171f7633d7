#pragma once
// The compatibility matrix written back as JSON in the shape of the input
// files (compat-db/README.md): one document {"schemaVersion": 1, "<section>":
// [...], ...} holding every section, so that
//   cudagate db show --output json > x.json && cudagate db lint x.json
// passes and `--compat-db x.json` reproduces the same matrix. Optional
// fields that are empty or absent in the matrix are left out. Keys keep the
// order of the input files so that a person can read the output.

#include <nlohmann/json.hpp>

#include "compat-db/compat_db.h"

namespace cudagate {

[[nodiscard]] nlohmann::ordered_json compat_db_to_json(const CompatDb& db);

}  // namespace cudagate
