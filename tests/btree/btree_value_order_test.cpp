// A multimap's equal keys in the order of their values: iteration shows
// them so, erase_value finds an entry by one descent however many entries
// share its key, and an order that a value changed through an iterator
// broke leaves erase_value right, only slower.
#include "btree_support.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

using namespace btree_test;
using namespace qs_test;

namespace {

using entry = std::pair<std::int64_t, std::int64_t>;

}  // namespace

TEST_CASE("btree: a multimap keeps equal keys in the order of their values", "[btree][multimap]") {
  test_dir dir;
  auto db = qs::database::open(dir.sub("db"), tree_options(8192, 256));
  std::mt19937_64 rng(31);
  // Three keys, each with runs of values longer than many leaves, inserted
  // in a shuffled order: the tree's order is the model's (key, value).
  std::vector<entry> entries;
  for (std::int64_t k : {5, 7, 9})
    for (std::int64_t v = 0; v < 3000; ++v) entries.push_back({k, v * 3 + k});
  std::shuffle(entries.begin(), entries.end(), rng);
  std::set<entry> model;
  {
    qs::transaction tx(db);
    auto& t = db.root<i64_multi_512>("t");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      auto [it, inserted] = t.insert(entries[i].first, entries[i].second);
      REQUIRE(inserted);
      REQUIRE((*it).first == entries[i].first);
      REQUIRE((*it).second == entries[i].second);
      model.insert(entries[i]);
      if (i % 1000 == 0) same_entries(t, model);
    }
    same_entries(t, model);
    CHECK(t.height() >= 3);
    tx.commit();
  }
  // Every entry removed by value in another shuffled order, and values
  // that are not there refused.
  std::shuffle(entries.begin(), entries.end(), rng);
  qs::transaction tx(db);
  auto& t = db.root<i64_multi_512>("t");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto [k, v] = entries[i];
    BT_EXPECT(t.erase_value(k, v), "erase_value(" << k << ", " << v << ")");
    model.erase(entries[i]);
    BT_EXPECT(!t.erase_value(k, v), "erase_value(" << k << ", " << v << ") a second time");
    BT_EXPECT(!t.erase_value(k, v + 1 + 3 * 3000), "erase_value(" << k << ", a value never there)");
    if (i % 1000 == 0) same_entries(t, model);
  }
  same_entries(t, model);
  CHECK(t.empty());
}

TEST_CASE("btree: erase_value reads a few nodes, not every leaf of its key", "[btree][multimap]") {
  test_dir dir;
  constexpr std::int64_t n = 200000;
  // No prefetch: every page read is one the lookup asked for.
  qs::options o = tree_options(8192, 4096);
  o.prefetch_pages = 0;
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    auto& t = db.root<i64_multi_512>("t");
    for (std::int64_t v = 0; v < n; ++v) t.insert(7, v);
    t.insert(3, 0);
    t.insert(11, 0);
    tx.commit();
  }
  // A new process's view: nothing resident. The entries of key 7 fill
  // thousands of leaves on hundreds of pages; one descent, which looks at
  // the first entry of a few subtrees on its way, reads a few dozen.
  auto db = qs::database::open(dir.sub("db"), o);
  qs::transaction tx(db);
  auto& t = db.root<i64_multi_512>("t");
  const qs::statistics s0 = db.stats();
  REQUIRE(t.erase_value(7, n - 1000));
  const qs::statistics s1 = db.stats();
  const std::uint64_t read = (s1.pages_fetched - s1.pages_prefetched) - (s0.pages_fetched - s0.pages_prefetched);
  INFO("pages read for one erase_value among " << n << " equal keys: " << read << " (height " << t.height() << ")");
  CHECK(read <= 40);
  CHECK(t.count(7) == static_cast<std::size_t>(n - 1));
  CHECK(!t.erase_value(7, n - 1000));
  t.check();
}

TEST_CASE("btree: a value changed through an iterator is still found by erase_value", "[btree][multimap]") {
  test_dir dir;
  auto db = qs::database::open(dir.sub("db"), tree_options(8192, 256));
  qs::transaction tx(db);
  auto& t = db.root<i64_multi_512>("t");
  for (std::int64_t v = 0; v < 2000; ++v) t.insert(4, v);
  // The first entry's value becomes the largest: the values' order is
  // broken, and the descent for it lands at the end of the key's run.
  auto first = t.find(4);
  (*first).second = 1000000;
  REQUIRE(t.erase_value(4, 1000000));
  REQUIRE(!t.erase_value(4, 0));
  REQUIRE(t.erase_value(4, 1));
  REQUIRE(t.erase_value(4, 1999));
  CHECK(t.count(4) == 1997);
  t.check();
}
