// mode/page_access.hpp: how the program reaches a resident page, the lower half
// of what differs between hardware and software mode.
//
// Hardware mode (hardware_mode.cpp): a resident page is reached through its
// virtual frame, with the access its state allows (read-only, read-write,
// or none while it must be revalidated); faults on frames are the program's
// first touches.
//
// Software mode (software_mode.cpp): a small page is reached through the
// residency table that qs/ref.hpp reads inline, at its image; a large
// object is mapped read-write at contiguous frames once all of its pages are
// resident. A small page's address is its image (image(d)); nothing is
// ever write-protected, and a fault on a frame is a raw address kept after
// its page left the pool.
//
// The implementation owns the reservation (frame_space). It is told about
// transitions by the pager (show, hide, set_access) and never calls back.
//
// Invariants:
//  * A page is reachable by the program iff it is resident and not stale;
//    writable only in state writable (hardware mode).
//  * address(d) is where the program sees the bytes of a resident page d
//    (a run's head for a large object).
//
// Thread-safety: none; the runtime's lock guards it. Software mode's
// residency table is read without the lock by qs/ref.hpp's inline path, in
// the thread that runs the transaction.
#pragma once

#include "core/buffer_pool.hpp"
#include "core/page_table.hpp"
#include "os/frames.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace qs::detail {

class database_impl;

class page_access {
 public:
  virtual ~page_access() = default;

  // The page came into the pool (its image is ready).
  virtual void show(page_desc* d, bool writable) = 0;
  // The page leaves the pool (or must be revalidated before its next use);
  // its image stays until the pager releases its frame's memory.
  virtual void hide(page_desc* d) = 0;
  // The resident page's access becomes `writable` (or read-only).
  virtual void set_access(page_desc* d, bool writable) = 0;
  // Every resident page must be revalidated (or, in software mode, looked
  // up again) before its next use.
  virtual void hide_all() = 0;
  // A transaction begins.
  virtual void begin_transaction() = 0;
  // `db` becomes the database references resolve in (software mode), or
  // stops being it.
  virtual void make_current(database_impl* db) = 0;
  virtual void forget_current(database_impl* db) = 0;

  // Where the program sees the bytes of resident page d.
  virtual std::byte* address(const page_desc* d) const = 0;
  // The page whose bytes the program sees at p, or nullptr.
  virtual page_desc* page_of(const void* p) const = 0;
  // Whether p is in this database's memory (frames, or software mode's pool).
  virtual bool contains(const void* p) const = 0;
  // Whether a pointer word on a page may hold the value v at commit.
  virtual bool storable_pointer(std::uint64_t v) const = 0;
  // What a refused pointer word into this database's own memory means.
  virtual std::string raw_address_note() const = 0;
  // A fault on one of this database's frames: throws (or ends the process)
  // when the mode never faults pages in.
  virtual void check_fault(void* address) const = 0;

  // Whether the program's touches of frames fault pages in.
  virtual bool faults_pages_in() const = 0;
  // Whether the pages a transaction uses stay in the pool until it ends.
  virtual bool pins_transaction_pages() const = 0;
  // Whether a new large object is built whole at once (else page by page,
  // as its pages are touched).
  virtual bool builds_whole_objects() const = 0;
  // The error to raise when every page of the pool (`pool_pages`) is pinned.
  virtual std::string pool_full_message(const std::string& db_name, std::uint32_t pool_pages) const = 0;

  frame_space& frames() const { return *frames_; }
  std::byte* frame_address(const page_desc* d) const { return frames_->frame_address(d->frame); }
  // Where the runtime reads and writes resident page d's bytes (its
  // frame's memory, always accessible to the runtime).
  std::byte* image(const page_desc* d) const { return frames_->view(d->frame); }

 protected:
  page_access(std::unique_ptr<frame_space> frames, buffer_pool& pool, page_table& table)
      : frames_(std::move(frames)), pool_(pool), table_(table) {}

  std::unique_ptr<frame_space> frames_;
  buffer_pool& pool_;
  page_table& table_;
};

// This library's mode.
std::unique_ptr<page_access> make_page_access(std::unique_ptr<frame_space> frames, buffer_pool& pool,
                                              page_table& table);
// The mode's name, and the format of the databases it creates (its object
// headers differ from the other mode's).
const char* mode_name();
// How this mode's frames are protected (os/frames.hpp).
frame_control mode_frame_control();
const char* format_name();

}  // namespace qs::detail
