// mode/references.hpp: how persistent references are named outside pages, the
// upper half of what differs between hardware and software mode, chosen at
// build time as page_access is (page_access.hpp).
//
// Roots and index entries keep a reference as a 24-byte location, so that it
// survives relocation.
//
//  * hardware_references (hardware_references.hpp): {page, offset in its
//    run, run length, run address}; decoding gives the run frames in this
//    process (the page itself comes in when the program touches it).
//  * software_references (software_references.hpp): the object identifier
//    {page, offset, tag}; decoding fetches and pins the page, and checks the
//    tag. Software mode also resolves qs::ref's slow path there, saves
//    objects' before-images for qs::write, and logs root cells assigned
//    through a plain C++ reference.
//
// The implementation sits above the pager and the relocator and calls them;
// nothing below calls it. Both take the same components when built, and
// keep those they use.
//
// Invariants: a location is exactly 24 bytes; a malformed one raises
// qs::corrupt_page. Index values handed to and from qs::index are the bytes
// of a qs::ref<T> (an address, or a 16-byte identifier).
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "mode/page_access.hpp"

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

namespace qs {
struct statistics;
}

namespace qs::detail {

class pager;
class relocator;
class transaction_log;

// What a mode's references provide.
template <class R>
concept references_policy =
    std::constructible_from<R, pager&, relocator&, page_access&, page_table&, transaction_log&, statistics&> &&
    requires(R& r, const void* p, void* cell, std::size_t size, std::string_view s) {
  // The stored location of the persistent object (or cell) at p.
  { r.location_of(p) } -> std::same_as<std::string>;
  // Where the location's object is in this process.
  { r.resolve(s) } -> std::same_as<void*>;
  // An index value (the bytes of a qs::ref) as a location, and back.
  { r.location_of_ref(s) } -> std::same_as<std::string>;
  { r.ref_of_location(s) } -> std::same_as<std::string>;
  // A root cell of `size` bytes at `cell` was handed to the program in
  // the open transaction (software mode logs the cells that changed at
  // commit).
  r.root_cell_used(cell, size);
  // Before commit's write-back: log the root cells that changed.
  r.announce_root_cells();
  // Abort: root cells get their bytes back.
  r.restore_root_cells();
};

}  // namespace qs::detail

#if QS_SOFTWARE_SWIZZLE
#include "mode/software_references.hpp"
namespace qs::detail {
using references = software_references;
}
#else
#include "mode/hardware_references.hpp"
namespace qs::detail {
using references = hardware_references;
}
#endif

namespace qs::detail {
static_assert(references_policy<references>);
}
