// Tests of software-swizzling mode (qs-software): qs::ref object identifiers
// with residency checks, object-level before-images, uniqueness tags, and
// crash safety (worker processes killed with SIGKILL).
#include <catch2/catch.hpp>

#include "support.hpp"

#include <qs/qs.hpp>

#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

static_assert(qs::software_swizzling, "this test is built against qs-software");

// Persistent types need external linkage: schema-gen binds them by name.
namespace sw_test {

struct Node {
  QS_PERSISTENT(Node)
  std::int64_t value = 0;
  qs::ref<Node> next;
  char pad[200] = {};  // a few dozen nodes per page
};

struct Raw {
  QS_PERSISTENT(Raw)
  Raw* next = nullptr;  // a raw address: not a persistent reference here
};

// A large object: several pages.
struct Blob {
  QS_PERSISTENT(Blob)
  std::int64_t words[3000] = {};
};

struct Base {
  QS_PERSISTENT(Base)
  std::int64_t b = 1;
};
struct Derived : Base {
  QS_PERSISTENT(Derived)
  std::int64_t d = 2;
};

// A second base, at offset 8: references cannot name it.
struct Left {
  std::int64_t l = 0;
};
struct Right {
  std::int64_t r = 0;
};
struct Both : Left, Right {};

}  // namespace sw_test

using namespace sw_test;

namespace {

qs::ref<Node> build_list(qs::database& db, int n) {
  qs::ref<Node> head;
  for (int i = n; i >= 1; --i) {
    qs::ref<Node> x = new (db) Node;
    qs::write(x)->value = i;
    qs::write(x)->next = head;
    head = x;
  }
  return head;
}

// Creates the database at `path` with the root "list": values 1..n.
void store_list(const std::string& path, int n) {
  auto db = qs::database::open(path, qs_test::small_options());
  qs::transaction t(db);
  db.root<qs::ref<Node>>("list") = build_list(db, n);
  t.commit();
}

std::int64_t sum(qs::ref<Node> p) {
  std::int64_t s = 0;
  for (; p; p = p->next) s += p->value;
  return s;
}

}  // namespace

TEST_CASE("software mode: a list of qs::ref outlives the process's handle") {
  qs_test::test_dir dir;
  store_list(dir.sub("db"), 500);
  qs::options o = qs_test::small_options();
  o.prefetch_pages = 0;  // (read ahead, a page comes in without a miss)
  auto db = qs::database::open(dir.sub("db"), o);
  qs::transaction t(db);
  auto s0 = db.stats();
  CHECK(sum(db.root<qs::ref<Node>>("list")) == 500 * 501 / 2);
  // Every page came in through a residency miss; no page was protected.
  auto s1 = db.stats();
  CHECK(s1.read_faults >= 500 * sizeof(Node) / 8192);
  CHECK(s1.read_faults == s1.pages_fetched - s0.pages_fetched);
  CHECK(s1.write_faults == 0);
  t.commit();
}

TEST_CASE("software mode: a reference to a deleted object raises qs::dangling_reference") {
  qs_test::test_dir dir;
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::ref<Node> a, b;
  {
    qs::transaction t(db);
    a = new (db) Node;
    b = new (qs::near(a.get())) Node;
    qs::write(b)->value = 7;
    qs::write(a)->next = b;
    db.root<qs::ref<Node>>("a") = a;
    t.commit();
  }
  qs::ref<Node> stale = b;
  SECTION("in the same transaction, the page resident") {
    qs::transaction t(db);
    CHECK(stale->value == 7);
    qs::destroy(b.get());
    CHECK_THROWS_AS(stale->value, qs::dangling_reference);
    CHECK_THROWS_WITH(stale.get(), Catch::Contains("names a deleted object") &&
                                       Catch::Contains("page " + std::to_string(stale.page())));
    CHECK_THROWS_AS(qs::write(stale), qs::dangling_reference);
    t.abort();
    // The abort brought the object back, with its tag.
    qs::transaction t2(db);
    CHECK(stale->value == 7);
    t2.commit();
  }
  SECTION("after a commit and a reopen, and after the space is reused") {
    {
      qs::transaction t(db);
      qs::write(a)->next = nullptr;
      qs::destroy(b.get());
      t.commit();
    }
    db = qs::database::open(dir.sub("db2"), qs_test::small_options());  // another database in between
    db = qs::database::open(dir.sub("db"), qs_test::small_options());
    qs::transaction t(db);
    CHECK(db.root<qs::ref<Node>>("a")->next == nullptr);
    CHECK_THROWS_AS(stale->value, qs::dangling_reference);
    // A new object in the freed space has a new tag: the old reference
    // still does not name it.
    qs::ref<Node> c = new (qs::near(db.root<qs::ref<Node>>("a").get())) Node;
    CHECK(c.page() == stale.page());
    CHECK(c.offset() == stale.offset());
    CHECK(c.tag() != stale.tag());
    CHECK(c->value == 0);
    CHECK_THROWS_AS(stale->value, qs::dangling_reference);
    t.commit();
  }
}

TEST_CASE("software mode: commit logs the objects written, abort restores them") {
  qs_test::test_dir dir;
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  {
    qs::transaction t(db);
    db.root<qs::ref<Node>>("list") = build_list(db, 300);
    t.commit();
  }
  qs::ref<Node> head;
  {
    qs::transaction t(db);
    head = db.root<qs::ref<Node>>("list");
    t.commit();
  }
  SECTION("an update of 8 bytes in each of 30 objects logs about that much") {
    auto s0 = db.stats();
    qs::transaction t(db);
    int i = 0;
    for (qs::ref<Node> p = head; p; p = p->next)
      if (i++ % 10 == 0) qs::write(p)->value += 1000;
    t.commit();
    auto s1 = db.stats();
    CHECK(s1.write_faults - s0.write_faults == 30);
    CHECK(s1.diff_bytes - s0.diff_bytes == 30 * 8);
    qs::transaction t2(db);
    CHECK(sum(head) == 300 * 301 / 2 + 30 * 1000);
    t2.commit();
  }
  SECTION("an abort puts every written object back") {
    {
      qs::transaction t(db);
      for (qs::ref<Node> p = head; p; p = p->next) qs::write(p)->value = -1;
      qs::ref<Node> extra = new (db) Node;  // and the allocator's page changes
      qs::write(extra)->next = head;
      CHECK(sum(head) == -300);
      t.abort();
    }
    qs::transaction t(db);
    CHECK(sum(head) == 300 * 301 / 2);
    t.commit();
  }
  SECTION("objects written before and after an allocation on their page") {
    qs::transaction t(db);
    qs::write(head)->value = 100;
    qs::ref<Node> extra = new (qs::near(head.get())) Node;  // the page's whole image is saved now
    qs::write(extra)->value = 5;
    qs::write(head)->next = extra;
    t.abort();
    qs::transaction t2(db);
    CHECK(head->value == 1);
    CHECK(sum(head) == 300 * 301 / 2);
    t2.commit();
  }
}

TEST_CASE("software mode: large objects, and base-class references") {
  qs_test::test_dir dir;
  {
    auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
    qs::transaction t(db);
    qs::ref<Blob> b = new (db) Blob;
    for (int i = 0; i < 3000; ++i) qs::write(b)->words[i] = i;
    db.root<qs::ref<Blob>>("blob") = b;
    qs::ref<Base> base = qs::ref<Derived>(new (db) Derived);
    db.root<qs::ref<Base>>("base") = base;
    t.commit();
  }
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::transaction t(db);
  qs::ref<Blob> b = db.root<qs::ref<Blob>>("blob");
  std::int64_t s = 0;
  for (int i = 0; i < 3000; ++i) s += b->words[i];
  CHECK(s == 2999LL * 3000 / 2);
  qs::write(b)->words[2999] = 0;
  qs::ref<Derived> d = qs::static_ref_cast<Derived>(db.root<qs::ref<Base>>("base"));
  CHECK(d->b == 1);
  CHECK(d->d == 2);
  t.commit();
  qs::transaction t2(db);
  CHECK(b->words[2999] == 0);
  CHECK(b->words[2998] == 2998);
  t2.commit();
}

TEST_CASE("software mode: a raw address in a persistent object is refused at commit") {
  qs_test::test_dir dir;
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::transaction t(db);
  Raw* r = new (db) Raw;
  r->next = new (db) Raw;  // persistent, but an address: meaningless in another process
  CHECK_THROWS_AS(t.commit(), qs::transient_pointer);
  CHECK_FALSE(db.in_transaction());
}

TEST_CASE("software mode: a reference made from an address inside an object is refused") {
  qs_test::test_dir dir;
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::transaction t(db);
  qs::ref<Node> n = new (db) Node;
  auto* inside = reinterpret_cast<Node*>(reinterpret_cast<char*>(n.get()) + 8);
  CHECK_THROWS_AS(qs::ref<Node>(inside), qs::invalid_argument);
  Node transient;
  CHECK_THROWS_AS(qs::ref<Node>(&transient), qs::invalid_argument);
  t.commit();
}

TEST_CASE("software mode: kill -9 at chosen points loses no committed transaction and keeps no partial one") {
  qs_test::kill_at_chosen_points(3000);  // items per transaction, every item rewritten in each
}

TEST_CASE("software mode: a change made without qs::write is refused at commit, and nothing committed is lost") {
  qs_test::test_dir dir;
  store_list(dir.sub("db"), 100);
  {
    auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
    qs::transaction t(db);
    qs::ref<Node> head = db.root<qs::ref<Node>>("list");
    qs::write(head)->value = 1000;  // announced
    head->next->value = 2000;       // not announced: a plain store through the reference
    CHECK_THROWS_WITH(t.commit(), Catch::Contains("commit refused: page") &&
                                      Catch::Contains("outside the objects announced with qs::write"));
    CHECK_FALSE(db.in_transaction());
    // The aborted transaction's announced change is gone in this process too.
    qs::transaction t2(db);
    CHECK(db.root<qs::ref<Node>>("list")->value == 1);
    t2.commit();
  }
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::transaction t(db);
  qs::ref<Node> head = db.root<qs::ref<Node>>("list");
  CHECK(head->value == 1);
  CHECK(head->next->value == 2);
  CHECK(sum(head) == 100 * 101 / 2);
  t.commit();
}

TEST_CASE("software mode: a root written through its C++ reference is logged at commit and restored by abort") {
  qs_test::test_dir dir;
  {
    auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
    qs::transaction t(db);
    db.root<std::int64_t>("count") = 1;
    db.root<qs::ref<Node>>("list") = build_list(db, 10);
    t.commit();
  }
  {
    auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
    {
      qs::transaction t(db);
      db.root<std::int64_t>("count") = 5;
      db.root<qs::ref<Node>>("list") = qs::ref<Node>();
      t.abort();
    }
    qs::transaction t(db);
    CHECK(db.root<std::int64_t>("count") == 1);
    CHECK(sum(db.root<qs::ref<Node>>("list")) == 55);
    auto s0 = db.stats();
    CHECK(db.root<std::int64_t>("count") == 1);  // read only: no write announced
    db.root<std::int64_t>("count") += 1;
    db.root<std::int64_t>("count") += 1;
    t.commit();
    CHECK(db.stats().write_faults - s0.write_faults == 1);
  }
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::transaction t(db);
  CHECK(db.root<std::int64_t>("count") == 3);
  CHECK(sum(db.root<qs::ref<Node>>("list")) == 55);
  t.commit();
}

TEST_CASE("software mode: a conversion to a base class not at offset 0 is refused, naming the types") {
  qs::ref<Both> both;
  CHECK_THROWS_WITH(qs::ref<Right>(both), Catch::Contains("sw_test::Both") && Catch::Contains("sw_test::Right") &&
                                              Catch::Contains("offset 0"));
  CHECK_THROWS_AS(qs::static_ref_cast<Both>(qs::ref<Right>()), qs::invalid_argument);
  CHECK_NOTHROW(qs::ref<Left>(both));
}

TEST_CASE("software mode: references that cannot be followed say why") {
  qs_test::test_dir dir;
  store_list(dir.sub("db"), 10);
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::ref<Node> head;
  qs::ref<Blob> blob;
  {
    qs::transaction t(db);
    head = db.root<qs::ref<Node>>("list");
    blob = new (db) Blob;
    t.commit();
  }
  SECTION("outside a transaction, its page not resident") {
    db.release_cache();
    CHECK_THROWS_AS(head->value, qs::no_transaction);
    CHECK_THROWS_WITH(head->value, Catch::Contains("page " + std::to_string(head.page())) &&
                                       Catch::Contains("outside a transaction"));
  }
  SECTION("a page inside a large object") {
    qs::transaction t(db);
    auto inside = qs::ref<Node>::from_identifier(blob.page() + 1, blob.offset(), blob.tag());
    CHECK_THROWS_AS(inside->value, qs::dangling_reference);
    CHECK_THROWS_WITH(inside->value, Catch::Contains("page " + std::to_string(blob.page() + 1)) &&
                                         Catch::Contains("inside a large object"));
    t.commit();
  }
}

TEST_CASE("software mode: a freed block reused by an object 8 bytes smaller leaves the page's objects whole") {
  // An object header is 16 bytes here: 8 bytes left over from a free block
  // cannot hold a free block's header, so the block is not split that way.
  qs_test::test_dir dir;
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::transaction t(db);
  qs::ref<Node> first = new (db) Node;
  auto bytes = [&](std::size_t n) {
    return qs::ref<char>(
        static_cast<char*>(qs::detail::allocate_near(first.get(), qs::detail::descriptor_of<char>(), n)));
  };
  qs::ref<char> a = bytes(16), b = bytes(16);
  qs::detail::release(a.get());
  qs::ref<char> c = bytes(8);
  qs::ref<char> d = bytes(8);
  CHECK(c.page() == first.page());
  CHECK(d.page() == first.page());
  CHECK(*b.get() == 0);
  CHECK(first->value == 0);
  qs::destroy(d.get());
  qs::destroy(c.get());
  t.commit();
}

TEST_CASE("software mode: two threads with a database each follow their own references, interleaved") {
  // Each thread's references resolve in the database whose transaction it
  // began: thread B beginning a transaction of its database between thread
  // A's begin and A's first dereference changes nothing for A.
  qs_test::test_dir dir;
  store_list(dir.sub("a"), 300);
  store_list(dir.sub("b"), 1000);
  std::mutex m;
  std::condition_variable cv;
  int step = 0;  // 1: A began; 2: B began; 3: A summed
  auto wait_for = [&](int s) {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return step >= s; });
  };
  auto reach = [&](int s) {
    {
      std::lock_guard<std::mutex> l(m);
      step = s;
    }
    cv.notify_all();
  };
  std::int64_t sum_a = 0, sum_b = 0;
  std::exception_ptr error_a, error_b;
  std::thread a([&] {
    try {
      auto db = qs::database::open(dir.sub("a"), qs_test::small_options());
      qs::transaction t(db);
      reach(1);
      wait_for(2);
      qs::ref<Node> head = db.root<qs::ref<Node>>("list");
      sum_a = sum(head);
      qs::write(head)->value += 1000000;
      t.commit();
      reach(3);
    } catch (...) {
      error_a = std::current_exception();
      reach(3);
    }
  });
  std::thread b([&] {
    try {
      wait_for(1);
      auto db = qs::database::open(dir.sub("b"), qs_test::small_options());
      qs::transaction t(db);
      reach(2);
      wait_for(3);
      qs::ref<Node> head = db.root<qs::ref<Node>>("list");
      sum_b = sum(head);
      qs::write(head)->value += 2000000;
      t.commit();
    } catch (...) {
      error_b = std::current_exception();
    }
  });
  a.join();
  b.join();
  auto message = [](std::exception_ptr e) -> std::string {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      return x.what();
    }
  };
  if (error_a) FAIL("thread A: " << message(error_a));
  if (error_b) FAIL("thread B: " << message(error_b));
  CHECK(sum_a == 300 * 301 / 2);
  CHECK(sum_b == 1000 * 1001 / 2);
  // Each commit went to its own database.
  for (auto [name, n, added] : {std::tuple{"a", 300, 1000000}, std::tuple{"b", 1000, 2000000}}) {
    auto db = qs::database::open(dir.sub(name), qs_test::small_options());
    qs::transaction t(db);
    CHECK(sum(db.root<qs::ref<Node>>("list")) == std::int64_t{n} * (n + 1) / 2 + added);
    t.commit();
  }
}

TEST_CASE("software mode: a thread that has no database says so when it follows a reference") {
  qs_test::test_dir dir;
  store_list(dir.sub("db"), 10);
  auto db = qs::database::open(dir.sub("db"), qs_test::small_options());
  qs::ref<Node> head;
  {
    qs::transaction t(db);
    head = db.root<qs::ref<Node>>("list");
    t.commit();
  }
  db.release_cache();
  std::string what;
  std::thread other([&] {
    try {
      (void)head->value;
    } catch (const qs::no_transaction& e) {
      what = e.what();
    }
  });
  other.join();
  CHECK_THAT(what, Catch::Contains("this thread has no database"));
}
