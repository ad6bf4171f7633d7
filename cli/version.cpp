// `cudagate version`: what was built, how, and which compatibility matrix it
// carries, so that a report or a bug can name the exact build.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "compat-db/compat_db.h"

#ifndef CUDAGATE_VERSION
#define CUDAGATE_VERSION "0.0.0-unknown"
#endif

namespace cudagate {
namespace {

struct VersionOptions {
  cli::CommonOptions common;
  std::string output = "text";
};

// The CMake build type when the build passes it in, else what the compiler
// flags reveal.
std::string build_type() {
#if defined(CUDAGATE_BUILD_TYPE)
  return CUDAGATE_BUILD_TYPE;
#elif defined(NDEBUG)
  return "Release";
#else
  return "Debug";
#endif
}

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

std::vector<std::string> sanitizers() {
  std::vector<std::string> out;
#if defined(__SANITIZE_ADDRESS__)
  out.emplace_back("address");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  out.emplace_back("address");
#endif
#endif
#if defined(__has_feature)
#if __has_feature(undefined_behavior_sanitizer)
  out.emplace_back("undefined");
#endif
#endif
  return out;
}

nlohmann::ordered_json matrix_json(const CompatDb& db, const std::string& source) {
  nlohmann::ordered_json newest = nlohmann::ordered_json::object();
  for (const auto& [what, entry] : newest_entries(db)) newest[what] = entry;
  return {{"revision", db.revision},
          {"source", source},
          {"asOf",
           db.as_of.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(db.as_of)},
          {"newest", std::move(newest)}};
}

void run_version(const VersionOptions& options) {
  cli::setup_logging(options.common);
  const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));
  const std::string& revision = db.revision;
  const std::string source =
      options.common.compat_db.empty() ? "embedded" : display_name(options.common.compat_db);
  const auto sans = sanitizers();
  if (options.output == "json") {
    const nlohmann::ordered_json out = {
        {"version", CUDAGATE_VERSION},
        {"buildType", build_type()},
        {"compiler", compiler()},
        {"sanitizers", sans},
        {"compatDb", matrix_json(db, source)},
    };
    std::cout << out.dump(2) << '\n';
    return;
  }
  std::string build = build_type();
  for (const auto& s : sans) build += ", " + s + " sanitizer";
  std::cout << "cudagate " << CUDAGATE_VERSION << '\n'
            << "build:     " << build << '\n'
            << "compiler:  " << compiler() << '\n'
            << "compat-db: " << revision << " (" << source << ")\n"
            << "as of:     " << (db.as_of.empty() ? std::string("undated") : db.as_of) << '\n';
  for (const auto& [what, entry] : newest_entries(db)) {
    std::cout << "newest " << what << ": " << entry << '\n';
  }
}

}  // namespace

void add_version_command(CLI::App& app) {
  auto options = std::make_shared<VersionOptions>();
  CLI::App* version =
      app.add_subcommand("version", "Print the version, the build and the compat-db revision");
  version->add_option("-o,--output", options->output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cli::add_common_options(*version, options->common);
  version->callback([options] { run_version(*options); });
}

}  // namespace cudagate
