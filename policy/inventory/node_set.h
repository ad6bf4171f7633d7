#pragma once
// A set of node indices of one inventory, as a bitset. Set algebra is word
// by word, so a candidate computation over 10,000 nodes touches 157 words per
// operation instead of 10,000 nodes.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudagate {

class NodeSet {
 public:
  NodeSet() = default;
  explicit NodeSet(std::size_t universe, bool full = false);

  [[nodiscard]] std::size_t universe() const { return universe_; }
  [[nodiscard]] bool contains(std::size_t i) const { return (words_[i / 64] >> (i % 64)) & 1U; }
  void insert(std::size_t i) { words_[i / 64] |= std::uint64_t{1} << (i % 64); }
  void erase(std::size_t i) { words_[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }

  [[nodiscard]] std::size_t count() const;
  [[nodiscard]] bool empty() const;
  // |this & other| without materialising it.
  [[nodiscard]] std::size_t count_and(const NodeSet& other) const;
  // Members in [begin, end).
  [[nodiscard]] std::size_t count_range(std::size_t begin, std::size_t end) const;

  // Makes this the empty (or full) set of `universe`, reusing the storage:
  // scratch sets reset per use allocate only when the universe grows.
  void assign(std::size_t universe, bool full = false);
  void clear() { std::fill(words_.begin(), words_.end(), std::uint64_t{0}); }
  // Changes the universe, keeping the members below it.
  void resize(std::size_t universe);
  // this = a & b (same universe), without a temporary.
  void assign_and(const NodeSet& a, const NodeSet& b);

  NodeSet& operator&=(const NodeSet& other);
  NodeSet& operator|=(const NodeSet& other);
  NodeSet& subtract(const NodeSet& other);  // this & ~other
  void complement();                        // within the universe

  // Calls f(index) for each member in increasing order; stops when f returns false.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      std::uint64_t bits = words_[w];
      while (bits != 0) {
        const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        if (!f(i)) return;
        bits &= bits - 1;
      }
    }
  }

  // Calls f(index) for each member of both this and `other` (same
  // universe) in increasing order, without materialising the intersection;
  // stops when f returns false.
  template <class F>
  void for_each_common(const NodeSet& other, F&& f) const {
    const std::size_t n = std::min(words_.size(), other.words_.size());
    for (std::size_t w = 0; w < n; ++w) {
      std::uint64_t bits = words_[w] & other.words_[w];
      while (bits != 0) {
        const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        if (!f(i)) return;
        bits &= bits - 1;
      }
    }
  }

  // Calls f(index) for each member in [begin, end) in increasing order;
  // stops when f returns false.
  template <class F>
  void for_each_in_range(std::size_t begin, std::size_t end, F&& f) const {
    if (begin >= end) return;
    const std::size_t first = begin / 64;
    const std::size_t last = (end - 1) / 64;
    for (std::size_t w = first; w <= last; ++w) {
      std::uint64_t bits = words_[w];
      if (w == first) bits &= ~std::uint64_t{0} << (begin % 64);
      if (w == last && end % 64 != 0) bits &= (std::uint64_t{1} << (end % 64)) - 1;
      while (bits != 0) {
        const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        if (!f(i)) return;
        bits &= bits - 1;
      }
    }
  }

  friend bool operator==(const NodeSet&, const NodeSet&) = default;

 private:
  std::size_t universe_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace cudagate
