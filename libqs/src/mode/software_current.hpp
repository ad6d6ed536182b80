// mode/software_current.hpp: the database software mode's references resolve
// in, one per thread: the one whose transaction the thread began or joined
// last (or, between transactions, opened last). software_access.cpp's
// page_access sets it, with the thread's residency table; the entry points
// of qs/ref.hpp (software_ref.cpp) read it.
//
// Invariants:
//  * no thread's current database is a closed one: closing a database
//    (page_access::forget_current) clears it in every thread that has it,
//    with that thread's residency table;
//  * qs/ref.hpp's process-wide sw_residency is the table of a database only
//    while that database is the current one of every thread that has one;
//    otherwise it is empty.
//
// Thread-safety: each thread reads and sets its own; closing clears others'
// under a mutex, and a database must not be closed while another thread
// still uses it (as with any database).
#pragma once

#include <qs/ref.hpp>  // residency

namespace qs::detail {

class database_impl;

// The calling thread's current database in software mode, or nullptr.
database_impl* software_current_database() noexcept;
// Its residency table (empty without one).
const residency& software_current_residency() noexcept;

}  // namespace qs::detail
