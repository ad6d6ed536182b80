// Relocation: pages that cannot take their old frames get others, and the
// pointers to them are rewritten through the mapping objects.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <sys/mman.h>

using namespace qs_test;

namespace {

constexpr int pairs = 20000;  // about 80 pages

// A list of Pairs linked by `right`; each pair's `left` points to the pair
// whose key is half its own, usually on another page. And a large object.
void build(qs::database& db) {
  qs::transaction tx(db);
  std::vector<Pair*> all;
  Pair* head = nullptr;
  for (int i = 0; i < pairs; ++i) {
    head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    head->left = i ? all[static_cast<std::size_t>(i / 2)] : head;
    all.push_back(head);
  }
  db.root<Pair*>("pairs") = head;
  Blob* b = new (db) Blob;
  for (std::uint64_t w = 0; w < 40000; ++w) b->words[w] = w ^ 0x5a5a;
  b->self = b;
  db.root<Blob*>("blob") = b;
  tx.commit();
}

// Checks every value and pointer; returns the number of pairs seen.
int verify(qs::database& db, bool update) {
  qs::transaction tx(db);
  int n = 0;
  for (Pair* p = db.root<Pair*>("pairs"); p; p = p->right, ++n) {
    REQUIRE(p->left != nullptr);
    REQUIRE(p->left->key % 1000000 == (p->key % 1000000) / 2);
    if (update) p->key += 1000000;
  }
  Blob* b = db.root<Blob*>("blob");
  REQUIRE(b->self == b);
  for (std::uint64_t w = 0; w < 40000; w += 97) REQUIRE(b->words[w] == (w ^ 0x5a5a));
  tx.commit();
  return n;
}

qs::options with(qs::relocation policy, unsigned percent) {
  qs::options o = small_options(32);
  o.relocation_policy = policy;
  o.force_relocation_percent = percent;
  return o;
}

}  // namespace

TEST_CASE("every page relocated on fault-in, under each policy: every pointer and value is right") {
  for (auto policy : {qs::relocation::continual, qs::relocation::one_time}) {
    DYNAMIC_SECTION((policy == qs::relocation::continual ? "continual" : "one-time")) {
      test_dir dir;
      {
        auto db = qs::database::open(dir.path(), with(policy, 0));
        build(db);
      }
      {
        // At home: a page names none of the small pages it points to, and
        // nothing is rewritten.
        auto db = qs::database::open(dir.path(), with(policy, 0));
        CHECK(verify(db, false) == pairs);
        auto s = db.stats();
        CHECK(s.pages_relocated == 0);
        // Only the large object's page (its pointer to itself) names a run;
        // the small pool fetches it more than once.
        CHECK(s.mapping_fetches * 10 < s.pages_fetched);
      }
      {
        // Every page moves; a read-only traversal.
        auto db = qs::database::open(dir.path(), with(policy, 100));
        CHECK(verify(db, false) == pairs);
        auto s = db.stats();
        CHECK(s.pages_relocated >= 80);
        CHECK(s.pointers_relocated >= pairs);
        if (policy == qs::relocation::continual) CHECK(s.pages_written == 0);
        else CHECK(s.pages_written >= 80);  // written back with their new pointers
      }
      {
        // Moved again, and updated: relocated pages are written whole.
        auto db = qs::database::open(dir.path(), with(policy, 100));
        CHECK(verify(db, true) == pairs);
      }
      auto db = qs::database::open(dir.path(), with(policy, 0));
      CHECK(verify(db, false) == pairs);
      qs::transaction tx(db);
      CHECK(db.root<Pair*>("pairs")->key == 1000000 + pairs - 1);
      tx.commit();
    }
  }
}

TEST_CASE("part of the pages relocated: the rest keep their frames") {
  test_dir dir;
  {
    auto db = qs::database::open(dir.path(), with(qs::relocation::continual, 0));
    build(db);
  }
  auto db = qs::database::open(dir.path(), with(qs::relocation::continual, 20));
  CHECK(verify(db, true) == pairs);
  auto s = db.stats();
  CHECK(s.pages_relocated > 0);
  CHECK(s.pages_relocated < s.pages_fetched);
}

TEST_CASE("a reservation smaller than the database: read and written whole over several transactions") {
  test_dir dir;
  qs::options o = small_options(32);
  o.reservation_bytes = 64 * 8192;  // 64 frames; the database grows to about 170 pages
  constexpr int lists = 8, per_list = 5000;
  {
    auto db = qs::database::open(dir.path(), o);
    for (int l = 0; l < lists; ++l) {
      qs::transaction tx(db);
      auto& head = db.root<Node*>("list" + std::to_string(l));
      for (int i = 0; i < per_list; ++i) head = new (db) Node{i, head};
      tx.commit();
    }
    CHECK(db.stats().frame_resets > 0);
  }
  for (int round = 1; round <= 2; ++round) {
    auto db = qs::database::open(dir.path(), o);
    for (int l = 0; l < lists; ++l) {
      qs::transaction tx(db);
      std::int64_t expect = per_list - 1 + (round - 1) * 10, count = 0;
      for (Node* n = db.root<Node*>("list" + std::to_string(l)); n; n = n->next, --expect, ++count) {
        REQUIRE(n->value == expect);
        n->value += 10;
      }
      CHECK(count == per_list);
      tx.commit();
    }
    CHECK(db.stats().frame_resets > 0);
  }
  SECTION("one transaction that needs more frames than there are is refused") {
    auto db = qs::database::open(dir.path(), o);
    qs::transaction tx(db);
    CHECK_THROWS_AS(
        [&] {
          for (int l = 0; l < lists; ++l)
            for (Node* n = db.root<Node*>("list" + std::to_string(l)); n; n = n->next) touch(n->value);
        }(),
        qs::reservation_full);
  }
}

TEST_CASE("the preferred base address is taken before the database opens") {
  test_dir dir;
  std::uintptr_t base = 0;
  {
    auto db = qs::database::open(dir.path(), small_options());
    build(db);
    qs::transaction tx(db);
    Pair* p = db.root<Pair*>("pairs");
    while (p->right) p = p->right;  // the first pair created: on the first frame
    base = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{db.page_size() - 1};
    tx.commit();
  }
  void* squatter =
      mmap(reinterpret_cast<void*>(base), 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  REQUIRE(squatter == reinterpret_cast<void*>(base));
  {
    auto db = qs::database::open(dir.path(), small_options());
    CHECK(verify(db, true) == pairs);
    CHECK(db.stats().pages_relocated > 0);
    qs::transaction tx(db);
    CHECK_FALSE(db.contains(squatter));
    tx.commit();
  }
  munmap(squatter, 8192);
  auto db = qs::database::open(dir.path(), small_options());
  CHECK(verify(db, false) == pairs);
}

TEST_CASE("two databases created at the same address are open in one process at once") {
  test_dir dir;
  // Each made by a process of its own, so both chose the same preferred base.
  for (const char* name : {"a", "b"}) {
    auto c = spawn_worker({dir.sub(name), "grow", "2", "3000", "64"});
    REQUIRE(c.wait() == 0);
  }
  auto a = qs::database::open(dir.sub("a"), small_options());
  auto b = qs::database::open(dir.sub("b"), small_options());
  qs::transaction ta(a);
  qs::transaction tb(b);
  for (qs::database* db : {&a, &b}) {
    int n = 0;
    for (Node* p = db->root<Node*>("list"); p; p = p->next, ++n) REQUIRE(p->value / 1000000 == 2);
    CHECK(n == 6000);
    CHECK(db->contains(db->root<Node*>("list")));
  }
  CHECK(a.stats().pages_relocated + b.stats().pages_relocated > 0);
  tb.commit();
  ta.commit();
}

TEST_CASE("pages at home: a page's pointers give the pages they lead to no entries until they are reached") {
  test_dir dir;
  constexpr int n = 200;
  {
    auto db = qs::database::open(dir.path(), with(qs::relocation::continual, 0));
    qs::transaction tx(db);
    // n far pairs, each beside a Slab (nearly a page): on pages of their own.
    std::vector<Pair*> far;
    for (int i = 0; i < n; ++i) {
      new (db) Slab{};
      far.push_back(new (db) Pair{nullptr, static_cast<std::uint64_t>(i), nullptr});
    }
    // A hub list on a page or two, each element pointing to a far pair.
    Pair* hub = nullptr;
    for (int i = 0; i < n; ++i) hub = new (db) Pair{far[static_cast<std::size_t>(i)], 0, hub};
    db.root<Pair*>("hub") = hub;
    tx.commit();
  }
  qs::options o = with(qs::relocation::continual, 0);
  o.prefetch_pages = 0;
  o.pool_pages = 512;
  {
    auto db = qs::database::open(dir.path(), o);
    qs::transaction tx(db);
    std::uint64_t far_keys = 0;
    int count = 0;
    for (Pair* p = db.root<Pair*>("hub"); p; p = p->right, ++count) touch(p->key);
    CHECK(count == n);
    auto s = db.stats();
    CHECK(s.known_pages <= 4);  // the hub's pages, and no page they point to
    CHECK(s.mapping_fetches == 0);
    CHECK(s.pages_relocated == 0);
    for (Pair* p = db.root<Pair*>("hub"); p; p = p->right) far_keys += p->left->key;
    CHECK(far_keys == std::uint64_t{n} * (n - 1) / 2);
    CHECK(db.stats().known_pages >= n / 2);  // reached, each given an entry
    tx.commit();
  }
  {
    // A pool smaller than what is reached: entries go with the pages evicted.
    qs::options small = o;
    small.pool_pages = 32;
    auto again = qs::database::open(dir.path(), small);
    for (int round = 0; round < 2; ++round) {
      qs::transaction t(again);
      std::uint64_t keys = 0;
      for (Pair* p = again.root<Pair*>("hub"); p; p = p->right) keys += p->left->key;
      CHECK(keys == std::uint64_t{n} * (n - 1) / 2);
      t.commit();
    }
    auto after = again.stats();
    CHECK(after.pages_fetched >= 2 * std::uint64_t{n} / 2);
    CHECK(after.known_pages <= 2 * 32);  // what is resident, and what was evicted since the last fault
  }
}
