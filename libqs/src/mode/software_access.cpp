// Software mode's page access (software_access.hpp): the residency table,
// large objects at frames, and each thread's current database and table
// (software_current.hpp).
#include "mode/page_access.hpp"
#include "mode/software_current.hpp"
#include "os/fault_signal.hpp"
#include "util/thread_annotations.hpp"

#include <qs/ref.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace qs::detail {

// The table every thread's references may read inline, while all that have
// a database have the same one (qs/ref.hpp).
residency sw_residency;

namespace {

// The calling thread's current database and its residency table
// (software_current.hpp): plain thread-locals, read on the slow path.
thread_local constinit database_impl* current_db = nullptr;
thread_local constinit residency current_table;

// The threads that have had a current database, so that closing one can
// clear it everywhere and the shared table can be chosen: a thread
// registers at its first make_current and leaves the list when it ends.
struct thread_current;
mutex threads_mutex;
std::vector<thread_current*> threads QS_GUARDED_BY(threads_mutex);

// Sets sw_residency to the one table every thread with a database has, or
// empties it. Readers on other threads may be reading it meanwhile: the
// count goes to 0 first and the pages pointer is never nulled, so a reader
// sees a count and a table that belong together, or a count of 0.
void share_table() QS_REQUIRES(threads_mutex);

struct thread_current {
  database_impl** db = &current_db;
  residency* table = &current_table;
  thread_current() {
    lock_guard g(threads_mutex);
    threads.push_back(this);
  }
  ~thread_current() {
    lock_guard g(threads_mutex);
    threads.erase(std::find(threads.begin(), threads.end(), this));
    share_table();
  }
  thread_current(const thread_current&) = delete;
  thread_current& operator=(const thread_current&) = delete;
};
thread_local thread_current this_thread;

void share_table() {
  const residency* one = nullptr;
  database_impl* db = nullptr;
  for (thread_current* t : threads) {
    if (!*t->db) continue;
    if (db && *t->db != db) {
      one = nullptr;
      break;
    }
    db = *t->db;
    one = t->table;
  }
  __atomic_store_n(&sw_residency.count, std::uint64_t{0}, __ATOMIC_RELEASE);
  if (!one) return;
  __atomic_store_n(&sw_residency.pages, one->pages, __ATOMIC_RELEASE);
  __atomic_store_n(&sw_residency.count, one->count, __ATOMIC_RELEASE);
}

}  // namespace

database_impl* software_current_database() noexcept { return current_db; }
const residency& software_current_residency() noexcept { return current_table; }

void software_access::show(page_desc* d, bool) {
  if (d->hdr.kind == page_kind::small) {
    set_resident(d->page, image(d));
    return;
  }
  frames_->show(d->frame, true);
  set_access(d, true);
}

void software_access::hide(page_desc* d) {
  if (d->hdr.kind == page_kind::small) {
    set_resident(d->page, nullptr);
    return;
  }
  frames_->hide(d->frame);
  set_resident(d->run_first(), nullptr);
}

void software_access::set_access(page_desc* d, bool) {
  if (d->hdr.kind == page_kind::small) {
    set_resident(d->page, image(d));
    return;
  }
  // A large object is reachable once every page of it is.
  page_desc* h = table_.run_head(d);
  for (std::uint32_t i = 0; i < h->run_pages(); ++i) {
    page_desc* t = table_.by_page(h->page + i);
    if (!t || t->state() == page_state::absent || t->state() == page_state::stale) return;
  }
  set_resident(h->page, frame_address(h));
}

void software_access::hide_all() { std::fill(table(), table() + high_, nullptr); }

void software_access::make_current(database_impl* db) {
  static_cast<void>(&this_thread);  // registers the thread, at its first use
  lock_guard g(threads_mutex);
  current_db = db;
  current_table = {table(), table_pages};
  share_table();
}

void software_access::forget_current(database_impl* db) {
  lock_guard g(threads_mutex);
  for (thread_current* t : threads)
    if (*t->db == db) {
      *t->db = nullptr;
      *t->table = {};
    }
  share_table();
}

page_desc* software_access::page_of(const void* p) const {
  if (frames_->contains(p)) return table_.by_frame(frames_->frame_of(p));
  if (frames_->view_contains(p)) return table_.by_frame(frames_->frame_of_view(p));
  return nullptr;
}

void software_access::check_fault(void* address) const {
  invalid_persistent_pointer(address,
                             "in software mode persistent objects are reached through qs::ref; "
                             "this raw address was kept after its page left the buffer pool");
}

std::string software_access::pool_full_message(std::uint32_t pool_pages) {
  return "the transaction needs more pages than the buffer pool's " + std::to_string(pool_pages) +
         " (in software mode a transaction keeps every page it uses until it ends); open the database with a "
         "larger pool_pages";
}

void software_access::set_resident(std::uint64_t page, std::byte* at) {
  if (page >= table_pages) return;
  table()[page] = at;
  if (page >= high_ && at) high_ = page + 1;
}

}  // namespace qs::detail
