// FileWatch's polling: each watched group's files are stat()ed on a timer, and its callback runs
// once a change has held still for one more poll, so that no half-written file is read.
#include "server/file_watch.h"

#include <sys/stat.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <utility>

namespace cudagate {
namespace {

struct FileIdentity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  long long mtime_ns = 0;
  long long ctime_ns = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

FileIdentity identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  FileIdentity id;
  id.exists = true;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = st.st_size;
  id.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<long long>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  return id;
}

}  // namespace

struct FileWatch::Impl : std::enable_shared_from_this<FileWatch::Impl> {
  struct Group {
    std::vector<std::string> paths;
    std::function<void()> on_change;
    std::vector<FileIdentity> reported;  // what the reader last saw
    std::vector<FileIdentity> seen;      // what the previous poll saw
  };

  Impl(const boost::asio::any_io_executor& executor, std::chrono::milliseconds every)
      : timer(executor), interval(every) {}

  std::vector<FileIdentity> identify_all(const Group& group) const {
    std::vector<FileIdentity> ids;
    ids.reserve(group.paths.size());
    for (const auto& path : group.paths) ids.push_back(identify(path));
    return ids;
  }

  void arm() {
    if (stopped.load()) return;
    timer.expires_after(interval);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->stopped.load()) return;
      self->poll();
      self->arm();
    });
  }

  void poll() {
    for (auto& group : groups) {
      auto now = identify_all(group);
      const bool settled = now == group.seen;
      group.seen = now;
      if (settled && now != group.reported) {
        group.reported = std::move(now);
        if (stopped.load()) return;
        group.on_change();
      }
    }
  }

  boost::asio::steady_timer timer;
  std::chrono::milliseconds interval;
  std::vector<Group> groups;
  std::atomic<bool> stopped{false};
};

FileWatch::FileWatch(const boost::asio::any_io_executor& executor,
                     std::chrono::milliseconds interval)
    : impl_(std::make_shared<Impl>(executor, interval)) {}

FileWatch::~FileWatch() {
  stop();
}

void FileWatch::watch(std::vector<std::string> paths, std::function<void()> on_change) {
  Impl::Group group{std::move(paths), std::move(on_change), {}, {}};
  group.reported = impl_->identify_all(group);
  group.seen = group.reported;
  impl_->groups.push_back(std::move(group));
}

void FileWatch::start() {
  boost::asio::post(impl_->timer.get_executor(), [impl = impl_] { impl->arm(); });
}

void FileWatch::stop() {
  impl_->stopped.store(true);
  boost::asio::post(impl_->timer.get_executor(), [impl = impl_] { impl->timer.cancel(); });
}

}  // namespace cudagate
