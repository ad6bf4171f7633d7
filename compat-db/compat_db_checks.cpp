// The compat-db checks that look at more than one entry: repeats and contradictions within a
// section, and names one section gives that another must hold.
#include "compat-db/compat_db_checks.h"

#include <algorithm>
#include <utility>

#include "types/ascii.h"
#include "types/quote.h"

namespace cudagate::compat_db_reader {
namespace {

Error unknown_product(const std::string& where, const std::string& name) {
  return Error{where, "no product is named " + quote(name) +
                          " (use a products[].name or one of its gfdNames, exactly)"};
}

}  // namespace

// --- Within one section ------------------------------------------------------

// Names and aliases are looked up ignoring case, so they must be unique that way.
std::optional<Error> check_products(const std::vector<Product>& products) {
  std::map<std::string, std::string> names;      // lower-case name or alias -> where
  std::map<std::string, std::string> gfd_names;  // lower-case GFD name -> where
  std::map<std::string, std::string> prefixes;   // lower-case GFD prefix -> where
  const auto claim = [](std::map<std::string, std::string>& taken, const std::string& value,
                        const std::string& where) -> std::optional<Error> {
    const auto [it, inserted] = taken.emplace(ascii::lower(value), where);
    if (!inserted) {
      return Error{
          where, quote(value) + " is already used by " + it->second + " (compared ignoring case)"};
    }
    return std::nullopt;
  };
  for (std::size_t i = 0; i < products.size(); ++i) {
    const Product& p = products[i];
    const std::string at = index_path("products", i);
    if (auto e = claim(names, p.name, at + ".name")) return e;
    for (std::size_t j = 0; j < p.aliases.size(); ++j) {
      if (auto e = claim(names, p.aliases[j], index_path(at + ".aliases", j))) return e;
    }
    for (std::size_t j = 0; j < p.gfd_names.size(); ++j) {
      if (auto e = claim(gfd_names, p.gfd_names[j], index_path(at + ".gfdNames", j))) return e;
    }
    for (std::size_t j = 0; j < p.gfd_prefixes.size(); ++j) {
      if (auto e = claim(prefixes, p.gfd_prefixes[j], index_path(at + ".gfdPrefixes", j))) return e;
    }
  }
  return std::nullopt;
}

// A newer branch never reports an older CUDA; a row that does is a typo.
std::optional<Error> check_branch_order(const std::vector<DriverBranch>& branches) {
  std::vector<std::size_t> order(branches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return branches[a].branch < branches[b].branch;
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const DriverBranch& older = branches[order[k - 1]];
    const DriverBranch& newer = branches[order[k]];
    if (newer.cuda < older.cuda) {
      return Error{index_path("driverBranches", order[k]) + ".cuda",
                   "branch " + std::to_string(newer.branch) + " reports CUDA " + newer.cuda.str() +
                       ", older than branch " + std::to_string(older.branch) + "'s CUDA " +
                       older.cuda.str()};
    }
  }
  return std::nullopt;
}

// A name may have several entries, one per meaning, spelt alike and for
// CUDA ranges that do not overlap, so that one CUDA release reads one meaning.
std::optional<Error> check_architectures(const std::vector<NamedArchitecture>& archs) {
  for (std::size_t i = 0; i < archs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (!ascii::iequals(archs[i].name, archs[j].name)) continue;
      const std::string at = index_path("architectures", i) + ".name";
      if (archs[i].name != archs[j].name) {
        return Error{at, quote(archs[i].name) + " is spelt differently in " +
                             index_path("architectures", j) +
                             "; PyTorch compares names case-sensitively"};
      }
      const NamedArchitecture& a = archs[i];
      const NamedArchitecture& b = archs[j];
      const bool a_before_b = a.cuda_before && b.cuda_since && !(*b.cuda_since < *a.cuda_before);
      const bool b_before_a = b.cuda_before && a.cuda_since && !(*a.cuda_since < *b.cuda_before);
      if (!a_before_b && !b_before_a) {
        return Error{at, "repeats " + index_path("architectures", j) +
                             " for the same CUDA releases; entries of one name need "
                             "cudaSince/cudaBefore ranges that do not overlap"};
      }
    }
  }
  return std::nullopt;
}

// One variant's builds cover each torch release once.
std::optional<Error> check_torch_builds(const std::vector<TorchBuild>& builds) {
  for (std::size_t i = 0; i < builds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const TorchBuild& a = builds[i];
      const TorchBuild& b = builds[j];
      if (a.cuda != b.cuda) continue;
      const bool a_before_b = a.torch_before && !(b.torch_since < *a.torch_before);
      const bool b_before_a = b.torch_before && !(a.torch_since < *b.torch_before);
      if (!a_before_b && !b_before_a) {
        return Error{index_path("torchBuilds", i) + ".torchSince",
                     "repeats " + index_path("torchBuilds", j) +
                         " for the same torch releases of " + a.cuda_variant +
                         "; entries need torchSince/torchBefore ranges that do not overlap"};
      }
    }
  }
  return std::nullopt;
}

// A capability's support ends once.
std::optional<Error> check_last_driver_branches(const std::vector<LastDriverBranch>& entries) {
  std::map<std::pair<int, int>, std::size_t> seen;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (std::size_t k = 0; k < entries[i].capabilities.size(); ++k) {
      const ComputeCapability cc = entries[i].capabilities[k];
      const auto [it, inserted] = seen.emplace(std::make_pair(cc.major(), cc.minor()), i);
      if (!inserted) {
        return Error{index_path(index_path("lastDriverBranches", i) + ".computeCapabilities", k),
                     cc.str() + " is already in " + index_path("lastDriverBranches", it->second) +
                         "; each capability's support ends once"};
      }
    }
  }
  return std::nullopt;
}

// --- Across sections ---------------------------------------------------------

const Product* named_product(const std::vector<Product>& products, std::string_view name) {
  for (const Product& product : products) {
    if (product.name == name) return &product;
  }
  for (const Product& product : products) {
    if (std::find(product.gfd_names.begin(), product.gfd_names.end(), name) !=
        product.gfd_names.end()) {
      return &product;
    }
  }
  return nullptr;
}

// Cloud labels name products by Product::name, which may live in another file.
std::optional<Error> check_cloud_products(const CompatDb& db) {
  for (std::size_t i = 0; i < db.cloud_accelerators.size(); ++i) {
    const std::string& name = db.cloud_accelerators[i].product;
    const bool known = std::any_of(db.products.begin(), db.products.end(),
                                   [&](const Product& p) { return p.name == name; });
    if (!known) {
      return Error{index_path("cloudAccelerators", i) + ".product",
                   "no product is named " + quote(name) + " (use a products[].name)"};
    }
  }
  return std::nullopt;
}

// Instance types and GPU-name labels name products, which may live in another
// file; `file` says which file gave each of the two sections.
std::optional<Error> check_instance_products(
    const CompatDb& db, const std::map<std::string, std::string, std::less<>>& file) {
  for (std::size_t i = 0; i < db.instance_types.size(); ++i) {
    const std::string& name = db.instance_types[i].product;
    if (named_product(db.products, name) == nullptr) {
      return unknown_product(index_path("instanceTypes", i) + ".product", name)
          .within(file.find("instanceTypes")->second);
    }
  }
  for (std::size_t i = 0; i < db.instance_gpu_labels.size(); ++i) {
    const std::vector<std::string>& names = db.instance_gpu_labels[i].products;
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (named_product(db.products, names[j]) == nullptr) {
        return unknown_product(index_path(index_path("instanceGpuLabels", i) + ".products", j),
                               names[j])
            .within(file.find("instanceGpuLabels")->second);
      }
    }
  }
  return std::nullopt;
}

// A pytorch-tag rule reads torchBuilds, which may live in another file or
// be left out: then the rule has nothing to read.
std::optional<Error> check_image_rules(const CompatDb& db) {
  for (std::size_t i = 0; i < db.image_rules.size(); ++i) {
    if (db.image_rules[i].kind == "pytorch-tag" && db.torch_builds.empty()) {
      return Error{index_path("imageRules", i) + ".kind",
                   "\"pytorch-tag\" reads the arch lists of torchBuilds, which has no entry"};
    }
  }
  return std::nullopt;
}

}  // namespace cudagate::compat_db_reader
