// The NodeSet bitset operations, with population counts compiled for CPUs with and without
// POPCNT, since counting runs on every decision.
#include "policy/inventory/node_set.h"

#include <algorithm>

namespace cudagate {

NodeSet::NodeSet(std::size_t universe, bool full)
    : universe_(universe), words_((universe + 63) / 64, full ? ~std::uint64_t{0} : 0) {
  if (full && universe % 64 != 0) words_.back() = (std::uint64_t{1} << (universe % 64)) - 1;
}

namespace {

// The population counts run on every decision; x86-64's baseline has no
// POPCNT instruction, so they are compiled twice and the CPU picks.
// (Not under AddressSanitizer or ThreadSanitizer: the clones' resolver is
// instrumented and runs, while the dynamic loader relocates, before the
// sanitizer's runtime has started.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CUDAGATE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CUDAGATE_SANITIZED 1
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CUDAGATE_SANITIZED)
#define CUDAGATE_POPCNT_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define CUDAGATE_POPCNT_CLONES
#endif

CUDAGATE_POPCNT_CLONES
std::size_t popcount_words(const std::uint64_t* words, std::size_t n) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += static_cast<std::size_t>(std::popcount(words[i]));
  return total;
}

CUDAGATE_POPCNT_CLONES
std::size_t popcount_and(const std::uint64_t* a, const std::uint64_t* b, std::size_t n) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += static_cast<std::size_t>(std::popcount(a[i] & b[i]));
  return total;
}

// Members of words [first, last], the first masked with `head`, the last with `tail`.
CUDAGATE_POPCNT_CLONES
std::size_t popcount_range(const std::uint64_t* words, std::size_t first, std::size_t last,
                           std::uint64_t head, std::uint64_t tail) {
  if (first == last) return static_cast<std::size_t>(std::popcount(words[first] & head & tail));
  std::size_t total = static_cast<std::size_t>(std::popcount(words[first] & head)) +
                      static_cast<std::size_t>(std::popcount(words[last] & tail));
  for (std::size_t i = first + 1; i < last; ++i) {
    total += static_cast<std::size_t>(std::popcount(words[i]));
  }
  return total;
}

}  // namespace

std::size_t NodeSet::count() const {
  return popcount_words(words_.data(), words_.size());
}

std::size_t NodeSet::count_range(std::size_t begin, std::size_t end) const {
  if (begin >= end) return 0;
  const std::size_t first = begin / 64;
  const std::size_t last = (end - 1) / 64;
  const std::uint64_t head = ~std::uint64_t{0} << (begin % 64);
  const std::uint64_t tail =
      end % 64 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (end % 64)) - 1;
  return popcount_range(words_.data(), first, last, head, tail);
}

void NodeSet::assign(std::size_t universe, bool full) {
  universe_ = universe;
  words_.assign((universe + 63) / 64, full ? ~std::uint64_t{0} : 0);
  if (full && universe % 64 != 0) words_.back() = (std::uint64_t{1} << (universe % 64)) - 1;
}

void NodeSet::resize(std::size_t universe) {
  universe_ = universe;
  words_.resize((universe + 63) / 64, 0);
  if (universe % 64 != 0) words_.back() &= (std::uint64_t{1} << (universe % 64)) - 1;
}

void NodeSet::assign_and(const NodeSet& a, const NodeSet& b) {
  universe_ = a.universe_;
  words_.resize(a.words_.size());
  const std::size_t n = std::min(a.words_.size(), b.words_.size());
  for (std::size_t i = 0; i < n; ++i) words_[i] = a.words_[i] & b.words_[i];
  for (std::size_t i = n; i < words_.size(); ++i) words_[i] = 0;
}

bool NodeSet::empty() const {
  return std::all_of(words_.begin(), words_.end(), [](std::uint64_t w) { return w == 0; });
}

std::size_t NodeSet::count_and(const NodeSet& other) const {
  return popcount_and(words_.data(), other.words_.data(),
                      std::min(words_.size(), other.words_.size()));
}

NodeSet& NodeSet::operator&=(const NodeSet& other) {
  const std::size_t n = std::min(words_.size(), other.words_.size());
  for (std::size_t i = 0; i < n; ++i) words_[i] &= other.words_[i];
  // Beyond the other set's universe nothing is in it.
  for (std::size_t i = n; i < words_.size(); ++i) words_[i] = 0;
  return *this;
}

NodeSet& NodeSet::operator|=(const NodeSet& other) {
  const std::size_t n = std::min(words_.size(), other.words_.size());
  for (std::size_t i = 0; i < n; ++i) words_[i] |= other.words_[i];
  return *this;
}

NodeSet& NodeSet::subtract(const NodeSet& other) {
  const std::size_t n = std::min(words_.size(), other.words_.size());
  for (std::size_t i = 0; i < n; ++i) words_[i] &= ~other.words_[i];
  return *this;
}

void NodeSet::complement() {
  for (std::uint64_t& w : words_) w = ~w;
  if (universe_ % 64 != 0 && !words_.empty()) {
    words_.back() &= (std::uint64_t{1} << (universe_ % 64)) - 1;
  }
}

}  // namespace cudagate
