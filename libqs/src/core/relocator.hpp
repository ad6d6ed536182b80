// core/relocator.hpp: which frames each page takes in this process, mapping
// objects, and the rewriting of pointers into pages that moved
// (QuickStore section 3.4).
//
// Pointers are stored as the virtual addresses they had when their page was
// written. Every page has a home frame (mapping.hpp, home_region), and a
// pointer to a small page at home is stored as its home address with nothing
// beside it: such a page gets a page table entry only when it is reached
// (page_at, at_home), not when a page pointing to it comes in, so a fault
// does no work for the pages its page names. A page's mapping object lists
// the runs that are not at home (large objects, pages past the home region,
// forced relocation) and which pages were there. ensure_run gives each such
// run frames here (home when it can, else in the away region, the last
// quarter of the reservation), creating the page table entries; relocate
// rewrites the pointer words into runs that moved; mapping_of computes a
// page's mapping object again before it is written.
//
// Home-form pointers are taken at their value, and their pages given
// entries when reached, unless this process must claim them (claim_): its
// reservation is not at the preferred base, its home region is shorter than
// the database's, the test harness forces relocation, or the database has
// more pages than the home region (seen at open and at each reset of the
// frames). Then relocate reads every pointer word of an incoming page and
// gives each page it leads to an entry (at home when it can, QuickStore's
// eager assignment); and only then may a page that finds the away region
// full take a home frame no entry holds (every page a pointer leads to has
// one).
//
// Invariants:
//  * Every page in the page table holds the frames of its run, taken in the
//    frame map; a frame is taken by at most one page.
//  * Unless claim_, a home frame (below home_) is taken by its own page
//    only, and every page in the page table whose home frame is below home_
//    holds it; the away frames [home_, frames) hold pages that are not at
//    home.
//  * Under claim_, every page a resident page's pointer leads to has an
//    entry.
//
// Depends on: store (the page counter, when borrowing), page_access (the
// reservation), page_table, page_words, transaction_log. Calls nothing
// above it.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/frame_map.hpp"
#include "core/page_table.hpp"
#include "core/page_words.hpp"
#include "core/transaction_log.hpp"
#include "mode/page_access.hpp"
#include "store/store.hpp"

#include <qs/database.hpp>
#include <qs/format/mapping.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qs::detail {

class relocator {
 public:
  relocator(store& s, page_access& access, page_table& table, page_words& words, transaction_log& log,
            statistics& stats, const options& opts, std::uint32_t page_size, const home_region& home);

  // The page run {page, pages}: its head in this process, given frames now
  // if it has none (home when it can). Throws qs::reservation_full.
  page_desc* ensure_run(std::uint64_t page, std::uint32_t pages);
  // Frames for a run of n new pages from `page` on (home when free).
  std::uint64_t take_frames(std::uint64_t page, std::uint64_t n);
  // The page at `frame`: its entry, or, for a home frame no page holds yet,
  // a new entry for the small page whose home it is; nullptr when no page
  // can be there.
  page_desc* page_at(std::uint64_t frame);
  // The page holding address p (page_access::page_of, then page_at).
  page_desc* page_of(const void* p) {
    if (page_desc* d = access_.page_of(p)) return d;
    const frame_space& fs = access_.frames();
    return fs.contains(p) ? page_at(fs.frame_of(p)) : nullptr;
  }
  // The entry of `page` at its home frame, made if the page has none and
  // the frame is free; nullptr when the page is elsewhere or has no home.
  page_desc* at_home(std::uint64_t page);
  // Whether `page` has no entry and could be given one at home.
  bool could_be_home(std::uint64_t page) const;
  // Whether d sits at its home frame.
  bool is_home(const page_desc* d) const {
    auto h = home_region_.frame_of_page(d->page);
    return h && *h == d->frame;
  }
  // Whether d's entry may be dropped once its run leaves the pool: a run at
  // its home frames, reached again through them (page_at, widen), and no
  // claim_ to keep.
  bool forgettable(const page_desc* d) const {
    return !claim_ && d->frame + 1 == d->page && d->frame - (d->page - d->run_first()) + d->run_pages() <= home_;
  }
  // Page d, reached alone through its home frame (page_at), is page `index`
  // of a large object of `pages` pages: gives the whole run entries at its
  // home frames (taking over entries its other pages got the same way).
  // False, changing nothing, when the run cannot be at home here.
  bool widen(page_desc* d, std::uint64_t index, std::uint64_t pages);
  // The database's page counter (pages 1 .. count - 1 may exist), from the
  // store; 0 when it cannot be read.
  std::uint64_t page_count();
  // Every frame free again (the page table is emptied by the caller).
  void reset();
  void give_back(std::uint64_t frame, std::uint64_t n);
  std::byte* run_address(const page_desc* head) const { return access_.frame_address(head); }

  // Rewrites the pointers of d's image `img` into runs that moved, from d's
  // mapping object (d->mapping, as read with the page).
  void relocate(page_desc* d, std::byte* img);
  // The mapping object of d's image `img` as its pointers are now, with its
  // number of entries; nullopt when it is d's stored one (d->mapping).
  std::optional<std::string> mapping_of(const page_desc* d, const std::byte* img, std::uint32_t& entries);
  // While one lives, mapping_of remembers the frames it found holding a
  // small page at home, and takes a later pointer into one at the cost of a
  // bit: the pages a commit writes point many times to few pages, each of
  // whose entries is a cache miss to read. Only for a stretch in which no
  // entry is dropped, moved or widened but by mapping_of itself (a commit's
  // write-back of its pages); the bits are cleared when it ends.
  class home_form_memo {
   public:
    explicit home_form_memo(relocator& r) : r_(r) { r_.remember_ = true; }
    ~home_form_memo() { r_.forget_home_form(); }
    home_form_memo(const home_form_memo&) = delete;
    home_form_memo& operator=(const home_form_memo&) = delete;

   private:
    relocator& r_;
  };
  // Page `page` is a small page (its entry is dropped: mapping_of then need
  // not read its record to know). A bit a page number, kept for good.
  void note_small(std::uint64_t page) {
    if (page / 64 >= small_.size()) small_.resize(page / 64 + 1, 0);
    small_[page / 64] |= std::uint64_t{1} << (page % 64);
  }
  bool known_small(std::uint64_t page) const {
    return page / 64 < small_.size() && (small_[page / 64] >> (page % 64) & 1) != 0;
  }
  // The pages mapping_of gave entries without reading them in (the pager
  // drops those entries again with the evicted ones); emptied by the call.
  std::vector<std::uint64_t> take_unread() { return std::exchange(unread_, {}); }

  // Whether a quarter or less of the reservation's frames, or of its away
  // frames, is left, or the database has outgrown the home region (a reset
  // then sets claim_).
  bool running_short() const;

 private:
  store& store_;
  page_access& access_;
  page_table& table_;
  page_words& words_;
  transaction_log& log_;
  statistics& stats_;
  // Whether this process claims (claim_): moved_, or more pages than the
  // home region holds (the store's page counter).
  bool must_claim();
  // The page's frames when the test harness forces it away from home.
  bool forced(std::uint64_t page) const;
  // Page d (alone, its record never read here): widened to its run when its
  // record says it is a large object's page.
  void learn_run(page_desc* d);

  // A run of n frames in the away region, or, when it is full and claim_,
  // among the home frames no entry holds.
  std::uint64_t take_away(std::uint64_t n);
  // How many of the frames [frame, frame + n) are away frames.
  std::uint64_t away_frames_in(std::uint64_t frame, std::uint64_t n) const;

  frame_map free_;
  home_region home_region_;  // the database's
  std::uint64_t home_;       // home frames here: [0, home_)
  std::uint64_t away_taken_ = 0;
  bool moved_;             // base, home region or forcing: claim_ always
  bool claim_;             // see above
  bool outgrown_ = false;  // a page past the home region: claim_ after a reset
  relocation policy_;
  unsigned force_percent_;
  std::uint32_t page_size_;
  std::unique_ptr<std::byte[]> scratch_;  // learn_run's record
  std::vector<std::uint64_t> unread_;     // take_unread
  std::vector<std::uint64_t> small_;      // note_small: bit p, page p is small
  // home_form_memo: whether it lives; bit f, frame f holds a small page at
  // home; the words of home_form_ with a bit set.
  bool remember_ = false;
  std::vector<std::uint64_t> home_form_;
  std::vector<std::uint32_t> home_form_words_;
  bool remembered(std::uint64_t frame) const {
    return frame / 64 < home_form_.size() && (home_form_[frame / 64] >> (frame % 64) & 1) != 0;
  }
  void remember_home_form(std::uint64_t frame);
  void forget_home_form();
};

}  // namespace qs::detail
