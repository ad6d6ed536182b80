// os/frames.hpp: virtual frames and the memory behind them (Linux).
//
// A frame_space is one reservation of address space cut into frames of one
// page each, backed by one sparse memfd as large as the reservation: frame f
// is the memfd's bytes at f * page_size, so a page's memory is found from
// its frame alone and costs nothing until it is written. The memfd is mapped
// twice, each view one kernel mapping whatever is resident:
//
//  * the frame view, at the reservation, where the program reaches
//    persistent objects; its access per frame is controlled (below);
//  * the runtime's view, elsewhere, always readable and writable, where the
//    runtime builds, reads and writes a page's image (view(f)) while the
//    program cannot reach it.
//
// Access to a frame is controlled in one of two ways (frame_control):
//
//  * userfault (the default): the frame view is registered with
//    userfaultfd for missing, minor and write-protect faults, each delivered
//    as SIGBUS to the faulting thread (UFFD_FEATURE_SIGBUS). Showing a
//    frame installs its page (UFFDIO_CONTINUE, write-protected or not);
//    write access is a bit in the page table entry (UFFDIO_WRITEPROTECT);
//    hiding a frame drops its page table entry (the memfd keeps the page).
//    Nothing splits the kernel mapping: a pool of millions of pages costs
//    the same two mappings as one page, whatever the access pattern.
//  * protection (where userfaultfd is not offered, or QS_FRAMES=protection):
//    mprotect in place on the frame view;
//    neighbouring frames with the same access share a kernel mapping, and
//    each distinct run costs one (vm.max_map_count bounds them:
//    check_map_budget).
//
// Under userfault, frames may instead show a file's bytes with no copy
// (map_file): a private mapping of the file in place of the memfd's, each
// run of them one kernel mapping. Their access is mprotect's: made
// writable, a frame's page becomes the process's own copy when first
// written (the file is never written through it); view(f) is the frame
// itself. Such a frame goes back to the memfd, its bytes copied there,
// when it is hidden, and without them when released. The runs, and the
// writable frames that split them, are kept under a budget of mappings
// drawn from vm.max_map_count; past it, map_file says no and a frame made
// writable goes back to the memfd.
//
// Invariants:
//  * A frame is hidden (any touch faults) or shown read-only or read-write;
//    a shown frame's bytes are view(f)'s.
//  * A frame mapping a file is shown (read-only or read-write), and
//    view(f) is the frame itself, with the frame's access.
//  * Memory is used only by frames whose page has been written and not
//    released since, and by frames populated ahead (populate), which read
//    zeros until written.
//
// Thread-safety: a frame_space's calls may come from any thread; callers
// keep one frame's transitions in order (the runtime's lock does).
//
// This file and fault_signal.* are the only places that know about mmap,
// mprotect, userfaultfd, fork and signals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace qs::detail {

enum class frame_control { userfault, protection };

class zeroed_memory;

// Whether this kernel and process offer what the userfault control needs
// (userfaultfd with SIGBUS delivery and write protection of shared memory),
// checked once.
bool userfault_available();
// The control both modes use: userfault when available, unless the
// environment says QS_FRAMES=protection.
frame_control default_frame_control();
const char* frame_control_name(frame_control c);

class frame_space {
 public:
  // Reserves `bytes` at exactly `preferred` when `exact`, else anywhere
  // (preferring `preferred`). Throws qs::error when it cannot.
  frame_space(std::uintptr_t preferred, std::uint64_t bytes, std::uint32_t page_size, bool exact,
              frame_control control);
  ~frame_space();
  frame_space(const frame_space&) = delete;
  frame_space& operator=(const frame_space&) = delete;

  frame_control control() const { return control_; }
  std::byte* base() const { return base_; }
  std::byte* end() const { return base_ + bytes_; }
  std::uint64_t frames() const { return bytes_ / page_size_; }
  std::byte* frame_address(std::uint64_t f) const { return base_ + f * page_size_; }
  bool contains(const void* p) const { return p >= base_ && p < end(); }
  std::uint64_t frame_of(const void* p) const {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - base_) / page_size_;
  }
  // The runtime's view of frame f's page: always readable and writable,
  // unless the frame maps a file: then it is the frame, writable only
  // while the frame is.
  std::byte* view(std::uint64_t f) const { return file_mapped(f) ? frame_address(f) : view_ + f * page_size_; }
  // Whether frame f shows a file's bytes (map_file).
  bool file_mapped(std::uint64_t f) const { return mapped_count_ != 0 && (mapped_bits_[f / 64] >> (f % 64) & 1) != 0; }
  bool view_contains(const void* p) const { return p >= view_ && p < view_ + bytes_; }
  std::uint64_t frame_of_view(const void* p) const {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - view_) / page_size_;
  }

  // Frame f, hidden, shows view(f)'s page to the program.
  void show(std::uint64_t f, bool writable);
  // Frame f's page, hidden, becomes a copy of `src` (a page's bytes,
  // aligned to the kernel's page size): the kernel allocates its memory
  // without zeroing it first, and no fault is taken on either view. The
  // frame stays hidden. The page's memory is expected to be released (or
  // never written); whatever it held is overwritten.
  void fill(std::uint64_t f, const std::byte* src);
  // fill(), then show(f, writable): under userfault one system call
  // (UFFDIO_COPY), which allocates, copies and maps the page at once.
  void fill_and_show(std::uint64_t f, const std::byte* src, bool writable);
  // Frames [f, f + n) get their memory now, zeroed where it was released,
  // in one system call (MADV_POPULATE_WRITE on the runtime's view); they
  // stay hidden. False when the kernel cannot (before Linux 5.14).
  bool populate(std::uint64_t f, std::uint64_t n);
  // Frames [f, f + n), hidden and their memory released, show the bytes
  // [offset, offset + n * page_size) of the file open as `fd` read-only,
  // with no copy, their page tables filled now (one system call). The file
  // must reach past those bytes and keep them (it may change them: the
  // frames show the change until written). False, nothing changed, under
  // the protection control or when the budget of mappings is spent;
  // throws qs::error when the kernel refuses.
  bool map_file(std::uint64_t f, std::uint64_t n, int fd, std::uint64_t offset);
  // A shown frame's access changes; with n, every frame of [f, f + n), all
  // shown, in as few system calls as their controls allow.
  void protect(std::uint64_t f, bool writable, std::uint64_t n = 1);
  // Frame f becomes hidden; its page stays in view(f).
  void hide(std::uint64_t f);
  // Frames [f, f + n) become hidden and their pages' memory goes back to
  // the kernel (view(f) reads zeros after).
  void release(std::uint64_t f, std::uint64_t n = 1);
  // Every frame becomes hidden, keeping its page (one system call).
  void hide_all();
  // The memory the frames' pages hold now (the memfd's allocated bytes).
  // The kernel counts a page in the process's RSS once per view that maps
  // it, so RSS shows up to twice this.
  std::uint64_t memory_bytes() const;

 private:
  // Frame f, mapping a file, goes back to the memfd, hidden: with its bytes
  // copied there when `keep`, else with no memory.
  void unmap_file(std::uint64_t f, bool keep);
  // Frame f's page in the memfd becomes a copy of `src` (a page's bytes).
  void write_memory(std::uint64_t f, const std::byte* src);
  // Frames [f, f + n) map the memfd again, registered, hidden.
  void restore_memfd(std::uint64_t f, std::uint64_t n);
  // Frames [f, f + n), all mapping a file, are shown read-only or
  // read-write (each its own copy of the page once written): neighbours
  // whose access changes in one mprotect; past the budget of mappings, a
  // frame made writable goes back to the memfd.
  void protect_mapped(std::uint64_t f, std::uint64_t n, bool writable);
  void set_mapped(std::uint64_t f, bool on, std::uint64_t offset);
  // Whether f - 1 (or f + 1) maps the file bytes right before (after) f's.
  bool joins(std::uint64_t f, std::uint64_t offset, bool left) const;

  std::byte* base_ = nullptr;
  std::byte* view_ = nullptr;
  std::uint64_t bytes_;
  std::uint32_t page_size_;
  frame_control control_;
  int fd_ = -1;    // the memfd behind both views
  int uffd_ = -1;  // userfault control only
  bool continue_wp_ = false;
  // Frames mapping a file: a bit each, and the file offset each shows
  // (its low bit set while the frame is writable).
  std::unique_ptr<zeroed_memory> mapped_memory_;
  std::uint64_t* mapped_bits_ = nullptr;
  std::uint64_t mapped_count_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> mapped_offsets_;
  // Maximal runs of frames mapping consecutive file bytes: each is one
  // kernel mapping, and splits the memfd's once.
  std::uint64_t mapped_runs_ = 0;
  // Writable frames mapping a file: each splits its run's mapping.
  std::uint64_t mapped_writable_ = 0;
  std::uint64_t run_budget_ = 0;
};

// Throws qs::invalid_argument when a pool of `slots` pages could need more
// memory mappings than vm.max_map_count allows under `control`.
void check_map_budget(std::uint64_t slots, frame_control control);
// The kernel memory mappings this process holds now (/proc/self/maps).
std::uint64_t process_mappings();

// Zero-filled memory reserved up front and committed page by page as it is
// written (MAP_NORESERVE): a table that never moves, however far it grows.
class zeroed_memory {
 public:
  explicit zeroed_memory(std::size_t bytes);
  ~zeroed_memory();
  zeroed_memory(const zeroed_memory&) = delete;
  zeroed_memory& operator=(const zeroed_memory&) = delete;
  std::byte* data() const { return base_; }
  std::size_t size() const { return bytes_; }
  // Lets the kernel take the first `bytes` back when it needs memory
  // (MADV_FREE): until then, writing them again costs no page fault. Their
  // contents are undefined after.
  void offer(std::size_t bytes);
  // Gives [offset, offset + bytes) its memory now, in one system call
  // (MADV_POPULATE_WRITE), instead of a page fault per page at its first
  // write; contents stay as they are. False when the kernel cannot (before
  // Linux 5.14): the pages then get their memory when written.
  bool populate(std::size_t offset, std::size_t bytes) const;

 private:
  std::byte* base_;
  std::size_t bytes_;
};

// fork(): a child does not keep an open database's memory. When a process
// forks, the child unmaps every region of the reservations, views and
// tables above (the parent's stay as they are: the frames are shared
// memory, which a child's page-ins would otherwise overwrite) and
// fork_generation() grows, so that a database can tell it was opened by
// another process.
std::uint64_t fork_generation() noexcept;

}  // namespace qs::detail
