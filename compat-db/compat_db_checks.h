#pragma once
// Private to compat-db/: the checks that look at more than one entry, once
// every entry has been read on its own (compat_db_reader.h).
//
// Contract: each check returns the first problem it finds, or nullopt. The
// checks of one section's entries run as that section is read, and their
// Error's `where` is the path inside the file that gave the section
// ("products[4].aliases[0]"); the loader prepends the file name. The checks
// across sections run once every file is read, since a section may name
// entries of a section that another file gives: check_instance_products()
// names the file itself, the others leave that to the loader.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "compat-db/compat_db_reader.h"
#include "types/expected.h"

namespace cudagate::compat_db_reader {

// --- Within one section ------------------------------------------------------

// The first two entries whose key(entry) are equal; keys compare as given.
template <class T, class Key>
std::optional<Error> unique(const std::vector<T>& items, std::string_view section,
                            std::string_view field, Key key) {
  using K = decltype(key(items.front()));
  std::map<K, std::size_t> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto [it, inserted] = seen.emplace(key(items[i]), i);
    if (!inserted) {
      return Error{field_path(index_path(section, i), field),
                   "repeats " + index_path(section, it->second) + "; each entry must be unique"};
    }
  }
  return std::nullopt;
}

// Names, aliases, GFD names and GFD prefixes unique ignoring case, as they
// are looked up.
[[nodiscard]] std::optional<Error> check_products(const std::vector<Product>& products);

// No newer branch reporting an older CUDA than an older branch.
[[nodiscard]] std::optional<Error> check_branch_order(const std::vector<DriverBranch>& branches);

// Entries of one name spelt alike, for CUDA ranges that do not overlap.
[[nodiscard]] std::optional<Error> check_architectures(const std::vector<NamedArchitecture>& archs);

// Builds of one CUDA variant for torch ranges that do not overlap.
[[nodiscard]] std::optional<Error> check_torch_builds(const std::vector<TorchBuild>& builds);

// Each capability in one entry at most.
[[nodiscard]] std::optional<Error> check_last_driver_branches(
    const std::vector<LastDriverBranch>& entries);

// --- Across sections ---------------------------------------------------------

// The product an instance type or GPU-name label names: a products[].name
// or one of a product's gfdNames, spelt exactly; nullptr when none is.
// check_instance_products() and CompatDb::products_by_instance_label() both
// resolve names with it, so that a name the check accepts is one the lookup
// finds.
[[nodiscard]] const Product* named_product(const std::vector<Product>& products,
                                           std::string_view name);

// Every cloud accelerator names a products[].name.
[[nodiscard]] std::optional<Error> check_cloud_products(const CompatDb& db);

// Every instance type and GPU-name label names a product (named_product());
// `file` maps "instanceTypes" and "instanceGpuLabels", when db has entries
// of them, to the file that gave them, which the Error names.
[[nodiscard]] std::optional<Error> check_instance_products(
    const CompatDb& db, const std::map<std::string, std::string, std::less<>>& file);

// A pytorch-tag image rule has torchBuilds entries to read.
[[nodiscard]] std::optional<Error> check_image_rules(const CompatDb& db);

}  // namespace cudagate::compat_db_reader
