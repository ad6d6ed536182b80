// The entry points of qs/ref.hpp in software mode: a reference's slow path,
// qs::write, and a reference made from an address, each forwarded to the
// database it belongs to.
#include "api/database_impl.hpp"
#include "core/open_databases.hpp"
#include "mode/software_current.hpp"

#include <qs/error.hpp>
#include <qs/ref.hpp>

#include <cstdio>

namespace qs::detail {
namespace {

database_impl& current() {
  database_impl* db = software_current_database();
  if (!db)
    throw no_transaction(
        "a qs::ref was followed, but this thread has no database (open one, or begin or join a transaction of "
        "one, in this thread)");
  return *db;
}

void* resolve_in(database_impl& db, std::uint64_t page, std::uint32_t offset, std::uint32_t tag, bool for_write) {
  return db.with_runtime([&](runtime& rt, transaction_engine& tx) {
    tx.require_not_other("a persistent object");
    return rt.refs.resolve_identity(page, offset, tag, for_write);
  });
}

}  // namespace

void* sw_resolve(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  // Threads with different databases: the inline path's table is empty,
  // and this thread's own is read here, without the database's lock.
  if (void* p = sw_resident(software_current_residency(), page, offset, tag)) return p;
  return resolve_in(current(), page, offset, tag, false);
}

void* sw_write(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  return resolve_in(current(), page, offset, tag, true);
}

void sw_identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) {
  database_impl* db = database_of(p);
  if (!db) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%p", p);
    throw invalid_argument(std::string("a qs::ref made from ") + buf + ", which is not in an open database");
  }
  db->with_runtime([&](runtime& rt, transaction_engine&) { rt.refs.identify(p, page, offset, tag); });
}

void sw_bad_conversion(const char* from, const char* to) {
  throw invalid_argument("qs::ref<" + demangle(from) + "> converted to qs::ref<" + demangle(to) +
                         ">: in software mode a reference names a whole object, so the base class must be at "
                         "offset 0");
}

}  // namespace qs::detail
