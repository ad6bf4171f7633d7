// Reading a large JSON node list item by item with simdjson while a second thread indexes the
// nodes, so that --nodes loads fast and the whole list is never held in memory.
#include "inputs/node_loader.h"

#include <simdjson.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "admission/simd_json_view.h"
#include "inputs/input_files.h"
#include "policy/objects/node.h"
#include "policy/objects/node_reader.h"

namespace cudagate {
namespace {

constexpr std::size_t kChunk = 1 << 20;
// Items are a few kilobytes; the parser grows for a larger one.
constexpr std::size_t kInitialCapacity = std::size_t{64} * 1024;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The file as a stream of bytes with a window that keeps everything from a
// mark on: an item being scanned stays in one contiguous piece.
class Reader {
 public:
  explicit Reader(std::FILE* file) : file_(file), buffer_(kChunk) {}

  // The byte at the cursor, reading more when needed; -1 at the end.
  int peek() {
    if (pos_ == end_ && !fill()) return -1;
    return static_cast<unsigned char>(buffer_[pos_]);
  }
  int next() {
    const int c = peek();
    if (c >= 0) ++pos_;
    return c;
  }
  int next_non_space() {
    int c = next();
    while (c >= 0 && is_space(static_cast<char>(c))) c = next();
    return c;
  }

  // Skips the rest of an object or array whose opening bracket was read.
  // Strings take most of the bytes: they are crossed with memchr.
  bool skip_nested() {
    std::size_t depth = 1;
    while (true) {
      if (pos_ == end_ && !fill()) return false;
      const char c = buffer_[pos_++];
      if (c == '"') {
        if (!skip_string_body()) return false;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return true;
      }
    }
  }

  // Everything from the byte before the cursor on is kept until release().
  void mark_previous() { mark_ = pos_ - 1; }
  [[nodiscard]] std::string_view marked() const { return {buffer_.data() + mark_, pos_ - mark_}; }
  void release() { mark_ = kNoMark; }
  [[nodiscard]] bool failed() const { return std::ferror(file_) != 0; }

 private:
  static constexpr std::size_t kNoMark = static_cast<std::size_t>(-1);

  // Moves past the closing quote of a string whose opening quote was read.
  bool skip_string_body() {
    while (true) {
      const void* quote = std::memchr(buffer_.data() + pos_, '"', end_ - pos_);
      if (quote == nullptr) {
        pos_ = end_;
        // A backslash at the end escapes the first byte of the next chunk.
        const bool escaped = trailing_backslashes(end_) % 2 == 1;
        if (!fill()) return false;
        if (escaped) ++pos_;
        continue;
      }
      const auto at = static_cast<std::size_t>(static_cast<const char*>(quote) - buffer_.data());
      pos_ = at + 1;
      if (trailing_backslashes(at) % 2 == 0) return true;
    }
  }

  // The backslashes just before `at`, back to pos_'s string at most.
  [[nodiscard]] std::size_t trailing_backslashes(std::size_t at) const {
    std::size_t n = 0;
    while (at > n && buffer_[at - n - 1] == '\\') ++n;
    return n;
  }

  bool fill() {
    // Keep the marked bytes, drop the rest, then read behind them.
    const std::size_t keep = mark_ == kNoMark ? end_ : mark_;
    if (keep > 0) {
      std::memmove(buffer_.data(), buffer_.data() + keep, end_ - keep);
      end_ -= keep;
      pos_ -= keep;
      if (mark_ != kNoMark) mark_ = 0;
    }
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const std::size_t n = std::fread(buffer_.data() + end_, 1, buffer_.size() - end_, file_);
    end_ += n;
    return n > 0;
  }

  std::FILE* file_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
  std::size_t mark_ = kNoMark;
};

// Skips the rest of a string whose opening quote was read.
bool skip_string(Reader& in) {
  while (true) {
    const int c = in.next();
    if (c < 0) return false;
    if (c == '"') return true;
    if (c == '\\' && in.next() < 0) return false;
  }
}

// Skips the rest of a JSON value whose first byte `first` was read: the
// extent only; simdjson checks the content.
bool skip_value(Reader& in, int first) {
  if (first == '"') return skip_string(in);
  if (first == '{' || first == '[') return in.skip_nested();
  // A number or a literal: up to the next delimiter.
  while (true) {
    const int c = in.peek();
    if (c < 0 || c == ',' || c == '}' || c == ']' || is_space(static_cast<char>(c))) return true;
    in.next();
  }
}

// Nodes handed from the thread that reads them to the one that indexes
// them, a batch at a time: reading (the text, simdjson, the mapping) and
// indexing take about the same time, and run side by side. The batches are
// reused, and their nodes with them, so that their strings keep their
// capacity.
class NodePipe {
 public:
  static constexpr std::size_t kBatchSize = 64;
  static constexpr std::size_t kBatches = 4;

  struct Batch {
    std::vector<Node> nodes{kBatchSize};
    std::size_t count = 0;
  };

  NodePipe() {
    for (Batch& b : batches_) free_.push_back(&b);
  }

  // Reading side: a batch to fill; nullptr once the indexing side stopped.
  Batch* next_to_fill() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stopped_ || !free_.empty(); });
    if (stopped_) return nullptr;
    Batch* batch = free_.back();
    free_.pop_back();
    batch->count = 0;
    return batch;
  }
  void filled(Batch* batch) {
    const std::lock_guard lock(mutex_);
    full_.push_back(batch);
    changed_.notify_all();
  }
  // No more batches: the list was read whole (`complete`), or it was not.
  void close(bool complete) {
    const std::lock_guard lock(mutex_);
    closed_ = true;
    complete_ = complete;
    changed_.notify_all();
  }

  // Indexing side: the next filled batch, in order; nullptr at the end.
  Batch* next_filled() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !full_.empty() || closed_; });
    if (full_.empty() || (closed_ && !complete_)) return nullptr;
    Batch* batch = full_.front();
    full_.pop_front();
    return batch;
  }
  void indexed(Batch* batch) {
    const std::lock_guard lock(mutex_);
    free_.push_back(batch);
    changed_.notify_all();
  }
  // The indexing side gives up: the reading side stops at its next batch.
  void stop() {
    const std::lock_guard lock(mutex_);
    stopped_ = true;
    changed_.notify_all();
  }
  [[nodiscard]] bool complete() const {
    const std::lock_guard lock(mutex_);
    return closed_ && complete_;
  }

 private:
  std::array<Batch, kBatches> batches_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Batch*> free_;
  std::deque<Batch*> full_;
  bool closed_ = false;
  bool complete_ = false;
  bool stopped_ = false;
};

// Indexes the nodes that come through `pipe`, on a thread of its own, until
// the pipe closes; the inventory when the list was read whole, names no
// node twice and has a node.
class Indexer {
 public:
  Indexer(NodePipe& pipe, const CompatDb& db) : thread_([this, &pipe, &db] { run(pipe, db); }) {}
  Indexer(const Indexer&) = delete;
  Indexer& operator=(const Indexer&) = delete;
  ~Indexer() {
    if (thread_.joinable()) thread_.join();
  }

  // Waits for the end; rethrows what the thread threw.
  std::optional<Inventory> result() {
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
    return std::move(inventory_);
  }

 private:
  void run(NodePipe& pipe, const CompatDb& db) {
    try {
      InventoryBuilder builder(db);
      while (NodePipe::Batch* batch = pipe.next_filled()) {
        for (std::size_t i = 0; i < batch->count; ++i) {
          // A duplicate: the ordinary reader reports it.
          if (!builder.add(batch->nodes[i])) {
            pipe.stop();
            return;
          }
        }
        pipe.indexed(batch);
      }
      if (pipe.complete() && builder.size() > 0) inventory_ = builder.finish();
    } catch (...) {
      failure_ = std::current_exception();
      pipe.stop();
    }
  }

  std::optional<Inventory> inventory_;
  std::exception_ptr failure_;
  std::thread thread_;
};

// Reads the top-level object member by member and sends the items through
// `pipe`; whether the file is a node list this reader takes.
bool read_list(Reader& in, NodePipe& pipe) {
  if (in.next_non_space() != '{') return false;
  // The ordinary reader refuses JSON nested deeper than 512 levels; an item
  // starts two levels down (the list, its items).
  PaddedDomParser values(kInitialCapacity, 510);
  std::unordered_set<std::string> keys;
  bool have_items = false;
  bool list_kind = true;  // kind absent, null, "" or "...List"

  int c = in.next_non_space();
  if (c == '}') return false;  // no items
  while (true) {
    // A member name: plain text only (an escape sends the file the other way).
    if (c != '"') return false;
    std::string key;
    while ((c = in.next()) != '"') {
      if (c < 0 || c == '\\') return false;
      key += static_cast<char>(c);
    }
    if (!keys.insert(key).second) return false;  // repeated: the last would count
    if (in.next_non_space() != ':') return false;
    c = in.next_non_space();
    if (c < 0) return false;
    if (key == "items") {
      if (c != '[') return false;
      have_items = true;
      c = in.next_non_space();
      NodePipe::Batch* batch = nullptr;
      while (c != ']') {
        if (c != '{') return false;
        in.mark_previous();
        if (!skip_value(in, c)) return false;
        const auto item = values.parse(in.marked());
        in.release();
        if (!item) return false;
        if (batch == nullptr && (batch = pipe.next_to_fill()) == nullptr) return false;
        if (node_reader::read_node_into(*item, batch->nodes[batch->count++])) return false;
        if (batch->count == NodePipe::kBatchSize) {
          pipe.filled(batch);
          batch = nullptr;
        }
        c = in.next_non_space();
        if (c == ']') break;
        if (c != ',') return false;
        c = in.next_non_space();
      }
      if (batch != nullptr) pipe.filled(batch);
    } else {
      in.mark_previous();
      if (!skip_value(in, c)) return false;
      const auto value = values.parse(in.marked());
      in.release();
      if (!value) return false;
      if (key == "kind") {
        if (value->is_string()) {
          const std::string_view kind = value->string();
          list_kind = kind.empty() || (kind.size() >= 4 && kind.substr(kind.size() - 4) == "List");
        } else {
          list_kind = value->is_null();
        }
      }
    }
    c = in.next_non_space();
    if (c == '}') break;
    if (c != ',') return false;
    c = in.next_non_space();
  }
  if (in.next_non_space() >= 0 || in.failed()) return false;  // trailing text
  return have_items && list_kind;
}

}  // namespace

std::optional<Inventory> load_node_list_streaming(const std::string& path, const CompatDb& db) {
  if (path == "-") return std::nullopt;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!file) return std::nullopt;
  Reader in(file.get());
  NodePipe pipe;
  Indexer indexer(pipe, db);
  bool complete = false;
  try {
    complete = read_list(in, pipe);
  } catch (...) {
    pipe.close(false);
    throw;
  }
  pipe.close(complete);
  return indexer.result();
}

void release_free_memory() {
#if defined(__GLIBC__)
  // Reading a list leaves the heap full of small free chunks, which slow
  // every later allocation down (malloc searches them) and hold memory:
  // merge them and hand what is whole back to the system.
  malloc_trim(0);
#endif
}

Expected<Inventory> load_inventory(const std::string& path, const CompatDb& db) {
  // Read on a thread of its own: glibc gives it its own heap (arena), so
  // that the reading's many short-lived allocations leave the heap of the
  // thread that serves requests as it was, instead of strewn with free
  // chunks that every later allocation there would search.
  std::optional<Expected<Inventory>> out;
  std::exception_ptr failure;
  std::thread reader([&] {
    try {
      auto inventory = load_node_list_streaming(path, db);
      out.emplace(inventory ? Expected<Inventory>(std::move(*inventory))
                            : load_inventory_file(path, db));
    } catch (...) {
      failure = std::current_exception();
    }
  });
  reader.join();
  if (failure) std::rethrow_exception(failure);
  release_free_memory();
  return std::move(*out);
}

}  // namespace cudagate
