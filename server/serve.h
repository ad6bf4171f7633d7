#pragma once
// The `cudagate serve` subcommand: the HTTPS admission webhook (SPEC 5).
//
// add_serve_command() registers the subcommand, its flags and its callback on
// `app`. The callback loads the compatibility matrix, the policy, the node
// inventory and the TLS certificate, serves until SIGTERM or SIGINT, drains
// in-flight requests within --shutdown-grace and returns normally (exit 0).
// A startup failure (unreadable or invalid file, bad flag value, address in
// use) is logged with the file and field it concerns and raised as
// CLI::RuntimeError(2), which CLI::App::exit() turns into exit status 2.

#include <CLI/CLI.hpp>

namespace cudagate {

void add_serve_command(CLI::App& app);

}  // namespace cudagate
