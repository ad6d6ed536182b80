// Named roots.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

using namespace qs_test;

TEST_CASE("roots are found by name across runs") {
  test_dir dir;
  for (int run = 1; run <= 3; ++run) {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    auto& counter = db.root<std::int64_t>("counter");
    auto& list = db.root<Node*>("list");
    CHECK(counter == run - 1);
    counter += 1;
    list = new (db) Node{run, list};
    tx.commit();
  }
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  CHECK(db.has_root("list"));
  CHECK_FALSE(db.has_root("nothing"));
  int expect = 3;
  for (Node* n = db.root<Node*>("list"); n; n = n->next) CHECK(n->value == expect--);
  CHECK(expect == 0);
  tx.commit();
}

TEST_CASE("a root asked for with another type is refused") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  db.root<Node*>("list");
  tx.commit();
  CHECK_THROWS_AS(db.root<std::int64_t>("list"), qs::root_type_mismatch);
  CHECK_THROWS_WITH(db.root<Pair*>("list"), Catch::Contains("qs_test::Node*"));
}

TEST_CASE("an error from inside the runtime names its database once and first") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  auto said = [&](auto&& f) {
    try {
      f();
    } catch (const qs::error& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  const std::string name = "database " + db.path() + ": ";
  auto once = [&](const std::string& text) {
    INFO(text);
    CHECK(text.starts_with(name));
    CHECK(text.find(db.path(), name.size()) == std::string::npos);
  };
  // Thrown by a component (the roots) and by the transaction engine.
  once(said([&] { db.root<Node*>("list"); }));
  {
    qs::transaction tx(db);
    db.root<Node*>("list");
    tx.commit();
  }
  once(said([&] { db.root<std::int64_t>("list"); }));
  once(said([&] {
    qs::transaction tx(db);
    tx.commit();
    tx.commit();
  }));
}

TEST_CASE("creating a root needs a transaction; an aborted one leaves none") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  CHECK_THROWS_AS(db.root<Node*>("r"), qs::no_transaction);
  {
    qs::transaction tx(db);
    db.root<Node*>("r") = new (db) Node{1, nullptr};
  }
  CHECK_FALSE(db.has_root("r"));
}
