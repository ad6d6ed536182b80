// The page-file layout (qs::options::page_file, bdb_env.hpp): page records
// in pages.qs, their writes logged as application records. Killed with
// SIGKILL anywhere, before or after its commit reached the log, and before
// or halfway through the page file's writes, a database holds exactly the
// transactions whose commit reached the log; the layout stays the one the
// database was made with; images lie where a frame can map them; a damaged
// page file, or one of the previous format, is refused, naming it.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <qs/bdb/bdb_env.hpp>
#include <qs/bdb/slot_writer.hpp>
#include <qs/format/page_record.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

using namespace qs_test;

namespace {

constexpr int nodes = 6000;  // per transaction: about 20 pages, more than the pool below
constexpr const char* pool = "16";
constexpr const char* dirty_eviction = "evict.dirty_written:60";

bool has_page_file(const std::string& db) { return std::filesystem::exists(db + "/pages.qs"); }

// Transactions that add more than bulk_min_pages pages (about 330 of
// them), with a pool that holds them all: durable, they write their new
// pages in place, at the commit (fresh_slots.hpp).
constexpr int bulk_nodes = 100000;
constexpr const char* bulk_pool = "4096";

// How many slots of the closed database's page file hold a record, read
// from the file itself.
std::uint64_t records_in(const std::string& db) {
  auto file = qs::detail::page_file::open(db);
  REQUIRE(file);
  std::uint64_t n = 0;
  for (std::uint64_t page = 0; page < file->slots(); ++page) {
    std::uint32_t head = 0;
    file->read(page, &head, sizeof head);
    n += head != 0;
  }
  return n;
}

// Fills `rec` as a record whose head starts with the record magic, its
// other bytes (seed + offset) mod 256.
void record_of(std::vector<std::byte>& rec, std::uint64_t seed) {
  const std::uint32_t magic = qs::detail::record_magic;
  for (std::size_t i = sizeof magic; i < rec.size(); ++i) rec[i] = static_cast<std::byte>((seed + i) & 0xff);
  std::memcpy(rec.data(), &magic, sizeof magic);
}

}  // namespace

TEST_CASE(
    "page file: kill -9 at the runtime's chosen points: every committed transaction survives, no partial one does",
    "[kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  kill_at_chosen_points(nodes, {pool}, "grow", {dirty_eviction});
}

TEST_CASE("page file: kill -9 in transactions that create and delete the same objects, larger than the pool",
          "[kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  kill_at_chosen_points(nodes, {pool}, "churn", {"worker.churned:3", dirty_eviction});
}

TEST_CASE("page file: killed once the commit is in the log, before or while its pages reach the page file", "[kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  for (const char* point : {"page_file.committed:3", "page_file.half_applied:3"}) {
    DYNAMIC_SECTION(point) {
      test_dir dir;
      const std::string db = dir.sub("db");
      auto c = spawn_worker({db, "grow", "5", std::to_string(nodes), pool}, point, dir.sub("worker.err"));
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      REQUIRE(has_page_file(db));
      // The third commit's record is in the log: recovery writes its pages.
      CHECK(committed_transactions(db, nodes) == 3);
      check_verifies(db);
      auto again = spawn_worker({db, "grow", "1", std::to_string(nodes), pool});
      CHECK(again.wait() == 0);
      CHECK(committed_transactions(db, nodes) == 4);
      check_verifies(db);
    }
  }
}

TEST_CASE("page file: killed in the checkpoint a durable commit's log makes due, on the thread that writes its pages",
          "[kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  // 100 slabs of two pages a transaction: their records logged (fewer pages
  // than a bulk transaction adds), about 1.6 MiB of log each, so that every
  // tenth commit or so makes a checkpoint due. The second is killed after
  // it synced the page file, before its record is in the log.
  constexpr int per_txn = 100;
  test_dir dir;
  const std::string db = dir.sub("db"), err = dir.sub("worker.err");
  auto c =
      spawn_worker({db, "fill", std::to_string(per_txn), "close", "200", "256"}, "page_file.checkpoint_synced:2", err);
  c.kill9();
  CHECK(c.wait() == -SIGKILL);
  REQUIRE(has_page_file(db));
  const long said = last_committed(read_file(err));
  INFO("the worker said it committed " << said);
  REQUIRE(said >= 10);
  // Every commit that returned, and at most the one under way, whose
  // commit record may have reached the log when the checkpoint held it.
  const long held = fill_holds(db, per_txn, dir.sub("check.err"));
  CHECK(held >= said);
  CHECK(held <= said + 1);
  auto again = spawn_worker({db, "fill", std::to_string(per_txn), "close", "2", "256"}, "", err);
  CHECK(again.wait() == 0);
  CHECK(fill_holds(db, per_txn, dir.sub("check.err")) == held + 2);
}

TEST_CASE("page file: kill -9 in commits that write their new pages in place, around the sync before the commit",
          "[bulk][kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  // The third transaction's in-place writes start at about the 670th.
  kill_at_chosen_points(bulk_nodes, {bulk_pool}, "grow", {"page_file.in_place:800", "page_file.in_place_synced:3"});
}

TEST_CASE("page file: kill -9 in commits that write in place pages of objects they also deleted", "[bulk][kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  kill_at_chosen_points(bulk_nodes, {bulk_pool}, "churn", {"page_file.in_place:800", "page_file.in_place_synced:3"});
}

TEST_CASE("page file: what a commit killed after its writes in place left is no record once pages are added again",
          "[bulk][kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  test_dir dir;
  const std::string db = dir.sub("db");
  REQUIRE(spawn_worker({db, "grow", "1", std::to_string(bulk_nodes), bulk_pool}).wait() == 0);
  const std::uint64_t before = records_in(db);
  // The second transaction's pages are in the file, synced; its commit
  // record is not in the log.
  auto c = spawn_worker({db, "grow", "1", std::to_string(bulk_nodes), bulk_pool}, "page_file.in_place_synced:1",
                        dir.sub("worker.err"));
  c.kill9();
  CHECK(c.wait() == -SIGKILL);
  CHECK(records_in(db) > before + 256);
  CHECK(committed_transactions(db, bulk_nodes) == 1);
  // Reads take nothing from those slots, past the page counter; a
  // transaction that adds a few pages (logged, as fewer than
  // bulk_min_pages) gives them no record again before it takes any.
  REQUIRE(spawn_worker({db, "grow", "1", "1000", bulk_pool}).wait() == 0);
  CHECK(records_in(db) < before + 16);
  check_verifies(db);
}

TEST_CASE("page file: commits that do not flush the log are read back before their pages reach the file") {
  env_var layout("QS_PAGE_FILE", "1");
  test_dir dir;
  constexpr int n = 20000;  // 32-byte pairs: about 80 pages, against a pool of 16
  // How many of the first slots of pages.qs hold a record, read from the
  // file itself.
  auto slots_written = [&] {
    auto file = qs::detail::page_file::open(dir.path());
    REQUIRE(file);
    std::vector<std::byte> head(sizeof(qs::detail::record_header));
    int written = 0;
    for (std::uint64_t page = 0; page < std::min<std::uint64_t>(file->slots(), 200); ++page) {
      file->read(page, head.data(), static_cast<std::uint32_t>(head.size()));
      written += std::any_of(head.begin(), head.end(), [](std::byte b) { return b != std::byte{0}; });
    }
    return written;
  };
  auto sum = [](qs::database& db, std::uint64_t& count) {
    std::uint64_t s = 0;
    count = 0;
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right, ++count) s += p->key;
    return s;
  };
  const std::uint64_t sum0 = std::uint64_t{n} * (n - 1) / 2;
  std::uint64_t count = 0;
  {
    auto db = qs::database::open(dir.path(), small_options(16));  // commits not durable
    {
      qs::transaction tx(db);
      auto& head = db.root<Pair*>("head");
      for (int i = 0; i < n; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
      tx.commit();
    }
    // Committed, in the log (not flushed): not in the file yet.
    CHECK(slots_written() == 0);
    {
      // Evicted and fetched again: read from the file with the deferred
      // writes laid over it; then changed, committed the same way.
      qs::transaction tx(db);
      CHECK(sum(db, count) == sum0);
      CHECK(count == n);
      for (Pair* p = db.root<Pair*>("head"); p; p = p->right) p->key += 1;
      tx.commit();
    }
    CHECK(slots_written() == 0);
    const auto fetched = db.stats().pages_fetched;
    {
      qs::transaction tx(db);
      CHECK(sum(db, count) == sum0 + n);
      tx.commit();
    }
    CHECK(db.stats().pages_fetched - fetched > 64);  // the pages came from the store again
    {
      // More deferred than bdb_env::deferred_max_bytes (32 MiB): the commit
      // flushes the log and writes them all.
      qs::transaction tx(db);
      auto& slabs = db.root<Slab*>("slabs");
      for (int i = 0; i < 4500; ++i) slabs = new (db) Slab{slabs, static_cast<std::uint64_t>(i), {}};
      tx.commit();
    }
    CHECK(slots_written() > 64);
  }
  auto db = qs::database::open(dir.path(), small_options(16));
  qs::transaction tx(db);
  CHECK(sum(db, count) == sum0 + n);
}

TEST_CASE("page file: killed with commits that did not flush the log, before or while they reach the file", "[kill]") {
  env_var layout("QS_PAGE_FILE", "1");
  struct point {
    const char* name;
    int committed;  // what recovery finds: every commit written to the log
  };
  for (const point p :
       {point{"worker.mid:4", 3}, point{"page_file.deferred:1", 5}, point{"page_file.deferred_half_applied:1", 5}}) {
    DYNAMIC_SECTION(p.name) {
      test_dir dir;
      const std::string db = dir.sub("db");
      auto c = spawn_worker({db, "quick", "5", std::to_string(nodes), pool}, p.name, dir.sub("worker.err"));
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      CHECK(committed_transactions(db, nodes) == p.committed);
      check_verifies(db);
      auto again = spawn_worker({db, "quick", "1", std::to_string(nodes), pool});
      CHECK(again.wait() == 0);
      CHECK(committed_transactions(db, nodes) == p.committed + 1);
      check_verifies(db);
    }
  }
}

TEST_CASE("page file: a database keeps the layout it was made with") {
  test_dir dir;
  const std::string with = dir.sub("with"), without = dir.sub("without");
  {
    env_var layout("QS_PAGE_FILE", "1");
    CHECK(spawn_worker({with, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
  }
  {
    env_var layout("QS_PAGE_FILE", "0");
    CHECK(spawn_worker({without, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
    // Opened without asking for it, the page file stays the store.
    CHECK(spawn_worker({with, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  }
  CHECK(has_page_file(with));
  CHECK_FALSE(has_page_file(without));
  CHECK(committed_transactions(with, nodes) == 3);
  {
    // Asked for, it is not made for a database that has pages.db's layout.
    env_var layout("QS_PAGE_FILE", "1");
    CHECK(spawn_worker({without, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  }
  CHECK_FALSE(has_page_file(without));
  CHECK(committed_transactions(without, nodes) == 3);
  check_verifies(with);
  check_verifies(without);
}

TEST_CASE("page file: qs-pageserver's environment and a damaged page file are refused, naming pages.qs") {
  test_dir dir;
  const std::string db = dir.sub("db");
  {
    env_var layout("QS_PAGE_FILE", "1");
    CHECK(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  }
  // A multiversion environment is qs-pageserver's.
  CHECK_THROWS_MATCHES(qs::detail::bdb_env(db, 16u << 20, true), qs::invalid_argument,
                       Catch::Matchers::Predicate<qs::invalid_argument>([](const qs::invalid_argument& e) {
                         return std::string(e.what()).find("pages.qs") != std::string::npos;
                       }));
  auto overwrite = [&](std::streamoff at, const void* bytes, std::streamsize n) {
    std::fstream f(db + "/pages.qs", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(at);
    f.write(static_cast<const char*>(bytes), n);
  };
  auto refusal = [&] {
    try {
      qs::detail::bdb_env env(db, 16u << 20);
    } catch (const qs::error& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  SECTION("a page file of the previous format: both formats named") {
    const std::uint32_t version = 1;
    overwrite(8, &version, sizeof version);
    const std::string why = refusal();
    CHECK_THAT(why, Catch::Contains("pages.qs") && Catch::Contains("format version 1") &&
                        Catch::Contains("records whole") && Catch::Contains("it reads version 2") &&
                        Catch::Contains("aligned to 4096"));
  }
  SECTION("sizes no page file has") {
    const std::uint32_t image_bytes = 8192 + 100;
    overwrite(16, &image_bytes, sizeof image_bytes);
    CHECK_THAT(refusal(),
               Catch::Contains("pages.qs") && Catch::Contains("images of 8292 bytes") && Catch::Contains("damaged"));
  }
  SECTION("a damaged magic number") {
    overwrite(0, "garbage!", 8);
    CHECK_THAT(refusal(), Catch::Contains("pages.qs") && Catch::Contains("not a qs page file"));
  }
}

TEST_CASE("page file: images lie at multiples of 4096 bytes, their heads apart") {
  test_dir dir;
  auto file = qs::detail::page_file::create(dir.path(), 48, 8192);
  REQUIRE(file->per_group() == 4096 / 48);
  // Pages on both sides of a group's end, each record written whole.
  std::vector<std::byte> rec(48 + 8192), back(48 + 8192);
  for (std::uint64_t page : {0u, 1u, 84u, 85u, 86u, 300u}) {
    for (std::size_t i = 0; i < rec.size(); ++i) rec[i] = static_cast<std::byte>((page * 7 + i) & 0xff);
    REQUIRE(file->reserve(page + 1) == 0);
    REQUIRE(file->write(page, 0, rec.data(), static_cast<std::uint32_t>(rec.size())) == 0);
  }
  // A write across the end of the head reaches both.
  const std::byte patch[8] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                              std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  REQUIRE(file->write(85, 44, patch, sizeof patch) == 0);
  std::ifstream raw(dir.path() + "/pages.qs", std::ios::binary);
  for (std::uint64_t page : {0u, 1u, 84u, 85u, 86u, 300u}) {
    for (std::size_t i = 0; i < rec.size(); ++i) rec[i] = static_cast<std::byte>((page * 7 + i) & 0xff);
    if (page == 85) std::memcpy(rec.data() + 44, patch, sizeof patch);
    file->read(page, back.data(), static_cast<std::uint32_t>(back.size()));
    CHECK(back == rec);
    // Where the layout says: the group's block of heads, then its images.
    const std::uint64_t group = 4096 + page / 85 * (4096 + 85 * 8192);
    std::vector<std::byte> head(48), image(8192);
    raw.seekg(static_cast<std::streamoff>(group + page % 85 * 48));
    raw.read(reinterpret_cast<char*>(head.data()), 48);
    const std::uint64_t at = group + 4096 + page % 85 * 8192;
    CHECK(at % 4096 == 0);
    raw.seekg(static_cast<std::streamoff>(at));
    raw.read(reinterpret_cast<char*>(image.data()), 8192);
    CHECK(std::equal(head.begin(), head.end(), rec.begin()));
    CHECK(std::equal(image.begin(), image.end(), rec.begin() + 48));
  }
  // Page 2 was never written: no record.
  file->read(2, back.data(), 48);
  CHECK(std::all_of(back.begin(), back.begin() + 48, [](std::byte b) { return b == std::byte{0}; }));
  CHECK(file->slots() >= 301);
  CHECK_THROWS_AS(qs::detail::page_file::create(dir.sub("odd"), 48, 8000), qs::invalid_argument);
}

TEST_CASE("page file: records handed to the writer thread are in the file once settled; a failed one names its page") {
  test_dir dir;
  auto file = qs::detail::page_file::create(dir.path(), 48, 8192);
  std::vector<std::byte> rec(48 + 8192), back(48 + 8192);
  auto fill = [&](std::uint64_t page) {
    for (std::size_t i = 0; i < rec.size(); ++i) rec[i] = static_cast<std::byte>((page * 5 + i) & 0xff);
  };
  constexpr std::uint64_t pages = 3 * qs::detail::slot_writer::depth + 7;  // the ring goes round
  REQUIRE(file->reserve(pages) == 0);
  std::uint64_t failed = 0;
  {
    qs::detail::slot_writer writer(*file);
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page);
      REQUIRE(writer.write(page, rec.data(), static_cast<std::uint32_t>(rec.size()), failed) == 0);
    }
    REQUIRE(writer.settle(failed) == 0);
    CHECK_FALSE(writer.busy());
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page);
      file->read(page, back.data(), static_cast<std::uint32_t>(back.size()));
      REQUIRE(back == rec);
    }
    // A page past what the file can hold fails its write: settle says so,
    // with the page, and so does every write after it, which writes nothing.
    const std::uint64_t huge = std::uint64_t{1} << 60;
    REQUIRE(writer.write(huge, rec.data(), static_cast<std::uint32_t>(rec.size()), failed) == 0);
    CHECK(writer.settle(failed) == EFBIG);
    CHECK(failed == huge);
    fill(pages);
    failed = 0;
    CHECK(writer.write(pages, rec.data(), static_cast<std::uint32_t>(rec.size()), failed) == EFBIG);
    CHECK(failed == huge);
    CHECK(writer.settle(failed) == EFBIG);
  }
  // Destroyed with records handed over: they are written first.
  {
    qs::detail::slot_writer writer(*file);
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page + 1);
      REQUIRE(writer.write(page, rec.data(), static_cast<std::uint32_t>(rec.size()), failed) == 0);
    }
  }
  for (std::uint64_t page = 0; page < pages; ++page) {
    fill(page + 1);
    file->read(page, back.data(), static_cast<std::uint32_t>(back.size()));
    REQUIRE(back == rec);
  }
}

TEST_CASE("page file: a bulk transaction reads back at once the records it wrote in place and commits them") {
  test_dir dir;
  const std::string db = dir.sub("env");
  constexpr std::uint32_t slot = 48 + 8192;
  constexpr std::uint64_t pages = 400;
  std::vector<std::byte> rec(slot), back(slot);
  auto fill = [&](std::uint64_t page) { record_of(rec, page * 11); };
  {
    qs::detail::bdb_env env(db, 16u << 20, false, qs::detail::default_max_locks, true, nullptr, slot);
    DbTxn* t = env.begin(qs::detail::bdb_env::txn_kind::bulk);
    env.committed_pages_end(0);
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page);
      env.put_record(t, page, rec.data(), slot);
      // At once, as a page evicted from a full pool and touched again is.
      REQUIRE(env.read_record(t, page, back.data(), slot) == slot);
      REQUIRE(back == rec);
    }
    env.commit(t, true);
  }
  qs::detail::bdb_env env(db, 16u << 20, false, qs::detail::default_max_locks, true, nullptr, slot);
  for (std::uint64_t page = 0; page < pages; ++page) {
    fill(page);
    REQUIRE(env.read_record(nullptr, page, back.data(), slot) == slot);
    REQUIRE(back == rec);
  }
}

TEST_CASE("page file: a durable commit's writes reach the file on a thread of their own before the next commit") {
  test_dir dir;
  const std::string db = dir.sub("env");
  constexpr std::uint32_t slot = 48 + 8192;
  constexpr std::uint64_t pages = 64;
  std::vector<std::byte> rec(slot), back(slot);
  auto fill = [&](std::uint64_t page, int round) { record_of(rec, page * 13 + static_cast<std::uint64_t>(round)); };
  auto in_file = [&](std::uint64_t page) {
    auto file = qs::detail::page_file::open(db);
    REQUIRE(file);
    file->read(page, back.data(), slot);
    return back == rec;
  };
  qs::detail::bdb_env env(db, 16u << 20, false, qs::detail::default_max_locks, true, nullptr, slot);
  for (int round = 0; round < 3; ++round) {
    // Logged writes (a plain transaction): the commit defers them.
    DbTxn* t = env.begin();
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page, round);
      env.put_record(t, page, rec.data(), slot);
    }
    env.commit(t, true);
    // Read at once: laid over the file, or in it already.
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page, round);
      REQUIRE(env.read_record(nullptr, page, back.data(), slot) == slot);
      REQUIRE(back == rec);
    }
    // The next commit begins once the file holds them.
    DbTxn* next = env.begin();
    env.put(next, "round", std::to_string(round));
    env.commit(next, true);
    for (std::uint64_t page = 0; page < pages; ++page) {
      fill(page, round);
      REQUIRE(in_file(page));
    }
  }
}

TEST_CASE("page file: the pages it reaches grow with each write and reservation, and survive a reopen") {
  test_dir dir;
  std::vector<std::byte> rec(48 + 8192), back(48 + 8192);
  auto fill = [&](std::uint64_t page) {
    for (std::size_t i = 0; i < rec.size(); ++i) rec[i] = static_cast<std::byte>((page * 3 + i) & 0xff);
  };
  {
    auto file = qs::detail::page_file::create(dir.path(), 48, 8192);
    CHECK(file->slots() == 0);
    // A write with no reservation before it reaches its page's group.
    fill(0);
    REQUIRE(file->write(0, 0, rec.data(), static_cast<std::uint32_t>(rec.size())) == 0);
    CHECK(file->slots() == 85);
    file->read(0, back.data(), static_cast<std::uint32_t>(back.size()));
    CHECK(back == rec);
    // Past what was read (and mapped) before: a write, then a read of it.
    fill(400);
    REQUIRE(file->write(400, 0, rec.data(), static_cast<std::uint32_t>(rec.size())) == 0);
    CHECK(file->slots() == 5 * 85);
    file->read(400, back.data(), static_cast<std::uint32_t>(back.size()));
    CHECK(back == rec);
    // A reservation reaches further than what it was asked for.
    REQUIRE(file->reserve(1000) == 0);
    CHECK(file->slots() >= 1000);
  }
  auto file = qs::detail::page_file::open(dir.path());
  REQUIRE(file);
  CHECK(file->slots() >= 1000);
  file->read(400, back.data(), static_cast<std::uint32_t>(back.size()));
  CHECK(back == rec);
}

TEST_CASE("page file: the records of consecutive pages written as one run read back as written one by one") {
  test_dir dir;
  auto file = qs::detail::page_file::create(dir.path(), 48, 8192);
  const std::uint32_t slot = file->slot_bytes(), per = file->per_group();
  // A run that starts near a group's end and crosses two group boundaries,
  // beside pages written one by one before and after it.
  const std::uint64_t first = per - 3, n = 2 * per + 8;
  std::vector<std::vector<std::byte>> recs(n + 2, std::vector<std::byte>(slot));
  for (std::uint64_t i = 0; i < n + 2; ++i)
    for (std::size_t b = 0; b < slot; ++b) recs[i][b] = static_cast<std::byte>((i * 13 + b * 3 + 1) & 0xff);
  REQUIRE(file->write(first - 1, 0, recs[0].data(), slot) == 0);
  std::vector<const std::byte*> run;
  for (std::uint64_t i = 1; i <= n; ++i) run.push_back(recs[i].data());
  REQUIRE(file->write_records(first, run) == 0);
  REQUIRE(file->write(first + n, 0, recs[n + 1].data(), slot) == 0);
  std::vector<std::byte> back(slot);
  for (std::uint64_t i = 0; i < n + 2; ++i) {
    file->read(first - 1 + i, back.data(), slot);
    CHECK(back == recs[i]);
  }
  CHECK(file->slots() >= first + n + 1);
  // None, and a run past the last page the file can hold.
  CHECK(file->write_records(7, {}) == 0);
  CHECK(file->write_records(~std::uint64_t{0} - 1, run) == EFBIG);
}

TEST_CASE("page file: a record's many pieces written at once leave what writing them one by one leaves") {
  test_dir dir;
  auto file = qs::detail::page_file::create(dir.path(), 48, 8192);
  const std::uint32_t slot = file->slot_bytes();
  std::vector<std::byte> rec(slot), expect(slot), back(slot), src(slot);
  for (std::uint64_t page : {0u, 7u, 200u}) {
    for (std::size_t i = 0; i < slot; ++i) rec[i] = static_cast<std::byte>((page * 5 + i) & 0xff);
    REQUIRE(file->write(page, 0, rec.data(), slot) == 0);
    for (std::size_t i = 0; i < slot; ++i) src[i] = static_cast<std::byte>((page * 11 + i * 7 + 1) & 0xff);
    // The head, then ranges of the image far apart and close together,
    // one overlapping the one before it (the later one wins), and one
    // written before a range at a lower offset.
    const std::vector<qs::detail::page_file::piece> pieces = {{0, 48, src.data()},
                                                              {48 + 8, 8, src.data() + 56},
                                                              {48 + 24, 16, src.data() + 72},
                                                              {48 + 4000, 100, src.data()},
                                                              {48 + 4050, 100, src.data() + 300},
                                                              {48 + 8184, 8, src.data() + 8},
                                                              {48 + 1000, 8, src.data() + 16}};
    expect = rec;
    for (const auto& p : pieces) std::memcpy(expect.data() + p.offset, p.bytes, p.length);
    REQUIRE(file->write_pieces(page, pieces) == 0);
    file->read(page, back.data(), slot);
    CHECK(back == expect);
    // Two pieces, and none.
    const std::vector<qs::detail::page_file::piece> two = {{48, 8, src.data() + 24}, {48 + 512, 16, src.data() + 40}};
    for (const auto& p : two) std::memcpy(expect.data() + p.offset, p.bytes, p.length);
    REQUIRE(file->write_pieces(page, two) == 0);
    REQUIRE(file->write_pieces(page, {}) == 0);
    file->read(page, back.data(), slot);
    CHECK(back == expect);
  }
  // A piece past the slot is refused, and the record is left as it was.
  const std::vector<qs::detail::page_file::piece> bad = {
      {0, 8, src.data()}, {100, 8, src.data()}, {slot - 4, 8, src.data()}};
  file->read(7, expect.data(), slot);
  CHECK(file->write_pieces(7, bad) == EFBIG);
  file->read(7, back.data(), slot);
  CHECK(back == expect);
}

TEST_CASE("page file: pages shown by mapping the file are read, written, aborted and evicted as copied ones are") {
  test_dir dir;
  // Runs come from page-order prefetch, whatever the ctest variant says.
  env_var prefetch("QS_PREFETCH", "32"), order("QS_PREFETCH_ORDER", "page_order"), map("QS_MAP_PAGE_FILE", "1"),
      layout("QS_PAGE_FILE", "1");
  auto opts = small_options(64);
  opts.page_file = true;
  constexpr int n = 60000;    // about 300 pages, against a pool of 64
  constexpr int near = 4000;  // the first nodes of the list: about 20 pages
  {
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < n; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
  }
  auto sum_all = [](qs::database& db) {
    std::uint64_t sum = 0, count = 0;
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right, ++count) sum += p->key;
    return std::pair{sum, count};
  };
  const std::uint64_t sum0 = std::uint64_t{n} * (n - 1) / 2;
  // Frames map files under the userfault control only (QS_FRAMES).
  const bool maps = std::string(qs::database::open(dir.path(), opts).stats().frame_control) == "userfault";
  {
    // Read only: the pages come in by runs mapped from the file, and leave
    // the pool again.
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    CHECK(sum_all(db) == std::pair{sum0, std::uint64_t{n}});
    tx.commit();
    CHECK((db.stats().pages_mapped > 0) == maps);
    CHECK(db.stats().evictions > 0);
  }
  // Each of the next opens starts with an empty pool (prefetch takes free
  // slots only). The first nodes are read first (mapped: the transaction
  // has written nothing yet), then written: each write faults on a mapped
  // frame.
  auto write_near = [&](qs::database& db, std::uint64_t add) {
    std::uint64_t seen = 0;
    Pair* p = db.root<Pair*>("head");
    for (int i = 0; i < near && p; ++i, p = p->right) seen += p->key;
    CHECK(seen > 0);
    CHECK((db.stats().pages_mapped > 0) == maps);
    p = db.root<Pair*>("head");
    for (int i = 0; i < near && p; ++i, p = p->right) p->key += add;
  };
  {
    auto db = qs::database::open(dir.path(), opts);
    {
      qs::transaction tx(db);
      write_near(db, 1000000);
      tx.abort();
    }
    qs::transaction tx(db);
    CHECK(sum_all(db) == std::pair{sum0, std::uint64_t{n}});
    tx.commit();
  }
  {
    // Written, then evicted dirty by the walk that follows, then committed.
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    write_near(db, 1000000);
    CHECK(sum_all(db) == std::pair{sum0 + std::uint64_t{near} * 1000000, std::uint64_t{n}});
    tx.commit();
    CHECK(db.stats().dirty_evictions > 0);
  }
  {
    // Written and committed while resident, then read again.
    auto db = qs::database::open(dir.path(), opts);
    {
      qs::transaction tx(db);
      write_near(db, 1);
      tx.commit();
    }
    qs::transaction tx(db);
    std::uint64_t first = db.root<Pair*>("head")->key;
    CHECK(first == (n - 1) + 1000001);
  }
  auto db = qs::database::open(dir.path(), opts);
  qs::transaction tx(db);
  CHECK(sum_all(db) == std::pair{sum0 + std::uint64_t{near} * 1000001, std::uint64_t{n}});
}

TEST_CASE("page file: a written page's before-image is its image in the file, until its transaction ends") {
  test_dir dir;
  auto opts = small_options(64);
  constexpr int n = 60000;    // about 300 pages, against a pool of 64
  constexpr int near = 4000;  // the first nodes of the list: about 20 pages
  auto sum_all = [](qs::database& db) {
    std::uint64_t sum = 0;
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right) sum += p->key;
    return sum;
  };
  auto add_near = [](qs::database& db, std::uint64_t add) {
    Pair* p = db.root<Pair*>("head");
    for (int i = 0; i < near && p; ++i, p = p->right) p->key += add;
  };
  std::uint64_t sum = std::uint64_t{n} * (n - 1) / 2;
  for (bool page_file : {true, false}) {
    INFO("page file: " << page_file);
    env_var layout("QS_PAGE_FILE", page_file ? "1" : "0");  // whatever the ctest variant says
    opts.page_file = page_file;
    const std::string path = dir.sub(page_file ? "file" : "db");
    {
      auto db = qs::database::open(path, opts);
      qs::transaction tx(db);
      auto& head = db.root<Pair*>("head");
      for (int i = 0; i < n; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
      tx.commit();
    }
    auto db = qs::database::open(path, opts);
    std::uint64_t expected = sum;
    {
      // Written, then aborted: the images come back from the file.
      qs::transaction tx(db);
      add_near(db, 7);
      tx.abort();
    }
    const qs::statistics s = db.stats();
    CHECK(s.write_faults > 0);
    if (!page_file) CHECK(s.before_images_in_file == 0);
    // Pages stored at their home frames (nothing relocated) all borrow,
    // those made writable with a faulted neighbour or as they came in too.
    if (page_file && s.pages_relocated == 0)
      CHECK(s.before_images_in_file == s.write_faults + s.writable_ahead + s.writable_on_arrival);
    if (!page_file) CHECK(s.writable_ahead == 0);
    db.run([&] { CHECK(sum_all(db) == expected); });
    {
      // Committed: the file now holds what the next transaction's
      // before-images must be.
      qs::transaction tx(db);
      add_near(db, 1);
      tx.commit();
      expected += near;
    }
    {
      qs::transaction tx(db);
      add_near(db, 1000);
      tx.abort();
    }
    db.run([&] { CHECK(sum_all(db) == expected); });
    {
      // Written, evicted dirty by the walk (their changes go to the store
      // transaction, not the file), written again, aborted.
      qs::transaction tx(db);
      add_near(db, 1000);
      CHECK(sum_all(db) == expected + std::uint64_t{near} * 1000);
      add_near(db, 1000);
      tx.abort();
    }
    CHECK(db.stats().dirty_evictions > 0);
    db.run([&] { CHECK(sum_all(db) == expected); });
    {
      qs::transaction tx(db);
      add_near(db, 2);
      CHECK(sum_all(db) == expected + 2 * near);
      tx.commit();
      expected += 2 * near;
    }
    db = qs::database::open(path + "-other", opts);  // closes the first
    db = qs::database::open(path, opts);
    db.run([&] { CHECK(sum_all(db) == expected); });
  }
}

TEST_CASE("page file: a commit that changes a word of every object on its pages logs the words and not the pages") {
  env_var layout("QS_PAGE_FILE", "1");
  test_dir dir;
  auto opts = small_options(256, commits::durable);
  opts.page_file = true;
  constexpr int n = 4000;  // about 16 pages of 32-byte objects
  auto db = qs::database::open(dir.path(), opts);
  {
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("pairs");
    for (int i = 0; i < n; ++i) head = new (db) Pair{head, static_cast<std::uint64_t>(i), nullptr};
    tx.commit();
  }
  const qs::statistics s0 = db.stats();
  {
    // One word of each object: 8 bytes changed in every 32, the three
    // words between them unchanged.
    qs::transaction tx(db);
    for (Pair* p = db.root<Pair*>("pairs"); p; p = p->left) p->key += 1;
    tx.commit();
  }
  const qs::statistics s1 = db.stats();
  const std::uint64_t pages = s1.pages_written - s0.pages_written;
  REQUIRE(pages >= n * 32 / db.page_size());
  // Each changed word and its range's 8 bytes: half of every page, with
  // the records' own bytes. The pages whole would be more than all of them.
  CHECK(s1.log_bytes - s0.log_bytes < pages * db.page_size() * 5 / 8);
  db.run([&] {
    std::uint64_t i = n;
    for (Pair* p = db.root<Pair*>("pairs"); p; p = p->left) CHECK(p->key == --i + 1);
  });
}

TEST_CASE("page file: a write fault makes its block's clean pages writable; only the changed ones are written") {
  env_var layout("QS_PAGE_FILE", "1");  // whatever the ctest variant says
  test_dir dir;
  // Durable: a commit that does not flush the log leaves its pages' images
  // out of the file until it is, and such a page's before-image is a copy.
  auto opts = small_options(256, commits::durable);
  opts.page_file = true;
  // Every page copied into its frame, or (under the userfault control)
  // pages mapped from the file in runs: made writable a run at a time.
  // Runs come with page order's prefetch, whatever the ctest variant says.
  env_var prefetch("QS_PREFETCH", "32");
  const bool mapped = GENERATE(false, true);
  opts.map_page_file = mapped;
  constexpr int n = 64;  // a slab a page: four blocks of write_ahead_pages
  {
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    auto& head = db.root<Slab*>("slabs");
    for (int i = 0; i < n; ++i) head = new (db) Slab{head, static_cast<std::uint64_t>(i), {}};
    tx.commit();
  }
  auto db = qs::database::open(dir.path(), opts);
  auto slabs = [&] {
    std::vector<Slab*> v;
    for (Slab* s = db.root<Slab*>("slabs"); s; s = s->next) v.push_back(s);
    return v;
  };
  auto sum = [&] {
    std::uint64_t t = 0;
    for (Slab* s : slabs()) t += s->value;
    return t;
  };
  std::uint64_t expected = std::uint64_t{n} * (n - 1) / 2;
  {
    // Every page resident, then each written: a fault a block, not a page.
    qs::transaction tx(db);
    const auto all = slabs();
    REQUIRE(all.size() == n);
    const qs::statistics s0 = db.stats();
    if (!mapped) CHECK(s0.pages_mapped == 0);
    if (mapped && std::string(s0.frame_control) == "userfault") CHECK(s0.pages_mapped >= n / 2);
    for (Slab* s : all) s->value += 1;
    const qs::statistics s1 = db.stats();
    CHECK(s1.write_faults - s0.write_faults <= 8);
    CHECK(s1.writable_ahead - s0.writable_ahead >= n - 8);
    tx.commit();
    CHECK(db.stats().pages_written - s1.pages_written == n);
    expected += n;
  }
  {
    // One page changed: its neighbours made writable are not written.
    qs::transaction tx(db);
    const auto all = slabs();
    const qs::statistics s0 = db.stats();
    all[n / 2]->value += 1;
    CHECK(db.stats().writable_ahead > s0.writable_ahead);
    tx.commit();
    CHECK(db.stats().pages_written - s0.pages_written == 1);
    expected += 1;
  }
  {
    // Written without a fault, then aborted: the pages come back from the
    // file.
    qs::transaction tx(db);
    for (Slab* s : slabs()) s->value += 1000;
    CHECK(sum() == expected + 1000 * n);
    tx.abort();
  }
  db.run([&] { CHECK(sum() == expected); });
  {
    // Transactions that each change one page of the pages made writable
    // with it: most go unchanged, and the gauge stops making them so.
    std::uint64_t ahead_before = 0, ahead_after = 0;
    for (int t = 0; t < 60; ++t) {
      qs::transaction tx(db);
      slabs()[static_cast<std::size_t>(t) % n]->value += 1;
      tx.commit();
      expected += 1;
      if (t == 40) ahead_before = db.stats().writable_ahead;
    }
    ahead_after = db.stats().writable_ahead;
    CHECK(ahead_before > 0);
    CHECK(ahead_after == ahead_before);
  }
  test_dir other;
  db = qs::database::open(other.path(), opts);  // closes the first
  db = qs::database::open(dir.path(), opts);
  db.run([&] { CHECK(sum() == expected); });
}
