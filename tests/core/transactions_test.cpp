// Transactions: abort restores, commit refuses transient pointers, several
// threads in one transaction, one transaction per handle, one process per
// embedded database; db.run and conflicts.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <cstdlib>
#include <optional>

#include <thread>
#include <vector>

using namespace qs_test;

namespace {

std::vector<std::int64_t> values(qs::database& db) {
  std::vector<std::int64_t> v;
  qs::transaction tx(db);
  for (Node* n = db.root<Node*>("head"); n; n = n->next) v.push_back(n->value);
  tx.commit();
  return v;
}

void make_list(qs::database& db, int n) {
  qs::transaction tx(db);
  auto& head = db.root<Node*>("head");
  for (int i = 0; i < n; ++i) head = new (db) Node{i, head};
  tx.commit();
}

}  // namespace

TEST_CASE("abort restores every byte the transaction changed") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  make_list(db, 3000);
  auto original = values(db);
  auto pages_before = db.stats();
  {
    qs::transaction tx(db);
    auto& head = db.root<Node*>("head");
    for (Node* n = head; n; n = n->next) n->value *= 3;
    for (int i = 0; i < 1000; ++i) head = new (db) Node{-1, head};
    Node* second = head->next;
    head->next = second->next;
    delete second;
    SECTION("by abort()") {
      tx.abort();
      CHECK_FALSE(db.in_transaction());
    }
    SECTION("by the destructor") { CHECK(tx.active()); }
  }
  CHECK(values(db) == original);
  CHECK(db.stats().aborts == pages_before.aborts + 1);
  db = qs::database::open(dir.sub("other"), small_options());  // closes the first
  auto again = qs::database::open(dir.path(), small_options());
  CHECK(values(again) == original);
}

TEST_CASE("a commit that would store a pointer to transient memory is refused and aborted") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  make_list(db, 10);
  Node on_stack{99, nullptr};
  qs::transaction tx(db);
  Node* head = db.root<Node*>("head");
  head->value = 1234;
  head->next = &on_stack;
  try {
    tx.commit();
    FAIL("commit accepted a transient pointer");
  } catch (const qs::transient_pointer& e) {
    CHECK_THAT(e.what(), Catch::Contains("qs_test::Node::next"));
    CHECK_THAT(e.what(), Catch::Contains(dir.path()));
  }
  CHECK_FALSE(db.in_transaction());
  auto v = values(db);
  REQUIRE(v.size() == 10);
  CHECK(v[0] == 9);
}

TEST_CASE("a transient pointer written on a page stored before is refused wherever it lies on the page") {
  // The commit checks only the words that changed on such a page, found
  // from its before-image: each place below must still be among them.
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  constexpr int elements = 3000;  // 24,000 bytes: an array over several pages
  {
    qs::transaction tx(db);
    Blob* b = new (db) Blob;
    b->self = b;
    db.root<Blob*>("blob") = b;
    Node** a = qs::allocator<Node*>().allocate(elements);
    for (int i = 0; i < elements; ++i) a[i] = nullptr;
    db.root<Node**>("array") = a;
    tx.commit();
  }
  make_list(db, 300);  // pages full of nodes
  Node on_stack{99, nullptr};
  qs::transaction tx(db);
  auto refused = [&](const std::string& member) {
    try {
      tx.commit();
      FAIL("commit accepted a transient pointer");
    } catch (const qs::transient_pointer& e) {
      CHECK_THAT(e.what(), Catch::Contains(member));
    }
  };
  SECTION("the last word of a large object, on its last page") {
    db.root<Blob*>("blob")->self = reinterpret_cast<Blob*>(&on_stack);
    refused("qs_test::Blob::self");
  }
  SECTION("an element of an array, past its first page") {
    db.root<Node**>("array")[elements - 700] = &on_stack;
    refused("in element 2300 of an array of 3000");
  }
  SECTION("an object in the middle of a page, beside data that changed") {
    Node* n = db.root<Node*>("head");
    for (int i = 0; i < 150; ++i) n = n->next;
    n->value = 7;
    n->next->value = 8;
    n->next = &on_stack;
    refused("qs_test::Node::next");
  }
  SECTION("a new object on a page that holds others") {
    Node* head = db.root<Node*>("head");
    delete head->next->next;  // room on a stored page, taken again below
    head->next->next = new (db) Node{5, &on_stack};
    refused("qs_test::Node::next");
  }
  CHECK_FALSE(db.in_transaction());
  db.run([&] {
    CHECK(db.root<Blob*>("blob")->self == db.root<Blob*>("blob"));
    CHECK(db.root<Node**>("array")[elements - 700] == nullptr);
  });
  CHECK(values(db).size() == 300);
}

TEST_CASE("several threads touch persistent objects inside one transaction", "[tsan]") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options(32));
  constexpr int lists = 4, per_list = 5000;
  {
    qs::transaction tx(db);
    for (int l = 0; l < lists; ++l) {
      auto& head = db.root<Node*>("list" + std::to_string(l));
      for (int i = 0; i < per_list; ++i) head = new (db) Node{i, head};
    }
    tx.commit();
  }
  db = qs::database::open(dir.sub("x"), small_options());
  db = qs::database::open(dir.path(), small_options(32));  // cold, small pool: faults race with evictions
  {
    qs::transaction tx(db);
    std::vector<Node*> heads;
    for (int l = 0; l < lists; ++l) heads.push_back(db.root<Node*>("list" + std::to_string(l)));
    std::vector<std::thread> threads;
    for (int l = 0; l < lists; ++l)
      threads.emplace_back([&, l] {
        qs::join_transaction in(tx);
        for (int round = 0; round < 3; ++round)
          for (Node* n = heads[l]; n; n = n->next) n->value += 1;
      });
    for (auto& t : threads) t.join();
    tx.commit();
  }
  qs::transaction tx(db);
  for (int l = 0; l < lists; ++l) {
    std::int64_t expect = per_list - 1 + 3, count = 0;
    for (Node* n = db.root<Node*>("list" + std::to_string(l)); n; n = n->next, --expect, ++count)
      REQUIRE(n->value == expect);
    CHECK(count == per_list);
  }
  tx.commit();
}

TEST_CASE("a thread outside another thread's transaction cannot write into it", "[tsan]") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  Node* head = nullptr;
  {
    qs::transaction tx(db);
    head = db.root<Node*>("list") = new (db) Node{1, nullptr};
    tx.commit();
  }
  db.release_cache();
  // The same stray write with no transaction open, and with one open in
  // another thread: qs::no_transaction in the writing thread both times.
  auto stray = [&](const char* expect) {
    std::string what;
    std::thread t([&] {
      try {
        head->value = 99;
      } catch (const qs::no_transaction& e) {
        what = e.what();
      }
    });
    t.join();
    CHECK_THAT(what, Catch::Contains(expect));
  };
  stray("outside a transaction");
  {
    qs::transaction tx(db);
    stray("this thread is not in the open transaction");
    std::string alloc_what;
    std::thread t([&] {
      try {
        (void)new (db) Node{5, nullptr};
      } catch (const qs::no_transaction& e) {
        alloc_what = e.what();
      }
    });
    t.join();
    CHECK_THAT(alloc_what, Catch::Contains("this thread is not in the open transaction"));
    CHECK(db.root<Node*>("list")->value == 1);
    tx.commit();
  }
  qs::transaction tx(db);
  CHECK(db.root<Node*>("list")->value == 1);
  CHECK(db.root<Node*>("list")->next == nullptr);
  // A thread that joined writes in it.
  std::thread t([&] {
    qs::join_transaction in(tx);
    head->value = 7;
    head->next = new (db) Node{8, nullptr};
  });
  t.join();
  tx.commit();
  qs::transaction check(db);
  CHECK(db.root<Node*>("list")->value == 7);
  CHECK(db.root<Node*>("list")->next->value == 8);
  check.commit();
}

TEST_CASE("one transaction at a time per database handle") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  CHECK_THROWS_AS(qs::transaction(db), qs::error);
  CHECK(qs::transaction::current() == &tx);
}

TEST_CASE("an embedded database has one process at a time") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  CHECK_THROWS_AS(qs::database::open(dir.path(), small_options()), qs::database_in_use);
  // The second open is in this process: it says so.
  CHECK_THROWS_WITH(qs::database::open(dir.path(), small_options()), Catch::Contains("already open in this process"));
}

TEST_CASE("options are checked") {
  test_dir dir;
  qs::options o = small_options();
  o.page_size = 3000;
  CHECK_THROWS_AS(qs::database::open(dir.path(), o), qs::invalid_argument);
  o = small_options(1 << 20);  // 8 GiB in a reservation of 1 GiB
  CHECK_THROWS_WITH(qs::database::open(dir.path(), o), Catch::Contains("options::reservation_bytes"));
  o.reservation_bytes = std::uint64_t{16} << 30;
  o.pool_bytes = std::uint64_t{8} << 30;
  CHECK_THROWS_WITH(qs::database::open(dir.path(), o), Catch::Contains("not both"));
  o.pool_pages = 0;
  o.pool_bytes = 8192 * 15;
  CHECK_THROWS_WITH(qs::database::open(dir.path(), o),
                    Catch::Contains("at least 16 pages, not 122880 bytes (15 pages of 8192 bytes)"));
  {
    // Frames protected with mprotect may cost two mappings a resident page.
    env_var frames("QS_FRAMES", "protection");
    o = small_options(1 << 20);
    o.reservation_bytes = std::uint64_t{16} << 30;
    CHECK_THROWS_WITH(qs::database::open(dir.path(), o), Catch::Contains("vm.max_map_count"));
    env_var bad("QS_FRAMES", "pixies");
    CHECK_THROWS_WITH(qs::database::open(dir.path(), o),
                      Catch::Contains("QS_FRAMES must be userfault or protection, not 'pixies'"));
  }
  o = small_options();
  o.prefetch_pages = 5000;
  CHECK_THROWS_AS(qs::database::open(dir.path(), o), qs::invalid_argument);
  CHECK_THROWS_WITH(qs::database::open(dir.path(), o), Catch::Contains("prefetch_pages is at most 4096"));
}

TEST_CASE("QS_PREFETCH must be a number of pages") {
  test_dir dir;
  const char* was = std::getenv("QS_PREFETCH");
  const std::string saved = was ? was : "";
  ::setenv("QS_PREFETCH", "lots", 1);
  CHECK_THROWS_WITH(qs::database::open(dir.path(), small_options()),
                    Catch::Contains("QS_PREFETCH must be a number of pages from 0 to 4096, not 'lots'"));
  ::setenv("QS_PREFETCH", "0", 1);
  {
    auto db = qs::database::open(dir.path(), small_options());
    make_list(db, 5000);
    db.release_cache();
    qs::transaction tx(db);
    CHECK(db.root<Node*>("head")->value >= 0);
    CHECK(db.stats().pages_prefetched == 0);
  }
  if (was) ::setenv("QS_PREFETCH", saved.c_str(), 1);
  else ::unsetenv("QS_PREFETCH");
}

TEST_CASE("QS_PREFETCH_ORDER must name a prefetch order, and prefetch_along must be one") {
  test_dir dir;
  const char* was = std::getenv("QS_PREFETCH_ORDER");
  const std::string saved = was ? was : "";
  ::setenv("QS_PREFETCH_ORDER", "sideways", 1);
  CHECK_THROWS_AS(qs::database::open(dir.path(), small_options()), qs::invalid_argument);
  CHECK_THROWS_WITH(
      qs::database::open(dir.path(), small_options()),
      Catch::Contains("QS_PREFETCH_ORDER must be page_order, pointers, both or automatic, not 'sideways'"));
  if (was) ::setenv("QS_PREFETCH_ORDER", saved.c_str(), 1);
  else ::unsetenv("QS_PREFETCH_ORDER");
  if (!was) {
    qs::options o = small_options();
    o.prefetch_along = static_cast<qs::prefetch_order>(9);
    CHECK_THROWS_WITH(qs::database::open(dir.path(), o), Catch::Contains("prefetch_along is not a qs::prefetch_order"));
  }
}

TEST_CASE("QS_SERVER_WAIT_SPIN_US and server_wait_spin_us are microseconds up to 100000") {
  test_dir dir;
  for (const char* bad : {"-1", "12abc", "100001", "99999999999999999999"}) {
    env_var spin("QS_SERVER_WAIT_SPIN_US", bad);
    CHECK_THROWS_WITH(
        qs::database::open(dir.path(), small_options()),
        Catch::Contains("QS_SERVER_WAIT_SPIN_US must be a number of microseconds from 0 to 100000, not '" +
                        std::string(bad) + "'"));
  }
  {
    env_var spin("QS_SERVER_WAIT_SPIN_US", "0");
    CHECK_NOTHROW(qs::database::open(dir.path(), small_options()));
  }
  if (!std::getenv("QS_SERVER_WAIT_SPIN_US")) {
    qs::options o = small_options();
    o.server_wait_spin_us = 100001;
    CHECK_THROWS_WITH(qs::database::open(dir.path(), o), Catch::Contains("server_wait_spin_us is at most 100000"));
  }
}

TEST_CASE("every supported page size works, and a database keeps its own") {
  for (std::uint32_t ps : {4096u, 16384u, 65536u}) {
    test_dir dir;
    qs::options o = small_options();
    o.page_size = ps;
    {
      auto db = qs::database::open(dir.path(), o);
      make_list(db, 5000);
    }
    o.page_size = 8192;
    auto db = qs::database::open(dir.path(), o);
    CHECK(db.page_size() == ps);
    auto v = values(db);
    REQUIRE(v.size() == 5000);
    CHECK(v.front() == 4999);
    CHECK(v.back() == 0);
  }
}

TEST_CASE("two databases open in one process; a pointer from one into the other is refused") {
  test_dir dir;
  auto a = qs::database::open(dir.sub("a"), small_options());
  auto b = qs::database::open(dir.sub("b"), small_options());
  Node* in_a;
  {
    qs::transaction tx(a);
    in_a = a.root<Node*>("n") = new (a) Node{1, nullptr};
    tx.commit();
  }
  {
    qs::transaction tx(b);
    Node* in_b = b.root<Node*>("n") = new (b) Node{2, nullptr};
    CHECK_FALSE(b.contains(in_a));
    in_b->next = in_a;
    try {
      tx.commit();
      FAIL("commit accepted a pointer into another database");
    } catch (const qs::cross_database_pointer& e) {
      CHECK_THAT(e.what(), Catch::Contains("qs_test::Node::next") && Catch::Contains(dir.sub("a")) &&
                               Catch::Contains("between databases"));
    }
  }
  // Both still work, each on its own objects.
  qs::transaction ta(a);
  CHECK(a.root<Node*>("n")->value == 1);
  ta.commit();
  qs::transaction tb(b);
  CHECK_FALSE(b.has_root("n"));
  b.root<Node*>("n") = new (b) Node{3, nullptr};
  tb.commit();
}

TEST_CASE("deletes taking turns between two open databases each free their own database's object") {
  test_dir dir;
  // Objects on pages of their own database, in a list from its root.
  auto make = [](qs::database& db, std::int64_t base) {
    qs::transaction tx(db);
    Node* head = nullptr;
    for (std::int64_t i = 0; i < 100; ++i) head = new (db) Node{base + i, head};
    db.root<Node*>("head") = head;
    tx.commit();
  };
  auto count = [](qs::database& db) {
    qs::transaction tx(db);
    std::int64_t n = 0;
    for (const Node* p = db.root<Node*>("head"); p; p = p->next) ++n;
    tx.commit();
    return n;
  };
  // Deletes the list's first object, inside db's open transaction; returns
  // the new first one.
  auto pop = [](qs::database& db) {
    Node*& head = db.root<Node*>("head");
    Node* next = head->next;
    delete head;
    return head = next;
  };
  std::optional<qs::database> a(qs::database::open(dir.sub("a"), small_options()));
  auto b = qs::database::open(dir.sub("b"), small_options());
  make(*a, 0);
  make(b, 1000);
  {
    // A delete in a, then one in b, and so on: each finds its own
    // database, not the one the delete before it found.
    qs::transaction ta(*a);
    qs::transaction tb(b);
    for (int i = 0; i < 50; ++i) {
      pop(*a);
      pop(b);
    }
    tb.commit();
    ta.commit();
  }
  CHECK(count(*a) == 50);
  CHECK(count(b) == 50);
  const void* in_a;
  {
    qs::transaction ta(*a);  // a delete in a is the last one before it closes
    in_a = pop(*a);
    ta.commit();
  }
  a.reset();
  // No database now holds what a held: a Node made by plain new goes back
  // to the heap (under AddressSanitizer: without reading what a left).
  delete new Node{7, nullptr};
  // A database opened after a closed, most likely at a's addresses: its
  // deletes are its own.
  auto c = qs::database::open(dir.sub("c"), small_options());
  INFO("c " << (c.contains(in_a) ? "holds" : "does not hold") << " a's addresses");
  make(c, 2000);
  {
    qs::transaction tc(c);
    for (int i = 0; i < 30; ++i) pop(c);
    tc.commit();
  }
  CHECK(count(c) == 70);
  CHECK(count(b) == 50);
}

TEST_CASE("db.run retries a conflict, and the one it gives up on says how many attempts were made") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  int runs = 0;
  // A conflict raised by the body (as an index call or a commit raises one
  // on a page server): each attempt is aborted and run again.
  db.run([&] {
    db.root<std::uint64_t>("n") += 1;
    if (++runs < 3) throw qs::conflict("a conflict for the test");
  });
  CHECK(runs == 3);
  runs = 0;
  try {
    db.run(
        [&] {
          ++runs;
          throw qs::conflict("a conflict for the test");
        },
        4);
    FAIL("db.run returned");
  } catch (const qs::deadlock& e) {  // the name code written earlier catches
    CHECK_THAT(e.what(),
               Catch::StartsWith("a conflict for the test") && Catch::Contains("db.run gave up after 4 attempts"));
  }
  CHECK(runs == 4);
  // Only the committed attempt's update is there.
  db.run([&] { CHECK(db.root<std::uint64_t>("n") == 1); });
  // Other errors are not retried.
  runs = 0;
  CHECK_THROWS_AS(db.run([&] {
    ++runs;
    throw qs::store_error("not a conflict");
  }),
                  qs::store_error);
  CHECK(runs == 1);
}

TEST_CASE("a commit of many stored pages, whose records are read ahead beside it, keeps exactly what it wrote",
          "[tsan]") {
  // On pages.db a helper reads the B-tree pages of the commit's records
  // ahead of its writes (bdb_env::warm_records), in the environment the
  // first write reopened; on a page file nothing is read ahead.
  test_dir dir;
  constexpr int n = 60000;  // about 120 pages of nodes
  auto opts = small_options(1024);
  {
    auto db = qs::database::open(dir.path(), opts);
    make_list(db, n);
  }
  auto expect = [&](std::int64_t factor) {
    std::vector<std::int64_t> v;
    for (int i = n - 1; i >= 0; --i) v.push_back(i * factor);
    return v;
  };
  auto scale = [](qs::database& db, std::int64_t by, bool commit) {
    qs::transaction tx(db);
    for (Node* p = db.root<Node*>("head"); p; p = p->next) p->value *= by;
    if (commit) tx.commit();
    else tx.abort();
  };
  {
    // Opened clean: the commit's first write reopens the environment.
    auto db = qs::database::open(dir.path(), opts);
    scale(db, 3, true);
    CHECK(values(db) == expect(3));
    scale(db, 5, false);
    CHECK(values(db) == expect(3));
    scale(db, 7, true);  // the environment is open for writing already
    CHECK(values(db) == expect(21));
  }
  auto db = qs::database::open(dir.path(), opts);
  CHECK(values(db) == expect(21));
}

namespace {

// Prepends `slabs` Slabs (a page each), valued base to base + slabs - 1, to
// the root "slabs" in one transaction, committed or aborted.
void prepend_slabs(qs::database& db, int slabs, std::uint64_t base, bool commit) {
  qs::transaction tx(db);
  auto& head = db.root<Slab*>("slabs");
  for (int i = 0; i < slabs; ++i) head = new (db) Slab{head, base + static_cast<std::uint64_t>(i), {}};
  if (commit) tx.commit();
  else tx.abort();
}

// The values along the root "slabs", from its head.
std::vector<std::uint64_t> slab_values(qs::database& db) {
  qs::transaction tx(db);
  std::vector<std::uint64_t> v;
  for (Slab* s = db.root<Slab*>("slabs"); s; s = s->next) v.push_back(s->value);
  return v;
}

// What prepend_slabs leaves after a committed run from each of `bases`,
// the last first.
std::vector<std::uint64_t> prepended(int slabs, std::initializer_list<std::uint64_t> bases) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t b : bases)
    for (int i = slabs - 1; i >= 0; --i) v.push_back(b + static_cast<std::uint64_t>(i));
  return v;
}

}  // namespace

TEST_CASE("a durable commit of many new pages into pages.db logs their records", "[bulk]") {
  // Berkeley DB's bulk transactions (DB_TXN_BULK) left the records put on
  // new B-tree pages out of the log; killed, they left environments that
  // Berkeley DB's recovery crashed on (bdb_env::txn_kind). A commit into
  // pages.db logs every record, whatever its size and durability: the
  // durable commit of 600 new pages logs about what the same commit makes
  // without a sync (with bulk transactions, less than two thirds).
  env_var layout("QS_PAGE_FILE", "0");
  constexpr int slabs = 600;  // a page each
  auto logged = [](const std::string& path, qs_test::commits c) {
    auto db = qs::database::open(path, small_options(2048, c));
    const std::uint64_t before = db.stats().log_bytes;
    prepend_slabs(db, slabs, 0, true);
    return db.stats().log_bytes - before;
  };
  test_dir dir;
  const std::uint64_t durable = logged(dir.sub("durable"), commits::durable);
  const std::uint64_t fast = logged(dir.sub("fast"), commits::fast);
  CHECK(durable >= fast * 9 / 10);
  CHECK(durable >= slabs * sizeof(Slab));
  // Every record is there, read back from pages.db after the close.
  auto db = qs::database::open(dir.sub("durable"), small_options(64, commits::durable));
  CHECK(slab_values(db) == prepended(slabs, {0}));
}

TEST_CASE("a durable transaction into pages.db larger than the pool that adds many pages logs their records",
          "[bulk]") {
  // Its dirty pages are evicted into the store before its commit, each
  // record logged as it goes: 17.5 MB for 7.2 MB of slabs (the B-tree's
  // splits log whole leaves too); with a bulk transaction begun at the
  // first eviction, 8.9 MB.
  env_var layout("QS_PAGE_FILE", "0");
  constexpr int slabs = 900;  // a page each, nearly three times the pool
  test_dir dir;
  {
    auto db = qs::database::open(dir.sub("durable"), small_options(320, commits::durable));
    const std::uint64_t before = db.stats().log_bytes;
    prepend_slabs(db, slabs, 0, true);
    CHECK(db.stats().dirty_evictions > 0);
    INFO("logged " << db.stats().log_bytes - before << " bytes for " << slabs * sizeof(Slab) << " of slabs");
    CHECK(db.stats().log_bytes - before >= 2 * slabs * sizeof(Slab));
  }
  auto db = qs::database::open(dir.sub("durable"), small_options(64, commits::durable));
  CHECK(slab_values(db) == prepended(slabs, {0}));
}

TEST_CASE("a transient pointer on a page evicted before the commit is refused") {
  // An eviction checks the pointer words that changed on the page (the
  // others were checked when they were stored); a page holding one that
  // may not be stored is looked at again, whole, by the commit.
  constexpr int slabs = 300;  // a page each, nearly five times the pool
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options(64));
  prepend_slabs(db, slabs, 0, true);
  Slab on_stack{nullptr, 0, {}};
  {
    qs::transaction tx(db);
    Slab* victim = db.root<Slab*>("slabs")->next;
    Slab* rest = victim->next;
    victim->value = 7;
    victim->next = &on_stack;
    auto dirty_the_rest = [&] {
      for (Slab* s = rest; s; s = s->next) s->value += 1000;
    };
    dirty_the_rest();  // the victim's page is evicted, dirty
    CHECK(db.stats().dirty_evictions > 0);
    auto refused = [&] {
      try {
        tx.commit();
        FAIL("commit accepted a transient pointer");
      } catch (const qs::transient_pointer& e) {
        CHECK_THAT(e.what(), Catch::Contains("qs_test::Slab::next"));
      }
      CHECK(slab_values(db) == prepended(slabs, {0}));
    };
    SECTION("left there") { refused(); }
    SECTION("left there, its page written again and evicted again") {
      victim->fill[10] = 1;  // beside it: this eviction's changed words hold no pointer
      dirty_the_rest();
      refused();
    }
    SECTION("put right before the commit") {
      victim->next = rest;
      tx.commit();
      std::vector<std::uint64_t> v = prepended(slabs, {0});
      v[1] = 7;
      for (std::size_t i = 2; i < v.size(); ++i) v[i] += 1000;
      CHECK(slab_values(db) == v);
    }
  }
}

TEST_CASE("a transaction larger than the pool that adds many pages and aborts leaves nothing of them") {
  // Its dirty evictions put records on B-tree pages it added; its abort
  // undoes them and frees those pages. The database is as it was, and
  // goes on.
  env_var layout("QS_PAGE_FILE", "0");
  constexpr int slabs = 900;
  test_dir dir;
  {
    auto db = qs::database::open(dir.path(), small_options(320, commits::durable));
    prepend_slabs(db, slabs, 1000, true);
    prepend_slabs(db, slabs, 5000, false);
    CHECK(db.stats().dirty_evictions > 0);
    CHECK(slab_values(db) == prepended(slabs, {1000}));
    prepend_slabs(db, slabs, 9000, true);
    CHECK(slab_values(db) == prepended(slabs, {9000, 1000}));
  }
  auto db = qs::database::open(dir.path(), small_options(64, commits::durable));
  CHECK(slab_values(db) == prepended(slabs, {9000, 1000}));
}
