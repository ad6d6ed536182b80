// software_current.hpp: the database software mode's references resolve
// in: the one whose transaction began last (or, between transactions, was
// last used). software_mode.cpp's page_access sets it; the entry points of
// qs/ref.hpp (software_ref.cpp) read it.
//
// Thread-safety: an atomic pointer; the database it names must be used by
// one thread at a time, as its references are.
#pragma once

#include <atomic>

namespace qs::detail {

class database_impl;
extern std::atomic<database_impl*> software_current_database;

}  // namespace qs::detail
