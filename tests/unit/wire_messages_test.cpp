// Unit tests of the qs-pageserver wire codec (qs/wire/messages.hpp, codec.hpp): round trips and malformed bodies.
#include <catch2/catch.hpp>

#include <qs/wire/messages.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

using namespace qs::wire;
using namespace std::string_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using bytes = std::vector<std::byte>;

template <class T, class V>
struct is_alternative;
template <class T, class... A>
struct is_alternative<T, std::variant<A...>> : std::bool_constant<(std::is_same_v<T, A> || ...)> {};

// The variant (request or response) a message type belongs to.
template <class M>
using direction_of = std::conditional_t<is_alternative<M, request>::value, request, response>;

template <class V>
V parse(std::span<const std::byte> body) {
  if constexpr (std::is_same_v<V, request>) return parse_request(body);
  else return parse_response(body);
}

// The body (the frame without its length) of an encoded message.
template <class V>
bytes body_of(const V& m) {
  writer w;
  encode(m, w);
  const auto& frame = w.finish();
  return bytes(frame.begin() + 4, frame.end());
}
template <class M>
bytes body_of_message(const M& m) {
  return body_of(direction_of<M>(m));
}

// What parsing `body` throws: the malformed_message, or nothing when it
// parses (any other exception fails the test).
template <class V>
std::optional<malformed_message> refusal(std::span<const std::byte> body) {
  try {
    (void)parse<V>(body);
  } catch (const malformed_message& e) {
    return e;
  }
  return std::nullopt;
}

// Checks that `body` is refused as a `message` message, in `field`, with a
// text that contains `problem`.
template <class V>
void check_refused(std::span<const std::byte> body, const std::string& message, const std::string& field,
                   const std::string& problem) {
  auto e = refusal<V>(body);
  REQUIRE(e);
  CHECK(e->message() == message);
  CHECK(e->field() == field);
  CHECK_THAT(std::string(e->what()), StartsWith(message + " message"));
  CHECK_THAT(std::string(e->what()), Contains(problem));
  if (!field.empty()) CHECK_THAT(std::string(e->what()), Contains(message + " message, field " + field + ": "));
}
template <class M>
void check_refused(const M& m, const std::string& field, const std::string& problem) {
  check_refused<direction_of<M>>(body_of_message(m), name_of(M::tag), field, problem);
}

void put_u32(bytes& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.at(at + i) = static_cast<std::byte>(v >> (8 * i));
}

bytes from_ints(std::initializer_list<int> l) {
  bytes b;
  for (int v : l) b.push_back(static_cast<std::byte>(v));
  return b;
}

// Varied bytes, in steps of 7 through every byte value (NUL and 0xff among
// the first 150).
std::string patterned(std::size_t n, int start) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((start + i * 7) & 0xff);
  return s;
}

// --- field-by-field comparisons, one per message and part ---

template <class T>
void check_same_list(const std::vector<T>& a, const std::vector<T>& b);

void check_same(std::uint64_t a, std::uint64_t b) { CHECK(a == b); }
void check_same(std::string_view a, std::string_view b) { CHECK(a == b); }
void check_same(const part& a, const part& b) {
  CHECK(a.offset == b.offset);
  CHECK(a.data == b.data);
}
void check_same(const page_op& a, const page_op& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.page == b.page);
  CHECK(a.record == b.record);
  check_same_list(a.parts, b.parts);
  CHECK(a.mapping_op == b.mapping_op);
  CHECK(a.mapping == b.mapping);
  CHECK(a.base_version == b.base_version);
}
void check_same(const meta_op& a, const meta_op& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.key == b.key);
  CHECK(a.value == b.value);
}
void check_same(const page_version& a, const page_version& b) {
  CHECK(a.page == b.page);
  CHECK(a.version == b.version);
}
void check_same(const page_record& a, const page_record& b);
void check_same(const invalidation& a, const invalidation& b) {
  CHECK(a.page == b.page);
  CHECK(a.version == b.version);
}
void check_same(const entry& a, const entry& b) {
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
}
template <class T>
void check_same_list(const std::vector<T>& a, const std::vector<T>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    check_same(a[i], b[i]);
  }
}
template <class T>
void check_same_optional(const std::optional<T>& a, const std::optional<T>& b) {
  REQUIRE(a.has_value() == b.has_value());
  if (a) check_same(*a, *b);
}

void check_same(const hello_request& a, const hello_request& b) {
  CHECK(a.magic == b.magic);
  CHECK(a.version == b.version);
  CHECK(a.secret == b.secret);
}
void check_same(const begin_request& a, const begin_request& b) {
  check_same_list(a.reserve, b.reserve);
  check_same_list(a.reserve_read, b.reserve_read);
}
void check_same(const write_request& a, const write_request& b) {
  check_same_list(a.pages, b.pages);
  check_same_list(a.metas, b.metas);
  CHECK(a.adds_pages == b.adds_pages);
}
void check_same(const commit_request& a, const commit_request& b) {
  CHECK(a.durable == b.durable);
  CHECK(a.serializable == b.serializable);
  check_same_list(a.pages, b.pages);
  check_same_list(a.metas, b.metas);
  check_same_list(a.reads, b.reads);
  CHECK(a.invalidations_seen == b.invalidations_seen);
}
void check_same(const abort_request&, const abort_request&) {}
void check_same(const read_page_request& a, const read_page_request& b) {
  CHECK(a.page == b.page);
  check_same_optional(a.known_version, b.known_version);
}
void check_same(const get_request& a, const get_request& b) { CHECK(a.key == b.key); }
void check_same(const scan_request& a, const scan_request& b) { CHECK(a.prefix == b.prefix); }
void check_same(const allocate_request& a, const allocate_request& b) { CHECK(a.n == b.n); }
void check_same(const open_index_request& a, const open_index_request& b) {
  CHECK(a.name == b.name);
  CHECK(a.unique == b.unique);
}
void check_same(const index_insert_request& a, const index_insert_request& b) {
  CHECK(a.index == b.index);
  CHECK(a.key == b.key);
  CHECK(a.value == b.value);
}
void check_same(const index_erase_request& a, const index_erase_request& b) {
  CHECK(a.index == b.index);
  CHECK(a.key == b.key);
  CHECK(a.value_prefix == b.value_prefix);
}
void check_same(const index_scan_request& a, const index_scan_request& b) {
  CHECK(a.index == b.index);
  CHECK(a.lo == b.lo);
  CHECK(a.hi == b.hi);
  check_same_optional(a.after, b.after);
  CHECK(a.limit == b.limit);
}
void check_same(const log_position_request&, const log_position_request&) {}
void check_same(const ping_request& a, const ping_request& b) {
  CHECK(a.payload == b.payload);
  CHECK(a.reply_bytes == b.reply_bytes);
}
void check_same(const outcome_request& a, const outcome_request& b) {
  CHECK(a.id.time == b.id.time);
  CHECK(a.id.nonce == b.id.nonce);
}

void check_same(const read_pages_request& a, const read_pages_request& b) { check_same_list(a.pages, b.pages); }
void check_same(const backup_request& a, const backup_request& b) { CHECK(a.name == b.name); }
void check_same(const page_record& a, const page_record& b) {
  CHECK(a.page == b.page);
  CHECK(a.record == b.record);
  CHECK(a.mapping == b.mapping);
}
void check_same(const records_response& a, const records_response& b) {
  check_same_list(a.records, b.records);
  CHECK(a.more == b.more);
}
void check_same(const invalidate_response& a, const invalidate_response& b) {
  CHECK(a.all == b.all);
  check_same_list(a.pages, b.pages);
}
void check_same(const ok_response&, const ok_response&) {}
void check_same(const error_response& a, const error_response& b) {
  CHECK(a.code == b.code);
  CHECK(a.text == b.text);
}
void check_same(const hello_ok_response& a, const hello_ok_response& b) { CHECK(a.version == b.version); }
void check_same(const page_response& a, const page_response& b) {
  CHECK(a.status == b.status);
  CHECK(a.record == b.record);
  CHECK(a.mapping == b.mapping);
}
void check_same(const value_response& a, const value_response& b) { check_same_optional(a.value, b.value); }
void check_same(const entries_response& a, const entries_response& b) {
  CHECK(a.more == b.more);
  check_same_list(a.entries, b.entries);
}
void check_same(const pages_response& a, const pages_response& b) {
  CHECK(a.page == b.page);
  CHECK(a.frame == b.frame);
}
void check_same(const index_response& a, const index_response& b) { CHECK(a.index == b.index); }
void check_same(const position_response& a, const position_response& b) { CHECK(a.position == b.position); }
void check_same(const flag_response& a, const flag_response& b) { CHECK(a.value == b.value); }
void check_same(const pong_response& a, const pong_response& b) { CHECK(a.payload == b.payload); }
void check_same(const begun_response& a, const begun_response& b) {
  CHECK(a.id.time == b.id.time);
  CHECK(a.id.nonce == b.id.nonce);
}
void check_same(const verdict_response& a, const verdict_response& b) { CHECK(a.outcome == b.outcome); }

// Encodes each message, checks its frame, parses its body back and checks
// every field, and that the parsed message encodes to the same bytes (one
// encoding per message). Returns the tags seen.
template <class V>
std::set<msg> check_round_trips(const std::vector<V>& messages) {
  std::set<msg> seen;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    std::visit(
        [&](const auto& m) {
          using M = std::decay_t<decltype(m)>;
          INFO("message " << i << ": " << name_of(M::tag));
          seen.insert(M::tag);
          const V original{m};
          CHECK(tag_of(original) == M::tag);
          writer w;
          encode(original, w);
          const bytes frame = w.finish();
          REQUIRE(frame.size() >= 5);
          std::uint32_t length = 0;
          for (int b = 0; b < 4; ++b) length |= std::uint32_t{static_cast<std::uint8_t>(frame[b])} << (8 * b);
          CHECK(length == frame.size() - 4);
          CHECK(frame[4] == static_cast<std::byte>(M::tag));
          const std::span<const std::byte> body(frame.data() + 4, frame.size() - 4);
          const V parsed = parse<V>(body);
          CHECK(tag_of(parsed) == M::tag);
          REQUIRE(std::holds_alternative<M>(parsed));
          check_same(m, std::get<M>(parsed));
          CHECK(body_of(parsed) == bytes(body.begin(), body.end()));
        },
        messages[i]);
  }
  return seen;
}

// Strings the messages below view.
struct sample {
  std::string record = patterned(48 + 200, 1);  // a record header and a short image
  std::string mapping = patterned(48, 3);       // two mapping entries
  std::string binary_key = "s:\0\0\0\0\0\0\0\1"s;
  std::string secret = "s3cr\0t\xff"s;

  // A commit with a put that sets the mapping, a removal, a patch of three
  // parts (the last one ending at the end of a record) that removes the
  // mapping, and a put that keeps it; metadata puts (one with an empty
  // value) and a removal; two reads.
  commit_request commit() const {
    commit_request c;
    c.durable = false;
    c.serializable = true;
    c.pages.push_back({page_op_kind::put, 0x0123456789abcdefu, record, {}, mapping_change::set, mapping, no_record});
    c.pages.push_back({page_op_kind::remove, 9, {}, {}, mapping_change::keep, {}, unchecked_version});
    page_op patch{page_op_kind::patch, 7, {}, {}, mapping_change::remove, {}, 3};
    patch.parts.push_back({0, std::string_view(record).substr(0, 48)});
    patch.parts.push_back({100, "hhhh"});
    patch.parts.push_back({max_record - 3, "end"});
    c.pages.push_back(patch);
    c.pages.push_back({page_op_kind::put, 8, std::string_view(record).substr(0, 1), {}, mapping_change::keep, {}, 0});
    c.metas.push_back({meta_op_kind::put, "r:root", "123 x"});
    c.metas.push_back({meta_op_kind::put, "k", ""});
    c.metas.push_back({meta_op_kind::remove, binary_key, {}});
    c.reads.push_back({4, 12});
    c.reads.push_back({0xfedcba9876543210u, no_record});
    c.invalidations_seen = 17;
    return c;
  }
  index_scan_request index_scan() const { return {3, "a", "z\xff", entry{"key", "v"}, 10}; }
  page_response page() const { return {page_status::record, record, mapping}; }
  // Two records, one with a mapping object and one without.
  records_response records() const { return {{{3, record, mapping}, {0xfedcba9876543210u, record, {}}}, true}; }
};

// The tags of a direction's messages.
template <class V, std::size_t... I>
std::set<std::uint8_t> tags_of(std::index_sequence<I...>) {
  return {static_cast<std::uint8_t>(std::variant_alternative_t<I, V>::tag)...};
}
template <class V>
std::set<std::uint8_t> tags_of() {
  return tags_of<V>(std::make_index_sequence<std::variant_size_v<V>>());
}

template <class V>
std::string direction_name() {
  return std::is_same_v<V, request> ? "request" : "response";
}

// Every strict prefix of m's body is refused: the empty one as a message of
// no type yet, the others as m's message, in a field, for want of bytes
// (a short read, or a count larger than the bytes left could hold).
template <class M>
void check_every_prefix_refused(const M& m) {
  using V = direction_of<M>;
  const bytes body = body_of_message(m);
  const std::string name = name_of(M::tag);
  CHECK_FALSE(refusal<V>(body).has_value());
  for (std::size_t n = 0; n < body.size(); ++n) {
    INFO(name << " body cut to " << n << " of " << body.size() << " bytes");
    auto e = refusal<V>(std::span<const std::byte>(body).first(n));
    CHECK(e.has_value());
    if (!e) continue;
    const std::string what = e->what();
    if (n == 0) {
      CHECK(e->message() == direction_name<V>());
      CHECK(e->field() == "type");
    } else {
      CHECK(e->message() == name);
      CHECK_FALSE(e->field().empty());
      CHECK_THAT(what, StartsWith(name + " message, field " + e->field() + ": "));
    }
    CHECK_THAT(what, Contains("message truncated") || Contains("elements with"));
  }
}

// m's body with `extra` bytes after it is refused, naming m and no field.
template <class M>
void check_trailing_bytes_refused(const M& m, std::size_t extra) {
  using V = direction_of<M>;
  bytes body = body_of_message(m);
  body.resize(body.size() + extra, std::byte{0});
  INFO(name_of(M::tag) << " with " << extra << " extra bytes");
  check_refused<V>(body, name_of(M::tag), "",
                   std::string(name_of(M::tag)) + " message: " + std::to_string(extra) +
                       " unexpected bytes at the end of the message");
}

// A body written field by field, for what no encoder would send.
template <class F>
bytes crafted(F f) {
  writer w;
  f(w);
  const auto& frame = w.finish();
  return bytes(frame.begin() + 4, frame.end());
}

std::string too_long(std::uint32_t max) {
  return "a byte string of " + std::to_string(std::uint64_t{max} + 1) + " bytes, more than " + std::to_string(max);
}

}  // namespace

TEST_CASE("wire: every request round-trips through encode and parse_request", "[unit][wire]") {
  const sample s;
  write_request write;
  write.pages.push_back({page_op_kind::put, 1, s.record, {}, mapping_change::set, s.mapping, 0});
  write.pages.push_back({page_op_kind::remove, 2, {}, {}, mapping_change::keep, {}, unchecked_version});
  write.pages.push_back({page_op_kind::patch, 3, {}, {{5, "ab"}, {60, "c"}}, mapping_change::keep, {}, 17});
  write.metas.push_back({meta_op_kind::put, s.binary_key, s.secret});
  write.metas.push_back({meta_op_kind::remove, "t:x", {}});
  write.adds_pages = 0x0102030405060708u;
  commit_request empty_commit;
  empty_commit.durable = true;
  empty_commit.serializable = false;

  const std::vector<request> requests = {
      hello_request{magic, version, s.secret},
      hello_request{0xfffffffeu, 0, ""},
      begin_request{{1, 2, ~std::uint64_t{0}}, {5}},
      begin_request{},
      write,
      write_request{},
      s.commit(),
      empty_commit,
      abort_request{},
      read_page_request{3, std::nullopt},
      read_page_request{0x1122334455667788u, 0},  // a known version of 0 is not "none"
      read_page_request{5, no_record},
      get_request{"page_size"},
      get_request{""},
      scan_request{"t:"},
      allocate_request{1},
      allocate_request{max_allocation},
      open_index_request{"by_id", true},
      open_index_request{"x", false},
      index_insert_request{7, s.binary_key, "value"},
      index_erase_request{0xffffffffu, "key", "va"},
      s.index_scan(),
      index_scan_request{0, "", "\xff\xff", std::nullopt, 0},
      index_scan_request{1, "a", "b", entry{"", ""}, 1},  // an empty `after` is not "none"
      log_position_request{},
      ping_request{"ping", max_record},
      ping_request{"", 0},
      outcome_request{{0x1800000000000000u, 0x0123456789abcdefu}},
      read_pages_request{{7}},
      read_pages_request{{1, 0xffffffffffffffffu, 5}},
      backup_request{"nightly-1"},
  };
  const std::set<msg> seen = check_round_trips(requests);
  CHECK(seen.size() == std::variant_size_v<request>);
}

TEST_CASE("wire: every response round-trips through encode and parse_response", "[unit][wire]") {
  const sample s;
  entries_response entries;
  entries.more = true;
  entries.entries = {{"k1", "v1"}, {"k2", ""}, {"", "v3"}, {s.binary_key, s.secret}};
  entries_response no_entries;
  no_entries.more = false;

  const std::vector<response> responses = {
      ok_response{},
      error_response{error_code::conflict, "conflict on page 3"},
      error_response{error_code::store, "x"},
      error_response{error_code::closed, ""},
      hello_ok_response{version},
      s.page(),
      page_response{page_status::record, "r", ""},
      page_response{page_status::unchanged, {}, {}},
      page_response{page_status::absent, {}, {}},
      value_response{"v"},
      value_response{""},  // an empty value is not "no such key"
      value_response{std::nullopt},
      entries,
      no_entries,
      pages_response{2, 0x8000000000000009u},
      index_response{0xdeadbeefu},
      position_response{std::uint64_t{1} << 40},
      flag_response{true},
      flag_response{false},
      pong_response{"pp"},
      pong_response{""},
      begun_response{{1, 0xffffffffffffffffu}},
      verdict_response{commit_outcome::committed},
      verdict_response{commit_outcome::aborted},
      verdict_response{commit_outcome::pending},
      verdict_response{commit_outcome::expired},
      s.records(),
      records_response{},
      invalidate_response{false, {{3, 4}, {0xfedcba9876543210u, no_record}}},
      invalidate_response{true, {}},
  };
  const std::set<msg> seen = check_round_trips(responses);
  CHECK(seen.size() == std::variant_size_v<response>);
}

TEST_CASE("wire: every strict prefix of a body is refused, naming the message and a field", "[unit][wire]") {
  const sample s;
  check_every_prefix_refused(s.commit());
  check_every_prefix_refused(read_page_request{0x1122334455667788u, 9});
  check_every_prefix_refused(s.index_scan());
  check_every_prefix_refused(begin_request{{1, 2}, {3}});
  check_every_prefix_refused(s.page());
  check_every_prefix_refused(s.records());
  check_every_prefix_refused(read_pages_request{{4, 5}});
  check_every_prefix_refused(backup_request{"nightly"});
  check_every_prefix_refused(entries_response{true, {{"k1", "v1"}, {"", "v2"}}});
  check_every_prefix_refused(invalidate_response{false, {{1, 2}, {3, 4}}});

  // The field named is the one being read when the bytes ran out.
  const bytes commit = body_of_message(s.commit());
  const std::span<const std::byte> c(commit);
  check_refused<request>(c.first(0), "request", "type", "message truncated");
  check_refused<request>(c.first(3), "commit", "pages", "message truncated");
  // The last read's bytes cut short: the two reads' count is refused first.
  check_refused<request>(c.first(commit.size() - 1 - 8), "commit", "reads",
                         "a count of 2 elements with 31 bytes left in the message");
  check_refused<request>(c.first(commit.size() - 1), "commit", "invalidations_seen", "message truncated");
  // Cut inside a page op, where the list's count still fits: where pages[2]
  // and pages[3] begin is where the same commit without them ends, but for
  // its two empty lists' counts and its invalidations_seen.
  commit_request two = s.commit(), three = s.commit();
  two.pages.resize(2);
  three.pages.resize(3);
  for (commit_request* part : {&two, &three}) {
    part->metas.clear();
    part->reads.clear();
  }
  const std::size_t op2 = body_of_message(two).size() - 16, op3 = body_of_message(three).size() - 16;
  // kind, page, base_version, parts count, parts[0] (offset, 48 bytes), parts[1] (offset, "hhhh")
  check_refused<request>(c.first(op2 + 1 + 8 + 8 + 4 + (4 + 4 + 48) + (4 + 4 + 2)), "commit", "pages[2].parts[1].data",
                         "message truncated");
  // kind, page, base_version, record (1 byte), mapping_op
  check_refused<request>(c.first(op3 + 1 + 8 + 8 + 4), "commit", "pages[3].record", "message truncated");
  check_refused<request>(c.first(op3 + 1 + 8 + 8 + 4 + 1), "commit", "pages[3].mapping_op", "message truncated");
  check_refused<request>(c.first(op3 + 1 + 8 + 8 + 4 + 1 + 1), "commit", "metas", "message truncated");

  const bytes read_page = body_of_message(read_page_request{0x1122334455667788u, 9});
  REQUIRE(read_page.size() == 1 + 8 + 1 + 8);
  const std::span<const std::byte> r(read_page);
  check_refused<request>(r.first(5), "read_page", "page", "message truncated");
  check_refused<request>(r.first(9), "read_page", "known_version", "message truncated");
  check_refused<request>(r.first(10), "read_page", "known_version", "message truncated");

  // index, lo "a", hi "z\xff", after {"key", "v"}, limit.
  const bytes scan = body_of_message(s.index_scan());
  REQUIRE(scan.size() == 1 + 4 + (4 + 1) + (4 + 2) + 1 + (4 + 3) + (4 + 1) + 4);
  const std::span<const std::byte> x(scan);
  check_refused<request>(x.first(16), "index_scan", "after", "message truncated");
  check_refused<request>(x.first(28), "index_scan", "after.value", "message truncated");
  check_refused<request>(x.first(29), "index_scan", "limit", "message truncated");

  const bytes page = body_of_message(s.page());
  const std::span<const std::byte> p(page);
  check_refused<response>(p.first(1), "page", "status", "message truncated");
  check_refused<response>(p.first(2), "page", "record", "message truncated");
  check_refused<response>(p.first(page.size() - 1), "page", "mapping", "message truncated");
}

TEST_CASE("wire: bytes after the last field are refused, naming the message and no field", "[unit][wire]") {
  const sample s;
  check_trailing_bytes_refused(s.commit(), 1);
  check_trailing_bytes_refused(s.commit(), 3);
  check_trailing_bytes_refused(read_page_request{3, std::nullopt}, 1);
  check_trailing_bytes_refused(read_page_request{3, 4}, 1);
  check_trailing_bytes_refused(s.index_scan(), 1);
  check_trailing_bytes_refused(abort_request{}, 1);
  check_trailing_bytes_refused(log_position_request{}, 1);
  check_trailing_bytes_refused(s.page(), 1);
  check_trailing_bytes_refused(page_response{page_status::absent, {}, {}}, 1);
  check_trailing_bytes_refused(ok_response{}, 1);
  check_trailing_bytes_refused(value_response{std::nullopt}, 1);
}

TEST_CASE("wire: a first byte that is no message of the direction is refused as an unknown type", "[unit][wire]") {
  const std::set<std::uint8_t> requests = tags_of<request>();
  const std::set<std::uint8_t> responses = tags_of<response>();
  CHECK(requests.size() == std::variant_size_v<request>);
  CHECK(responses.size() == std::variant_size_v<response>);
  for (std::uint8_t t : requests) CHECK(responses.count(t) == 0);

  check_refused<request>(bytes{}, "request", "type", "message truncated");
  check_refused<response>(bytes{}, "response", "type", "message truncated");

  // A lone tag byte: the direction's own tags are read as their message
  // (which may have no fields), every other byte is refused.
  for (int t = 0; t < 256; ++t) {
    INFO("tag byte " << t);
    const bytes body = from_ints({t});
    const std::string unknown = "unknown message type " + std::to_string(t);
    if (requests.count(static_cast<std::uint8_t>(t))) {
      auto e = refusal<request>(body);
      if (e) CHECK(e->message() == name_of(static_cast<msg>(t)));
    } else {
      check_refused<request>(body, "request", "type", unknown);
    }
    if (responses.count(static_cast<std::uint8_t>(t))) {
      auto e = refusal<response>(body);
      if (e) CHECK(e->message() == name_of(static_cast<msg>(t)));
    } else {
      check_refused<response>(body, "response", "type", unknown);
    }
  }
  CHECK_FALSE(refusal<request>(from_ints({static_cast<int>(msg::abort)})).has_value());
  CHECK_FALSE(refusal<response>(from_ints({static_cast<int>(msg::ok)})).has_value());

  // Whole messages with their tag changed, or sent the wrong way.
  const sample s;
  bytes commit = body_of_message(s.commit());
  check_refused<response>(commit, "response", "type", "unknown message type 4");
  commit[0] = std::byte{0};
  check_refused<request>(commit, "request", "type", "unknown message type 0");
  commit[0] = static_cast<std::byte>(msg::page);
  check_refused<request>(commit, "request", "type", "unknown message type 67");
  bytes page = body_of_message(s.page());
  check_refused<request>(page, "request", "type", "unknown message type 67");
  page[0] = std::byte{0xff};
  check_refused<response>(page, "response", "type", "unknown message type 255");
}

TEST_CASE("wire: lengths, counts and values beyond their limits are refused, naming the field", "[unit][wire]") {
  const sample s;

  SECTION("byte strings longer than their limit") {
    check_refused(hello_request{magic, version, std::string(max_secret + 1, 's')}, "secret", too_long(max_secret));
    check_refused(open_index_request{std::string(max_index_name + 1, 'n'), true}, "name", too_long(max_index_name));
    const std::string key(max_key + 1, 'k');
    const std::string value(max_value + 1, 'v');
    check_refused(get_request{key}, "key", too_long(max_key));
    check_refused(scan_request{key}, "prefix", too_long(max_key));
    check_refused(index_insert_request{1, "k", value}, "value", too_long(max_value));
    check_refused(index_erase_request{1, key, ""}, "key", too_long(max_key));
    check_refused(index_scan_request{1, key, "z", std::nullopt, 0}, "lo", too_long(max_key));
    check_refused(index_scan_request{1, "a", "z", entry{key, "v"}, 0}, "after.key", too_long(max_key));
    check_refused(index_scan_request{1, "a", "z", entry{"k", value}, 0}, "after.value", too_long(max_value));
    check_refused(error_response{error_code::store, value}, "text", too_long(max_value));
    check_refused(pong_response{std::string(max_record + 1, 'p')}, "payload", too_long(max_record));
    check_refused(value_response{value}, "value", too_long(max_value));
    check_refused(entries_response{false, {{"k", "v"}, {key, "v"}}}, "entries[1].key", too_long(max_key));

    const std::string record(max_record + 1, 'r');
    const std::string mapping(max_mapping + 1, 'm');
    check_refused(page_response{page_status::record, record, ""}, "record", too_long(max_record));
    check_refused(page_response{page_status::record, "r", mapping}, "mapping", too_long(max_mapping));

    commit_request c;
    c.pages.push_back({page_op_kind::remove, 1, {}, {}, mapping_change::keep, {}, 0});
    c.pages.push_back({page_op_kind::put, 2, record, {}, mapping_change::keep, {}, 0});
    check_refused(c, "pages[1].record", too_long(max_record));
    c.pages[1] = {page_op_kind::put, 2, "r", {}, mapping_change::set, mapping, 0};
    check_refused(c, "pages[1].mapping", too_long(max_mapping));
    c.pages.pop_back();
    c.metas.push_back({meta_op_kind::remove, "k", {}});
    c.metas.push_back({meta_op_kind::put, key, "v"});
    check_refused(c, "metas[1].key", too_long(max_key));
    c.metas[1] = {meta_op_kind::put, "k", value};
    check_refused(c, "metas[1].value", too_long(max_value));

    // The limit is checked before the bytes are looked for: a length of
    // more than max_message is refused as such, not as a truncation.
    const bytes ping = crafted([](writer& w) {
      w.u8(static_cast<std::uint8_t>(msg::ping));
      w.u32(max_message + 1);
    });
    check_refused<request>(ping, "ping", "payload", too_long(max_message));
  }

  SECTION("byte strings shorter than their minimum") {
    check_refused(page_response{page_status::record, "", "m"}, "record", "a byte string of 0 bytes, fewer than 1");
    commit_request c;
    c.pages.push_back({page_op_kind::put, 2, "", {}, mapping_change::keep, {}, 0});
    check_refused(c, "pages[0].record", "a byte string of 0 bytes, fewer than 1");
    c.pages[0] = {page_op_kind::put, 2, "r", {}, mapping_change::set, "", 0};
    check_refused(c, "pages[0].mapping", "a byte string of 0 bytes, fewer than 1");
    c.pages.clear();
    c.metas.push_back({meta_op_kind::remove, "", {}});
    check_refused(c, "metas[0].key", "a byte string of 0 bytes, fewer than 1");
  }

  SECTION("numbers outside their range") {
    check_refused(allocate_request{0}, "n", "0 is outside [1, 4294967296]");
    check_refused(allocate_request{max_allocation + 1}, "n", "4294967297 is outside [1, 4294967296]");
    check_refused(ping_request{"", max_record + 1}, "reply_bytes",
                  std::to_string(max_record + 1) + " is outside [0, " + std::to_string(max_record) + "]");
  }

  SECTION("patch parts outside the page record, or none") {
    commit_request c;
    c.pages.push_back({page_op_kind::remove, 1, {}, {}, mapping_change::keep, {}, 0});
    page_op patch{page_op_kind::patch, 2, {}, {{0, "a"}, {1, "b"}, {max_record, "x"}}, mapping_change::keep, {}, 0};
    c.pages.push_back(patch);
    check_refused(c, "pages[1].parts[2].offset",
                  std::to_string(max_record) + " is outside [0, " + std::to_string(max_record - 1) + "]");
    c.pages[1].parts[2] = {max_record - 2, "end"};
    check_refused(c, "pages[1].parts[2].data", "a patch outside the page record");
    c.pages[1].parts[2] = {5, ""};
    check_refused(c, "pages[1].parts[2].data", "a byte string of 0 bytes, fewer than 1");
    c.pages[1].parts.clear();
    check_refused(c, "pages[1].parts", "a page patch with no parts");
  }

  SECTION("counts larger than the bytes left could hold") {
    const bytes commit = crafted([](writer& w) {
      w.u8(static_cast<std::uint8_t>(msg::commit));
      w.u8(1);
      w.u8(1);
      w.u32(0xffffffffu);  // pages
      w.u32(0);            // metas
      w.u32(0);            // reads
    });
    check_refused<request>(commit, "commit", "pages",
                           "a count of 4294967295 elements with 8 bytes left in the message");
    // Two reads need 32 bytes; 31 are left.
    const bytes reads = crafted([](writer& w) {
      w.u8(static_cast<std::uint8_t>(msg::commit));
      w.u8(1);
      w.u8(1);
      w.u32(0);
      w.u32(0);
      w.u32(2);
      for (int i = 0; i < 31; ++i) w.u8(0);
    });
    check_refused<request>(reads, "commit", "reads", "a count of 2 elements with 31 bytes left in the message");
  }

  SECTION("read_pages asks for 1 to max_batch pages, and is answered with no more") {
    check_refused(read_pages_request{}, "pages", "read_pages asks for 1 to max_batch pages");
    read_pages_request r;
    r.pages.assign(max_batch + 1, 9);
    check_refused(r, "pages", "read_pages asks for 1 to max_batch pages");
    r.pages.pop_back();
    CHECK_FALSE(refusal<request>(body_of_message(r)).has_value());
    const std::string record(8, 'r');
    records_response many;
    many.records.assign(max_batch + 1, page_record{1, record, {}});
    check_refused(many, "records", "more records than read_pages asks for");
  }

  SECTION("more pages reserved at begin than a begin may") {
    begin_request b;
    b.reserve.assign(1000, 7);
    b.reserve_read.assign(max_reserved - 1000 + 1, 8);
    check_refused(b, "reserve", "more pages to reserve (reserve and reserve_read) than a begin may");
    b.reserve_read.pop_back();
    CHECK_FALSE(refusal<request>(body_of_message(b)).has_value());
  }

  SECTION("fields at their limits are accepted") {
    const std::string secret(max_secret, 's');
    const std::string name(max_index_name, 'n');
    const std::string key(max_key, 'k');
    const std::string value(max_value, 'v');
    const std::string record(max_record, 'r');
    const std::string mapping(max_mapping, 'm');
    commit_request c;
    c.pages.push_back({page_op_kind::put, 1, record, {}, mapping_change::set, mapping, 0});
    c.pages.push_back({page_op_kind::patch, 2, {}, {{0, record}, {max_record - 1, "x"}}, mapping_change::keep, {}, 0});
    c.metas.push_back({meta_op_kind::put, key, value});
    begin_request b;
    b.reserve.assign(1000, 7);
    b.reserve_read.assign(max_reserved - 1000, 8);
    const std::set<msg> seen = check_round_trips(
        std::vector<request>{hello_request{magic, version, secret}, open_index_request{name, false}, c, b,
                             index_scan_request{~std::uint32_t{0}, key, key, entry{key, value}, ~std::uint32_t{0}},
                             allocate_request{max_allocation}, ping_request{"", max_record}});
    CHECK(seen.size() == 7);
    check_round_trips(std::vector<response>{page_response{page_status::record, record, mapping}, pong_response{record},
                                            value_response{value}, error_response{error_code::closed, value}});
  }
}

TEST_CASE("wire: enumerations and flags outside their values are refused", "[unit][wire]") {
  SECTION("page op kind and mapping change") {
    commit_request c;
    c.pages.push_back({page_op_kind::put, 1, "R", {}, mapping_change::keep, {}, 0});
    bytes body = body_of_message(c);
    // tag, durable, serializable, count; kind, page, base_version, record (4 + 1), mapping_op;
    // metas and reads counts, invalidations_seen
    REQUIRE(body.size() == 1 + 1 + 1 + 4 + 1 + 8 + 8 + 4 + 1 + 1 + 4 + 4 + 8);
    REQUIRE(body[7] == std::byte{1});
    REQUIRE(body[28] == std::byte{'R'});
    REQUIRE(body[29] == std::byte{0});
    bytes bad = body;
    bad[7] = std::byte{0};
    check_refused<request>(bad, "commit", "pages[0].kind", "unknown value 0");
    bad[7] = std::byte{4};
    check_refused<request>(bad, "commit", "pages[0].kind", "unknown value 4");
    bad = body;
    bad[29] = std::byte{3};
    check_refused<request>(bad, "commit", "pages[0].mapping_op", "unknown value 3");
    bad[29] = std::byte{2};
    CHECK_FALSE(refusal<request>(bad).has_value());
  }

  SECTION("meta op kind") {
    write_request w;
    w.metas.push_back({meta_op_kind::put, "k", "v"});
    bytes body = body_of_message(w);
    REQUIRE(body[9] == std::byte{1});  // tag, pages count, metas count, kind
    body[9] = std::byte{0};
    check_refused<request>(body, "write", "metas[0].kind", "unknown value 0");
    body[9] = std::byte{3};
    check_refused<request>(body, "write", "metas[0].kind", "unknown value 3");
  }

  SECTION("error code, a u32 on the wire") {
    bytes body = body_of_message(error_response{error_code::store, "x"});
    put_u32(body, 1, 0);
    check_refused<response>(body, "error", "code", "unknown value 0");
    put_u32(body, 1, 11);
    check_refused<response>(body, "error", "code", "unknown value 11");
    put_u32(body, 1, 0x01000001);  // store's low byte, and a high one
    check_refused<response>(body, "error", "code", "unknown value 16777217");
    put_u32(body, 1, 10);
    CHECK_FALSE(refusal<response>(body).has_value());
  }

  SECTION("page status and commit outcome") {
    bytes page = body_of_message(page_response{page_status::absent, {}, {}});
    REQUIRE(page.size() == 2);
    page[1] = std::byte{3};
    check_refused<response>(page, "page", "status", "unknown value 3");
    bytes verdict = body_of_message(verdict_response{commit_outcome::committed});
    REQUIRE(verdict.size() == 2);
    verdict[1] = std::byte{0};
    check_refused<response>(verdict, "verdict", "outcome", "unknown value 0");
    verdict[1] = std::byte{5};
    check_refused<response>(verdict, "verdict", "outcome", "unknown value 5");
  }

  SECTION("flags, and optional fields' presence flags, are 0 or 1") {
    bytes commit = body_of_message(commit_request{});
    commit[1] = std::byte{2};
    check_refused<request>(commit, "commit", "durable", "a flag of 2, not 0 or 1");
    commit[1] = std::byte{1};
    commit[2] = std::byte{0xff};
    check_refused<request>(commit, "commit", "serializable", "a flag of 255, not 0 or 1");
    bytes read_page = body_of_message(read_page_request{3, std::nullopt});
    REQUIRE(read_page.size() == 10);
    read_page[9] = std::byte{2};
    check_refused<request>(read_page, "read_page", "known_version", "a flag of 2, not 0 or 1");
    bytes flag = body_of_message(flag_response{true});
    flag[1] = std::byte{2};
    check_refused<response>(flag, "flag", "value", "a flag of 2, not 0 or 1");
    bytes value = body_of_message(value_response{std::nullopt});
    value[1] = std::byte{2};
    check_refused<response>(value, "value", "value", "a flag of 2, not 0 or 1");
  }
}

TEST_CASE("wire: the encoding is little-endian, length-prefixed, as codec.hpp describes", "[unit][wire]") {
  writer w;
  encode(request{hello_request{magic, version, "ab"}}, w);
  CHECK(w.finish() == from_ints({16,   0,    0,    0,               // body length
                                 1,                                 // hello
                                 0x51, 0x53, 0x57, 0x50,            // "QSWP"
                                 12,   0,    0,    0,               // version
                                 2,    0,    0,    0,    'a', 'b',  // secret
                                 0}));                              // read_replica
  CHECK(body_of_message(read_page_request{0x0102030405060708u, 9}) ==
        from_ints({6, 8, 7, 6, 5, 4, 3, 2, 1, 1, 9, 0, 0, 0, 0, 0, 0, 0}));
  CHECK(body_of_message(read_page_request{0x0102030405060708u, std::nullopt}) ==
        from_ints({6, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  CHECK(body_of_message(error_response{error_code::closed, "x"}) == from_ints({65, 7, 0, 0, 0, 1, 0, 0, 0, 'x'}));
  CHECK(body_of_message(entries_response{true, {{"k", ""}}}) ==
        from_ints({69, 1, 1, 0, 0, 0, 1, 0, 0, 0, 'k', 0, 0, 0, 0}));
}

TEST_CASE("wire: a parsed byte string views the body it was parsed from", "[unit][wire]") {
  const sample s;
  const bytes body = body_of_message(s.commit());
  const request parsed = parse_request(body);
  REQUIRE(std::holds_alternative<commit_request>(parsed));
  const auto& c = std::get<commit_request>(parsed);
  const auto inside = [&](std::string_view v) {
    const auto* p = reinterpret_cast<const std::byte*>(v.data());
    return p >= body.data() && p + v.size() <= body.data() + body.size();
  };
  CHECK(inside(c.pages[0].record));
  CHECK(inside(c.pages[0].mapping));
  CHECK(inside(c.pages[2].parts[1].data));
  CHECK(inside(c.metas[2].key));
  CHECK_FALSE(inside(s.record));
}
