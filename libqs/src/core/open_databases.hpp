// core/open_databases.hpp: the process-wide list of open databases, to find the
// database an address belongs to (qs::near, delete, software mode's
// qs::ref from an address, and the commit's message for a pointer into
// another database).
//
// Invariants: a database is listed from the end of its construction to the
// start of its destruction; each entry's memory ranges are its page_access's.
//
// Thread-safety: every function is safe to call from any thread (one
// process-wide mutex). database_of takes no lock when the address is in the
// database the calling thread found last and no database has been opened or
// closed since (a generation count): a delete, run after run, pays no
// process-wide lock. A database must not be closed while another thread
// frees its objects, with the cache as without it.
#pragma once

#include "mode/page_access.hpp"

#include <string>

namespace qs::detail {

class database_impl;

void add_open_database(database_impl* db, const page_access* access, const std::string* name);
void remove_open_database(database_impl* db) noexcept;
// The open database whose memory holds p, or nullptr.
database_impl* database_of(const void* p) noexcept;
// Its name, or empty.
std::string name_of_database_at(const void* p);

}  // namespace qs::detail
