// parser_fuzzer: libFuzzer target for the wire protocol's parsers, the code
// that sees every byte a client (or a server) sends.
//
// The input is a byte stream cut into frames exactly as wire::connection
// does (u32 length, body; lengths above the limit refused). Each body goes
// through parse_request and parse_response; whatever parses must encode
// back to the same bytes and parse again to the same encoding. Any crash,
// sanitizer report or mismatch is a bug; protocol_error is the expected
// answer to nonsense.
#include <wire/messages.hpp>

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
    auto m2 = parse(again);
    qs::wire::writer w2;
    qs::wire::encode(m2, w2);
    if (w2.finish() != frame) std::abort();  // encode(parse(x)) is a fixed point
  } catch (const qs::wire::protocol_error&) {
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
