// Opening a database that was closed cleanly runs no recovery and writes no
// file; a process killed after its first write leaves a database that the
// next open recovers; until its first write, a database's files are read
// mapped, and after it through Berkeley DB's cache.
#include <catch2/catch.hpp>

#include "support.hpp"

#include <qs/bdb/bdb_env.hpp>

#include <db_cxx.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <csignal>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

using namespace qs_test;

namespace {

constexpr int nodes = 6000;
constexpr const char* pool = "16";

struct file_state {
  std::uintmax_t size;
  std::filesystem::file_time_type modified;
  bool operator==(const file_state&) const = default;
};

// Every file in the database directory, with its size and modification time.
std::map<std::string, file_state> files_of(const std::string& dir) {
  std::map<std::string, file_state> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files[e.path().filename().string()] = {e.file_size(), e.last_write_time()};
  return files;
}

bool has_clean_mark(const std::string& db) { return std::filesystem::exists(db + "/closed-cleanly"); }

}  // namespace

TEST_CASE("opening a cleanly closed database and reading it writes no file") {
  test_dir dir;
  std::string db = dir.sub("db");
  REQUIRE(spawn_worker({db, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
  CHECK(has_clean_mark(db));
  auto before = files_of(db);
  auto dir_time = std::filesystem::last_write_time(db);
  // Reads every node, in a process of its own, twice.
  CHECK(committed_transactions(db, nodes) == 2);
  CHECK(committed_transactions(db, nodes) == 2);
  CHECK(files_of(db) == before);
  CHECK(std::filesystem::last_write_time(db) == dir_time);
}

TEST_CASE("the first write after a clean open takes the clean mark away, and a clean close puts it back") {
  test_dir dir;
  std::string db = dir.sub("db");
  REQUIRE(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  REQUIRE(has_clean_mark(db));
  auto c = spawn_worker({db, "grow", "2", std::to_string(nodes), pool}, "worker.mid:1");
  c.kill9();
  CHECK(c.wait() == -SIGKILL);
  CHECK_FALSE(has_clean_mark(db));
  CHECK(committed_transactions(db, nodes) == 1);
  REQUIRE(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
  CHECK(has_clean_mark(db));
  CHECK(committed_transactions(db, nodes) == 2);
}

TEST_CASE("kill -9 in a process that opened a cleanly closed database: the next open recovers", "[kill]") {
  struct point {
    const char* name;
    int expect;  // transactions committed in all when killed in the second run's first
  };
  const point points[] = {
      {"worker.mid:1", 2},
      {"commit.half_written:1", 2},
      {"commit.before_store_commit:1", 2},
      {"commit.after_store_commit:1", 3},
  };
  for (const point& p : points) {
    DYNAMIC_SECTION(p.name) {
      test_dir dir;
      std::string db = dir.sub("db");
      REQUIRE(spawn_worker({db, "grow", "2", std::to_string(nodes), pool}).wait() == 0);
      REQUIRE(has_clean_mark(db));
      auto c = spawn_worker({db, "grow", "3", std::to_string(nodes), pool}, p.name);
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      CHECK(committed_transactions(db, nodes) == p.expect);
      check_verifies(db);
      REQUIRE(spawn_worker({db, "grow", "1", std::to_string(nodes), pool}).wait() == 0);
      CHECK(committed_transactions(db, nodes) == p.expect + 1);
    }
  }
}

namespace {

// The pages Berkeley DB handed out from its mapping of pages.db, and those it
// read into its cache, since the environment was opened.
std::pair<std::uint64_t, std::uint64_t> mapped_and_read(qs::detail::bdb_env& env) {
  DB_MPOOL_STAT* g = nullptr;
  DB_MPOOL_FSTAT** files = nullptr;
  REQUIRE(env.env()->memp_stat(&g, &files, 0) == 0);
  std::uint64_t mapped = 0, read = 0;
  for (DB_MPOOL_FSTAT** f = files; f && *f; ++f)
    if (std::string((*f)->file_name).find("pages.db") != std::string::npos) {
      mapped += (*f)->st_map;
      read += (*f)->st_page_in;
    }
  std::free(g);
  std::free(files);
  return {mapped, read};
}

constexpr std::uint32_t record_bytes = 8192 + 64;

// Puts the records of pages 1 to `pages` into a new environment at `db`, each
// filled with its page number's low byte, in one durable commit.
void write_records(const std::string& db, std::uint64_t pages) {
  std::vector<std::byte> record(record_bytes);
  qs::detail::bdb_env env(db, 16u << 20);
  env.about_to_write();
  DbTxn* t = env.begin();
  for (std::uint64_t page = 1; page <= pages; ++page) {
    std::memset(record.data(), static_cast<int>(page), record.size());
    env.put_record(t, page, record.data(), record_bytes);
  }
  env.commit(t, true);
}

// How many of write_records' pages `env` reads back whole and right.
std::uint64_t records_read_right(qs::detail::bdb_env& env, std::uint64_t pages) {
  std::vector<std::byte> record(record_bytes);
  std::uint64_t right = 0;
  for (std::uint64_t page = 1; page <= pages; ++page)
    if (env.read_record(nullptr, page, record.data(), record_bytes) == record_bytes &&
        record[100] == static_cast<std::byte>(page & 0xff))
      ++right;
  return right;
}

}  // namespace

TEST_CASE("until the first write, page records are read from the mapped files; after it, through the cache") {
  test_dir dir;
  std::string db = dir.sub("db");
  // Larger than Berkeley DB's own limit for mapping a file (10 MiB).
  constexpr std::uint64_t pages = 2000;
  write_records(db, pages);
  REQUIRE(std::filesystem::file_size(db + "/pages.db") > (std::uint64_t{12} << 20));
  {
    // options::map_store_files = false: through the cache from the start.
    qs::detail::bdb_env unmapped(db, 16u << 20, false, qs::detail::default_max_locks, false);
    CHECK(records_read_right(unmapped, pages) == pages);
    auto [mapped, read] = mapped_and_read(unmapped);
    CHECK(mapped == 0);
    CHECK(read > 0);
  }
  qs::detail::bdb_env env(db, 16u << 20);
  CHECK(records_read_right(env, pages) == pages);
  auto [mapped, read] = mapped_and_read(env);
  CHECK(mapped > 0);
  CHECK(read == 0);
  // Transactional now: the files are reopened for writing, through the cache.
  env.about_to_write();
  CHECK(records_read_right(env, pages) == pages);
  std::tie(mapped, read) = mapped_and_read(env);
  CHECK(mapped == 0);
  CHECK(read > 0);
}

TEST_CASE(
    "the environment a first write needs, opened ahead on another thread, writes nothing and holds what is "
    "committed through it") {
  test_dir dir;
  std::string db = dir.sub("db");
  constexpr std::uint64_t pages = 8;
  write_records(db, pages);
  REQUIRE(has_clean_mark(db));
  const auto before = files_of(db);
  std::vector<std::byte> record(record_bytes, std::byte{0x5a});
  // The records in `db`: the first `pages` as write_records left them, and
  // page pages + 1 as the section put it, when it did.
  auto check_records = [&](bool added) {
    qs::detail::bdb_env env(db, 16u << 20);
    CHECK(records_read_right(env, pages) == pages);
    std::vector<std::byte> back(record_bytes);
    CHECK(env.read_record(nullptr, pages + 1, back.data(), record_bytes) == (added ? record_bytes : 0));
    if (added) CHECK(back == record);
  };
  SECTION("taken by the first write") {
    {
      qs::detail::bdb_env env(db, 16u << 20);
      std::thread([&] { env.prepare_to_write(); }).join();
      // Open beside the read-only one, and nothing written: the mark stays.
      CHECK(files_of(db) == before);
      CHECK(records_read_right(env, pages) == pages);
      env.about_to_write();
      CHECK(env.prepared_taken() == 1);
      CHECK_FALSE(has_clean_mark(db));
      DbTxn* t = env.begin();
      env.put_record(t, pages + 1, record.data(), record_bytes);
      env.commit(t, true);
    }
    CHECK(has_clean_mark(db));
    check_records(true);
  }
  SECTION("left unused") {
    {
      qs::detail::bdb_env env(db, 16u << 20);
      std::thread([&] { env.prepare_to_write(); }).join();
      CHECK(records_read_right(env, pages) == pages);
    }
    // Its close appends its transaction ids' record to the log; the data
    // files and the mark are as they were, and the next open recovers nothing.
    CHECK(has_clean_mark(db));
    auto after = files_of(db);
    for (const char* f : {"pages.db", "meta.db"}) CHECK(after.at(f) == before.at(f));
    check_records(false);
    {
      qs::detail::bdb_env env(db, 16u << 20);
      env.about_to_write();
      CHECK(env.prepared_taken() == 0);
      DbTxn* t = env.begin();
      env.put_record(t, pages + 1, record.data(), record_bytes);
      env.commit(t, true);
    }
    check_records(true);
  }
}

TEST_CASE("a data file of 4 GiB or more is read through the cache and never mapped") {
  // Berkeley DB 5.3 computes a mapped page's offset in 32 bits: past 4 GiB
  // a mapped read would land on another page of the file (a database of
  // 10 GB opened cleanly found none of its first pages). The file here
  // grows past 4 GiB by a hole at its end, which no B-tree page refers to.
  test_dir dir;
  const std::string db = dir.sub("db");
  constexpr std::uint64_t pages = 200;
  write_records(db, pages);
  auto read_with_file_of = [&](std::uint64_t bytes) {
    std::filesystem::resize_file(db + "/pages.db", bytes);
    qs::detail::bdb_env env(db, 16u << 20);
    CHECK(records_read_right(env, pages) == pages);
    return mapped_and_read(env);
  };
  // Just under the limit: mapped.
  auto [mapped, read] = read_with_file_of(qs::detail::max_mapped_file_bytes - 16 * 1024);
  CHECK(mapped > 0);
  CHECK(read == 0);
  std::tie(mapped, read) = read_with_file_of(qs::detail::max_mapped_file_bytes + 16 * 1024);
  CHECK(mapped == 0);
  CHECK(read > 0);
}
