#pragma once
// Small compat-db files the loader tests start from: a valid matrix with one
// section a line and every required section filled, the instance tables in
// a file of their own, and the edits that break them one field at a time.
// Each test changes one place of a valid file, so that the error it expects
// is the only one in the file.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "compat-db/compat_db.h"
#include "types/expected.h"
#include "types/version.h"

namespace cudagate::test_support {

// One section a line, so that errors at a line are easy to place.
inline constexpr std::string_view kValidMatrix = R"({"schemaVersion": 1,
"cudaReleases": [{"version": "12.4.1", "label": "12.4 Update 1", "minDriver": "550.54.15", "source": "s"}, {"version": "12.4", "label": "12.4 GA", "minDriver": "550.54.14", "source": "s"}],
"minorVersionCompat": [{"cudaMajor": 12, "minDriver": "525.60.13", "source": "s"}],
"driverBranches": [{"branch": 550, "cuda": "12.4", "source": "s"}, {"branch": 535, "cuda": "12.2", "designation": "LTSB", "source": "s"}],
"cudaTargets": [{"since": "12.0", "all": ["8.0", "9.0"], "allMajor": ["8.0", "9.0"], "archSpecific": ["9.0"], "source": "s"}],
"products": [{"name": "T4", "aliases": ["Tesla T4"], "gfdNames": ["Tesla-T4"], "computeCapability": "7.5", "family": "turing", "brand": "unknown", "datacenter": true, "source": "s"}],
"cloudAccelerators": [{"label": "cloud.google.com/gke-accelerator", "value": "nvidia-tesla-t4", "product": "T4", "source": "s"}],
"architectures": [{"name": "Turing", "archList": "7.5+PTX", "source": "s"}, {"name": "Hopper", "archList": "9.0", "cudaBefore": "12.0", "source": "s"}, {"name": "Hopper", "archList": "9.0+PTX", "cudaSince": "12.0", "source": "s"}],
"tegraCapabilities": [{"computeCapability": "8.7", "devices": "Jetson AGX Orin", "source": "s"}],
"cudaImages": [{"cudaVersion": "12.4.1", "requireCuda": "cuda>=12.4 brand=tesla,driver>=470,driver<471", "source": "s"}],
"ngcReleases": [{"release": "24.01", "cudaVersion": "12.3.2", "minDriver": "545", "forwardCompat": ["470.57"], "minComputeCapability": "6.0", "source": "s"}],
"imageRules": [{"repositories": ["*"], "kind": "cuda-tag", "source": "s"}]}
)";

// The instance tables in a file of their own, over kValidMatrix's products
// with an L4 added (with_l4()): one line a section.
inline constexpr std::string_view kInstanceTables = R"({"schemaVersion": 1,
"instanceTypes": [{"provider": "aws", "instanceType": "g4dn.xlarge", "product": "Tesla-T4", "gpus": 1, "source": "s"}, {"provider": "gcp", "instanceType": "g2-standard-96", "product": "L4", "gpus": 8, "source": "s"}],
"instanceGpuLabels": [{"label": "example.com/gpu", "value": "any", "products": ["T4", "NVIDIA-L4", "Tesla-T4"], "source": "s"}, {"label": "example.com/gpu", "value": "t4", "product": "Tesla-T4", "source": "s"}]}
)";

// `base` with its first `from` replaced by `to`; a test whose `from` is not
// in `base` fails, since it would test the file unchanged.
inline std::string replaced_in(std::string_view base, std::string_view from, std::string_view to) {
  std::string text(base);
  const auto at = text.find(from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "the test text has no " << from;
    return text;
  }
  text.replace(at, from.size(), to);
  return text;
}

// kValidMatrix with its first `from` replaced by `to`.
inline std::string replaced(std::string_view from, std::string_view to) {
  return replaced_in(kValidMatrix, from, to);
}

// kInstanceTables with its first `from` replaced by `to`.
inline std::string instances_replaced(std::string_view from, std::string_view to) {
  return replaced_in(kInstanceTables, from, to);
}

// kValidMatrix with an L4 among its products, for kInstanceTables to name.
inline std::string with_l4() {
  return replaced("\"products\": [",
                  "\"products\": [{\"name\": \"L4\", \"gfdNames\": [\"NVIDIA-L4\"], "
                  "\"computeCapability\": \"8.9\", \"family\": \"ada-lovelace\", "
                  "\"datacenter\": true, \"source\": \"s\"}, ");
}

// `text` loaded as the one file "test.json".
inline Expected<CompatDb> load_test_json(const std::string& text) {
  return load_compat_db({CompatDbFile{"test.json", text}});
}

// A file that must be refused, and the whole Error::str() it is refused with.
struct BadMatrixRow {
  const char* name;
  std::string text;
  std::string error;
};

inline std::vector<std::string> capability_strs(const std::vector<ComputeCapability>& ccs) {
  std::vector<std::string> out;
  for (const auto& cc : ccs) out.push_back(cc.str());
  return out;
}

inline std::vector<std::string> product_names(const std::vector<const Product*>& products) {
  std::vector<std::string> out;
  for (const Product* product : products) out.push_back(product->name);
  return out;
}

}  // namespace cudagate::test_support
