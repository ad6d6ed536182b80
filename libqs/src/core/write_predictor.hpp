// core/write_predictor.hpp: whether the program writes the pages it reads
// in, learned per faulting instruction from the pages it read in last, so
// that a page a read fault brings in can be made writable at once and the
// write that follows takes no second fault.
//
// An update traversal (OO7's T2b, a pass that changes a field of every
// object it visits) reads each page in and writes it a moment later: two
// faults, the second a signal, a before-image and a protection change for
// a page whose image was in hand when it arrived. The same traversal also
// reads pages it never writes (OO7's connections), from other places in
// its code: what tells the two apart is the instruction that took the read
// fault. The pager asks arriving() for each page a read fault brings in,
// and for each watched prefetched page at its first touch, with that
// instruction's address; the answer says whether to make the page writable
// now.
//
// Each instruction (hashed into one of `sites` entries; two that share an
// entry share its guess) learns for itself. A page left read-only is
// watched, with its entry: a write fault on it (written()) says the guess
// would have been right; its transaction's end, or `watched` newer pages
// watched, with no write, say it would have been wrong (a traversal may
// write a page long after it first read it). Off, every arrival is watched, and `decide`
// outcomes of which at least half were writes turn the entry on. On, one
// arrival in `probe_every` is still watched (a probe) and the rest come
// writable; `decide` probes of which fewer than a quarter were written
// turn it off. A page made writable and left unchanged costs
// its eviction or its commit a comparison with its before-image and writes
// nothing; where the program writes nothing it reads, nothing is made
// writable.
//
// Invariants: the watch holds at most `watched` pages, oldest first, each
// counted once (written, or pushed out or left at the transaction's end
// unwritten); outcomes count only pages that came in by a read fault in
// the current transaction.
//
// Thread-safety: none; the pager's, under the runtime's lock.
#pragma once

#include <array>
#include <cstdint>

namespace qs::detail {

class write_predictor {
 public:
  // A read fault at instruction `code` is bringing `page` in: true when it
  // is to come writable.
  bool arriving(std::uint64_t page, const void* code) {
    const auto at = static_cast<std::uint8_t>(site_of(code));
    site& s = sites_[at];
    if (s.on && ++s.since_probe < probe_every) return true;
    s.since_probe = 0;
    if (count_ == watched) pop(false);  // the oldest, unwritten
    watch_[(first_ + count_++) % watched] = {page, at};
    return false;
  }
  // A write fault on a readable page.
  void written(std::uint64_t page) {
    for (unsigned i = 0; i < count_; ++i) {
      watch& w = watch_[(first_ + i) % watched];
      if (w.page == page) {
        w.page = none;
        outcome(w.site, true);
        return;
      }
    }
  }
  // The transaction ended: the pages still watched went unwritten.
  void end() {
    while (count_ != 0) pop(false);
  }

  static constexpr unsigned sites = 64;
  static constexpr unsigned watched = 64;
  static constexpr unsigned probe_every = 16;
  static constexpr unsigned decide = 8;

 private:
  struct site {
    bool on = false;
    std::uint8_t since_probe = 0, outcomes = 0, written = 0;
  };
  struct watch {
    std::uint64_t page;
    std::uint8_t site;
  };
  static constexpr std::uint64_t none = ~std::uint64_t{0};
  static_assert(sites <= 256 && probe_every < 256 && decide < 256);

  static unsigned site_of(const void* code) {
    const auto a = reinterpret_cast<std::uintptr_t>(code);
    return static_cast<unsigned>((a ^ (a >> 6) ^ (a >> 12)) % sites);
  }
  void pop(bool was_written) {
    const watch w = watch_[first_];
    first_ = (first_ + 1) % watched;
    --count_;
    if (w.page != none) outcome(w.site, was_written);
  }
  void outcome(std::uint8_t at, bool was_written) {
    site& s = sites_[at];
    ++s.outcomes;
    s.written += was_written;
    if (s.outcomes < decide) return;
    // On at half written; off below a quarter.
    s.on = s.on ? 4 * s.written >= s.outcomes : 2 * s.written >= s.outcomes;
    s.outcomes = s.written = 0;
  }

  std::array<site, sites> sites_{};
  std::array<watch, watched> watch_{};
  unsigned first_ = 0, count_ = 0;
};

}  // namespace qs::detail
