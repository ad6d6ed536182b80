// wire/codec.hpp: the byte encoding of qs-pageserver messages.
//
// A frame on the wire is a u32 body length followed by the body. Integers are
// little-endian; a byte string is a u32 length followed by its bytes. The
// writer builds a whole frame (length prefix first, filled in by finish());
// the reader takes a body and never reads past its end: every short or
// inconsistent input throws wire::protocol_error, whatever the bytes are.
#pragma once

#include <qs/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qs::wire {

// A message that breaks the protocol. The server closes the connection.
class protocol_error : public qs::error {
 public:
  using qs::error::error;
};

class writer {
 public:
  writer() { buf_.resize(4); }
  void u8(std::uint8_t v) { buf_.push_back(static_cast<std::byte>(v)); }
  void u32(std::uint32_t v) { le(v, 4); }
  void u64(std::uint64_t v) { le(v, 8); }
  void bytes(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void raw(const void* p, std::size_t n) {
    auto b = static_cast<const std::byte*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  // Body bytes so far.
  std::size_t body_size() const { return buf_.size() - 4; }
  // The frame: length prefix and body.
  const std::vector<std::byte>& finish() {
    std::uint64_t n = body_size();
    for (int i = 0; i < 4; ++i) buf_[i] = static_cast<std::byte>(n >> (8 * i));
    return buf_;
  }

 private:
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<std::byte>(v >> (8 * i)));
  }
  std::vector<std::byte> buf_;
};

class reader {
 public:
  explicit reader(std::span<const std::byte> body) : p_(body.data()), end_(body.data() + body.size()) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(le(1)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(le(4)); }
  std::uint64_t u64() { return le(8); }
  // A byte string, viewed in place; at most `max` bytes.
  std::string_view bytes(std::uint32_t max) {
    std::uint32_t n = u32();
    if (n > max) throw protocol_error("a byte string of " + std::to_string(n) + " bytes, more than " + std::to_string(max));
    need(n);
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }
  // A count of elements of at least `min_bytes` each: no larger than what
  // the rest of the message could hold.
  std::uint32_t count(std::size_t min_bytes) {
    std::uint32_t n = u32();
    if (min_bytes && n > remaining() / min_bytes)
      throw protocol_error("a count of " + std::to_string(n) + " elements in a message of " +
                           std::to_string(remaining()) + " bytes left");
    return n;
  }
  void done() const {
    if (p_ != end_) throw protocol_error(std::to_string(remaining()) + " unexpected bytes at the end of a message");
  }

 private:
  void need(std::size_t n) const {
    if (remaining() < n) throw protocol_error("message truncated");
  }
  std::uint64_t le(int n) {
    need(static_cast<std::size_t>(n));
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(p_[i])} << (8 * i);
    p_ += n;
    return v;
  }
  const std::byte* p_;
  const std::byte* end_;
};

}  // namespace qs::wire
