// core/relocator.hpp: which frames each page takes in this process, mapping
// objects, and the rewriting of pointers into pages that moved
// (QuickStore section 3.4).
//
// Pointers are stored as the virtual addresses they had when their page was
// written. A page that comes in names, in its mapping object (mapping.hpp),
// the runs of frames its pointers point into and which pages were there.
// ensure_run gives each such run frames here (its old ones when they are
// free), creating the page table entries; relocate rewrites the pointer
// words into runs that moved; update_mapping computes a page's mapping
// object again before it is written.
//
// Invariants:
//  * Every page in the page table holds the frames of its run, taken in the
//    frame map; a frame is taken by at most one page.
//  * A page whose pointers were rewritten is marked rewritten (its image is
//    no longer its record's); under one-time relocation it is also on the
//    transaction log's relocated list.
//
// Depends on: page_access (the reservation), page_table, page_words,
// transaction_log. Calls nothing above it.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/frame_map.hpp"
#include "core/page_table.hpp"
#include "core/page_words.hpp"
#include "core/transaction_log.hpp"
#include "mode/page_access.hpp"

#include <qs/database.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace qs::detail {

class relocator {
 public:
  relocator(page_access& access, page_table& table, page_words& words, transaction_log& log, statistics& stats,
            const options& opts, std::uint32_t page_size);

  // The page run {page, pages} that was at `address` when a pointer to it
  // was stored: its head in this process, given frames now if it has none
  // (its old ones when they are free). Throws qs::reservation_full.
  page_desc* ensure_run(std::uint64_t address, std::uint64_t page, std::uint32_t pages);
  // Frames for a run of n new pages, at `hint` when free there.
  std::uint64_t take_frames(std::uint64_t hint, std::uint64_t n);
  void give_back(std::uint64_t frame, std::uint64_t n) { free_.give_back(frame, n); }
  std::byte* run_address(const page_desc* head) const { return access_.frame_address(head); }

  // Rewrites the pointers of d's image `img` into runs that moved, from d's
  // mapping object (d->mapping, as read with the page).
  void relocate(page_desc* d, std::byte* img);
  // The mapping object of d's image `img` as its pointers are now, with its
  // number of entries; nullopt when it is d's stored one (d->mapping).
  std::optional<std::string> mapping_of(const page_desc* d, const std::byte* img, std::uint32_t& entries);

  // Whether a quarter or less of the reservation's frames is left.
  bool running_short() const { return free_.free_frames() < free_.frames() / 4; }
  // Every frame free again (the page table is emptied by the caller).
  void reset() { free_.reset(); }

 private:
  page_access& access_;
  page_table& table_;
  page_words& words_;
  transaction_log& log_;
  statistics& stats_;
  frame_map free_;
  relocation policy_;
  unsigned force_percent_;
  std::uint32_t page_size_;
};

}  // namespace qs::detail
