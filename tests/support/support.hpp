// support.hpp: what the qs tests share: temporary database directories,
// the options of test databases, child processes (process.hpp), and direct
// access to stored page records.
//
// Every test database lives in a fresh directory under $TMPDIR that is
// removed when the test_dir goes out of scope.
#pragma once

#include "process.hpp"
#include "temp_dir.hpp"
#include "test_options.hpp"

#include <qs/qs.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace qs_test {

// Reads x so that the compiler cannot drop the read: tests that expect a
// fault (and an exception from it) read through this.
template <class T>
T touch(const T& x) {
  return *static_cast<const volatile T*>(&x);
}

// A test's database directory (temp_dir.hpp), removed at the end of its
// scope.
using test_dir = temp_dir;

// Runs the crash worker with `args` (process.hpp). With `pause_at` set, the
// worker stops there (QS_PAUSE_AT) and the call returns once it has. With
// `stderr_path` set, the worker's standard error goes to that file.
process spawn_worker(const std::vector<std::string>& args, const std::string& pause_at = "",
                     const std::string& stderr_path = "");
// The same for another worker program (a test's own).
process spawn_program(const std::string& program, const std::vector<std::string>& args,
                      const std::string& pause_at = "", const std::string& stderr_path = "");

// Sets an environment variable for its lifetime, then puts back what was
// there (or unsets it).
class env_var {
 public:
  env_var(const char* name, const char* value);
  ~env_var();
  env_var(const env_var&) = delete;
  env_var& operator=(const env_var&) = delete;

 private:
  std::string name_, saved_;
  bool was_set_;
};

// The crash workers' protocol (tests/core and tests/software): `DIR grow TXNS
// NODES [extra...]` runs TXNS transactions, saying "committed N" on standard
// error after each commit returns; `DIR check NODES` exits with 10 + the
// number of them the database holds, whole.
int committed_transactions(const std::string& db, int nodes);
// How many "committed N" lines a worker wrote.
int commits_said(const std::string& err);
// The core worker's `DIR fillcheck SLABS` (tests/core/crash_worker.cpp): how
// many whole `fill` transactions of SLABS the database holds, or -1 when it
// holds something else (its standard error goes to `err_path`; `status`,
// when given, gets its exit status).
long fill_holds(const std::string& db, int slabs, const std::string& err_path, int* status = nullptr);
// The last "committed N" a worker said (its standard error), or 0.
long last_committed(const std::string& said);

// Kills a worker running `mode` (`grow`, or another mode of the same
// protocol) with SIGKILL, one section each:
//  * at each chosen point of its third transaction (inside it, half written,
//    before and after the store's commit), where the number of transactions
//    that must survive is known;
//  * at each of `more_points` ("name:N"), where it is the number of commits
//    that had returned, as the worker said; the point must fall after the
//    first.
// Checks that exactly the committed transactions survive and that the
// database goes on working.
void kill_at_chosen_points(int nodes, const std::vector<std::string>& extra = {}, const std::string& mode = "grow",
                           const std::vector<std::string>& more_points = {});

// Runs qs-inspect's verify (qs/inspect.hpp) on the closed database `db`
// (a directory or a page server's URL) and checks that it finds nothing
// wrong, each problem it reports a failure of the calling test. The crash
// tests call it after every recovery.
void check_verifies(const std::string& db);

// Flips one byte of the stored image of `page` in the database at `dir`,
// through Berkeley DB directly (the database must be closed).
void corrupt_stored_page(const std::string& dir, std::uint64_t page, std::uint32_t offset);
// Deletes piece `piece` of the stored record of `page` (records are kept in
// 1 KiB pieces keyed by the page and the piece's number), through Berkeley
// DB directly (the database must be closed).
void delete_stored_piece(const std::string& dir, std::uint64_t page, unsigned piece);
// Writes the metadata record `key` (meta.db) of the closed database at `dir`.
void put_stored_record(const std::string& dir, const std::string& key, const std::string& value);
// Lets `change` rewrite the stored record of `page` (its 48-byte header and
// its image), then gives it a valid checksum again: a record that is wrong
// although its checksum is right.
void rewrite_stored_page(const std::string& dir, std::uint64_t page,
                         const std::function<void(std::byte* header, std::byte* image)>& change);
// Lets `change` rewrite the stored mapping object of `page` (its encoded
// bytes, mapping.hpp) of the closed database at `dir`.
void rewrite_stored_mapping(const std::string& dir, std::uint64_t page,
                            const std::function<void(std::string&)>& change);

}  // namespace qs_test
