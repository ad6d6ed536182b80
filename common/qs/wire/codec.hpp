// qs/wire/codec.hpp: the byte encoding of qs-pageserver messages, and the two
// walks over a message's field description (messages.hpp) that encode and
// parse it.
//
// A frame on the wire is a u32 body length followed by the body. Integers are
// little-endian; a flag is one byte, 0 or 1; a byte string is a u32 length
// followed by its bytes; a list is a u32 count followed by its elements; an
// optional field is a flag followed, when it is 1, by the field.
//
// Each message type describes its fields once, in a static
// `fields(message, walk)` that calls the walk once per field, in wire order,
// with the field's name and its limits. field_encoder writes the fields;
// field_decoder reads them into a message and checks every length, count,
// range and stated condition against the limits, so that whatever the bytes
// are, a parse either yields a message within its limits or throws
// wire::malformed_message naming the message and the field. Encoders trust
// their caller; parsers trust nothing.
//
// Invariants: the reader never reads past the end of the body it was given;
// a parsed byte string views that body (it lives as long as the body does).
//
// Thread-safety: none needed; writers, readers and walks are used by one
// thread at a time and share nothing.
#pragma once

#include <qs/base/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace qs::wire {

// A message that breaks the protocol. The server closes the connection.
class protocol_error : public qs::error {
 public:
  using qs::error::error;
};

// A message body whose bytes do not parse: names the message and the field
// ("commit message, field pages[2].parts[0].offset: ...").
class malformed_message : public protocol_error {
 public:
  malformed_message(const std::string& message, const std::string& field, const std::string& problem)
      : protocol_error(message + " message" + (field.empty() ? "" : ", field " + field) + ": " + problem),
        message_(message),
        field_(field) {}
  const std::string& message() const noexcept { return message_; }
  // Empty when the problem is not in one field (bytes after the last one).
  const std::string& field() const noexcept { return field_; }

 private:
  std::string message_;
  std::string field_;
};

class writer {
 public:
  writer() { buf_.resize(4); }
  // Empties the writer for the next message, keeping its buffer (a server
  // sending many large answers does not allocate and fault in each anew).
  void clear() { buf_.resize(4); }
  std::size_t capacity() const { return buf_.capacity(); }
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

// Reads a body. Every short or inconsistent input throws protocol_error
// (field_decoder turns it into a malformed_message).
class reader {
 public:
  explicit reader(std::span<const std::byte> body) : p_(body.data()), end_(body.data() + body.size()) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(le(1)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(le(4)); }
  std::uint64_t u64() { return le(8); }
  // A byte string, viewed in place; at most `max` bytes.
  std::string_view bytes(std::uint32_t max) {
    std::uint32_t n = u32();
    if (n > max)
      throw protocol_error("a byte string of " + std::to_string(n) + " bytes, more than " + std::to_string(max));
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
      throw protocol_error("a count of " + std::to_string(n) + " elements with " + std::to_string(remaining()) +
                           " bytes left in the message");
    return n;
  }
  void done() const {
    if (p_ != end_) throw protocol_error(std::to_string(remaining()) + " unexpected bytes at the end of the message");
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

// Walks a message's field description, writing each field.
class field_encoder {
 public:
  explicit field_encoder(writer& w) : w_(w) {}
  void flag(const char*, bool v) { w_.u8(v ? 1 : 0); }
  void u32(const char*, std::uint32_t v, std::uint32_t = 0, std::uint32_t = ~std::uint32_t{0}) { w_.u32(v); }
  void u64(const char*, std::uint64_t v, std::uint64_t = 0, std::uint64_t = ~std::uint64_t{0}) { w_.u64(v); }
  // An enumeration of underlying type u8 or u32, valid from first to last.
  template <class E>
  void enumeration(const char*, E v, E, E) {
    if constexpr (sizeof(E) == 1) w_.u8(static_cast<std::uint8_t>(v));
    else w_.u32(static_cast<std::uint32_t>(v));
  }
  void bytes(const char*, std::string_view v, std::uint32_t, std::uint32_t = 0) { w_.bytes(v); }
  // A list whose elements take at least min_bytes each on the wire; each(e)
  // walks one element.
  template <class T, class Each>
  void list(const char*, const std::vector<T>& v, std::size_t, Each each) {
    w_.u32(static_cast<std::uint32_t>(v.size()));
    for (const T& e : v) each(e);
  }
  template <class T, class Each>
  void optional(const char*, const std::optional<T>& v, Each each) {
    w_.u8(v ? 1 : 0);
    if (v) each(*v);
  }
  // A condition on the fields walked so far; `field` names the one it is
  // about (for errors).
  void check(bool, const char*, const char*) {}

 private:
  writer& w_;
};

// Walks a message's field description, reading each field into the message
// and checking it. field() names the field being read (for errors).
class field_decoder {
 public:
  explicit field_decoder(reader& r) : r_(r) {}
  void flag(const char* name, bool& v) {
    at(name);
    std::uint8_t b = r_.u8();
    if (b > 1) throw protocol_error("a flag of " + std::to_string(b) + ", not 0 or 1");
    v = b != 0;
  }
  template <class T>
  void u32(const char* name, T& v, std::uint32_t min = 0, std::uint32_t max = ~std::uint32_t{0}) {
    at(name);
    v = static_cast<T>(in_range(r_.u32(), min, max));
  }
  template <class T>
  void u64(const char* name, T& v, std::uint64_t min = 0, std::uint64_t max = ~std::uint64_t{0}) {
    at(name);
    v = static_cast<T>(in_range(r_.u64(), min, max));
  }
  template <class E>
  void enumeration(const char* name, E& v, E first, E last) {
    at(name);
    std::uint64_t n = sizeof(E) == 1 ? r_.u8() : r_.u32();
    using U = std::underlying_type_t<E>;
    if (n < static_cast<U>(first) || n > static_cast<U>(last))
      throw protocol_error("unknown value " + std::to_string(n));
    v = static_cast<E>(n);
  }
  void bytes(const char* name, std::string_view& v, std::uint32_t max, std::uint32_t min = 0) {
    at(name);
    v = r_.bytes(max);
    if (v.size() < min)
      throw protocol_error("a byte string of " + std::to_string(v.size()) + " bytes, fewer than " +
                           std::to_string(min));
  }
  template <class T, class Each>
  void list(const char* name, std::vector<T>& v, std::size_t min_bytes, Each each) {
    at(name);
    std::uint32_t n = r_.count(min_bytes);
    v.clear();
    v.reserve(n);
    std::size_t depth = path_.size();
    for (std::uint32_t i = 0; i < n; ++i) {
      path_.resize(depth);
      path_.push_back(std::string(name) + "[" + std::to_string(i) + "].");
      each(v.emplace_back());
    }
    path_.resize(depth);
  }
  template <class T, class Each>
  void optional(const char* name, std::optional<T>& v, Each each) {
    bool present = false;
    flag(name, present);
    v.reset();
    if (present) each(v.emplace());
  }
  void check(bool ok, const char* field, const char* problem) {
    if (ok) return;
    at(field);
    throw protocol_error(problem);
  }
  // The field being read: its path from the message ("pages[1].parts[0].offset").
  std::string field() const {
    std::string s;
    for (const std::string& p : path_) s += p;
    return s + (field_ ? field_ : "");
  }
  // After the last field: errors name no field.
  void finish() {
    path_.clear();
    field_ = nullptr;
    r_.done();
  }

 private:
  void at(const char* name) { field_ = name; }
  static std::uint64_t in_range(std::uint64_t n, std::uint64_t min, std::uint64_t max) {
    if (n < min || n > max)
      throw protocol_error(std::to_string(n) + " is outside [" + std::to_string(min) + ", " + std::to_string(max) +
                           "]");
    return n;
  }
  reader& r_;
  std::vector<std::string> path_;
  const char* field_ = nullptr;
};

}  // namespace qs::wire
