// mode/references.hpp: how persistent references are named outside pages, the
// upper half of what differs between hardware and software mode.
//
// Roots and index entries keep a reference as a 24-byte location, so that it
// survives relocation. Hardware mode (hardware_mode.cpp): {page, offset in
// its run, run length, run address}; decoding gives the run frames in this
// process (the page itself comes in when the program touches it). Software
// mode (software_mode.cpp): the object identifier {page, offset, tag};
// decoding fetches and pins the page, and checks the tag. Software mode also
// resolves qs::ref's slow path here, saves objects' before-images for
// qs::write, and logs root cells assigned through a plain C++ reference.
//
// The implementation sits above the pager and the relocator and calls them;
// nothing below calls it.
//
// Invariants: a location is exactly 24 bytes; a malformed one raises
// qs::corrupt_page. Index values handed to and from qs::index are the bytes
// of a qs::ref<T> (an address, or a 16-byte identifier).
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace qs {
struct statistics;
}

namespace qs::detail {

class pager;
class relocator;
class page_access;
class page_table;
class transaction_log;

class references {
 public:
  virtual ~references() = default;

  // The stored location of the persistent object (or cell) at p.
  virtual std::string location_of(const void* p) = 0;
  // Where the location's object is in this process.
  virtual void* resolve(std::string_view location) = 0;
  // An index value (the bytes of a qs::ref) as a location, and back.
  virtual std::string location_of_ref(std::string_view ref_bytes) = 0;
  virtual std::string ref_of_location(std::string_view location) = 0;
  // A root cell of `size` bytes at `cell` was handed to the program in the
  // open transaction (software mode logs the cells that changed at commit).
  virtual void root_cell_used(void* cell, std::size_t size) = 0;
  // Before commit's write-back: log the root cells that changed.
  virtual void announce_root_cells() = 0;
  // Abort: root cells get their bytes back.
  virtual void restore_root_cells() = 0;

  // Software mode's entry points of qs/ref.hpp (hardware mode never calls them).
  virtual void* resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write) = 0;
  virtual void identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) = 0;
};

// This library's mode.
std::unique_ptr<references> make_references(pager& pages, relocator& frames, page_access& access, page_table& table,
                                            transaction_log& log, statistics& stats, const std::string& db_name);

}  // namespace qs::detail
