// inspect/verify.hpp: qs-inspect verify, the check of a whole database.
//
// One pass reads every page record (stored_database::for_each_page) and
// checks it alone: its checksum, its structure (page_check.hpp), its mapping
// object, and every object's type against the stored schema. What the pages
// say of each other is checked after the pass, from a summary of each page
// (its kind and its objects' offsets, sizes, types and tags):
//  * every pointer word (software mode: every qs::ref) is null, or leads
//    into a live object at a place its type allows: where an element, a
//    member or an array element starts, or one past the end;
//  * every mapping entry a pointer word uses names a run that exists: a
//    small page, or a large object's head with that many pages (an entry no
//    pointer uses is left from an object since freed or rewritten, and
//    leads nowhere: page numbers are never used again);
//  * every large object's run is complete: its pages follow its head, each
//    saying so, with the same type and size;
//  * every free-space record ("s:") names a small page with that much room;
//  * every named root and index entry leads to a live object;
//  * no page record lies past the page counter.
// Each problem is one line that names the page and offset, and the type and
// member where there is one.
//
// Thread-safety: one thread at a time (the stored_database's).
#pragma once

#include "inspect/stored_database.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace qs::detail {

std::uint64_t verify_database(stored_database& db, const std::function<void(const std::string&)>& report,
                              const std::function<void(std::uint64_t, std::uint64_t)>& progress);

}  // namespace qs::detail
