// parser_fuzzer: libFuzzer target for the wire protocol's parsers, the code
// that sees every byte a client (or a server) sends.
//
// The input is a byte stream cut into frames exactly as wire::connection
// does (u32 length, body; lengths above the limit refused). Each body goes
// through parse_request and parse_response; whatever parses must encode
// back to the same bytes (the parsers accept one encoding of each message)
// and parse again to the same encoding. Any crash, sanitizer report or
// mismatch is a bug; malformed_message, naming a message and a field, is the
// expected answer to nonsense, and nothing else may be thrown.
#include <qs/wire/messages.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

namespace {

template <class Parse>
void round_trip(std::span<const std::byte> body, Parse parse) {
  try {
    auto m = parse(body);
    qs::wire::writer w;
    qs::wire::encode(m, w);
    const auto& frame = w.finish();
    std::span<const std::byte> again(frame.data() + 4, frame.size() - 4);
    if (again.size() != body.size() || std::memcmp(again.data(), body.data(), body.size()) != 0)
      std::abort();  // encode(parse(x)) == x
    auto m2 = parse(again);
    qs::wire::writer w2;
    qs::wire::encode(m2, w2);
    if (w2.finish() != frame) std::abort();  // and it parses again to the same message
  } catch (const qs::wire::malformed_message& e) {
    if (e.message().empty()) std::abort();  // every refusal names the message
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto p = reinterpret_cast<const std::byte*>(data);
  std::size_t left = size;
  for (int frames = 0; left >= 4 && frames < 64; ++frames) {
    std::uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n |= std::uint32_t{data[size - left + i]} << (8 * i);
    p += 4;
    left -= 4;
    if (n == 0 || n > qs::wire::max_message || n > left) break;  // refused, or truncated
    std::span<const std::byte> body(p, n);
    round_trip(body, [](std::span<const std::byte> b) { return qs::wire::parse_request(b); });
    round_trip(body, [](std::span<const std::byte> b) { return qs::wire::parse_response(b); });
    p += n;
    left -= n;
  }
  return 0;
}
