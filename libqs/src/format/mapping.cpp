#include "mapping.hpp"

#include <algorithm>
#include <cstring>

namespace qs::detail {
namespace {

constexpr std::size_t entry_bytes = 24;

void put64(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8) s.push_back(static_cast<char>(v & 0xff));
}
std::uint64_t get64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string encode_mapping(const mapping& m) {
  std::string s;
  s.reserve(m.size() * entry_bytes);
  for (const mapping_entry& e : m) {
    put64(s, e.address);
    put64(s, e.page);
    put64(s, e.pages);
  }
  return s;
}

std::optional<mapping> decode_mapping(std::string_view bytes, std::uint32_t page_size) {
  if (bytes.size() % entry_bytes) return std::nullopt;
  mapping m;
  m.reserve(bytes.size() / entry_bytes);
  auto p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < bytes.size(); i += entry_bytes) {
    std::uint64_t pages = get64(p + i + 16);
    mapping_entry e{get64(p + i), get64(p + i + 8), static_cast<std::uint32_t>(pages)};
    if (pages == 0 || pages > 0xffffffffu || e.address % page_size) return std::nullopt;
    // Inside x86-64's user address space (2^47 bytes): the end of a run
    // cannot wrap around, so the order check below holds.
    constexpr std::uint64_t user_space = std::uint64_t{1} << 47;
    if (e.address >= user_space || pages * page_size > user_space - e.address) return std::nullopt;
    if (!m.empty() && m.back().address + std::uint64_t{m.back().pages} * page_size > e.address) return std::nullopt;
    m.push_back(e);
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
