// qs/base/error.hpp: the exceptions qs throws, the runtime and qs-pageserver
// alike. Programs include it as <qs/error.hpp> (libqs/include/qs/error.hpp),
// the public name; it lives here because the libraries the runtime and the
// server share (common/) throw these types too, and the server includes
// nothing of libqs.
//
// Every error qs reports is an exception derived from qs::error. Messages name
// the database, page, type or field involved, so that a user can tell what went
// wrong without a debugger. An error never loses committed data: a failed
// commit aborts its transaction (except qs::commit_unknown: then nobody could
// tell whether it committed); a corrupt page is refused, not returned.
//
// Errors raised while a persistent page is being faulted in are thrown from the
// fault handler and unwind through the faulting instruction; that requires the
// program to be compiled with -fnon-call-exceptions, which the qs CMake target
// adds to everything that links it. The errors a fault can raise are
// programming errors (qs::no_transaction, an invalid persistent pointer),
// I/O and corruption (qs::store_error, qs::corrupt_page) and a lost page
// server (qs::connection_lost); never qs::conflict. Before it is thrown, the
// error marks the transaction failed: whatever catches it, the transaction
// can only abort (every later qs call in it, commit included, throws it
// again). Raised inside code that cannot throw (a noexcept function, a
// destructor), it ends the process through std::terminate, and qs says first
// which error it was and that it came from a fault (docs/api.md, "Errors
// in faults").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace qs {

// Base of every qs exception.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what), what_(what) {}
  explicit error(const char* what) : error(std::string(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }
  // Prefixes the message with "database NAME: " unless it mentions NAME
  // already (as "database NAME", or "server URL" for a page server's): how
  // the runtime says, once, at the boundary between the program and its
  // components, which database an error is about.
  void name_database(const std::string& name) {
    if (what_.find(name) == std::string::npos) what_.insert(0, "database " + name + ": ");
  }

 private:
  std::string what_;
};

// A page record read from the store failed its checksum.
class corrupt_page : public error {
 public:
  corrupt_page(std::uint64_t page, const std::string& what) : error(what), page_(page) {}
  std::uint64_t page() const noexcept { return page_; }

 private:
  std::uint64_t page_;
};

// The store (Berkeley DB, or the page server behind it) failed.
class store_error : public error {
 public:
  using error::error;
};

// A write to the store's files failed: the disk is full, over its quota,
// read-only or failing. Every transaction whose commit returned is safe (its
// commit reached the log before commit returned, and the next open's
// recovery restores it). The transaction in progress did not commit, except
// when the failure struck while its own commit record was being written: the
// message then says that it may or may not have committed. From the failure
// on, the handle writes nothing more and refuses every call with this error:
// close the database, make room, and open it again.
class write_failed : public store_error {
 public:
  using store_error::store_error;
};

// Another process holds the embedded database open.
class database_in_use : public error {
 public:
  using error::error;
};

// Invalid options or arguments given to a qs call.
class invalid_argument : public error {
 public:
  using error::error;
};

// Persistent data was touched, or allocated, with no transaction open.
class no_transaction : public error {
 public:
  using error::error;
};

// A type has no schema, or a class was allocated through another class's
// allocation functions.
class schema_error : public error {
 public:
  using error::error;
};

// The stored layout of a type differs from the program's.
class schema_mismatch : public schema_error {
 public:
  using schema_error::schema_error;
};

// At commit, a persistent object held a pointer to transient memory.
class transient_pointer : public error {
 public:
  using error::error;
};

// At commit, a persistent object held a pointer into another database open
// in the same process; pointers between databases are not supported.
class cross_database_pointer : public error {
 public:
  using error::error;
};

// The address reservation of a database has no free frame left.
class reservation_full : public error {
 public:
  using error::error;
};

// A named root exists with another type than the one asked for.
class root_type_mismatch : public error {
 public:
  using error::error;
};

// The transaction conflicts with others and was aborted; retry it (db.run
// does). Raised only where an exception is safe: by commit(), and by the
// explicit calls of a transaction (a page server's index calls), never from a
// fault. On a page server, a commit that finds a page or record this
// transaction read (or, under isolation::snapshot, wrote) changed by a commit
// since the transaction's snapshot is refused with it; the text names the
// page or record.
class conflict : public error {
 public:
  using error::error;
};
// The name of qs::conflict when page servers locked pages as they were read:
// code that catches qs::deadlock catches every conflict.
using deadlock = conflict;

// Software mode: a qs::ref names an object that has been deleted (its
// uniqueness tag is not the object's), or no object at all.
class dangling_reference : public error {
 public:
  using error::error;
};

// The connection to the page server was lost; the transaction is aborted.
class connection_lost : public error {
 public:
  using error::error;
};

// The connection to the page server dropped during a commit, and whether the
// transaction committed could not be learned: the server could not be
// reached again within options::reconnect_budget_ms, or no longer remembered
// the commit (it remembers each for 10 minutes by default). The transaction
// may or may not have committed. Its changes in memory are discarded as by
// an abort, and the database handle stays usable: its next transaction
// connects again and sees the server's state, whichever way the commit went.
// Reopen (or begin a transaction) and check for the transaction's effects
// before doing it again.
class commit_unknown : public error {
 public:
  using error::error;
};

}  // namespace qs
