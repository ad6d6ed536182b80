// The allocator: large objects, delete and reuse, clustering, and the
// allocation errors a user can make.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <set>

using namespace qs_test;

namespace {
struct Unregistered {
  QS_PERSISTENT(Unregistered)
  int x;
};
}  // namespace

TEST_CASE("an object larger than a page spans contiguous frames and faults in page by page") {
  test_dir dir;
  auto opts = small_options(16);  // the object alone is 40 pages
  {
    auto db = qs::database::open(dir.path(), opts);
    qs::transaction tx(db);
    Blob* b = new (db) Blob;
    for (std::uint64_t i = 0; i < 40000; ++i) b->words[i] = i * 7;
    b->self = b;
    db.root<Blob*>("blob") = b;
    tx.commit();
  }
  auto db = qs::database::open(dir.path(), opts);
  qs::transaction tx(db);
  Blob* b = db.root<Blob*>("blob");
  CHECK(b->self == b);
  for (std::uint64_t i = 0; i < 40000; ++i) REQUIRE(b->words[i] == i * 7);
  // Each page came in on its own: on a fault, or read ahead of one.
  CHECK(db.stats().read_faults + db.stats().pages_prefetched >= 40);
  b->words[39999] = 1;  // the last page
  tx.commit();
}

TEST_CASE("delete frees persistent space and new objects reuse it") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  std::vector<Node*> nodes;
  {
    qs::transaction tx(db);
    for (int i = 0; i < 2000; ++i) nodes.push_back(new (db) Node{i, nullptr});
    db.root<Node*>("first") = nodes.front();
    tx.commit();
  }
  std::set<Node*> freed;
  {
    qs::transaction tx(db);
    for (std::size_t i = 1; i < nodes.size(); i += 2) {
      freed.insert(nodes[i]);
      delete nodes[i];
    }
    tx.commit();
  }
  // A new process finds the room through the persistent free-space list.
  db = qs::database::open(dir.sub("elsewhere"), small_options());
  db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  int reused = 0;
  for (int i = 0; i < 1000; ++i) {
    Node* n = new (db) Node{-i, nullptr};
    reused += static_cast<int>(freed.count(n));
  }
  CHECK(reused == 1000);
  CHECK(db.root<Node*>("first")->value == 0);
  tx.commit();
}

TEST_CASE("deleting a large object frees its pages") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  Blob* b = new (db) Blob;
  b->words[0] = 5;
  tx.commit();
  qs::transaction tx2(db);
  delete b;
  Node* n = new (db) Node{1, nullptr};
  db.root<Node*>("n") = n;
  tx2.commit();
  qs::transaction tx3(db);
  CHECK(db.root<Node*>("n")->value == 1);
  tx3.commit();
}

TEST_CASE("new (qs::near(p)) puts the object on p's page while it fits") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  const std::uintptr_t ps = db.page_size();
  qs::transaction tx(db);
  Node* a = new (db) Node{1, nullptr};
  for (int i = 0; i < 100; ++i) new (db) Pair{};  // the current page moves on
  Blob* spacer = new (db) Blob;                   // and a large object in between
  (void)spacer;
  Node* b = new (qs::near(a)) Node{2, a};
  CHECK(reinterpret_cast<std::uintptr_t>(b) / ps == reinterpret_cast<std::uintptr_t>(a) / ps);
  int same = 0;
  for (int i = 0; i < 1000; ++i) {
    Node* c = new (qs::near(a)) Node{3, a};
    same += reinterpret_cast<std::uintptr_t>(c) / ps == reinterpret_cast<std::uintptr_t>(a) / ps;
  }
  CHECK(same > 100);
  CHECK(same < 1000);  // the page filled up and later objects went elsewhere
  tx.commit();
}

TEST_CASE("allocation mistakes get clear errors") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  SECTION("no transaction") { CHECK_THROWS_AS((new (db) Node{1, nullptr}), qs::no_transaction); }
  SECTION("a derived class allocated through its base's QS_PERSISTENT") {
    qs::transaction tx(db);
    CHECK_THROWS_WITH(new (db) Derived{}, Catch::Contains("derived from Base") && Catch::Contains("QS_PERSISTENT"));
  }
  SECTION("a type without a schema") {
    qs::transaction tx(db);
    CHECK_THROWS_WITH(new (db) Unregistered{1}, Catch::Contains("Unregistered") && Catch::Contains("schema"));
  }
}

TEST_CASE("a delete where no object starts fails its transaction naming the page, and changes nothing") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  db.run([&] {
    Node* a = new (db) Node{1, nullptr};
    db.root<Node*>("list") = new (db) Node{2, a};
  });
  auto try_delete = [&](auto remove) {
    qs::transaction tx(db);
    remove(db.root<Node*>("list"));
    CHECK_THROWS_WITH(tx.commit(), Catch::Contains("delete of") && Catch::Contains("on page ") &&
                                       Catch::Contains("where no persistent object starts"));
  };
  SECTION("inside an object") {
    try_delete([](Node* n) { qs::detail::release(reinterpret_cast<std::byte*>(n->next) + 8); });
  }
  SECTION("an object deleted already") {
    try_delete([](Node* n) {
      Node* a = n->next;
      delete a;
      qs::detail::release(a);  // what a second `delete a` does
    });
  }
  // The failed transaction left both nodes where they were.
  db.run([&] {
    Node* n = db.root<Node*>("list");
    REQUIRE(n->next != nullptr);
    CHECK(n->value == 2);
    CHECK(n->next->value == 1);
  });
}

TEST_CASE("a delete inside an object is refused after frees and an allocation reshaped its page") {
  // A run of deletes on a page checks them against the page's block starts,
  // read at its second free; an allocation that merges free blocks must drop
  // them, or a start inside the new object would be taken for an object's,
  // and its bytes for a header.
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  Node* x[4];
  db.run([&] {
    for (Node*& n : x) n = new (db) Node{0, nullptr};
    db.root<Node*>("x3") = x[2];
  });
  const auto at = [&](int i) { return reinterpret_cast<std::byte*>(x[i]); };
  const std::ptrdiff_t step = sizeof(Node) + 8;  // payload and header
  REQUIRE(at(1) - at(0) == step);
  REQUIRE(at(2) - at(1) == step);
  qs::transaction tx(db);
  delete x[0];
  delete x[1];  // the page's starts are read now: x[1]'s header is one
  // Five words fill the two freed blocks exactly, from x[0]'s payload on.
  auto* words = qs::allocator<std::uint64_t>().allocate(5);
  REQUIRE(reinterpret_cast<std::byte*>(words) == at(0));
  // Where x[1]'s header was: a "header" whose object ends at x[2]'s
  // payload, and x[2]'s first word a "header" of an 8-byte object just
  // inside x[2].
  words[2] = std::uint64_t{24} << 32 | 1;
  x[2]->value = std::int64_t{8} << 32 | 1;
  const auto refused = [&](std::byte* p) {
    qs::detail::release(p);
    CHECK_THROWS_WITH(tx.commit(), Catch::Contains("where no persistent object starts"));
  };
  SECTION("where x[1] was") { refused(at(1)); }
  SECTION("inside x[2]") { refused(at(2) + 8); }
  db.run([&] { CHECK(db.root<Node*>("x3") == x[2]); });
}

TEST_CASE("plain new and delete stay transient; make and destroy work for any type") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  Node* t = new Node{1, nullptr};
  CHECK_FALSE(db.contains(t));
  delete t;
  qs::transaction tx(db);
  std::int64_t* x = qs::make<std::int64_t>(db, 77);
  CHECK(db.contains(x));
  CHECK(*x == 77);
  qs::destroy(x);
  {
    std::vector<Node*, qs::allocator<Node*>> v;  // a transient vector whose buffer is persistent
    v.push_back(nullptr);
    CHECK(db.contains(v.data()));
  }
  tx.commit();
}

TEST_CASE("a large object deleted in an aborted transaction is there again, through the old pointers") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  {
    qs::transaction tx(db);
    Blob* b = new (db) Blob;
    b->words[39999] = 77;
    b->self = b;
    db.root<Blob*>("blob") = b;
    tx.commit();
  }
  {
    qs::transaction tx(db);
    delete db.root<Blob*>("blob");
  }  // aborted
  qs::transaction tx(db);
  Blob* b = db.root<Blob*>("blob");
  CHECK(b->self == b);
  CHECK(b->words[39999] == 77);
  tx.commit();
}

TEST_CASE("the allocator's state changes only with its transaction") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  std::vector<Node*> first;
  {
    qs::transaction tx(db);
    db.root<Node*>("keep") = new (db) Node{1, nullptr};
    tx.commit();
  }
  {
    qs::transaction tx(db);
    for (int i = 0; i < 2000; ++i) first.push_back(new (db) Node{i, nullptr});  // several new pages
  }  // aborted: the pages and the space on them are not taken
  qs::transaction tx(db);
  for (int i = 0; i < 2000; ++i) REQUIRE(new (db) Node{i, nullptr} == first[static_cast<std::size_t>(i)]);
  CHECK(db.root<Node*>("keep")->value == 1);
  tx.commit();
}

TEST_CASE("the memory given ahead to new pages' frames goes back with release_cache") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options(1024));
  const std::uint64_t page = db.page_size();
  {
    qs::transaction tx(db);
    auto& head = db.root<Slab*>("slabs");
    for (std::uint64_t i = 0; i < 200; ++i) {  // a new page each
      Slab* s = new (db) Slab;
      s->value = i;
      s->next = head;
      head = s;
    }
    tx.commit();
  }
  qs::statistics st = db.stats();
  INFO(st.frame_memory_bytes << " bytes of frame memory, " << st.resident_pages << " resident pages");
  CHECK(st.frame_memory_bytes >= st.resident_pages * page);
  db.release_cache();
  st = db.stats();
  CHECK(st.resident_pages == 0);
  CHECK(st.frame_memory_bytes == 0);
  qs::transaction tx(db);
  std::uint64_t n = 0, wrong = 0;
  for (const Slab* s = db.root<Slab*>("slabs"); s; s = s->next, ++n) wrong += s->value != 199 - n;
  CHECK(n == 200);
  CHECK(wrong == 0);
}
