// Indexes: Berkeley DB B-trees from keys to persistent objects, updated in
// the objects' transaction.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

using namespace qs_test;

TEST_CASE("a unique index finds objects by key and refuses a second entry for a key") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  {
    qs::transaction tx(db);
    qs::index<int, Node> by_value(db, "by_value", qs::unique);
    for (int i = -50; i < 50; ++i) by_value.insert(i, new (db) Node{i, nullptr});
    CHECK_THROWS_AS(by_value.insert(7, new (db) Node{7, nullptr}), qs::duplicate_key);
    tx.commit();
  }
  db = qs::database::open(dir.sub("x"), small_options());
  db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  qs::index<int, Node> by_value(db, "by_value", qs::unique);
  REQUIRE(by_value.find(-13) != nullptr);
  CHECK(by_value.find(-13)->value == -13);
  CHECK(by_value.find(50) == nullptr);
  std::vector<int> keys;
  by_value.range(-3, 2, [&](int k, Node* n) {
    CHECK(n->value == k);
    keys.push_back(k);
    return true;
  });
  CHECK(keys == std::vector<int>{-3, -2, -1, 0, 1, 2});
  CHECK(by_value.erase(0, by_value.find(0)));
  CHECK(by_value.find(0) == nullptr);
  tx.commit();
}

TEST_CASE("a non-unique index keeps every object of a key; string keys sort as bytes") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  qs::index<std::string, Node> by_name(db, "by_name");
  std::vector<Node*> a;
  for (int i = 0; i < 5; ++i) a.push_back(new (db) Node{i, nullptr}), by_name.insert("alpha", a.back());
  by_name.insert("beta", new (db) Node{10, nullptr});
  by_name.insert("Zulu", new (db) Node{11, nullptr});
  int n = 0;
  by_name.find_all("alpha", [&](Node* x) { n += x->value < 5; });
  CHECK(n == 5);
  CHECK(by_name.erase("alpha", a[2]));
  CHECK_FALSE(by_name.erase("alpha", a[2]));
  n = 0;
  by_name.find_all("alpha", [&](Node*) { ++n; });
  CHECK(n == 4);
  std::vector<std::string> order;
  by_name.range("A", "z", [&](const std::string& k, Node*) {
    if (order.empty() || order.back() != k) order.push_back(k);
    return true;
  });
  CHECK(order == std::vector<std::string>{"Zulu", "alpha", "beta"});
  tx.commit();
}

TEST_CASE("index updates commit and abort with their transaction") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  {
    qs::transaction tx(db);
    qs::index<std::uint64_t, Node> ix(db, "ix", qs::unique);
    ix.insert(1, new (db) Node{1, nullptr});
    tx.commit();
  }
  {
    qs::transaction tx(db);
    qs::index<std::uint64_t, Node> ix(db, "ix", qs::unique);
    ix.insert(2, new (db) Node{2, nullptr});
    ix.erase(1, ix.find(1));
  }  // aborted
  qs::transaction tx(db);
  qs::index<std::uint64_t, Node> ix(db, "ix", qs::unique);
  CHECK(ix.find(2) == nullptr);
  REQUIRE(ix.find(1) != nullptr);
  CHECK(ix.find(1)->value == 1);
  CHECK_THROWS_AS((qs::index<std::uint64_t, Node>(db, "ix", qs::duplicates)), qs::invalid_argument);
  tx.commit();
}

TEST_CASE("an index first opened in a transaction that aborts works afterwards") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  {
    qs::transaction tx(db);
    qs::index<int, Node> byid(db, "byid", qs::unique);
    byid.insert(1, new (db) Node{1, nullptr});
    tx.abort();
  }
  qs::transaction tx(db);
  qs::index<int, Node> byid(db, "byid", qs::unique);
  Node* p = new (db) Node{2, nullptr};
  CHECK_NOTHROW(byid.insert(2, p));
  CHECK(byid.find(2) == p);
  CHECK(byid.find(1) == nullptr);  // the aborted entry is gone
  tx.commit();
}
