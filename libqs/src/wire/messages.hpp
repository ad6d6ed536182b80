// wire/messages.hpp: the messages of the qs-pageserver protocol, and their
// parsers and encoders (the one definition both sides compile).
//
// Protocol version 2. A connection starts with the client's hello (magic,
// version, and for TCP the shared secret); then the client sends one request
// at a time and the server answers each with one response. Requests:
//
//   hello        magic, version, secret            -> hello_ok | error
//   begin                                          -> ok
//   write        page ops, meta ops (in the txn)   -> ok | error
//   commit       durable, page ops, meta ops       -> ok | error (txn ended)
//   abort                                          -> ok
//   read_page    page, [version]                   -> page (absent|unchanged|record and
//                                                     the page's mapping object)
//   lock_write   page                              -> ok | error (deadlock)
//   get          key                               -> value
//   scan         prefix                            -> entries
//   allocate     n                                 -> pages (first page, first frame)
//   open_index   name, unique                      -> number
//   index_insert/index_erase  index, key, value    -> flag
//   index_scan   index, lo, hi, [after key, value], limit  -> entries (+ more)
//   log_position                                   -> number
//   ping         payload, n                        -> pong (n bytes): a bare round trip
//
// Every field is bounds-checked by the parsers: lengths, counts, offsets into
// page records, and trailing bytes. A body longer than max_message never
// gets to a parser (the framing refuses it).
#pragma once

#include "codec.hpp"

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace qs::wire {

constexpr std::uint32_t magic = 0x50575351;  // "QSWP"
constexpr std::uint32_t version = 2;
// The largest message body either side accepts.
constexpr std::uint32_t max_message = 64u << 20;
// The largest page record (64 KiB page and a 40-byte header, with room).
constexpr std::uint32_t max_record = 65536 + 64;
// The largest mapping object: one 24-byte entry per pointer word of a page.
constexpr std::uint32_t max_mapping = 65536 / 8 * 24;
// The largest metadata key, value or index key, and secret.
constexpr std::uint32_t max_key = 64u << 10;
constexpr std::uint32_t max_value = 1u << 20;
constexpr std::uint32_t max_secret = 1024;

enum class msg : std::uint8_t {
  hello = 1, begin, write, commit, abort, read_page, lock_write, get, scan, allocate,
  open_index, index_insert, index_erase, index_scan, log_position, ping,
  // responses
  ok = 64, error, hello_ok, page, value, entries, pages, number, flag, pong,
};

// Error codes in an error response.
enum class error_code : std::uint32_t { store = 1, deadlock = 2, protocol = 3, auth = 4, invalid = 5, corrupt = 6 };

struct part {
  std::uint32_t offset;  // in the record (header included)
  std::string_view data;
};
enum class page_op_kind : std::uint8_t { put = 1, patch = 2, remove = 3 };
struct page_op {
  page_op_kind kind;
  std::uint64_t page;
  std::string_view record;   // put: the whole record
  std::vector<part> parts;   // patch
};
enum class meta_op_kind : std::uint8_t { put = 1, remove = 2 };
struct meta_op {
  meta_op_kind kind;
  std::string_view key;
  std::string_view value;
};

// A parsed request; the fields its type uses are set. Byte strings view the
// message body they were parsed from.
struct request {
  msg type{};
  std::uint32_t magic = 0, version = 0;
  std::string_view secret, key, value, name, lo, hi;
  std::uint64_t page = 0, n = 0;
  bool flag = false;  // read_page: a version is given; open_index: unique; commit: durable;
                      // index_scan: start after (key, value)
  std::uint64_t page_version = 0;
  std::uint32_t index = 0, limit = 0;
  std::vector<page_op> pages;
  std::vector<meta_op> metas;
};

enum class page_status : std::uint8_t { absent = 0, unchanged = 1, record = 2 };

struct response {
  msg type{};
  error_code code{};
  std::string_view text;  // error: message; value, pong: the bytes; page: the record
  std::string_view mapping;  // page (record): the page's mapping object, or empty
  bool flag = false;      // value: found; entries: more follow; flag: the flag
  page_status status{};   // page
  std::uint64_t a = 0, b = 0;  // pages: page, frame; number, hello_ok: a
  std::vector<std::pair<std::string_view, std::string_view>> entries;
};

request parse_request(std::span<const std::byte> body);
void encode(const request& r, writer& w);
response parse_response(std::span<const std::byte> body);
void encode(const response& r, writer& w);

const char* name_of(msg m);

}  // namespace qs::wire
