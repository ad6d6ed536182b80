// qs/inspect.hpp: looking inside a database without the program that made it:
// what the qs-inspect tool prints; and a dump of one loaded into a new one.
//
// An inspector opens a database (an embedded directory, or a qs:// or
// qs+unix:// URL of a page server) at the store: no frames, no faults, no
// program types. The types come from the database's own schema records, so
// any database this build's mode reads can be inspected, whatever program
// made it. Nothing is written, except that opening an embedded directory
// whose last close was not clean recovers it first (as any open does);
// through a page server everything is read in one snapshot transaction.
// backup() is the one call that writes (a copy, elsewhere).
//
// What each call prints is documented with it and in docs/tools.md
// ("qs-inspect"). Every problem verify() finds is one line naming the page,
// the offset, the type and the member where it can.
//
// Invariants: an inspector never throws for what it finds inside the
// database (a damaged page, an unknown type, a dangling pointer): stat,
// page and object describe it, and verify reports it. It throws
// qs::error for what stops it from looking at all: no such database, a
// store error, damaged catalog or schema records (qs::corrupt_page), a
// database of the other mode (other_mode).
//
// Thread-safety: one thread at a time.
#pragma once

#include <qs/database.hpp>
#include <qs/error.hpp>

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace qs {

namespace detail {
class stored_database;
}

// The database was made by the other swizzling mode (its objects' headers
// differ): inspect it with the build of that mode (qs-inspect runs
// qs-inspect-software, beside it, itself).
class other_mode : public error {
 public:
  other_mode(const std::string& what, std::string mode) : error(what), mode_(std::move(mode)) {}
  // "hardware" or "software": the database's mode.
  const std::string& mode() const { return mode_; }

 private:
  std::string mode_;
};

class inspector {
 public:
  // Called now and then during long work with what is done of how much
  // (pages, for stat and verify).
  using progress = std::function<void(std::uint64_t done, std::uint64_t total)>;
  // A problem verify found: one line, without a newline.
  using problem = std::function<void(const std::string& line)>;

  // Opens `path` for reading; `opts` gives a page server's secret
  // (options::server_secret) and the store's cache; the rest is ignored.
  explicit inspector(const std::string& path, const options& opts = {});
  ~inspector();
  inspector(const inspector&) = delete;
  inspector& operator=(const inspector&) = delete;

  // "hardware" or "software": the mode of the databases this build reads.
  static const char* mode();

  // Format, mode, page size, the reservation, pages, frames, objects and
  // bytes by type, free space, roots, indexes, log size, schema types.
  void stat(std::ostream& out, const progress& p = {});
  // Each named root: its name, type and where its cell is.
  void roots(std::ostream& out);
  // Each stored type with its layout, and the earlier layouts of types that
  // schema evolution replaced.
  void schema(std::ostream& out);
  // Page n: its record header, its objects with their types, its pointer
  // words and where they lead, its mapping object, and what is wrong with
  // it. Throws qs::invalid_argument when it has no record.
  void page(std::uint64_t n, std::ostream& out);
  // The object at `address`: a hexadecimal address (0x...) as the
  // database's own pointers hold it (at its preferred base), or PAGE:OFFSET
  // (the offset of its payload in its page). Prints its type and members by
  // name, decoded. Throws qs::invalid_argument when no object starts there.
  void object(std::string_view address, std::ostream& out);
  // Checks everything a damaged or buggy database could get wrong (see
  // docs/tools.md); calls `report` once per problem and returns how many.
  std::uint64_t verify(const problem& report, const progress& p = {});
  // The object graph as JSON Lines (docs/tools.md, "The dump format"): its
  // types, every object with its members by name and its pointers as
  // object numbers, the roots and the index entries. Returns the objects
  // written.
  std::uint64_t dump(std::ostream& out, const progress& p = {});
  // Hot backup (qs::database::backup) into `target`: a new directory, or
  // through a page server a name under the server's --backup-dir. The only
  // call that writes: an embedded directory is made transactional for it
  // (and closed cleanly again with the inspector).
  // `p` is told the bytes copied (embedded only).
  void backup(const std::string& target, const progress& p = {});

 private:
  std::unique_ptr<detail::stored_database> db_;
};

// Reads a dump (inspector::dump) into a new database at `target` (a
// directory that does not exist, or is empty), in one transaction: every
// object with its members, every pointer to the object it names (in the
// middle of it where it did), every root and index entry. The database gets
// the dump's page size, or `page_size` when it is not 0; `opts` gives the
// rest (the pool, a page server's secret for a qs:// target). vtable
// pointers are set by the program that opens it, as its pages come in.
// Returns the objects loaded. Throws qs::invalid_argument naming the line
// of the dump that is wrong (nothing is committed then), other_mode for a
// dump of the other swizzling mode.
std::uint64_t load_dump(std::istream& in, const std::string& target, const options& opts = {},
                        std::uint32_t page_size = 0, const inspector::progress& progress = {});

}  // namespace qs
