// mode/software_access.hpp: software mode's page access (page_access.hpp):
// small pages reached through the residency table that qs/ref.hpp reads
// inline, large objects at contiguous frames once all of their pages are
// resident, nothing ever write-protected. It also sets the calling thread's
// current database and residency table (software_current.hpp).
//
// Invariants: those of page_access.hpp; the residency table never moves
// (qs/ref.hpp's inline path reads it while it grows), and an entry is set
// iff its page is resident and usable in the open transaction (each page's
// first use in a transaction takes the slow path, which pins it).
//
// Thread-safety: none; the runtime's lock guards it. make_current and
// forget_current take the process's thread registry's mutex.
#pragma once

#if !QS_SOFTWARE_SWIZZLE
#error "mode/software_access.hpp is software mode's; include mode/page_access.hpp"
#endif

#include <qs/format/keys.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qs::detail {

class software_access final : public frame_access {
 public:
  software_access(std::unique_ptr<frame_space> frames, page_table& table) : frame_access(std::move(frames), table) {}

  void show(page_desc* d, bool writable);
  void fill(page_desc* d, const void* src) { frames_->fill(d->frame, static_cast<const std::byte*>(src)); }
  void fill_and_show(page_desc* d, const void* src, bool writable) {
    fill(d, src);
    show(d, writable);
  }
  void hide(page_desc* d);
  void set_access(page_desc* d, bool writable);
  void set_access(const std::vector<page_desc*>& pages, bool writable) {
    for (page_desc* d : pages) set_access(d, writable);
  }
  void hide_all();
  void begin_transaction() { hide_all(); }
  void make_current(database_impl* db);
  void forget_current(database_impl* db);

  std::byte* address(const page_desc* d) const { return d->hdr.kind == page_kind::small ? image(d) : frame_address(d); }
  page_desc* page_of(const void* p) const;
  bool contains(const void* p) const { return frames_->contains(p) || frames_->view_contains(p); }
  // Persistent objects refer to each other through qs::ref, never addresses.
  bool storable_pointer(std::uint64_t) const { return false; }
  // Never returns: a touch of a frame is a raw address kept too long.
  void check_fault(void* address) const;

  static constexpr const char* raw_address_note =
      "a raw address (in software mode, persistent objects refer to each other through qs::ref)";
  static std::string pool_full_message(std::uint32_t pool_pages);
  static constexpr bool faults_pages_in = false;
  static constexpr bool pins_transaction_pages = true;
  // Never mapped from the store's file: the program writes images
  // without faulting first.
  static constexpr bool maps_files = false;
  // A small page is hidden by forgetting where it is resident, which
  // releasing its memory does not do.
  static constexpr bool release_hides = false;
  static constexpr bool builds_whole_objects = true;
  static constexpr const char* mode_name = "software";
  // Object headers carry a tag: software mode's databases have a format of
  // their own.
  static constexpr const char* format_name = format_software;
  // Only large objects are shown at frames, read-write.
  static frame_control control() { return default_frame_control(); }

  // Whether page is in the residency table.
  bool resident(std::uint64_t page) const { return page < table_pages && table()[page]; }

 private:
  // Page numbers past the table's end are never in it: their references
  // always take the slow path, which finds them all the same.
  void set_resident(std::uint64_t page, std::byte* at);
  std::byte** table() const { return reinterpret_cast<std::byte**>(memory_.data()); }

  // 2^28 entries reserved (2 GiB of address space), memory committed only
  // where pages were resident.
  static constexpr std::uint64_t table_pages = std::uint64_t{1} << 28;
  zeroed_memory memory_{table_pages * sizeof(std::byte*)};
  std::uint64_t high_ = 0;  // entries at or past it were never set
};

}  // namespace qs::detail
