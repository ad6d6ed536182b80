// mode/page_access.hpp: how the program reaches a resident page, the lower half
// of what differs between hardware and software mode, chosen at build time.
//
// The mode is a compile-time policy, as an OS layer is chosen when a
// library is built: the runtime compiles once per mode (QS_SOFTWARE_SWIZZLE,
// qs/ref.hpp), and `page_access` names that mode's class, with no virtual
// call between the pager and it.
//
//  * hardware_access (hardware_access.hpp): a resident page is reached
//    through its virtual frame, with the access its state allows
//    (read-only, read-write, or none while it must be revalidated); faults
//    on frames are the program's first touches.
//  * software_access (software_access.hpp): a small page is reached through
//    the residency table that qs/ref.hpp reads inline, at its image; a large
//    object is mapped read-write at contiguous frames once all of its pages
//    are resident. A small page's address is its image; nothing is ever
//    write-protected, and a fault on a frame is a raw address kept after
//    its page left the pool.
//
// Both are a frame_access (the reservation and the runtime's view of it)
// with the members the page_access_policy concept below lists; what a mode
// decides once and for all is a constexpr member, so that the code that
// asks compiles only the branch its mode takes.
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

#include <qs/ref.hpp>  // QS_SOFTWARE_SWIZZLE

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qs::detail {

class database_impl;

// What both modes' page access share: the reservation, and the runtime's
// always-accessible view of its memory.
class frame_access {
 public:
  frame_access(const frame_access&) = delete;
  frame_access& operator=(const frame_access&) = delete;

  frame_space& frames() const { return *frames_; }
  std::byte* frame_address(const page_desc* d) const { return frames_->frame_address(d->frame); }
  // Where the runtime reads and writes resident page d's bytes (its
  // frame's memory, always accessible to the runtime).
  std::byte* image(const page_desc* d) const { return frames_->view(d->frame); }

 protected:
  frame_access(std::unique_ptr<frame_space> frames, page_table& table) : frames_(std::move(frames)), table_(table) {}
  ~frame_access() = default;

  std::unique_ptr<frame_space> frames_;
  page_table& table_;
};

// What a mode's page access provides.
template <class A>
concept page_access_policy = std::derived_from<A, frame_access> &&
    std::constructible_from<A, std::unique_ptr<frame_space>, page_table&>&& requires(
        A& a, const A& c, page_desc* d, const void* p, void* q, std::uint64_t v, database_impl* db, std::uint32_t n,
        const std::vector<page_desc*>& pages) {
  // The page came into the pool (its image is ready).
  a.show(d, true);
  // The page comes into the pool with `p` (a page, aligned to the kernel's
  // page size) as its image, which its frame's memory becomes without
  // being zeroed first (frame_space::fill): hidden, or shown.
  a.fill(d, p);
  a.fill_and_show(d, p, true);
  // The page leaves the pool (or must be revalidated before its next
  // use); its image stays until the pager releases its frame's memory.
  a.hide(d);
  // The resident page's access becomes writable (or read-only); or every
  // page's of a list, those at neighbouring frames together.
  a.set_access(d, true);
  a.set_access(pages, false);
  // Every resident page must be revalidated (or, in software mode,
  // looked up again) before its next use.
  a.hide_all();
  // A transaction begins.
  a.begin_transaction();
  // `db` becomes the database references resolve in (software mode),
  // or stops being it.
  a.make_current(db);
  a.forget_current(db);
  // Where the program sees the bytes of resident page d.
  { c.address(d) } -> std::same_as<std::byte*>;
  // The page whose bytes the program sees at p, or nullptr.
  { c.page_of(p) } -> std::same_as<page_desc*>;
  // Whether p is in this database's memory (frames, or software
  // mode's pool).
  { c.contains(p) } -> std::same_as<bool>;
  // Whether a pointer word on a page may hold the value v at commit.
  { c.storable_pointer(v) } -> std::same_as<bool>;
  // A fault on one of this database's frames: throws (or ends the
  // process) when the mode never faults pages in.
  c.check_fault(q);

  // What a refused pointer word into this database's own memory means.
  { A::raw_address_note } -> std::convertible_to<const char*>;
  // The error to raise when every page of the pool (n pages) is pinned.
  { A::pool_full_message(n) } -> std::same_as<std::string>;
  // Whether the program's touches of frames fault pages in.
  { A::faults_pages_in } -> std::convertible_to<bool>;
  // Whether the pages a transaction uses stay in the pool until it ends.
  { A::pins_transaction_pages } -> std::convertible_to<bool>;
  // Whether a new large object is built whole at once (else page by
  // page, as its pages are touched).
  { A::builds_whole_objects } -> std::convertible_to<bool>;
  // Whether a frame may show a stored page by mapping the store's file
  // (frame_space::map_file), read-only until the program's write faults.
  { A::maps_files } -> std::convertible_to<bool>;
  // Whether releasing a page's frame memory (pager::release_slot) also
  // hides the page from the program, so that a page leaving the pool is
  // hidden first only when its bytes are still to be read.
  { A::release_hides } -> std::convertible_to<bool>;
  // The mode's name, and the format of the databases it creates (its
  // object headers differ from the other mode's).
  { A::mode_name } -> std::convertible_to<const char*>;
  { A::format_name } -> std::convertible_to<const char*>;
  // How the mode's frames are protected (os/frames.hpp).
  { A::control() } -> std::same_as<frame_control>;
};

}  // namespace qs::detail

#if QS_SOFTWARE_SWIZZLE
#include "mode/software_access.hpp"
namespace qs::detail {
using page_access = software_access;
}
#else
#include "mode/hardware_access.hpp"
namespace qs::detail {
using page_access = hardware_access;
}
#endif

namespace qs::detail {
static_assert(page_access_policy<page_access>);
}
