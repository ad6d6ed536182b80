// Parsing and encoding of qs-pageserver messages (qs/wire/messages.hpp): one
// generic walk per direction over each message's field description. The
// parsers treat the body as hostile: every read is bounds-checked by the
// reader, every count is bounded by the bytes left, every field by its
// limits, and every message must be consumed exactly.
#include <qs/wire/messages.hpp>

#include <type_traits>
#include <utility>

namespace qs::wire {
namespace {

template <class M>
void encode_one(const M& m, writer& w) {
  w.u8(static_cast<std::uint8_t>(M::tag));
  field_encoder e(w);
  M::fields(m, e);
}

template <class M>
M parse_one(reader& in) {
  M m;
  field_decoder d(in);
  try {
    M::fields(m, d);
    d.finish();
  } catch (const malformed_message&) {
    throw;
  } catch (const protocol_error& e) {
    throw malformed_message(name_of(M::tag), d.field(), e.what());
  }
  return m;
}

// The alternative of Variant whose tag is `t`, parsed from the rest of the body.
template <class Variant, std::size_t... I>
Variant parse_variant(std::uint8_t t, reader& in, const char* direction, std::index_sequence<I...>) {
  Variant v;
  bool found = false;
  (void)((static_cast<std::uint8_t>(std::variant_alternative_t<I, Variant>::tag) == t
              ? (v = parse_one<std::variant_alternative_t<I, Variant>>(in), found = true)
              : false) ||
         ...);
  if (!found) throw malformed_message(direction, "type", "unknown message type " + std::to_string(t));
  return v;
}

template <class Variant>
Variant parse(std::span<const std::byte> body, const char* direction) {
  reader in(body);
  std::uint8_t t;
  try {
    t = in.u8();
  } catch (const protocol_error& e) {
    throw malformed_message(direction, "type", e.what());
  }
  return parse_variant<Variant>(t, in, direction, std::make_index_sequence<std::variant_size_v<Variant>>());
}

}  // namespace

const char* name_of(msg m) {
  switch (m) {
    case msg::hello: return "hello";
    case msg::begin: return "begin";
    case msg::write: return "write";
    case msg::commit: return "commit";
    case msg::abort: return "abort";
    case msg::read_page: return "read_page";
    case msg::get: return "get";
    case msg::scan: return "scan";
    case msg::allocate: return "allocate";
    case msg::open_index: return "open_index";
    case msg::index_insert: return "index_insert";
    case msg::index_erase: return "index_erase";
    case msg::index_scan: return "index_scan";
    case msg::log_position: return "log_position";
    case msg::ping: return "ping";
    case msg::outcome: return "outcome";
    case msg::read_pages: return "read_pages";
    case msg::backup: return "backup";
    case msg::ok: return "ok";
    case msg::error: return "error";
    case msg::hello_ok: return "hello_ok";
    case msg::page: return "page";
    case msg::value: return "value";
    case msg::entries: return "entries";
    case msg::pages: return "pages";
    case msg::index: return "index";
    case msg::position: return "position";
    case msg::flag: return "flag";
    case msg::pong: return "pong";
    case msg::begun: return "begun";
    case msg::verdict: return "verdict";
    case msg::records: return "records";
    case msg::invalidate: return "invalidate";
  }
  return "unknown";
}

request parse_request(std::span<const std::byte> body) { return parse<request>(body, "request"); }
response parse_response(std::span<const std::byte> body) { return parse<response>(body, "response"); }

void encode(const request& r, writer& w) {
  std::visit([&](const auto& m) { encode_one(m, w); }, r);
}
void encode(const response& r, writer& w) {
  std::visit([&](const auto& m) { encode_one(m, w); }, r);
}

msg tag_of(const request& r) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::tag; }, r);
}
msg tag_of(const response& r) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::tag; }, r);
}

}  // namespace qs::wire
