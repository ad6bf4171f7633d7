// cudagate: one binary, one subcommand per job (docs/contract.md §1).
// main() only wires the subcommands and maps the outcome to the exit
// status: 0 success, 1 a policy failure was found, 2 bad usage or
// unreadable input.

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/common.h"

namespace {

// CLI11 reports a mistyped command word as "A subcommand is required"; name
// the word and the commands it could have been instead. Only leading command
// words are looked at (flags come after them).
bool check_command_words(const CLI::App& app, int argc, char** argv, int index) {
  const auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  if (subcommands.empty()) return true;
  std::string known;
  for (const CLI::App* sub : subcommands) known += (known.empty() ? "" : ", ") + sub->get_name();
  std::string command = "cudagate";
  for (int i = 1; i < index; ++i) command += std::string(" ") + argv[i];

  const std::string_view word = index < argc ? argv[index] : "";
  if (word == "-h" || word == "--help") return true;
  if (word.empty() || word.front() == '-') {
    if (app.get_require_subcommand_min() == 0) return true;
    cudagate::cli::print_error(cudagate::Error{command, "expected a command: one of " + known});
    return false;
  }
  for (const CLI::App* sub : subcommands) {
    if (sub->get_name() == word) return check_command_words(*sub, argc, argv, index + 1);
  }
  cudagate::cli::print_error(cudagate::Error{
      command, "unknown command \"" + std::string(word) + "\": expected one of " + known});
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cudagate keeps GPU pods off nodes that cannot run them.", "cudagate"};
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::simple);

  cudagate::add_serve_command(app);
  cudagate::add_audit_command(app);
  cudagate::add_plan_command(app);
  cudagate::add_explain_command(app);
  cudagate::add_check_command(app);
  cudagate::add_db_command(app);
  cudagate::add_scan_command(app);
  cudagate::add_version_command(app);
  cudagate::add_api_calls_command(app);

  if (!check_command_words(app, argc, argv, 1)) return cudagate::cli::kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: usage on stdout, status 0
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command has printed its outcome
  } catch (const CLI::ParseError& e) {
    cudagate::cli::print_error(cudagate::Error{"", e.what()});
    return cudagate::cli::kExitUsage;
  } catch (const std::exception& e) {
    cudagate::cli::print_error(cudagate::Error{"internal error", e.what()});
    return cudagate::cli::kExitUsage;
  }
  return cudagate::cli::kExitOk;
}
