// mode/hardware_references.hpp: hardware mode's references (references.hpp):
// a location is {page, offset in its run, run length, run address}, and
// decoding one gives the run frames in this process; the page itself comes
// in when the program touches it. Root cells are written like any
// persistent memory, so write faults log them: the root-cell hooks do
// nothing.
//
// Invariants: those of references.hpp.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#if QS_SOFTWARE_SWIZZLE
#error "mode/hardware_references.hpp is hardware mode's; include mode/references.hpp"
#endif

#include <cstddef>
#include <string>
#include <string_view>

namespace qs::detail {

class hardware_references {
 public:
  hardware_references(pager& pages, relocator& frames, page_access& access, page_table& table, transaction_log&,
                      statistics&)
      : pages_(pages), frames_(frames), access_(access), table_(table) {}
  hardware_references(const hardware_references&) = delete;
  hardware_references& operator=(const hardware_references&) = delete;

  std::string location_of(const void* p);
  void* resolve(std::string_view location);
  std::string location_of_ref(std::string_view ref_bytes);
  std::string ref_of_location(std::string_view location);
  void root_cell_used(void*, std::size_t) {}
  void announce_root_cells() {}
  void restore_root_cells() {}

 private:
  pager& pages_;
  relocator& frames_;
  page_access& access_;
  page_table& table_;
};

}  // namespace qs::detail
