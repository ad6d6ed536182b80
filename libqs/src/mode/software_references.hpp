// mode/software_references.hpp: software mode's references (references.hpp):
// a location is the object identifier {page, offset, tag}, and decoding one
// fetches and pins the page and checks the tag. Beyond the policy, the
// entry points of qs/ref.hpp's slow path (software_ref.cpp) are here:
// resolve_identity follows a reference (and, for qs::write, saves the
// object's before-image), identify names the object at an address. Root
// cells, written through a plain C++ reference rather than qs::write, keep
// their bytes as handed out, and those that changed are logged at commit.
//
// Invariants: those of references.hpp; every page a reference reached in
// the open transaction stays pinned until it ends; a reference whose tag is
// not its object's raises qs::dangling_reference.
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#if !QS_SOFTWARE_SWIZZLE
#error "mode/software_references.hpp is software mode's; include mode/references.hpp"
#endif

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qs::detail {

class software_references {
 public:
  software_references(pager& pages, relocator& frames, page_access& access, page_table& table, transaction_log& log,
                      statistics& stats)
      : pages_(pages), frames_(frames), access_(access), table_(table), log_(log), stats_(stats) {}
  software_references(const software_references&) = delete;
  software_references& operator=(const software_references&) = delete;

  std::string location_of(const void* p);
  void* resolve(std::string_view location);
  std::string location_of_ref(std::string_view ref_bytes);
  // The identifier only: the object is fetched when followed.
  std::string ref_of_location(std::string_view location);
  void root_cell_used(void* cell, std::size_t size);
  void announce_root_cells();
  void restore_root_cells();

  // Where the object {page, offset, tag} is, its page resident and pinned;
  // for_write also makes it writable (qs::write).
  void* resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write);
  // The identifier of the persistent object that starts at p.
  void identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag);

 private:
  page_desc* locate(std::uint64_t page);
  void announce_write(page_desc* h, std::uint32_t offset);
  void save_object(page_desc* d, std::uint32_t offset);

  struct root_read {
    void* cell;
    std::string before;
  };

  pager& pages_;
  relocator& frames_;
  page_access& access_;
  page_table& table_;
  transaction_log& log_;
  statistics& stats_;
  std::vector<root_read> root_reads_;  // this transaction's
};

}  // namespace qs::detail
