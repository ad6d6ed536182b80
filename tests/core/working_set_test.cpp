// A working set ten times the buffer pool, read and written in one
// transaction, and read back exactly after reopening; the thrashing it
// causes is counted and reported once.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

using namespace qs_test;

namespace {

// What the process writes to stderr while it lives.
class stderr_capture {
 public:
  explicit stderr_capture(const std::string& path) : path_(path) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    ::dup2(::fileno(f), 2);
    std::fclose(f);
  }
  ~stderr_capture() {
    restore();
    std::remove(path_.c_str());
  }
  std::string text() {
    restore();
    std::ifstream in(path_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::string path_;
  int saved_ = -1;
};

// Whether the environment variable `name` is set to `value`.
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a working set ten times the pool is written in one transaction and read back") {
  test_dir dir;
  constexpr std::uint32_t pool = 32;
  auto opts = small_options(pool);
  const int n = 100000;  // 32-byte objects: about 400 pages of 8 KiB
  {
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < n; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
    CHECK(db.stats().dirty_evictions > 10 * pool);
  }
  {
    // One transaction: read everything, then write everything, twice over.
    stderr_capture err(dir.path() + ".stderr");
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    Pair* head = db.root<Pair*>("head");
    std::uint64_t count = 0;
    for (Pair* p = head; p; p = p->right) ++count;
    REQUIRE(count == n);
    for (Pair* p = head; p; p = p->right) {
      p->key = p->key * 2 + 1;
      p->left = p->right;  // a pointer written to every object
    }
    for (Pair* p = head; p; p = p->right) p->key += 1;
    tx.commit();
    auto s = db.stats();
    CHECK(s.read_faults > 10 * pool);
    CHECK(s.dirty_evictions > 10 * pool);
    // Every pass fetched again what the one before had evicted: counted,
    // and said once, with the option to change.
    CHECK(s.refetches > 10 * pool);
    std::string said = err.text();
    CHECK(count_of(said, "qs::options::pool_pages") == 1);
    CHECK_THAT(said, Catch::Contains("the pool of 32 pages"));
  }
  auto db = qs::database::open(dir.path(), opts);
  qs::transaction tx(db);
  std::uint64_t expect = n - 1, count = 0;
  for (Pair* p = db.root<Pair*>("head"); p; p = p->right, --expect, ++count) {
    REQUIRE(p->key == expect * 2 + 2);
    REQUIRE(p->left == p->right);
  }
  CHECK(count == n);
  tx.commit();
}

TEST_CASE("a transaction that fits the pool fetches nothing twice and says nothing") {
  test_dir dir;
  auto opts = small_options(1024);
  stderr_capture err(dir.path() + ".stderr");
  auto db = qs::database::open(dir.path(), opts);
  {
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < 20000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
  }
  db.release_cache();
  for (int pass = 0; pass < 3; ++pass) {
    qs::transaction tx(db);
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right) touch(p->key);
    tx.commit();
  }
  CHECK(db.stats().refetches == 0);
  CHECK(db.stats().evictions == 0);
  CHECK(err.text().find("pool_pages") == std::string::npos);
}

TEST_CASE("by default the pool is a quarter of physical memory, and given in bytes it is cut into pages") {
  test_dir dir;
  long limit = 65530;
  std::ifstream in("/proc/sys/vm/max_map_count");
  if (in) in >> limit;
  const std::uint64_t quarter = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                                static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) / 4 / 8192;
  const std::uint64_t half_reservation = (std::uint64_t{64} << 30) / 2 / 8192;
  const std::uint64_t by_mappings = static_cast<std::uint64_t>((limit - 4096) / 2);
  {
    auto db = qs::database::open(dir.sub("db"));
    if (std::string(db.stats().frame_control) == "userfault") {
      // One kernel mapping for the frames, whatever is resident.
      CHECK(db.pool_pages() == std::min(quarter, half_reservation));
    } else {
      CHECK(db.pool_pages() == std::min({quarter, half_reservation, by_mappings}));
    }
    CHECK(db.pool_pages() > 4096);  // the old fixed default, on any machine with 256 MiB
  }
  {
    env_var frames("QS_FRAMES", "protection");
    auto db = qs::database::open(dir.sub("db"));
    CHECK(std::string(db.stats().frame_control) == "protection");
    CHECK(db.pool_pages() == std::min({quarter, half_reservation, by_mappings}));
  }
  qs::options o;
  o.pool_pages = 100;
  CHECK(qs::database::open(dir.sub("small"), o).pool_pages() == 100);
  o.pool_pages = 0;
  o.pool_bytes = (std::uint64_t{1} << 20) + 5000;  // 1 MiB and a bit: 128 pages of 8 KiB
  CHECK(qs::database::open(dir.sub("small"), o).pool_pages() == 128);
  o.page_size = 16384;  // the database keeps its 8 KiB pages: the pool is cut with those
  CHECK(qs::database::open(dir.sub("small"), o).pool_pages() == 128);
}

// [tsan]: prefetch spreads its reads over the store's helper threads.
TEST_CASE("prefetch reads the pages after a faulted one into free slots only, and changes nothing read", "[tsan]") {
  test_dir dir;
  const bool prefetch_forced_off = env_is("QS_PREFETCH", "0");
  const bool pointers_only = env_is("QS_PREFETCH_ORDER", "pointers");
  const int n = 40000;  // 32-byte objects: about 160 pages of 8 KiB
  {
    auto db = qs::database::open(dir.path(), small_options(1024));
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < n; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
  }
  auto read_all = [&](std::uint32_t pool) {
    auto db = qs::database::open(dir.path(), small_options(pool));
    qs::transaction tx(db);
    std::uint64_t expect = n - 1, count = 0;
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right, --expect, ++count) REQUIRE(p->key == expect);
    CHECK(count == n);
    tx.commit();
    return db.stats();
  };
  // A pool that holds everything: most pages come in without a fault.
  qs::statistics big = read_all(1024);
  if (prefetch_forced_off) {
    CHECK(big.pages_prefetched == 0);
  } else if (pointers_only) {
    // A page of the list points to one other page, the next: each fault
    // brings that one, and the next fault comes a page later.
    CHECK(big.pages_prefetched > 60);
    CHECK(big.read_faults < 100);
    // One prefetched page in 8 is watched: each was used.
    CHECK(big.prefetch_watched == big.pages_prefetched / 8);
    CHECK(big.prefetched_used == big.prefetch_watched);
  } else {
    CHECK(big.pages_prefetched > 100);
    CHECK(big.read_faults < 40);
  }
  CHECK(big.evictions == 0);
  // A pool smaller than the list: only free slots take guesses, so every
  // eviction was made by a fault, never by prefetch.
  qs::statistics small = read_all(32);
  CHECK(small.evictions > 0);
  CHECK(small.evictions <= small.read_faults);
}

// A program that jumps about a database it reads whole: page order's
// guesses are the aligned block around each faulted page, so each block
// comes in at one fault, however the program enters it. (A window that
// started at the faulted page, taken only when the page read before was
// near, took 21 faults here.)
TEST_CASE("prefetch in page order brings a database read in shuffled order a block at a fault") {
  // Read in every variant; counted where prefetch is page order's alone.
  const bool page_order =
      !std::getenv("QS_PREFETCH") && (!std::getenv("QS_PREFETCH_ORDER") || env_is("QS_PREFETCH_ORDER", "page_order") ||
                                      env_is("QS_PREFETCH_ORDER", "automatic"));
  test_dir dir;
  const int n = 40000;  // about 160 pages of 8 KiB, linked in shuffled order
  {
    auto db = qs::database::open(dir.path(), small_options(1024));
    qs::transaction tx(db);
    std::vector<Pair*> made(n);
    for (int i = 0; i < n; ++i) made[i] = new (db) Pair{nullptr, 0, nullptr};
    std::vector<int> order_of(n);
    std::iota(order_of.begin(), order_of.end(), 0);
    std::mt19937 rng(7);
    std::shuffle(order_of.begin(), order_of.end(), rng);
    Pair* head = nullptr;
    for (int k = 0; k < n; ++k) {
      Pair* p = made[order_of[k]];
      p->key = static_cast<std::uint64_t>(k);
      p->right = head;
      head = p;
    }
    db.root<Pair*>("head") = head;
    tx.commit();
  }
  auto db = qs::database::open(dir.path(), small_options(1024));
  qs::transaction tx(db);
  std::uint64_t expect = n - 1, count = 0;
  for (Pair* p = db.root<Pair*>("head"); p; p = p->right, --expect, ++count) REQUIRE(p->key == expect);
  CHECK(count == n);
  tx.commit();
  const qs::statistics s = db.stats();
  INFO(s.read_faults << " faults, " << s.pages_prefetched << " pages prefetched");
  if (page_order) {
    // 32-page blocks over about 160 pages, and the root's.
    CHECK(s.read_faults <= 10);
    CHECK(s.pages_prefetched >= 150);
  }
}
