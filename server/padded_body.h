#pragma once
// An HTTP message body kept with kBodyPadding zero bytes after its end, so
// that the review parser (simdjson, which reads in wide blocks) takes it
// where it lies instead of copying it into a padded buffer of its own.
//
// PaddedStringBody is a Beast Body: its reader appends each piece of the
// body as it arrives (Beast's string_body zero-fills the space first), and
// its writer sends the text without the padding. PaddedString is its value.

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "server/padded_text.h"

namespace cudagate {

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
    return storage_.empty() ? std::string_view(kNoText, 0)
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

struct PaddedStringBody {
  using value_type = PaddedString;

  static std::uint64_t size(const value_type& body) { return body.size(); }

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>& /*header*/, value_type& body)
        : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, boost::beast::error_code& ec) {
      body_.clear();
      // The parser's body limit has already refused a longer declared length.
      if (length) body_.reserve(static_cast<std::size_t>(*length));
      ec = {};
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
      std::size_t n = 0;
      for (const auto buffer : boost::beast::buffers_range_ref(buffers)) {
        body_.append(static_cast<const char*>(buffer.data()), buffer.size());
        n += buffer.size();
      }
      ec = {};
      return n;
    }

    void finish(boost::beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>& /*header*/, const value_type& body)
        : body_(body) {}

    void init(boost::beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      ec = {};
      return {{const_buffers_type(body_.view().data(), body_.size()), false}};
    }

   private:
    const value_type& body_;
  };
};

}  // namespace cudagate
