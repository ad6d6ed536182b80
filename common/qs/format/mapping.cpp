#include <qs/format/mapping.hpp>

#include <algorithm>
#include <cstring>

namespace qs::detail {
namespace {

// Inside x86-64's user address space (2^47 bytes): the end of a run cannot
// wrap around.
constexpr std::uint64_t user_space = std::uint64_t{1} << 47;

void put_varint(std::string& s, std::uint64_t v) {
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
}

// False when the bytes end inside the number or it does not fit 64 bits.
bool get_varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    unsigned char b = *p++;
    if (shift == 63 && b > 1) return false;
    v |= std::uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

std::uint64_t zigzag(std::uint64_t v) { return (v << 1) ^ (0 - (v >> 63)); }
std::uint64_t unzigzag(std::uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

}  // namespace

// Each entry is three varints: the gap in frames from the end of the
// previous run (from 0 for the first), the change of (frame - page) from the
// previous entry's (zigzag; frames and pages are handed out together, so it
// is mostly 0), and the run's length. A pointer-dense page of a graph
// spread over the whole database takes about 3 bytes per entry.
std::string encode_mapping(const mapping& m, std::uint32_t page_size) {
  std::string s;
  s.reserve(m.size() * 4);
  std::uint64_t end = 0, shift = 0;  // in frames
  for (const mapping_entry& e : m) {
    const std::uint64_t frame = e.address / page_size;
    put_varint(s, frame - end);
    const std::uint64_t sh = frame - e.page;
    put_varint(s, zigzag(sh - shift));
    put_varint(s, e.pages);
    end = frame + e.pages;
    shift = sh;
  }
  return s;
}

std::optional<mapping> decode_mapping(std::string_view bytes, std::uint32_t page_size) {
  mapping m;
  m.reserve(bytes.size() / 3);
  auto p = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto* end_of_bytes = p + bytes.size();
  const std::uint64_t frames = user_space / page_size;
  std::uint64_t end = 0, shift = 0;
  while (p != end_of_bytes) {
    std::uint64_t gap, delta, pages;
    if (!get_varint(p, end_of_bytes, gap) || !get_varint(p, end_of_bytes, delta) || !get_varint(p, end_of_bytes, pages))
      return std::nullopt;
    if (pages == 0 || pages > 0xffffffffu || gap >= frames - end || pages > frames - end - gap) return std::nullopt;
    const std::uint64_t frame = end + gap;
    shift += unzigzag(delta);
    m.push_back({frame * page_size, frame - shift, static_cast<std::uint32_t>(pages)});
    end = frame + pages;
  }
  return m;
}

void mapping_builder::add(std::uint64_t address, std::uint64_t page, std::uint32_t pages) {
  // Pointers tend to come in runs to the same page: check the last one first.
  if (!entries_.empty() && entries_.back().address == address) return;
  entries_.push_back({address, page, pages});
}

mapping mapping_builder::finish() {
  std::sort(entries_.begin(), entries_.end(),
            [](const mapping_entry& a, const mapping_entry& b) { return a.address < b.address; });
  entries_.erase(std::unique(entries_.begin(), entries_.end()), entries_.end());
  return std::move(entries_);
}

moved_runs::moved_runs(std::vector<moved_run> moves) : moves_(std::move(moves)) {
  std::sort(moves_.begin(), moves_.end(), [](const moved_run& a, const moved_run& b) { return a.from < b.from; });
}

std::optional<std::uint64_t> moved_runs::moved(std::uint64_t pointer) const {
  auto it = std::upper_bound(moves_.begin(), moves_.end(), pointer,
                             [](std::uint64_t v, const moved_run& r) { return v < r.from; });
  if (it == moves_.begin()) return std::nullopt;
  --it;
  if (pointer - it->from >= it->length) return std::nullopt;
  return it->to + (pointer - it->from);
}

const mapping_entry* find_run(const mapping& m, std::uint64_t pointer, std::uint32_t page_size) {
  auto it = std::upper_bound(m.begin(), m.end(), pointer,
                             [](std::uint64_t v, const mapping_entry& e) { return v < e.address; });
  if (it == m.begin()) return nullptr;
  --it;
  if (pointer - it->address >= std::uint64_t{it->pages} * page_size) return nullptr;
  return &*it;
}

}  // namespace qs::detail
