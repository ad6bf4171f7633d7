#pragma once
// spdlog's default logger written into a string while a CapturedLog lives,
// as "<level> <message>" lines, for tests that hold what the code logs; the
// logger before it is put back when it goes. The default logger is the
// process's: one CapturedLog at a time, on the test's thread.

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace cudagate::test_support {

class CapturedLog {
 public:
  explicit CapturedLog(const std::string& name) : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        name, std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  // The lines logged since the last call.
  std::vector<std::string> lines() {
    std::vector<std::string> out;
    std::istringstream in(text_.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    text_.str("");
    return out;
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace cudagate::test_support
