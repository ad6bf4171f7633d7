#include "policy/node_set.h"

#include <algorithm>

namespace cudagate {

NodeSet::NodeSet(std::size_t universe, bool full)
    : universe_(universe), words_((universe + 63) / 64, full ? ~std::uint64_t{0} : 0) {
  if (full && universe % 64 != 0) words_.back() = (std::uint64_t{1} << (universe % 64)) - 1;
}

std::size_t NodeSet::count() const {
  std::size_t n = 0;
  for (const std::uint64_t w : words_) n += static_cast<std::size_t>(std::popcount(w));
  return n;
}

bool NodeSet::empty() const {
  return std::all_of(words_.begin(), words_.end(), [](std::uint64_t w) { return w == 0; });
}

std::size_t NodeSet::count_and(const NodeSet& other) const {
  const std::size_t n = std::min(words_.size(), other.words_.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    total += static_cast<std::size_t>(std::popcount(words_[i] & other.words_[i]));
  }
  return total;
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
