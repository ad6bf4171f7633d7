#pragma once
// Notices when files change, by polling their identity (device, inode, size,
// modification and change times) on a steady timer.
//
// Polling follows symlinks, so it sees Kubernetes Secret and ConfigMap
// volume updates (an atomic swap of the `..data` link) as well as in-place
// edits and renames. A change is reported once the files have stayed the
// same for one more poll, so that a file still being written is not read
// half-way; a reader that still finds a bad file keeps the old contents and
// is called again on the next change.
//
// Callbacks run on the executor given to the constructor, one at a time; the
// server gives it an executor of its own thread, so that parsing a large
// file never occupies an I/O thread. start() and stop() may be called from
// any thread; after stop() returns no callback is started.

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cudagate {

class FileWatch {
 public:
  FileWatch(const boost::asio::any_io_executor& executor, std::chrono::milliseconds interval);
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // Calls `on_change` when any of `paths` changes (created, removed,
  // replaced or modified). Register before start().
  void watch(std::vector<std::string> paths, std::function<void()> on_change);

  void start();
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cudagate
