// mode/hardware_access.hpp: hardware mode's page access (page_access.hpp):
// pages reached through protected virtual frames, whose faults are the
// program's first touches. Every member forwards to the reservation or is
// a constant, so that the pager's calls compile to the frame operations
// themselves.
//
// Invariants: those of page_access.hpp; a frame's protection is its page's
// state (none while absent or stale, read-only while clean, read-write
// while writable).
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#if QS_SOFTWARE_SWIZZLE
#error "mode/hardware_access.hpp is hardware mode's; include mode/page_access.hpp"
#endif

#include <qs/format/keys.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace qs::detail {

class hardware_access final : public frame_access {
 public:
  hardware_access(std::unique_ptr<frame_space> frames, page_table& table) : frame_access(std::move(frames), table) {}

  void show(page_desc* d, bool writable) { frames_->show(d->frame, writable); }
  void fill(page_desc* d, const void* src) { frames_->fill(d->frame, static_cast<const std::byte*>(src)); }
  void fill_and_show(page_desc* d, const void* src, bool writable) {
    frames_->fill_and_show(d->frame, static_cast<const std::byte*>(src), writable);
  }
  void hide(page_desc* d) { frames_->hide(d->frame); }
  void set_access(page_desc* d, bool writable) { frames_->protect(d->frame, writable); }
  // Neighbouring frames change together, in one system call.
  void set_access(const std::vector<page_desc*>& pages, bool writable) {
    std::vector<std::uint64_t> f;
    f.reserve(pages.size());
    for (const page_desc* d : pages) f.push_back(d->frame);
    std::sort(f.begin(), f.end());
    for (std::size_t i = 0; i < f.size();) {
      std::size_t j = i + 1;
      while (j < f.size() && f[j] == f[j - 1] + 1) ++j;
      frames_->protect(f[i], writable, j - i);
      i = j;
    }
  }
  void hide_all() { frames_->hide_all(); }
  // Nothing is looked up per transaction or per thread: a page's frame is
  // its address in every thread.
  void begin_transaction() {}
  void make_current(database_impl*) {}
  void forget_current(database_impl*) {}

  std::byte* address(const page_desc* d) const { return frame_address(d); }
  page_desc* page_of(const void* p) const {
    return frames_->contains(p) ? table_.by_frame(frames_->frame_of(p)) : nullptr;
  }
  bool contains(const void* p) const { return frames_->contains(p); }
  bool storable_pointer(std::uint64_t v) const { return frames_->contains(reinterpret_cast<const void*>(v)); }
  // Every fault on a frame is served (database_impl::on_fault).
  void check_fault(void*) const {}

  static constexpr const char* raw_address_note = "inside the persistent region";
  static std::string pool_full_message(std::uint32_t pool_pages) {
    return "every page of the buffer pool (" + std::to_string(pool_pages) + " pages) is pinned";
  }
  static constexpr bool faults_pages_in = true;
  static constexpr bool pins_transaction_pages = false;
  // A stored page whose image needs no rewriting may be shown by mapping
  // the store's file into its frame (frame_space::map_file): the program
  // faults before it writes.
  static constexpr bool maps_files = true;
  // frame_space::release takes the frame's access with its memory (a
  // touch faults after it).
  static constexpr bool release_hides = true;
  static constexpr bool builds_whole_objects = false;
  static constexpr const char* mode_name = "hardware";
  // 48-byte record headers with a page version and the size of the page's
  // mapping object; 8-byte object headers.
  static constexpr const char* format_name = format_hardware;
  static frame_control control() { return default_frame_control(); }
};

}  // namespace qs::detail
