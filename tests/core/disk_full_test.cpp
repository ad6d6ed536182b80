// A full disk: every transaction whose commit returned is there after the
// disk filled, whether the process was then killed or closed the database
// normally, and the database opens again once there is room. Real small
// file systems (a tmpfs, an ext4 image on a loop device), filled by a
// ballast file to chosen points; skipped, saying why, where they cannot be
// mounted (not root).
#include <catch2/catch.hpp>

#include "small_fs.hpp"
#include "support.hpp"

#include <cstdio>
#include <string>

using namespace qs_test;

namespace {

constexpr int slabs = 128;  // per transaction: about 1 MiB
// Per transaction: about 3 MiB, written in a bulk transaction
// (store/bdb_store.hpp: one that adds 256 pages or more), which syncs
// pages.db before its commit record instead of logging the records on the
// pages it adds. Through a pool that holds it, the commit's first write
// begins it; through a pool of 320 pages, the first dirty page evicted.
constexpr int bulk_slabs = 384;

void fill_until_full(small_fs::kind kind, std::uint64_t free_bytes, const std::string& ending, int per_txn = slabs,
                     std::uint64_t fs_bytes = std::uint64_t{64} << 20, std::uint32_t pool = 256,
                     const char* mode = "fill") {
  small_fs fs(kind, fs_bytes);
  if (!fs.usable()) {
    WARN("skipped: " << fs.why_not());
    return;
  }
  INFO(fs.name() << ", " << mode << ", " << (free_bytes >> 10) << " KiB free, " << per_txn
                 << " slabs a transaction, a pool of " << pool << " pages, then " << ending);
  const std::string pool_pages = std::to_string(pool);
  fs.fill_to(free_bytes);
  const std::string db = fs.path() + "/db", err = fs.path() + "/../worker.err";
  auto w = spawn_worker({db, mode, std::to_string(per_txn), ending, "1099511627776", pool_pages}, "", err);
  int st = w.wait();
  std::string said = read_file(err);
  INFO(said.substr(said.size() > 1500 ? said.size() - 1500 : 0));
  const long committed = last_committed(said);
  REQUIRE(committed >= 1);
  CHECK(st == (ending == "die" ? -9 : 0));
  // The failure says what is wrong and what to do.
  CHECK(said.find("failed") != std::string::npos);
  CHECK(said.find("make room") != std::string::npos);
  // Read again in the same process, the database shows what was committed
  // (the failed transaction's commit record may have reached the log) or
  // refuses, saying why; never another state.
  CHECK(said.find("read after the failure: ") == std::string::npos);
  const std::string holds = "read after the failure holds ";
  if (auto at = said.find(holds); at != std::string::npos) {
    const long read = std::atol(said.c_str() + at + holds.size());
    CHECK(read >= committed);
    CHECK(read <= committed + 1);
  } else {
    CHECK(said.find("read after the failure refused: ") != std::string::npos);
  }
  // Still full: the open refuses, saying why, or (when recovery found the
  // room it needs) reads a whole state.
  fs.fill_to(0);
  int check_status = 0;
  long seen = fill_holds(db, per_txn, fs.path() + "/../check.err", &check_status);
  if (seen < 0) CHECK(read_file(fs.path() + "/../check.err").find("make room") != std::string::npos);
  else CHECK(seen >= committed);
  // With room again, every transaction whose commit returned is there; the
  // one that failed may be (its commit record may have reached the log).
  fs.drain();
  seen = fill_holds(db, per_txn, fs.path() + "/../check.err");
  INFO(read_file(fs.path() + "/../check.err"));
  CHECK(seen >= committed);
  CHECK(seen <= committed + 1);
  check_verifies(db);
  // And the database goes on.
  auto more = spawn_worker({db, "fill", std::to_string(per_txn), "close", "2", pool_pages}, "", err);
  more.wait();
  CHECK(last_committed(read_file(err)) == seen + 2);
  CHECK(fill_holds(db, per_txn, fs.path() + "/../check.err") >= last_committed(read_file(err)));
}

}  // namespace

// The free-space points cover the ways a full disk struck before: a log
// write at the start of a new log file that Berkeley DB reported as a
// successful commit (about 25 MB here), and data pages torn where their
// file grew (about 35 MB).
TEST_CASE("a full disk loses no transaction whose commit returned: killed after the failure", "[disk_full]") {
  for (auto kind : {small_fs::kind::tmpfs, small_fs::kind::ext4})
    for (std::uint64_t kib : {20u << 10, 25500u, 30u << 10, 35840u})
      fill_until_full(kind, std::uint64_t{kib} << 10, "die");
}

TEST_CASE("a full disk loses no transaction whose commit returned: closed normally after the failure", "[disk_full]") {
  for (auto kind : {small_fs::kind::tmpfs, small_fs::kind::ext4})
    for (std::uint64_t kib : {20u << 10, 25500u, 30u << 10, 35840u})
      fill_until_full(kind, std::uint64_t{kib} << 10, "close");
}

// The same in transactions of about 3 MiB, each written in a bulk
// transaction: the disk fills while one syncs pages.db, or while the log
// takes the allocations and splits of its pages, or (through the smaller
// pool) while a dirty page evicted is written. A file system of 128 MiB, so
// that the two transactions after the failure have room.
TEST_CASE("a full disk loses no transaction whose commit returned: commits written in bulk", "[disk_full][bulk]") {
  env_var layout("QS_PAGE_FILE", "0");  // bulk transactions are pages.db's
  for (auto kind : {small_fs::kind::tmpfs, small_fs::kind::ext4})
    for (std::uint64_t kib : {28u << 10, 36u << 10, 44u << 10})
      for (const char* ending : {"die", "close"})
        for (std::uint32_t pool : {512u, 320u})
          fill_until_full(kind, std::uint64_t{kib} << 10, ending, bulk_slabs, std::uint64_t{128} << 20, pool);
}

// The same on the page file, whose bulk transactions write their new pages
// in place into slots reserved ahead (qs/bdb/fresh_slots.hpp): the disk
// fills at a reservation, before a commit's sync of the file, or while a
// dirty page evicted is written in place.
TEST_CASE("a full disk loses no transaction whose commit returned: commits written in place into the page file",
          "[disk_full][bulk]") {
  env_var layout("QS_PAGE_FILE", "1");
  for (auto kind : {small_fs::kind::tmpfs, small_fs::kind::ext4})
    for (std::uint64_t kib : {28u << 10, 44u << 10})
      for (const char* ending : {"die", "close"})
        for (std::uint32_t pool : {512u, 320u})
          fill_until_full(kind, std::uint64_t{kib} << 10, ending, bulk_slabs, std::uint64_t{128} << 20, pool);
}

// Commits that do not flush the log: on the page file their page writes
// wait in memory until the log is flushed for another reason (a
// checkpoint, every 16 MiB of log here), so the disk fills while writes of
// earlier commits wait: before the first checkpoint, or after several.
// They are there afterwards all the same: their records are in the log,
// which a killed process leaves with the operating system.
TEST_CASE("a full disk loses no transaction whose commit returned: commits not durable", "[disk_full]") {
  for (auto kind : {small_fs::kind::tmpfs, small_fs::kind::ext4})
    for (std::uint64_t kib : {20u << 10, 50u << 10})
      for (const char* ending : {"die", "close"})
        fill_until_full(kind, std::uint64_t{kib} << 10, ending, slabs, std::uint64_t{96} << 20, 256, "quickfill");
}

TEST_CASE("a database on read-only media is read; a write says why it cannot be made", "[disk_full]") {
  small_fs fs(small_fs::kind::tmpfs, std::uint64_t{64} << 20);
  if (!fs.usable()) {
    WARN("skipped: " << fs.why_not());
    return;
  }
  const std::string db = fs.path() + "/db", err = fs.path() + "/../worker.err";
  REQUIRE(spawn_worker({db, "fill", std::to_string(slabs), "close", "2"}, "", err).wait() == 0);
  fs.make_read_only();
  CHECK(fill_holds(db, slabs, fs.path() + "/../check.err") == 2);
  auto w = spawn_worker({db, "fill", std::to_string(slabs), "close", "1"}, "", err);
  CHECK(w.wait() == 0);
  std::string said = read_file(err);
  INFO(said);
  CHECK(said.find("read-only media") != std::string::npos);
  CHECK(last_committed(said) == 0);
}
