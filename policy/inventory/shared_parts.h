#pragma once
// Copy-on-write parts of the inventory, so that a new inventory made from an
// old one by changing a few nodes shares everything else with it.
//
// Each part is held through a shared_ptr to a box that carries the edit
// generation that made it. An edit of an inventory has the generation of
// that inventory plus one (a built inventory has generation 0); a part whose
// box an earlier generation made is copied before it is changed, one made by
// this edit is changed in place. Every box an inventory reaches was made by
// its own edit or an ancestor's, so of a lower generation, and an edit never
// writes a box another inventory can reach: it costs what it touches, and
// the inventory it started from, which readers on other threads may hold,
// stays as it was.
//
// Boxes are only written by the edit whose generation they carry, before
// the inventory holding them is published; after that they are read-only,
// from any number of threads.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cudagate {

// One value, shared until an edit changes it.
template <class T>
class Shared {
 public:
  Shared() : box_(std::make_shared<Box>()) {}
  explicit Shared(T value) : box_(std::make_shared<Box>(Box{std::move(value), 0})) {}

  const T& operator*() const { return box_->value; }
  const T* operator->() const { return &box_->value; }
  // The value to change in edit `generation`: a copy the first time.
  T& edit(std::uint64_t generation) {
    if (box_->generation != generation) {
      box_ = std::make_shared<Box>(Box{box_->value, generation});
    }
    return box_->value;
  }

 private:
  struct Box {
    T value{};
    std::uint64_t generation = 0;
  };
  std::shared_ptr<Box> box_;
};

// An array in chunks of 2^kBits elements, each shared until an edit
// changes one of its elements: a copy of the array copies one pointer a
// chunk, an edit of one element copies one chunk.
template <class T, unsigned kBits>
class SharedArray {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << kBits;

  [[nodiscard]] std::size_t size() const { return size_; }
  const T& operator[](std::size_t i) const { return (*chunks_[i >> kBits])[i & (kChunk - 1)]; }
  T& edit(std::size_t i, std::uint64_t generation) {
    return chunks_[i >> kBits].edit(generation)[i & (kChunk - 1)];
  }
  // Grows with default values or shrinks to `n`.
  void resize(std::size_t n, std::uint64_t generation) {
    for (; size_ > n; --size_) edit(size_ - 1, generation) = T{};
    chunks_.resize((n + kChunk - 1) >> kBits);
    size_ = n;
  }
  void push_back(T value, std::uint64_t generation) {
    resize(size_ + 1, generation);
    edit(size_ - 1, generation) = std::move(value);
  }

 private:
  std::vector<Shared<std::array<T, kChunk>>> chunks_;
  std::size_t size_ = 0;
};

// Lookups by string_view without building a std::string.
struct StringViewHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using ViewMap = std::unordered_map<std::string_view, V, StringViewHash, std::equal_to<>>;

// A hash map keyed by views of strings that outlive it, in shards that are
// each shared until an edit changes one of their entries. A map with few
// entries is one shard (one lookup, as an unordered_map); one with an entry
// per node (hostnames) has about 16 entries a shard.
template <class V>
class SharedMap {
 public:
  using Shard = ViewMap<V>;

  SharedMap() : shards_(1) {}

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }

  // The entry of `key`, or nullptr.
  [[nodiscard]] const typename Shard::value_type* find(std::string_view key) const {
    const Shard& shard = *shards_[shard_of(key)];
    const auto it = shard.find(key);
    return it == shard.end() ? nullptr : &*it;
  }
  // The value of `key` to change in edit `generation`, value-initialised
  // when new; `key` must outlive the map.
  V& edit(std::string_view key, std::uint64_t generation) {
    if (size_ >= shards_.size() * kPerShard) reshard(shards_.size() * 4, generation);
    Shard& shard = shards_[shard_of(key)].edit(generation);
    const auto [it, added] = shard.try_emplace(key);
    if (added) ++size_;
    return it->second;
  }
  void erase(std::string_view key, std::uint64_t generation) {
    if (find(key) == nullptr) return;
    shards_[shard_of(key)].edit(generation).erase(key);
    --size_;
  }
  // f(key, value) for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& shard : shards_) {
      for (const auto& [key, value] : *shard) f(key, value);
    }
  }

 private:
  static constexpr std::size_t kPerShard = 16;

  [[nodiscard]] std::size_t shard_of(std::string_view key) const {
    if (shards_.size() == 1) return 0;
    // The high bits: the shard's unordered_map buckets by the low ones.
    return (StringViewHash{}(key) >> 40) & (shards_.size() - 1);
  }
  void reshard(std::size_t count, std::uint64_t generation) {
    std::vector<Shared<Shard>> old = std::exchange(shards_, std::vector<Shared<Shard>>(count));
    for (auto& shard : old) {
      for (auto& [key, value] : *shard) shards_[shard_of(key)].edit(generation).emplace(key, value);
    }
  }

  std::vector<Shared<Shard>> shards_;  // a power of two of them
  std::size_t size_ = 0;
};

}  // namespace cudagate
