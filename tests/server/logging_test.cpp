// The process's log as stderr receives it (redirected into a file the test reads): the level
// that filters, the text and JSON line formats (a JSON message's fields merged into its line),
// and the flush scheduler that batches lines while warnings are written at once.
#include "server/logging.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cudagate {
namespace {

namespace fs = std::filesystem;

// Points stderr at a file for the test's length, and puts back the logger
// and stderr the test found.
class LoggingTest : public ::testing::Test {
 protected:
  LoggingTest()
      : path_(fs::temp_directory_path() /
              ("cudagate-logging-" + std::to_string(::getpid()) + ".log")),
        previous_logger_(spdlog::default_logger()) {
    std::fflush(stderr);
    saved_stderr_ = ::dup(STDERR_FILENO);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~LoggingTest() override {
    set_log_flush_scheduler({});
    spdlog::set_default_logger(previous_logger_);
    ::dup2(saved_stderr_, STDERR_FILENO);
    ::close(saved_stderr_);
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  LoggingTest(const LoggingTest&) = delete;
  LoggingTest& operator=(const LoggingTest&) = delete;

  // The lines written to stderr so far.
  [[nodiscard]] std::vector<std::string> lines() const {
    std::ifstream in(path_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  fs::path path_;
  std::shared_ptr<spdlog::logger> previous_logger_;
  int saved_stderr_ = -1;
};

TEST_F(LoggingTest, TextLinesAtTheLevelAndAbove) {
  setup_logging("info", "text");
  spdlog::debug("left out");
  spdlog::info("serving on {}", 8443);
  spdlog::warn("certificate expires soon");
  spdlog::default_logger()->flush();
  const auto got = lines();
  ASSERT_EQ(got.size(), 2U);
  // Time in UTC to the millisecond, the level, the message; no colour
  // codes, as stderr is not a terminal.
  const std::regex time_level(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (\w+) (.*))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(got[0], m, time_level)) << got[0];
  EXPECT_EQ(m[1], "info");
  EXPECT_EQ(m[2], "serving on 8443");
  ASSERT_TRUE(std::regex_match(got[1], m, time_level)) << got[1];
  EXPECT_EQ(m[1], "warning");
  EXPECT_EQ(m[2], "certificate expires soon");
}

TEST_F(LoggingTest, LevelsFilter) {
  struct Row {
    const char* level;
    std::size_t lines;  // of trace, debug, info, warn, error
  };
  const Row rows[] = {{"trace", 5}, {"debug", 4}, {"info", 3},
                      {"warn", 2},  {"error", 1}, {"off", 0}};
  std::size_t before = 0;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.level);
    setup_logging(row.level, "json");
    spdlog::trace("t");
    spdlog::debug("d");
    spdlog::info("i");
    spdlog::warn("w");
    spdlog::error("e");
    spdlog::default_logger()->flush();
    const std::size_t now = lines().size();
    EXPECT_EQ(now - before, row.lines);
    before = now;
  }
}

TEST_F(LoggingTest, JsonLinesMergeAJsonMessagesFields) {
  setup_logging("info", "json");
  spdlog::info("plain \"quoted\" text");
  spdlog::info(R"({"event":"decision","uid":"u-1","allowed":false})");
  spdlog::info("{\"multi\":\n\"line\"}");
  spdlog::info("{not json}");
  spdlog::warn("{}");
  spdlog::default_logger()->flush();
  const auto got = lines();
  ASSERT_EQ(got.size(), 5U);
  std::vector<nlohmann::json> parsed;
  for (const auto& line : got) {
    parsed.push_back(nlohmann::json::parse(line, nullptr, false));
    ASSERT_TRUE(parsed.back().is_object()) << line;
    EXPECT_TRUE(std::regex_match(parsed.back()["time"].get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << line;
  }
  EXPECT_EQ(parsed[0]["level"], "info");
  EXPECT_EQ(parsed[0]["msg"], "plain \"quoted\" text");
  EXPECT_EQ(parsed[1]["event"], "decision");
  EXPECT_EQ(parsed[1]["uid"], "u-1");
  EXPECT_EQ(parsed[1]["allowed"], false);
  EXPECT_FALSE(parsed[1].contains("msg"));
  EXPECT_EQ(parsed[2]["multi"], "line");  // one line all the same
  EXPECT_EQ(parsed[3]["msg"], "{not json}");
  EXPECT_EQ(parsed[4]["level"], "warning");
  EXPECT_EQ(parsed[4].size(), 2U);  // an empty object adds nothing
}

TEST_F(LoggingTest, TheSchedulerBatchesLinesAndWarningsGoAtOnce) {
  setup_logging("info", "json");
  int scheduled = 0;
  set_log_flush_scheduler([&scheduled] { ++scheduled; });
  spdlog::info("one");
  spdlog::info("two");
  // Asked once, for the first line into an empty buffer; nothing written yet.
  EXPECT_EQ(scheduled, 1);
  EXPECT_TRUE(lines().empty());
  spdlog::default_logger()->flush();  // what the scheduled call does
  EXPECT_EQ(lines().size(), 2U);

  spdlog::info("three");
  EXPECT_EQ(scheduled, 2);
  EXPECT_EQ(lines().size(), 2U);
  spdlog::warn("four");  // written at once, with what waited
  EXPECT_EQ(lines().size(), 4U);

  // Without a scheduler, what is buffered is written and every line goes at once.
  spdlog::info("five");
  EXPECT_EQ(scheduled, 3);
  set_log_flush_scheduler({});
  EXPECT_EQ(lines().size(), 5U);
  spdlog::info("six");
  EXPECT_EQ(lines().size(), 6U);
  EXPECT_EQ(scheduled, 3);
}

}  // namespace
}  // namespace cudagate
