// Faults: pages come in on first touch, writes are detected and logged as
// diffs, and touches outside any object or transaction are reported.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>

using namespace qs_test;

TEST_CASE("a page is faulted in on first touch, once") {
  test_dir dir;
  {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    db.root<Node*>("head") = new (db) Node{42, nullptr};
    tx.commit();
  }
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  Node* head = db.root<Node*>("head");  // the root cell's page comes in here
  auto before = db.stats();
  CHECK(head->value == 42);
  auto after = db.stats();
  CHECK(after.read_faults + before.read_faults >= 1);
  CHECK(head->value == 42);
  CHECK(db.stats().read_faults == after.read_faults);
  CHECK(db.stats().write_faults == 0);
  tx.commit();
}

TEST_CASE("writes are detected by write faults and logged as diffs") {
  test_dir dir;
  auto opts = small_options();
  constexpr int n = 20000;  // about 50 pages of nodes
  {
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    auto& head = db.root<Node*>("head");
    for (int i = 0; i < n; ++i) head = new (db) Node{i, head};
    tx.commit();
  }
  auto db = qs::database::open(dir.path(), opts);
  const std::uint32_t ps = db.page_size();
  // Collect one node on each of ten distinct pages.
  std::vector<Node*> picks;
  {
    qs::transaction tx(db);
    std::uintptr_t last_page = 0;
    for (Node* p = db.root<Node*>("head"); p && picks.size() < 10; p = p->next) {
      auto page = reinterpret_cast<std::uintptr_t>(p) / ps;
      if (page != last_page) picks.push_back(p), last_page = page;
    }
    tx.commit();
  }
  REQUIRE(picks.size() == 10);

  auto s0 = db.stats();
  {
    qs::transaction tx(db);
    for (Node* p : picks) p->value = -p->value - 1;  // 8 bytes on each of 10 pages
    tx.commit();
  }
  auto s1 = db.stats();
  // A fault a page, unless a page was made writable with a neighbour that
  // faulted first (pager::make_writable_around: copied pages whose
  // before-image is in the page file); the commit finds every change all
  // the same.
  if (s1.writable_ahead == s0.writable_ahead) CHECK(s1.write_faults - s0.write_faults == 10);
  else CHECK(s1.write_faults - s0.write_faults < 10);
  CHECK(s1.pages_written - s0.pages_written == 10);
  CHECK(s1.diff_bytes - s0.diff_bytes == 80);
  const std::uint64_t small_log = s1.log_bytes - s0.log_bytes;

  // The same ten pages rewritten whole: the log must grow by the page size.
  {
    qs::transaction tx(db);
    for (Node* h = db.root<Node*>("head"); h; h = h->next) {
      if (std::find_if(picks.begin(), picks.end(), [&](Node* p) {
            return reinterpret_cast<std::uintptr_t>(p) / ps == reinterpret_cast<std::uintptr_t>(h) / ps;
          }) != picks.end())
        h->value ^= 0x5555555555555555;
    }
    tx.commit();
  }
  auto s2 = db.stats();
  const std::uint64_t big_log = s2.log_bytes - s1.log_bytes;
  INFO("log bytes for 80 changed bytes: " << small_log << ", for ten pages rewritten: " << big_log);
  CHECK(big_log > 10u * ps / 2);
  CHECK(small_log < 10u * ps / 8);  // close to the bytes changed, far from the page size
  CHECK(small_log < big_log / 8);
}

namespace {

// A list of 300,000 nodes (about 900 pages) under the root "head".
void make_long_list(const std::string& dir) {
  auto db = qs::database::open(dir, small_options());
  qs::transaction tx(db);
  auto& head = db.root<Node*>("head");
  for (int i = 0; i < 300000; ++i) head = new (db) Node{i, head};
  tx.commit();
}

// One node on each page of that list, in list order.
std::vector<Node*> one_node_a_page(qs::database& db) {
  std::vector<Node*> picks;
  qs::transaction tx(db);
  std::uintptr_t last_page = 0;
  for (Node* p = db.root<Node*>("head"); p; p = p->next) {
    const auto page = reinterpret_cast<std::uintptr_t>(p) / db.page_size();
    if (page != last_page) picks.push_back(p), last_page = page;
  }
  tx.commit();
  return picks;
}

// Reads p, and writes it when `write`: every read fault of a pass is taken
// by the same instruction, as in an update traversal.
[[gnu::noinline]] void visit(Node* p, bool write) {
  const std::int64_t v = *static_cast<volatile std::int64_t*>(&p->value);
  if (write) p->value = v + 1000000;
}

}  // namespace

TEST_CASE("pages read in where the program goes on to write them come writable, and every write is logged") {
  test_dir dir;
  make_long_list(dir.path());
  std::vector<std::int64_t> before;
  {
    auto db = qs::database::open(dir.path(), small_options());
    std::vector<Node*> picks = one_node_a_page(db);
    REQUIRE(picks.size() > 800);
    {
      qs::transaction tx(db);
      for (Node* p : picks) before.push_back(p->value);
      tx.commit();
    }
    db.release_cache();
    const auto s0 = db.stats();
    {
      qs::transaction tx(db);
      for (Node* p : picks) visit(p, true);
      tx.commit();
    }
    const auto s1 = db.stats();
    // After the first few pages, the write that follows the read takes no
    // fault of its own.
    CHECK(s1.writable_on_arrival - s0.writable_on_arrival > picks.size() / 2);
    CHECK(s1.write_faults - s0.write_faults < picks.size() / 2);
    CHECK(s1.pages_written - s0.pages_written == picks.size());

    SECTION("an abort puts back what was written on them") {
      db.release_cache();
      {
        qs::transaction tx(db);
        for (Node* p : picks) visit(p, true);
        CHECK(db.stats().writable_on_arrival > s1.writable_on_arrival);
        tx.abort();
      }
      qs::transaction tx(db);
      for (std::size_t i = 0; i < picks.size(); ++i) CHECK(picks[i]->value == before[i] + 1000000);
      tx.commit();
    }
    SECTION("where the writes stop, pages come read-only again") {
      db.release_cache();
      // Transactions of 100 pages: a page left read-only (one in 16) that
      // its transaction did not write counts against writing as pages
      // come in, and eight such turn it off.
      for (std::size_t i = 0; i < picks.size(); i += 100) {
        qs::transaction tx(db);
        for (std::size_t k = i; k < std::min(i + 100, picks.size()); ++k) visit(picks[k], false);
        tx.commit();
      }
      const auto s2 = db.stats();
      CHECK(s2.writable_on_arrival - s1.writable_on_arrival < 300);
      CHECK(s2.pages_written == s1.pages_written);
    }
  }
  // Written, committed and there after the database is opened again.
  auto db = qs::database::open(dir.path(), small_options());
  std::vector<Node*> picks = one_node_a_page(db);
  REQUIRE(picks.size() == before.size());
  qs::transaction tx(db);
  for (std::size_t i = 0; i < picks.size(); ++i) CHECK(picks[i]->value == before[i] + 1000000);
  tx.commit();
}

TEST_CASE("a program that only reads makes no page writable") {
  test_dir dir;
  make_long_list(dir.path());
  auto db = qs::database::open(dir.path(), small_options());
  std::vector<Node*> picks = one_node_a_page(db);
  db.release_cache();
  const auto s0 = db.stats();
  qs::transaction tx(db);
  for (Node* p : picks) visit(p, false);
  tx.commit();
  CHECK(db.stats().writable_on_arrival == s0.writable_on_arrival);
  CHECK(db.stats().pages_written == s0.pages_written);
}

TEST_CASE("a persistent object touched outside a transaction raises qs::no_transaction") {
  test_dir dir;
  {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    db.root<Node*>("head") = new (db) Node{7, nullptr};
    tx.commit();
  }
  // The root's page is not resident, so reading the root faults. (A page
  // already resident stays readable between transactions; writes always
  // fault, pages being write-protected at commit.)
  auto db = qs::database::open(dir.path(), small_options());
  Node*& cell = db.root<Node*>("head");  // an existing root needs no transaction
  REQUIRE_THROWS_AS(touch(cell), qs::no_transaction);
  Node* head;
  {
    qs::transaction tx(db);
    head = cell;
    CHECK(head->value == 7);
    tx.commit();
  }
  REQUIRE_THROWS_WITH(head->value = 8, Catch::Contains("outside a transaction") && Catch::Contains(dir.path()));
  qs::transaction tx(db);
  CHECK(head->value == 7);
}

// Tagged [tsan]: ThreadSanitizer runs a program's handler with every signal
// blocked, so an exception thrown out of qs's handler must put back the mask
// of the code that faulted.
TEST_CASE("an error thrown out of the fault handler leaves the thread's signal mask as it was", "[tsan]") {
  test_dir dir;
  {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    db.root<Node*>("head") = new (db) Node{7, nullptr};
    tx.commit();
  }
  sigset_t block, before, after;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  REQUIRE(pthread_sigmask(SIG_BLOCK, &block, &before) == 0);
  auto db = qs::database::open(dir.path(), small_options());
  REQUIRE_THROWS_AS(touch(db.root<Node*>("head")), qs::no_transaction);  // not resident: faults
  REQUIRE(pthread_sigmask(SIG_SETMASK, &before, &after) == 0);
  CHECK(sigismember(&after, SIGUSR1) == 1);  // blocked by the program: still blocked
  for (int sig : {SIGUSR2, SIGTERM, SIGINT, SIGALRM, SIGCHLD, SIGSEGV}) {
    INFO("signal " << sig);
    CHECK(sigismember(&after, sig) == sigismember(&before, sig));
  }
}

TEST_CASE("a touch of a frame that belongs to no page is reported and aborts") {
  test_dir dir;
  std::string err = dir.sub("stderr");
  auto c = spawn_worker({dir.sub("db"), "badptr"}, "", err);
  CHECK(c.wait() == -SIGABRT);
  std::string text = read_file(err);
  CHECK_THAT(text, Catch::Contains("invalid persistent pointer"));
  CHECK_THAT(text, Catch::Contains("backtrace"));
}

namespace {

// What a SIGSEGV that is not qs's ends the worker with when the worker has no
// handler of its own: the default action, after qs's diagnostic; or, in a
// build with AddressSanitizer (QS_SANITIZE=address), AddressSanitizer's
// handler, which qs finds installed before its own: a report, and exit
// status 1.
#if defined(__SANITIZE_ADDRESS__)
constexpr int death_by_segv = 1;
std::string segv_report(const std::string&) { return "AddressSanitizer: SEGV"; }
#else
constexpr int death_by_segv = -SIGSEGV;
std::string segv_report(const std::string& qs_says) { return qs_says; }
#endif

}  // namespace

TEST_CASE("a fault outside persistent memory keeps its usual meaning") {
  test_dir dir;
  SECTION("the default action: a diagnostic, then death by SIGSEGV") {
    std::string err = dir.sub("stderr");
    auto c = spawn_worker({dir.sub("db"), "segv"}, "", err);
    CHECK(c.wait() == death_by_segv);
    CHECK_THAT(read_file(err), Catch::Contains(segv_report("not persistent memory")));
  }
  SECTION("a handler installed before qs's is still called") {
    auto c = spawn_worker({dir.sub("db"), "chain"});
    CHECK(c.wait() == 42);
  }
}

TEST_CASE("a SIGSEGV sent with raise gets what it would get without qs, and qs's handler stays") {
  test_dir dir;
  SECTION("the default action ends the process") {
    std::string err = dir.sub("stderr");
    auto c = spawn_worker({dir.sub("db"), "raise"}, "", err);
    CHECK(c.wait() == death_by_segv);
    CHECK_THAT(read_file(err), Catch::Contains(segv_report("SIGSEGV sent to the process")));
  }
  SECTION("an ignored SIGSEGV is ignored, and pages still fault in afterwards") {
    auto c = spawn_worker({dir.sub("db"), "raise-ignored"});
    CHECK(c.wait() == 0);
  }
}
