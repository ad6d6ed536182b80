// core/transaction_log.hpp: what the open transaction has touched.
//
// The log lists the pages the open transaction made writable (`written`),
// the pages it created, the pages whose changes already went to the store
// transaction (`logged`: a dirty page evicted before commit), pages evicted
// holding a pointer the commit must look at again (`suspect`), pages
// rewritten on fault-in that one-time relocation writes back (`relocated`),
// software mode's pinned pages, and the before-images of the objects
// software mode saved. Commit and abort read these lists and then call
// reset(), the one place that forgets them.
//
// Invariants:
//  * A page is on `written` iff its page_desc says so (its position is kept
//    there, so that it leaves the list in constant time).
//  * A page is pinned iff it is on the pinned list; a pinned page stays in
//    the buffer pool until reset().
//  * saved objects' bytes live in one arena, valid until reset().
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "core/page_table.hpp"

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace qs::detail {

class transaction_log {
 public:
  // Whether a transaction is open (the store has one open too).
  bool open() const { return open_; }
  void opened() { open_ = true; }

  // The written list: add, and remove in constant time (swap with the last).
  void add_written(page_desc* d);
  void remove_written(page_desc* d);
  const std::vector<page_desc*>& written() const { return written_; }

  void add_created(page_desc* d) { created_.push_back(d); }
  const std::vector<page_desc*>& created() const { return created_; }

  void add_logged(page_desc* d) { logged_.insert(d); }
  bool is_logged(page_desc* d) const { return logged_.count(d) != 0; }
  const std::set<page_desc*>& logged() const { return logged_; }

  void add_suspect(page_desc* d) { suspect_.insert(d); }
  std::vector<page_desc*> suspects() const { return {suspect_.begin(), suspect_.end()}; }

  // One-time relocation: d was rewritten when it came in and goes back to
  // the store at commit, unless it is written back earlier.
  void add_relocated(page_desc* d);
  bool relocate_pending(const page_desc* d) const { return d->relocate_pending_; }
  void relocation_written(page_desc* d) { d->relocate_pending_ = false; }
  const std::vector<page_desc*>& relocated() const { return relocated_; }

  // Software mode: keeps d in the pool until the transaction ends, so that
  // the addresses references gave stay valid.
  void pin(page_desc* d);

  // Software mode: the before-image of the object at `offset` (`size`
  // bytes) of `image`, page d's.
  bool is_saved(const page_desc* d, std::uint32_t offset) const;
  void save(page_desc* d, const std::byte* image, std::uint32_t offset, std::uint32_t size, std::uint32_t page_size);
  const std::vector<saved_object>& saved(page_desc* d);  // sorted by offset
  const std::byte* saved_bytes(const saved_object& o) const { return arena_.data() + o.at; }
  // Copies d's saved objects into the page image `into`, and forgets them.
  void put_back_saved(page_desc* d, std::byte* into);
  void forget_saved(page_desc* d);

  // Takes every trace of d off the log (d leaves the pool or the table).
  void forget(page_desc* d);
  // Whether the log holds d in any of its lists.
  bool refers_to(page_desc* d) const {
    return d->written_ || d->pinned_ || d->relocate_pending_ || !d->saved_.empty() || logged_.count(d) != 0 ||
           suspect_.count(d) != 0;
  }
  // Forgets everything: the transaction ended.
  void reset();

 private:
  bool open_ = false;
  std::vector<page_desc*> written_;
  std::vector<page_desc*> created_;
  std::set<page_desc*> logged_;
  std::set<page_desc*> suspect_;
  std::vector<page_desc*> relocated_;
  std::vector<page_desc*> pinned_;
  std::vector<std::byte> arena_;
};

}  // namespace qs::detail
