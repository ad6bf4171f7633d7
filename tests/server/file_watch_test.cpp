// FileWatch on real files: an edit, a rename over the file, a removal and a re-creation are
// each reported once; nothing is reported without a change or after stop().
#include "server/file_watch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace cudagate {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kInterval = 20ms;

// Polls `condition` until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);  // between checks of the condition
  }
  return condition();
}

class FileWatchTest : public ::testing::Test {
 protected:
  FileWatchTest()
      : dir_(fs::temp_directory_path() / ("cudagate-file-watch-" + std::to_string(::getpid()))),
        work_(boost::asio::make_work_guard(ioc_)) {
    fs::create_directories(dir_);
    write(dir_ / "a.yaml", "one");
    thread_ = std::thread([this] { ioc_.run(); });
  }

  ~FileWatchTest() override {
    watch_.stop();
    work_.reset();
    ioc_.stop();
    thread_.join();
    fs::remove_all(dir_);
  }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
  }

  fs::path dir_;
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  FileWatch watch_{ioc_.get_executor(), kInterval};
  std::thread thread_;
  std::atomic<int> calls_{0};
};

TEST_F(FileWatchTest, ReportsEachKindOfChangeOnce) {
  const fs::path file = dir_ / "a.yaml";
  watch_.watch({file.string()}, [this] { ++calls_; });
  watch_.start();

  struct Row {
    const char* name;
    std::function<void()> change;
  };
  const Row rows[] = {
      {"rewritten in place with another size", [&] { write(file, "three"); }},
      {"replaced by rename",
       [&] {
         write(dir_ / "a.tmp", "four");
         fs::rename(dir_ / "a.tmp", file);
       }},
      {"removed", [&] { fs::remove(file); }},
      {"created again", [&] { write(file, "five"); }},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    const int before = calls_.load();
    row.change();
    EXPECT_TRUE(eventually([&] { return calls_.load() == before + 1; }));
    // Several quiet polls later it has not been reported again.
    const int after = calls_.load();
    std::this_thread::sleep_for(kInterval * 6);  // a window in which nothing may happen
    EXPECT_EQ(calls_.load(), after);
  }
}

TEST_F(FileWatchTest, NothingIsReportedWithoutAChange) {
  watch_.watch({(dir_ / "a.yaml").string(), (dir_ / "absent.yaml").string()}, [this] { ++calls_; });
  watch_.start();
  std::this_thread::sleep_for(kInterval * 10);  // a window in which nothing may happen
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(FileWatchTest, NoCallbackAfterStop) {
  const fs::path file = dir_ / "a.yaml";
  watch_.watch({file.string()}, [this] { ++calls_; });
  watch_.start();
  watch_.stop();
  write(file, "changed after stop");
  std::this_thread::sleep_for(kInterval * 10);  // a window in which nothing may happen
  EXPECT_EQ(calls_.load(), 0);
}

}  // namespace
}  // namespace cudagate
