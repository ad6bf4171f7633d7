// The process's log: one spdlog logger on stderr, as text or as JSON lines,
// written in batches while the server runs so that a decision's log line is
// not a system call of its own.
#include "server/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace cudagate {
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
  static constexpr std::size_t kMaxBuffered = std::size_t{64} * 1024;

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

}  // namespace

void setup_logging(std::string_view level, std::string_view format) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  std::unique_ptr<spdlog::pattern_formatter> formatter =
      std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  const bool json = format == "json";
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
  logger->set_level(spdlog::level::from_str(std::string(level)));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

void set_log_flush_scheduler(std::function<void()> schedule) {
  if (const auto& sink = batching_sink()) sink->set_scheduler(std::move(schedule));
}

}  // namespace cudagate
