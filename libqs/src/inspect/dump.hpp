// inspect/dump.hpp: qs-inspect dump, a database's object graph as text.
//
// The format (docs/tools.md, "The dump format") is JSON Lines, one JSON
// object a line:
//   {"qs_dump":1,"format":...,"page_size":...,"objects":N}   first
//   {"type":NAME,"size":..,"align":..,"pointers":[..],"vptrs":[..],
//    "members":[..]}          each type an object has, by name
//   {"id":N,"type":NAME,"members":{...}}        an object of one element;
//   {"id":N,"type":NAME,"elements":[{...},..]}  of several;
//   {"id":N,"type":"qs::pointer","pointers":[..]}  pointer cells;
//   {"id":N,"type":"qs::raw","bytes":"hex"}     raw bytes
//   {"root":NAME,"type":MANGLED,"id":N}          each named root
//   {"index":NAME,"unique":B,"key":"hex","id":N} each index entry
// Members are by name (their paths), numbers as JSON numbers, pointers as
// null, {"id":N} or {"id":N,"at":BYTE} (into the middle of object N), or
// {"dangling":"0x..."} when they lead to no object; vtable pointers are
// left out (a program sets them as its pages come in).
//
// Objects are numbered in the order a walk from the roots (by name), then
// from the index entries, reaches them, then the unreached in page order:
// the numbers depend on the graph, not on where objects lie, so that a
// dump of a loaded dump is the same text. The objects' bytes are held in
// memory while they are numbered (about the database's payload).
//
// Thread-safety: one thread at a time (the stored_database's).
#pragma once

#include "inspect/stored_database.hpp"

#include <cstdint>
#include <functional>
#include <ostream>

namespace qs::detail {

// Writes the dump of `db` to `out`; returns the objects written.
std::uint64_t dump_database(stored_database& db, std::ostream& out,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress);

}  // namespace qs::detail
