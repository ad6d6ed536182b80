// api/catalog.hpp: a database's own records, read when it opens or written when
// it is created: its format, page size, the preferred base of its
// reservation, and the page and frame counters (keys.hpp).
//
// Creating a database picks a free place for its reservation (16 TiB up,
// well clear of the heap, PIE executables and shared libraries; wherever the
// kernel puts it when none of those is free) and writes
// the records in one store transaction; two clients of a page server that
// create the same database at once agree on one of them. Opening one checks
// that it was made by this mode (page_access.hpp's format_name) and reserves
// its frames at the preferred base, or anywhere else when something is
// there (pages are then relocated as they come in).
//
// Thread-safety: none; called once, before the database is shared.
#pragma once

#include "os/frames.hpp"
#include "store/store.hpp"

#include <qs/database.hpp>
#include <qs/format/mapping.hpp>

#include <cstdint>
#include <memory>

namespace qs::detail {

// Opens or creates the database's records in `s`; sets page_size to the
// database's and `home` to its home frames (its preferred base and the
// reservation it was created with), and returns its reservation.
std::unique_ptr<frame_space> open_catalog(store& s, const options& opts, std::uint32_t& page_size, home_region& home);

}  // namespace qs::detail
