#pragma once
// An HTTP message body kept with kBodyPadding zero bytes after its end, so
// that the review parser (simdjson, which reads in wide blocks) takes it
// where it lies instead of copying it into a padded buffer of its own.
//
// PaddedStringBody is a Beast Body: its reader appends each piece of the
// body as it arrives (Beast's string_body zero-fills the space first), and
// its writer sends the text without the padding. Its value is PaddedString
// (admission/padded_text.h).

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

#include "admission/padded_text.h"

namespace cudagate {

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
