// Software mode: pages reached through the residency table that qs/ref.hpp
// reads inline, references that are object identifiers, and object-level
// before-images for qs::write (page_access.hpp, references.hpp).
#include "core/location.hpp"
#include "core/page_heap.hpp"
#include "core/pager.hpp"
#include "core/relocator.hpp"
#include "mode/page_access.hpp"
#include "mode/references.hpp"
#include "mode/software_current.hpp"
#include "os/fault_signal.hpp"
#include "util/stopwatch.hpp"
#include "util/thread_annotations.hpp"

#include <qs/error.hpp>
#include <qs/ref.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
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

namespace {

std::string where(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  return "page " + std::to_string(page) + ", offset " + std::to_string(offset) + ", tag " + std::to_string(tag);
}

class software_access final : public page_access {
 public:
  software_access(std::unique_ptr<frame_space> frames, buffer_pool& pool, page_table& table)
      : page_access(std::move(frames), pool, table) {}

  void show(page_desc* d, bool) override {
    if (d->hdr.kind == page_kind::small) {
      set_resident(d->page, image(d));
      return;
    }
    frames_->show(d->frame, true);
    set_access(d, true);
  }
  void hide(page_desc* d) override {
    if (d->hdr.kind == page_kind::small) {
      set_resident(d->page, nullptr);
      return;
    }
    frames_->hide(d->frame);
    set_resident(d->run_first, nullptr);
  }
  void set_access(page_desc* d, bool) override {
    if (d->hdr.kind == page_kind::small) {
      set_resident(d->page, image(d));
      return;
    }
    // A large object is reachable once every page of it is.
    page_desc* h = table_.run_head(d);
    for (std::uint32_t i = 0; i < h->run_pages; ++i) {
      page_desc* t = table_.by_page(h->page + i);
      if (!t || t->state() == page_state::absent || t->state() == page_state::stale) return;
    }
    set_resident(h->page, frame_address(h));
  }
  void hide_all() override { std::fill(table(), table() + high_, nullptr); }
  // Each page's first use in the transaction takes the slow path, which
  // pins it until the transaction ends.
  void begin_transaction() override { hide_all(); }
  void make_current(database_impl* db) override {
    static_cast<void>(&this_thread);  // registers the thread, at its first use
    lock_guard g(threads_mutex);
    current_db = db;
    current_table = {table(), table_pages};
    share_table();
  }
  void forget_current(database_impl* db) override {
    lock_guard g(threads_mutex);
    for (thread_current* t : threads)
      if (*t->db == db) {
        *t->db = nullptr;
        *t->table = {};
      }
    share_table();
  }

  std::byte* address(const page_desc* d) const override {
    return d->hdr.kind == page_kind::small ? image(d) : frame_address(d);
  }
  page_desc* page_of(const void* p) const override {
    if (frames_->contains(p)) return table_.by_frame(frames_->frame_of(p));
    if (frames_->view_contains(p)) return table_.by_frame(frames_->frame_of_view(p));
    return nullptr;
  }
  bool contains(const void* p) const override { return frames_->contains(p) || frames_->view_contains(p); }
  // Persistent objects refer to each other through qs::ref, never addresses.
  bool storable_pointer(std::uint64_t) const override { return false; }
  std::string raw_address_note() const override {
    return "a raw address (in software mode, persistent objects refer to each other through qs::ref)";
  }
  void check_fault(void* address) const override {
    invalid_persistent_pointer(address,
                               "in software mode persistent objects are reached through qs::ref; "
                               "this raw address was kept after its page left the buffer pool");
  }

  bool faults_pages_in() const override { return false; }
  bool pins_transaction_pages() const override { return true; }
  bool builds_whole_objects() const override { return true; }
  std::string pool_full_message(const std::string& db_name, std::uint32_t pool_pages) const override {
    return "database " + db_name + ": the transaction needs more pages than the buffer pool's " +
           std::to_string(pool_pages) +
           " (in software mode a transaction keeps every page it uses until it ends); open the database with a "
           "larger pool_pages";
  }

  // Whether page is in the residency table.
  bool resident(std::uint64_t page) const { return page < table_pages && table()[page]; }

 private:
  // Page numbers past the table's end are never in it: their references
  // always take the slow path, which finds them all the same.
  void set_resident(std::uint64_t page, std::byte* at) {
    if (page >= table_pages) return;
    table()[page] = at;
    if (page >= high_ && at) high_ = page + 1;
  }
  std::byte** table() const { return reinterpret_cast<std::byte**>(memory_.data()); }

  // The residency table never moves, so that qs/ref.hpp's inline path may
  // read it while it grows: 2^28 entries reserved (2 GiB of address space),
  // memory committed only where pages were resident.
  static constexpr std::uint64_t table_pages = std::uint64_t{1} << 28;
  zeroed_memory memory_{table_pages * sizeof(std::byte*)};
  std::uint64_t high_ = 0;  // entries at or past it were never set
};

// qs::index's values are the bytes of a qs::ref: {page, offset, tag}.
struct identifier {
  std::uint64_t page;
  std::uint32_t offset, tag;
};

class software_references final : public references {
 public:
  software_references(pager& pages, relocator& frames, software_access& access, page_table& table, transaction_log& log,
                      statistics& stats, const std::string& db_name)
      : pages_(pages), frames_(frames), access_(access), table_(table), log_(log), stats_(stats), db_name_(db_name) {}

  std::string location_of(const void* p) override {
    std::uint64_t page;
    std::uint32_t offset, tag;
    identify(p, page, offset, tag);
    return encode_location({page, offset, 0, tag});
  }
  void* resolve(std::string_view s) override {
    location l = decode_location(db_name_, s);
    return resolve_identity(l.page, l.offset, static_cast<std::uint32_t>(l.last), false);
  }
  std::string location_of_ref(std::string_view ref_bytes) override {
    identifier id{};
    if (ref_bytes.size() == sizeof id) std::memcpy(&id, ref_bytes.data(), sizeof id);
    return encode_location({id.page, id.offset, 0, id.tag});
  }
  // The identifier only: the object is fetched when followed.
  std::string ref_of_location(std::string_view s) override {
    location l = decode_location(db_name_, s);
    identifier id{l.page, l.offset, static_cast<std::uint32_t>(l.last)};
    return std::string(reinterpret_cast<const char*>(&id), sizeof id);
  }

  // Root cells are written through the C++ reference root<T>() returns, not
  // through qs::write: each cell handed out keeps its bytes as they were.
  void root_cell_used(void* cell, std::size_t size) override {
    if (!log_.open() ||
        std::any_of(root_reads_.begin(), root_reads_.end(), [&](const root_read& r) { return r.cell == cell; }))
      return;
    root_reads_.push_back({cell, std::string(static_cast<const char*>(cell), size)});
  }
  void announce_root_cells() override {
    for (const root_read& r : root_reads_) {
      std::size_t n = r.before.size();
      if (std::memcmp(r.cell, r.before.data(), n) == 0) continue;
      // The before-image is taken from the cell: put the old bytes back for it.
      std::string now(static_cast<const char*>(r.cell), n);
      std::memcpy(r.cell, r.before.data(), n);
      std::uint64_t page;
      std::uint32_t offset, tag;
      identify(r.cell, page, offset, tag);
      try {
        announce_write(table_.by_page(page), offset);
      } catch (...) {
        std::memcpy(r.cell, now.data(), n);
        throw;
      }
      std::memcpy(r.cell, now.data(), n);
    }
    root_reads_.clear();
  }
  void restore_root_cells() override {
    for (const root_read& r : root_reads_) std::memcpy(r.cell, r.before.data(), r.before.size());
    root_reads_.clear();
  }

  void* resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write) override {
    page_desc* h;
    if (access_.resident(page)) {
      h = table_.by_page(page);
    } else {
      if (!log_.open())
        throw no_transaction("database " + db_name_ + ": a reference to " + where(page, offset, tag) +
                             " was followed outside a transaction, and the page is not resident");
      auto t0 = std::chrono::steady_clock::now();
      std::uint64_t before = stats_.pages_fetched;
      h = locate(page);
      if (stats_.pages_fetched != before) {
        ++stats_.read_faults;
        stats_.fault_ns += ns_since(t0);
      }
    }
    // Is the object still there? Its header holds the reference's tag (the
    // check the inline fast path makes too).
    const std::byte* img = pages_.image(h);
    const object_header* oh = nullptr;
    bool small = h->hdr.kind == page_kind::small;
    if (small ? offset >= sizeof(page_header) + sizeof(object_header) &&
                    offset <= reinterpret_cast<const page_header*>(img)->top
              : offset == sizeof(page_header) + sizeof(object_header))
      oh = reinterpret_cast<const object_header*>(img + offset - sizeof(object_header));
    if (!oh || oh->type == free_type || tag_of(*oh) != tag) {
      bool other = small && offset < pages_.page_size() && heap_object_at(img, pages_.page_size(), offset);
      throw dangling_reference(
          "database " + db_name_ + ": the reference to " + where(page, offset, tag) +
          (other ? " names a deleted object (another object is there now)" : " names a deleted object"));
    }
    if (for_write) {
      if (!log_.open()) throw no_transaction("qs::write in database " + db_name_ + " needs a transaction");
      announce_write(h, offset);
    }
    return access_.address(h) + offset;
  }

  void identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) override {
    page_desc* d = access_.page_of(p);
    if (d) {
      page_desc* h = table_.run_head(d);
      auto off = static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - access_.address(h));
      const object_header* oh = nullptr;
      if (h->hdr.kind == page_kind::small)
        oh = heap_object_at(pages_.image(h), pages_.page_size(), static_cast<std::uint32_t>(off));
      else if (off == sizeof(page_header) + sizeof(object_header))
        oh = reinterpret_cast<const object_header*>(pages_.image(h) + sizeof(page_header));
      if (oh) {
        page = h->page;
        offset = static_cast<std::uint32_t>(off);
        tag = tag_of(*oh);
        return;
      }
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    throw invalid_argument("database " + db_name_ + ": a qs::ref made from " + buf +
                           (d ? ", where no persistent object starts (on page " + std::to_string(d->page) + ")"
                              : ", which is not a resident persistent object"));
  }

 private:
  // The page's descriptor (a large object's head, with frames for its whole
  // run), its run resident, current and pinned; throws
  // qs::dangling_reference when the page cannot hold objects a reference
  // names.
  page_desc* locate(std::uint64_t page) {
    page_desc* d = table_.by_page(page);
    if (!d) {
      // Not seen in this process: the record says whether it heads a large
      // object, which needs frames for all of its pages.
      d = frames_.ensure_run(0, page, 1);
      pages_.make_current(d);
      if (d->hdr.kind == page_kind::large_head) {
        std::uint64_t n = large_object_pages(d->hdr.size, pages_.page_size());
        if (n > 1) {
          std::uint64_t hint = d->hdr.frame;
          pages_.drop(d);
          d = frames_.ensure_run(reinterpret_cast<std::uint64_t>(access_.frames().frame_address(hint)), page,
                                 static_cast<std::uint32_t>(n));
        }
      }
    }
    page_desc* h = table_.run_head(d);
    for (std::uint32_t i = 0; i < h->run_pages; ++i) {
      page_desc* t = i == 0 ? h : table_.by_page(h->page + i);
      pages_.make_current(t);
      t->referenced = true;
      log_.pin(t);
      access_.set_access(t, t->state() == page_state::writable);  // back in the residency table
    }
    if (h->page != page)
      throw dangling_reference("database " + db_name_ + ": a reference names page " + std::to_string(page) +
                               ", which is inside a large object");
    return h;
  }

  // Makes the object at `offset` of the run headed by h writable: its
  // before-image saved, or a large object's pages logged whole.
  void announce_write(page_desc* h, std::uint32_t offset) {
    if (h->hdr.kind == page_kind::small) {
      save_object(h, offset);
      return;
    }
    for (std::uint32_t i = 0; i < h->run_pages; ++i) {
      page_desc* t = i == 0 ? h : table_.by_page(h->page + i);
      if (t->state() != page_state::writable) {
        ++stats_.write_faults;
        pages_.make_writable(t);
      }
    }
  }

  void save_object(page_desc* d, std::uint32_t offset) {
    if (d->state() != page_state::writable && d->rewritten()) {
      // Its image differs from the stored one already: it is logged whole,
      // and abort needs the whole before-image.
      ++stats_.write_faults;
      pages_.make_writable(d);
      return;
    }
    if (d->state() != page_state::writable) pages_.make_writable_by_objects(d);
    if (d->whole_page_logged() || log_.is_saved(d, offset)) return;
    ++stats_.write_faults;
    auto* oh = reinterpret_cast<const object_header*>(pages_.image(d) + offset - sizeof(object_header));
    log_.save(d, pages_.image(d), offset, oh->size, pages_.page_size());
  }

  struct root_read {
    void* cell;
    std::string before;
  };

  pager& pages_;
  relocator& frames_;
  software_access& access_;
  page_table& table_;
  transaction_log& log_;
  statistics& stats_;
  const std::string& db_name_;
  std::vector<root_read> root_reads_;  // this transaction's
};

}  // namespace

std::unique_ptr<page_access> make_page_access(std::unique_ptr<frame_space> frames, buffer_pool& pool,
                                              page_table& table) {
  return std::make_unique<software_access>(std::move(frames), pool, table);
}

std::unique_ptr<references> make_references(pager& pages, relocator& frames, page_access& access, page_table& table,
                                            transaction_log& log, statistics& stats, const std::string& db_name) {
  return std::make_unique<software_references>(pages, frames, static_cast<software_access&>(access), table, log, stats,
                                               db_name);
}

const char* mode_name() { return "software"; }
// Only large objects are shown at frames, read-write; a touch of any other
// frame is a raw address kept too long (check_fault).
frame_control mode_frame_control() { return default_frame_control(); }
// Software mode's object headers carry a tag: its databases have a format
// of their own.
const char* format_name() { return "qs 4 software"; }

}  // namespace qs::detail
