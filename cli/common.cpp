// What every `cudagate` subcommand shares: the common flags, loading inputs (an error ends the
// command with status 2), terminal colour and short summaries of NVIDIA_REQUIRE_* values.
#include "cli/common.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <tuple>
#include <vector>

#include "admission/admission.h"
#include "policy/inventory/inventory_pools.h"
#include "policy/rules/evaluate.h"
#include "policy/rules/images_wanted.h"
#include "registry/registry_client.h"
#include "server/logging.h"

namespace cudagate::cli {
namespace {

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_option("--config", options.config, "Policy file (YAML or JSON, docs/contract.md §4)")
      ->type_name("FILE");
  command
      .add_option("--nodes", options.nodes,
                  "Node inventory: the output of kubectl get nodes -o json|yaml")
      ->type_name("FILE");
  command
      .add_option("--compat-db", options.compat_db,
                  "Compatibility matrix file replacing the embedded one")
      ->type_name("FILE");
  command.add_option("--log-level", options.log_level, "Log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  command.add_option("--log-format", options.log_format, "Log line format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void setup_logging(const CommonOptions& options) {
  cudagate::setup_logging(options.log_level, options.log_format);
}

Expected<CompatDb> load_compat_db_option(const CommonOptions& options) {
  return load_compat_db_file(options.compat_db);
}

Expected<Policy> load_policy_option(const CommonOptions& options, const CompatDb& db) {
  return load_policy_file(options.config, db);
}

Inventory with_policy_pools(Inventory inventory, const Policy& policy, const CompatDb& db) {
  if (policy.node_pools.empty()) return inventory;
  auto shared = std::make_shared<const Inventory>(std::move(inventory));
  return *cudagate::with_pools(std::move(shared), policy.node_pools, db);
}

void print_error(const Error& error) {
  std::cout.flush();
  std::cerr << "cudagate: error: " << one_line(error.str()) << '\n' << std::flush;
}

void fail(const Error& error) {
  print_error(error);
  throw CLI::RuntimeError(kExitUsage);
}

void exit_with(int status) {
  if (status != kExitOk) throw CLI::RuntimeError(status);
}

bool stdout_wants_colour() {
  if (::isatty(STDOUT_FILENO) == 0) return false;
  const char* no_colour = std::getenv("NO_COLOR");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::string_view(term) != "dumb";
}

std::string Paint::wrap(std::string_view text, std::string_view code) const {
  if (!enabled_ || text.empty()) return std::string(text);
  std::string out = "\x1b[";
  out += code;
  out += 'm';
  out += text;
  out += "\x1b[0m";
  return out;
}

namespace {

std::string summarise_one_requirement(const std::string& text) {
  std::istringstream words(text);
  std::vector<std::string> plain;
  std::vector<std::pair<std::vector<int>, std::string>> drivers;  // (numeric, text), for sorting
  std::vector<std::string> brands;
  std::size_t qualified = 0;
  std::string word;
  while (words >> word) {
    if (word.rfind("brand=", 0) != 0) {
      plain.push_back(word);
      continue;
    }
    ++qualified;
    const auto comma = word.find(',');
    const std::string brand = word.substr(6, comma == std::string::npos ? comma : comma - 6);
    if (std::find(brands.begin(), brands.end(), brand) == brands.end()) brands.push_back(brand);
    const auto at = word.find("driver>=");
    if (at == std::string::npos) continue;
    const auto end = word.find(',', at);
    const std::string floor = word.substr(at + 8, end == std::string::npos ? end : end - at - 8);
    std::vector<int> numeric;
    std::istringstream parts(floor);
    std::string part;
    while (std::getline(parts, part, '.')) numeric.push_back(std::atoi(part.c_str()));
    drivers.emplace_back(std::move(numeric), floor);
  }
  if (qualified < 4 || drivers.empty()) return text;
  std::sort(drivers.begin(), drivers.end());
  drivers.erase(std::unique(drivers.begin(), drivers.end()), drivers.end());
  std::string out;
  for (const auto& p : plain) out += p + ", ";
  out += "or forward compatibility on drivers ";
  for (std::size_t i = 0; i < drivers.size(); ++i)
    out += (i == 0 ? "" : ", ") + drivers[i].second + "+";
  out += " (brands ";
  if (brands.size() <= 4) {
    for (std::size_t i = 0; i < brands.size(); ++i) out += (i == 0 ? "" : ", ") + brands[i];
  } else {
    out += brands[0] + ", " + brands[1] + " and " + std::to_string(brands.size() - 2) + " more";
  }
  out += ")";
  return out;
}

}  // namespace

std::string summarise_requirement(const std::string& text) {
  // Several variables arrive joined by "; " (RequirementSet::str()).
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = text.find("; ", pos);
    out +=
        summarise_one_requirement(text.substr(pos, next == std::string::npos ? next : next - pos));
    if (next == std::string::npos) return out;
    out += "; ";
    pos = next + 2;
  }
}
std::vector<RegistryFacts> registry_facts(const std::vector<const Workload*>& workloads,
                                          const Policy& policy, const Inventory& inventory,
                                          bool offline) {
  std::vector<RegistryFacts> facts(workloads.size());
  if (offline || !policy.registry.enabled) return facts;
  const std::string fleet = fleet_platform(inventory);
  std::vector<ImageWanted> wanted;
  std::vector<std::size_t> wanted_by;  // the workload of each
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const Workload& workload = *workloads[i];
    for (ImageWanted& image :
         images_wanted(workload, gpu_containers(workload, policy), fleet, policy)) {
      wanted.push_back(std::move(image));
      wanted_by.push_back(i);
    }
  }
  if (wanted.empty()) return facts;
  // One lookup per image and platform, however many workloads name it.
  std::vector<ImageWanted> distinct = wanted;
  std::sort(distinct.begin(), distinct.end(), [](const ImageWanted& a, const ImageWanted& b) {
    return std::tie(a.image, a.platform) < std::tie(b.image, b.platform);
  });
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const auto answers = value_or_fail(look_up_once(policy.registry, distinct));
  for (std::size_t k = 0; k < wanted.size(); ++k) {
    const auto it =
        std::lower_bound(distinct.begin(), distinct.end(), wanted[k],
                         [](const ImageWanted& a, const ImageWanted& b) {
                           return std::tie(a.image, a.platform) < std::tie(b.image, b.platform);
                         });
    const auto& answer = answers[static_cast<std::size_t>(it - distinct.begin())];
    if (answer.config) {
      facts[wanted_by[k]].add(wanted[k].image, answer.config);
    } else {
      spdlog::debug("registry: {} ({}): {}", wanted[k].image, wanted[k].platform, answer.reason);
    }
  }
  return facts;
}

kube::ClusterConfig cluster_config_or_fail(bool in_cluster, const std::string& kubeconfig) {
  const auto env = kube::process_environment();
  if (in_cluster) {
    return value_or_fail(kube::in_cluster_config(env, std::string(kube::kServiceAccountDir)));
  }
  const std::string path = value_or_fail(kube::kubeconfig_path(kubeconfig, env));
  return value_or_fail(kube::load_kubeconfig(path));
}

}  // namespace cudagate::cli
