// Relocation: giving pages frames in this process, mapping objects, and
// rewriting pointers into pages that could not keep their frames
// (QuickStore section 3.4).
#include "database_impl.hpp"
#include "keys.hpp"
#include "mapping.hpp"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace qs::detail {
namespace {

// A page's share of forced relocation: a fixed hash, so that a run is
// reproducible.
unsigned percentile(std::uint64_t page) {
  page ^= page >> 33;
  page *= 0xff51afd7ed558ccdull;
  page ^= page >> 33;
  return static_cast<unsigned>(page % 100);
}

void put_be(std::string& s, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A stored location (or software mode's identity) is 24 bytes.
void require_location_size(const std::string& db, std::string_view s) {
  if (s.size() != 24)
    throw corrupt_page(0, "database " + db + ": a stored reference has " + std::to_string(s.size()) +
                              " bytes, not 24");
}

std::uint64_t get_be(std::string_view s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

}  // namespace

std::uint64_t database_impl::take_frames(std::uint64_t hint, std::uint64_t n) {
  if (hint + n <= free_frames_->frames() && free_frames_->take(hint, n)) return hint;
  auto f = free_frames_->find(n, hint < free_frames_->frames() ? hint : 0);
  if (!f)
    throw reservation_full("database " + name() + ": the transaction needs " + std::to_string(n) +
                           " more frame(s), and the reservation's " + std::to_string(free_frames_->frames()) +
                           " frames are taken by the pages it touches");
  free_frames_->take(*f, n);
  return *f;
}

page_desc* database_impl::ensure_run(std::uint64_t address, std::uint64_t page, std::uint32_t pages) {
  if (page_desc* d = table_.by_page(page)) return run_head(d);
  const auto* a = reinterpret_cast<const std::byte*>(address);
  bool inside = frames_->contains(a) && (a - frames_->base()) % page_size_ == 0 &&
                frames_->frames() - frames_->frame_of(a) >= pages;
  std::uint64_t want = inside ? frames_->frame_of(a) : free_frames_->frames();
  std::uint64_t frame;
  if (inside && force_relocation_percent_ > 0 && percentile(page) < force_relocation_percent_) {
    // The test harness moves this run even though its frames may be free.
    auto f = free_frames_->find(pages, want + pages);
    if (f && *f == want) f = free_frames_->find(pages, want + 2 * std::uint64_t{pages});
    if (!f || *f == want) throw reservation_full("database " + name() + ": no frames to relocate to");
    free_frames_->take(*f, pages);
    frame = *f;
  } else {
    frame = take_frames(want, pages);
  }
  page_desc* head = nullptr;
  for (std::uint32_t i = 0; i < pages; ++i) {
    page_desc* d = table_.add(page + i, frame + i);
    d->run_first = page;
    d->run_pages = pages;
    if (i == 0) head = d;
  }
  return head;
}

void database_impl::relocate(page_desc* d, std::byte* img) {
  if (d->hdr.mapping_entries == 0) {
    d->mapping.clear();
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  ++stats_.mapping_fetches;
  std::optional<mapping> m = decode_mapping(d->mapping, page_size_);
  if (!m || m->size() != d->hdr.mapping_entries)
    throw corrupt_page(d->page, "database " + name() + ": the mapping object of page " + std::to_string(d->page) +
                                    (d->mapping.empty() ? " is missing" : " is damaged"));
  std::vector<moved_run> moves;
  for (const mapping_entry& e : *m) {
    page_desc* head = ensure_run(e.address, e.page, e.pages);
    auto now = reinterpret_cast<std::uint64_t>(frame_address(head));
    if (now != e.address) moves.push_back({e.address, now, std::uint64_t{e.pages} * page_size_});
  }
  auto t1 = std::chrono::steady_clock::now();
  stats_.mapping_ns += static_cast<std::uint64_t>((t1 - t0).count());
  if (moves.empty()) return;
  relocator r(std::move(moves));
  std::uint64_t rewritten = 0;
  for_each_word(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    if (auto nv = r.moved(v)) {
      std::memcpy(img + off, &*nv, sizeof v);
      ++rewritten;
    }
  });
  stats_.swizzle_ns += static_cast<std::uint64_t>((std::chrono::steady_clock::now() - t1).count());
  if (!rewritten) return;
  stats_.pointers_relocated += rewritten;
  ++stats_.pages_relocated;
  // The stored image still holds the old addresses: if the page is written,
  // it is written whole, with a new mapping.
  d->rewritten = true;
  if (policy_ == relocation::one_time && !d->relocate_pending) {
    d->relocate_pending = true;
    relocated_.push_back(d);
  }
}

const std::string* database_impl::update_mapping(page_desc* d, const std::byte* img) {
  mapping_builder b;
  for_each_word(d, img, [&](std::uint32_t off, bool is_vptr, const type_layout&, std::uint32_t) {
    if (is_vptr) return;
    std::uint64_t v;
    std::memcpy(&v, img + off, sizeof v);
    const auto* p = reinterpret_cast<const std::byte*>(v);
    if (!frames_->contains(p)) return;  // null (or refused by the pointer check)
    page_desc* t = table_.by_frame(frames_->frame_of(p));
    if (!t) return;
    page_desc* h = run_head(t);
    b.add(reinterpret_cast<std::uint64_t>(frame_address(h)), h->page, h->run_pages);
  });
  mapping m = b.finish();
  std::string bytes = encode_mapping(m);
  d->hdr.mapping_entries = static_cast<std::uint32_t>(m.size());
  if (bytes == d->mapping) return nullptr;
  d->mapping = std::move(bytes);
  return &d->mapping;
}

std::string database_impl::encode_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  std::string s;
  put_be(s, page, 8);
  put_be(s, offset, 4);
  put_be(s, 0, 4);
  put_be(s, tag, 8);
  return s;
}

void database_impl::decode_identity(std::string_view s, std::uint64_t& page, std::uint32_t& offset,
                                    std::uint32_t& tag) {
  require_location_size(name(), s);
  page = get_be(s, 0, 8);
  offset = static_cast<std::uint32_t>(get_be(s, 8, 4));
  tag = static_cast<std::uint32_t>(get_be(s, 16, 8));
}

std::string database_impl::encode_location(const void* p) {
  if constexpr (software_swizzling) {
    std::uint64_t page;
    std::uint32_t offset, tag;
    identify_locked(p, page, offset, tag);
    return encode_identity(page, offset, tag);
  }
  page_desc* t = find_page_of(p);
  if (!t) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    throw invalid_argument("database " + name() + ": " + buf + " is not in this database's persistent memory");
  }
  page_desc* h = run_head(t);
  auto run = reinterpret_cast<std::uint64_t>(frame_address(h));
  std::string s;
  put_be(s, h->page, 8);
  put_be(s, reinterpret_cast<std::uint64_t>(p) - run, 4);
  put_be(s, h->run_pages, 4);
  put_be(s, run, 8);
  return s;
}

void* database_impl::decode_location(std::string_view s) {
  if constexpr (software_swizzling) {
    std::uint64_t page;
    std::uint32_t offset, tag;
    decode_identity(s, page, offset, tag);
    return resolve_locked(page, offset, tag, false);
  }
  require_location_size(name(), s);
  page_desc* h = ensure_run(get_be(s, 16, 8), get_be(s, 0, 8), static_cast<std::uint32_t>(get_be(s, 12, 4)));
  return frame_address(h) + get_be(s, 8, 4);
}

void database_impl::reset_frames() {
  evict_all_clean();
  table_.clear();
  free_frames_->reset();
  roots_.clear();
  current_page_ = 0;
  ++stats_.frame_resets;
}

}  // namespace qs::detail
