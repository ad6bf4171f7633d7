#pragma once
// One `cudagate` subcommand run in the test's own process, as the binary
// runs it (cli/main.cpp), for the unit tests of the command line
// (tests/cli/); the end-to-end tests (tests/e2e/) start the binary itself.
//
// run_cli(add, args, options):
// - builds a CLI::App as main() does (one subcommand required, CLI11's
//   simple failure message), registers the command(s) of `add` (one of the
//   add_*_command functions of cli/commands.h), parses "cudagate" + `args`
//   and so runs the command's callback;
// - returns the exit status by the contract of cli/commands.h, caught as
//   main() catches it: 0 when the callback returns (and for --help, whose
//   usage goes to stdout), the code of a CLI::RuntimeError (cli::fail: 2,
//   cli::exit_with: its status), and 2 with one `cudagate: error: ...` line
//   for a CLI11 parse error (an unknown flag, a value outside a flag's set)
//   or any other exception. main()'s check of the leading command words is
//   not repeated: `args` must start with the right ones;
// - returns in `out` and `err` all that was written to file descriptors 1
//   and 2 while the command ran: iostreams, stdio and the log's write(2)
//   alike. Descriptor 0 reads `options.stdin_text`. Neither output is a
//   terminal, so no colour and no progress is written;
// - with `options.cwd`, runs in that working directory (reports name
//   relative places as given); `options.env` sets variables, or unsets
//   those given as nullopt, for the run.
// Descriptors, working directory and environment are the process's: each
// is replaced while the command runs and restored before run_cli returns,
// so call it from the test's thread, with no other thread writing to them.
// A descriptor that cannot be redirected throws std::runtime_error.
//
// run_captured(body, options) is the same for a piece of a command called
// on its own (cli/manifest_inputs.h, cli/cluster_inputs.h), which may end
// the command with cli::fail(): the status is what `body` returns, or what
// main() makes of what it throws, with the same output and options.
//
// CliTempDir is a folder of its own for the files a test writes, removed
// with it; test_data() and source_file() name the fixtures and the
// repository's files (examples/) on disk, file_text() reads one.

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "cli/common.h"

namespace cudagate::test_support {

struct CliRun {
  int status = -1;
  std::string out;  // descriptor 1
  std::string err;  // descriptor 2
};

struct CliRunOptions {
  std::string stdin_text;
  std::string cwd;  // "": the test's own
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
};

// tests/fixtures/<relative>.
inline std::string test_data(std::string_view relative) {
  return std::string(CUDAGATE_TEST_DATA) + "/" + std::string(relative);
}

// <repository>/<relative>.
inline std::string source_file(std::string_view relative) {
  return std::string(CUDAGATE_SOURCE_DIR) + "/" + std::string(relative);
}

// The content of the file at `path`; throws when it cannot be read.
inline std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of `text`, without their line breaks.
inline std::vector<std::string> cli_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class CliTempDir {
 public:
  CliTempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cudagate-cli-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
  }
  ~CliTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  CliTempDir(const CliTempDir&) = delete;
  CliTempDir& operator=(const CliTempDir&) = delete;

  [[nodiscard]] const std::string& dir() const { return dir_; }
  // The path of `name` here, which need not exist.
  [[nodiscard]] std::string path(std::string_view name) const {
    return dir_ + "/" + std::string(name);
  }
  // Writes `text` to `name` here and returns its path.
  std::string write(std::string_view name, std::string_view text) const {
    const std::string file = path(name);
    std::ofstream out(file, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + file);
    return file;
  }

 private:
  std::string dir_;
};

namespace cli_run_detail {

// Everything a run replaces in the process, put back when it ends.
class Redirection {
 public:
  explicit Redirection(const CliRunOptions& options)
      : stdin_file_(temp_file()), out_file_(temp_file()), err_file_(temp_file()) {
    write_all(stdin_file_, options.stdin_text);
    if (::lseek(stdin_file_, 0, SEEK_SET) != 0) throw std::runtime_error("cannot rewind stdin");
    for (const auto& [name, value] : options.env) {
      const char* old = std::getenv(name.c_str());
      saved_env_.emplace_back(name,
                              old == nullptr ? std::nullopt : std::optional<std::string>(old));
      set_env(name, value);
    }
    if (!options.cwd.empty()) {
      saved_cwd_ = std::filesystem::current_path();
      std::filesystem::current_path(options.cwd);
    }
    flush_all();
    for (int fd = 0; fd < 3; ++fd) {
      saved_fd_[fd] = ::dup(fd);
      if (saved_fd_[fd] < 0) throw std::runtime_error("dup failed");
    }
    redirect(stdin_file_, 0);
    redirect(out_file_, 1);
    redirect(err_file_, 2);
    std::clearerr(stdin);
    std::cin.clear();
  }

  ~Redirection() {
    flush_all();
    for (int fd = 0; fd < 3; ++fd) {
      if (saved_fd_[fd] >= 0) {
        ::dup2(saved_fd_[fd], fd);
        ::close(saved_fd_[fd]);
      }
    }
    std::clearerr(stdin);
    std::cin.clear();
    if (saved_cwd_) {
      std::error_code ignored;
      std::filesystem::current_path(*saved_cwd_, ignored);
    }
    for (const auto& [name, value] : saved_env_) set_env(name, value);
    ::close(stdin_file_);
    ::close(out_file_);
    ::close(err_file_);
  }

  Redirection(const Redirection&) = delete;
  Redirection& operator=(const Redirection&) = delete;

  // What the command wrote to descriptors 1 and 2 so far.
  [[nodiscard]] std::string out() const { return read_all(out_file_); }
  [[nodiscard]] std::string err() const { return read_all(err_file_); }

  static void flush_all() {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(stdout);
    std::fflush(stderr);
    if (auto logger = spdlog::default_logger()) logger->flush();
  }

 private:
  // An unnamed file of its own, removed when closed.
  static int temp_file() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cudagate-cli-run-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    ::unlink(pattern.c_str());
    return fd;
  }

  static void write_all(int fd, std::string_view text) {
    while (!text.empty()) {
      const ssize_t n = ::write(fd, text.data(), text.size());
      if (n <= 0) throw std::runtime_error("cannot write the command's stdin");
      text.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  static std::string read_all(int fd) {
    std::string text;
    char buffer[65536];
    for (off_t at = 0;;) {
      const ssize_t n = ::pread(fd, buffer, sizeof buffer, at);
      if (n <= 0) return text;
      text.append(buffer, static_cast<std::size_t>(n));
      at += n;
    }
  }

  static void redirect(int from, int to) {
    if (::dup2(from, to) < 0) throw std::runtime_error("dup2 failed");
  }

  static void set_env(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }

  int stdin_file_;
  int out_file_;
  int err_file_;
  int saved_fd_[3] = {-1, -1, -1};
  std::optional<std::filesystem::path> saved_cwd_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_env_;
};

}  // namespace cli_run_detail

// Runs `body` as main() runs a command, redirected as run_cli() is: its
// status is what `body` returns, or what main() makes of what it throws.
// For the pieces of the command line that end a command (cli::fail) when
// they are called outside one.
inline CliRun run_captured(const std::function<int()>& body, const CliRunOptions& options = {}) {
  CliRun run;
  const cli_run_detail::Redirection redirection(options);
  try {
    run.status = body();
  } catch (const CLI::RuntimeError& e) {
    run.status = e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    cli::print_error(Error{"", e.what()});
    run.status = cli::kExitUsage;
  } catch (const std::exception& e) {
    cli::print_error(Error{"internal error", e.what()});
    run.status = cli::kExitUsage;
  }
  cli_run_detail::Redirection::flush_all();
  run.out = redirection.out();
  run.err = redirection.err();
  return run;
}

inline CliRun run_cli(void (*add)(CLI::App&), const std::vector<std::string>& args,
                      const CliRunOptions& options = {}) {
  CLI::App app{"cudagate keeps GPU pods off nodes that cannot run them.", "cudagate"};
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::simple);
  add(app);
  std::vector<std::string> words{"cudagate"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(words.size());
  for (std::string& word : words) argv.push_back(word.data());
  return run_captured(
      [&] {
        try {
          app.parse(static_cast<int>(argv.size()), argv.data());
        } catch (const CLI::Success& e) {
          return app.exit(e);  // --help: usage on stdout
        }
        return cli::kExitOk;
      },
      options);
}

}  // namespace cudagate::test_support
