// page_table.hpp: what the runtime knows about each page it has seen.
//
// A page_desc exists for every page this process has faulted in, created or
// looked up since the database was opened. It is found by page number or by
// frame. Its state says how the page's frame is mapped:
//   absent    the frame is reserved; touching it faults the page in
//   readable  resident in a pool slot, mapped read-only
//   writable  resident, mapped read-write; written in the current transaction
//             (its before-image is kept, unless the page is new)
//
// Invariants:
//  * state != absent  <=>  slot >= 0.
//  * state == writable  =>  the page is listed in the transaction's written
//    set, and has_before says that the pool's before-image of its slot holds
//    its image as of its first write (never for a new page). In software
//    mode a page written only through qs::write has no page before-image:
//    `saved` holds the before-images of the objects written instead.
//  * has_before => saved is empty.
//  * is_new: the page has no record in the store yet (created in this
//    transaction and never evicted); `materialized` says whether its image has
//    been built in a slot.
#pragma once

#include "page_format.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs::detail {

enum class page_state : std::uint8_t { absent, readable, writable };

// Software mode: the before-image of one object written in the open
// transaction (its payload offset and size in the page, and where its bytes
// are in the transaction's before-image arena).
struct saved_object {
  std::uint32_t offset;
  std::uint32_t size;
  std::size_t at;
};

struct page_desc {
  std::uint64_t page = 0;
  std::uint64_t frame = 0;
  std::int32_t slot = -1;
  page_state state = page_state::absent;
  bool referenced = false;
  bool is_new = false;
  bool materialized = false;
  bool created_in_txn = false;  // created by the open transaction
  bool rewritten = false;       // changed on fault-in (vptrs): commit writes it whole
  int pins = 0;
  bool txn_pinned = false;  // software mode: pinned until the transaction ends
  record_header hdr{};
  bool has_before = false;
  std::size_t written_pos = 0;  // index in the transaction's written list, while writable
  // Shared stores: resident from an earlier transaction and not yet
  // revalidated in this one (its frame is inaccessible meanwhile).
  bool stale = false;
  // The run of frames the page belongs to: the page alone, or every page of
  // its large object (whose frames stay contiguous).
  std::uint64_t run_first = 0;
  std::uint32_t run_pages = 1;
  std::string mapping;            // its mapping object, as stored
  bool relocate_pending = false;  // one-time relocation: write it back
  // Software mode, while writable without a page before-image: the objects
  // written, whose ranges alone are diffed at commit.
  std::vector<saved_object> saved;
  std::vector<std::uint64_t> saved_at;  // bit k: an object at offset 8k is in `saved`

  bool is_saved(std::uint32_t offset) const {
    std::uint32_t k = offset / 8;
    return k / 64 < saved_at.size() && (saved_at[k / 64] >> (k % 64) & 1);
  }
  void note_saved(std::uint32_t offset, std::uint32_t page_size) {
    if (saved_at.empty()) saved_at.assign(page_size / 8 / 64 + 1, 0);
    std::uint32_t k = offset / 8;
    saved_at[k / 64] |= std::uint64_t{1} << (k % 64);
  }
  void forget_saved() {
    if (saved.empty()) return;
    saved.clear();
    std::fill(saved_at.begin(), saved_at.end(), 0);
  }
};

class page_table {
 public:
  page_desc* by_page(std::uint64_t page) const {
    auto it = pages_.find(page);
    return it == pages_.end() ? nullptr : it->second.get();
  }
  page_desc* by_frame(std::uint64_t frame) const {
    auto it = frames_.find(frame);
    return it == frames_.end() ? nullptr : it->second;
  }
  page_desc* add(std::uint64_t page, std::uint64_t frame) {
    auto d = std::make_unique<page_desc>();
    d->page = page;
    d->frame = frame;
    page_desc* p = d.get();
    pages_[page] = std::move(d);
    frames_[frame] = p;
    return p;
  }
  void erase(page_desc* d) {
    frames_.erase(d->frame);
    pages_.erase(d->page);
  }
  void clear() {
    frames_.clear();
    pages_.clear();
  }
  template <class F>
  void for_each(F f) {
    for (auto& [k, d] : pages_) f(d.get());
  }

 private:
  std::unordered_map<std::uint64_t, std::unique_ptr<page_desc>> pages_;
  std::unordered_map<std::uint64_t, page_desc*> frames_;
};

}  // namespace qs::detail
