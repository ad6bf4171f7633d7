#include "server/cli_common.h"

#include <fcntl.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "policy/node.h"

namespace cudagate::cli {
namespace {

// Writes the payload of a log message as the tail of a JSON object: either
// `,"msg":"..."`, or the fields of a payload that is itself a JSON object, so
// that structured log lines (one per admission decision) stay flat.
class JsonPayloadFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*tm*/,
              spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    std::string out;
    if (payload.size() >= 2 && payload.front() == '{' && payload.back() == '}' &&
        nlohmann::json::accept(payload)) {
      // A JSON object: its members, as written, continue the line.
      const std::string_view members = payload.substr(1, payload.size() - 2);
      if (members.find_first_not_of(" \t\r\n") != std::string_view::npos) {
        dest.push_back(',');
        // Outside strings a line break is whitespace: keep the line one line.
        for (const char c : members) dest.push_back(c == '\n' || c == '\r' ? ' ' : c);
      }
      return;
    }
    out = ",\"msg\":";
    out += nlohmann::json(std::string(payload))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(out.data(), out.data() + out.size());
  }

  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonPayloadFlag>();
  }
};

// Log lines are gathered and written with one write(2) per batch: the server
// logs one line per admission decision, and a write per line would be a
// system call on every request. The buffer is written when it passes
// kMaxBuffered, on every flush (at once for warnings and errors, through
// flush_on), and otherwise by whoever the scheduler asks: the server posts a
// flush behind the I/O handlers that are ready, so lines wait only for the
// batch of requests they belong to. Without a scheduler every line is
// written at once.
class BatchingStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_scheduler(std::function<void()> schedule) {
    const std::lock_guard lock(mutex_);
    schedule_ = std::move(schedule);
    write_all();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const bool was_empty = buffer_.size() == 0;
    formatter_->format(msg, buffer_);
    if (!schedule_ || buffer_.size() >= kMaxBuffered) {
      write_all();
    } else if (was_empty) {
      schedule_();
    }
  }

  void flush_() override { write_all(); }

 private:
  static constexpr std::size_t kMaxBuffered = 64 * 1024;

  void write_all() {
    const char* data = buffer_.data();
    std::size_t left = buffer_.size();
    while (left > 0) {
      const ssize_t n = ::write(STDERR_FILENO, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // stderr is gone: the lines cannot be written anywhere
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    buffer_.clear();
  }

  spdlog::memory_buf_t buffer_;
  std::function<void()> schedule_;
};

std::shared_ptr<BatchingStderrSink>& batching_sink() {
  static std::shared_ptr<BatchingStderrSink> sink;
  return sink;
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

void add_common_options(CLI::App& command, CommonOptions& options) {
  command.add_option("--config", options.config, "Policy file (YAML or JSON, SPEC section 4)")
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
  std::shared_ptr<spdlog::sinks::sink> sink;
  std::unique_ptr<spdlog::pattern_formatter> formatter =
      std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  const bool json = options.log_format == "json";
  if (!json && ::isatty(STDERR_FILENO) == 1) {
    // A person is reading: colours, and every line at once.
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    batching_sink().reset();
  } else {
    batching_sink() = std::make_shared<BatchingStderrSink>();
    sink = batching_sink();
  }
  if (json) {
    formatter->add_flag<JsonPayloadFlag>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l"%*})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v");
  }
  auto logger = std::make_shared<spdlog::logger>("cudagate", std::move(sink));
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(options.log_level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

void set_log_flush_scheduler(std::function<void()> schedule) {
  if (const auto& sink = batching_sink()) sink->set_scheduler(std::move(schedule));
}

std::string display_name(std::string_view path) {
  return path == "-" ? std::string("<stdin>") : std::string(path);
}

Expected<std::string> read_input(const std::string& path) {
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error{display_name(path), std::string("cannot read: ") + std::strerror(errno)};
  }
  std::string content;
  char buffer[65536];
  int read_errno = 0;
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      content.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      read_errno = errno;
      break;
    }
  }
  if (!is_stdin) ::close(fd);
  if (read_errno != 0) {
    return Error{display_name(path), std::string("cannot read: ") + std::strerror(read_errno)};
  }
  return content;
}

Expected<CompatDb> load_compat_db_option(const CommonOptions& options) {
  if (options.compat_db.empty()) return load_compat_db(embedded_compat_db_files());
  auto text = read_input(options.compat_db);
  if (!text) return text.error();
  return load_compat_db({CompatDbFile{display_name(options.compat_db), *text}});
}

Expected<Policy> load_policy_option(const CommonOptions& options, const CompatDb& db) {
  if (options.config.empty()) return Policy{};
  auto text = read_input(options.config);
  if (!text) return text.error();
  return parse_policy(*text, display_name(options.config), db);
}

Expected<Inventory> load_inventory_file(const std::string& path, const CompatDb& db) {
  auto text = read_input(path);
  if (!text) return text.error();
  auto nodes = parse_nodes(*text, display_name(path));
  if (!nodes) return nodes.error();
  spdlog::debug("read {} nodes from {}", nodes->size(), display_name(path));
  return Inventory::build(std::move(nodes).value(), db);
}

Expected<std::vector<Workload>> load_workloads_file(const std::string& path) {
  auto text = read_input(path);
  if (!text) return text.error();
  auto workloads = parse_workloads(*text, display_name(path));
  if (!workloads) return workloads.error();
  if (workloads->empty()) {
    return Error{display_name(path),
                 "expected a Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or CronJob, "
                 "found none"};
  }
  return workloads;
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

std::string quoted(std::string_view text) {
  constexpr std::size_t kMax = 64;
  std::string out = "\"";
  out.append(text.substr(0, kMax));
  if (text.size() > kMax) out += "...";
  out += '"';
  return out;
}

}  // namespace cudagate::cli
