#pragma once
// Text that the review parser (simdjson, which reads in wide blocks) may
// take where it lies: its buffer goes on, readable, for kBodyPadding bytes
// after its end. PaddedString owns such text; server/padded_body.h keeps
// request bodies in one as they arrive.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace cudagate {

inline constexpr std::size_t kBodyPadding = 64;

// `text` is followed in memory by at least kBodyPadding readable bytes.
struct PaddedText {
  std::string_view text;
};

class PaddedString {
 public:
  PaddedString() = default;
  PaddedString(std::string_view text) { assign(text); }  // NOLINT: a string, as string_body's
  PaddedString(const PaddedString&) = default;
  PaddedString& operator=(const PaddedString&) = default;
  // A moved-from string is empty; the buffer goes along.
  PaddedString(PaddedString&& other) noexcept
      : storage_(std::move(other.storage_)), size_(std::exchange(other.size_, 0)) {
    other.storage_.clear();
  }
  PaddedString& operator=(PaddedString&& other) noexcept {
    if (this != &other) {
      storage_ = std::move(other.storage_);
      size_ = std::exchange(other.size_, 0);
      other.storage_.clear();
    }
    return *this;
  }
  ~PaddedString() = default;

  PaddedString& operator=(std::string_view text) {
    assign(text);
    return *this;
  }

  void assign(std::string_view text) {
    storage_.clear();
    storage_.reserve(text.size() + kBodyPadding);
    storage_.append(text);
    storage_.append(kBodyPadding, '\0');
    size_ = text.size();
  }

  // Appends `n` bytes at `data`; the padding moves along.
  void append(const char* data, std::size_t n) {
    storage_.resize(size_);
    storage_.append(data, n);
    storage_.append(kBodyPadding, '\0');
    size_ += n;
  }

  // Empties the text and keeps the buffer.
  void clear() {
    storage_.clear();
    size_ = 0;
  }
  void reserve(std::size_t n) { storage_.reserve(n + kBodyPadding); }

  [[nodiscard]] std::string_view view() const {
    // Nothing held yet: the text is empty, and zeros follow it.
    static constexpr char kNoText[kBodyPadding] = {};
    return storage_.empty() ? std::string_view(kNoText, kNoText)
                            : std::string_view(storage_.data(), size_);
  }
  operator std::string_view() const { return view(); }  // NOLINT: reads as the text
  [[nodiscard]] PaddedText padded() const { return PaddedText{view()}; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // The text that fits without reallocating.
  [[nodiscard]] std::size_t capacity() const {
    return storage_.capacity() > kBodyPadding ? storage_.capacity() - kBodyPadding : 0;
  }

  friend bool operator==(const PaddedString& a, std::string_view b) { return a.view() == b; }

 private:
  std::string storage_;  // the text and its padding, or nothing
  std::size_t size_ = 0;
};

}  // namespace cudagate
