#pragma once
// The embedded compatibility matrix, loaded once for every test and fuzzer
// that judges against the shipped data. It needs no fixture folder, so the
// fuzz targets, which have none, share it with the unit tests.

#include <stdexcept>
#include <utility>

#include "compat-db/compat_db.h"

namespace cudagate::test_support {

// The embedded matrix; throws when it does not load (its own tests say why).
inline const CompatDb& db() {
  static const CompatDb loaded = [] {
    auto d = load_compat_db(embedded_compat_db_files());
    if (!d) throw std::runtime_error(d.error().str());
    return std::move(*d);
  }();
  return loaded;
}

}  // namespace cudagate::test_support
