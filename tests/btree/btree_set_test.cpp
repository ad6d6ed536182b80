// qs::btree_set and qs::btree_multiset against std::set and std::multiset,
// on real databases: random inserts, erases and lookups in transactions that
// commit or abort, the database reopened every few transactions, check()
// and the whole contents compared after each. The same source runs in
// hardware mode (qs_btree_tests) and software mode (qs_btree_tests_software).
#include "btree_support.hpp"

#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

using namespace btree_test;
using namespace qs_test;

namespace {

template <class Set>
struct at_set_root {
  static Set& get(qs::database& db) { return db.root<Set>("set"); }
};

struct in_set_holder {
  static qs::btree_set<std::int64_t>& get(qs::database& db) {
    qs::ref<SetHolder>& h = db.root<qs::ref<SetHolder>>("holder");
    if (!h) h = new (db) SetHolder;
    BT_EXPECT(h->before == 0x1111 && h->after == 0x2222, "the holder's other members changed");
    return qs::write(h)->ids;
  }
};

// Set: the tree; Oracle: std::set or std::multiset of the same keys; Key(j):
// the j-th key; Place: where the tree is.
template <class Set, class Oracle, class Key, class Place>
void random_sets(test_dir& dir, std::uint64_t keys, int transactions, std::uint64_t seed) {
  constexpr bool multi = !std::is_same_v<Oracle, std::set<typename Oracle::key_type>>;
  std::mt19937_64 rng(seed);
  std::optional<qs::database> db;
  auto open = [&] { db.emplace(qs::database::open(dir.sub("db"), tree_options(8192, 256))); };
  Oracle oracle;
  auto same = [](auto view, const typename Oracle::key_type& k) { return view == k; };
  auto verify = [&](const char* when) {
    INFO(when);
    qs::transaction tx(*db);
    const Set& s = Place::get(*db);
    s.check();
    REQUIRE(s.size() == oracle.size());
    auto it = s.begin();
    for (const auto& k : oracle) {
      BT_EXPECT(it != s.end() && same(*it, k), "the set differs from the oracle");
      ++it;
    }
    BT_EXPECT(it == s.end(), "the set has more keys than the oracle");
    auto back = s.end();
    for (auto o = oracle.rbegin(); o != oracle.rend(); ++o) BT_EXPECT(same(*--back, *o), "backwards");
    tx.commit();
  };
  unsigned height = 0;
  open();
  for (int t = 0; t < transactions; ++t) {
    if (t > 0 && t % 5 == 0) {
      db.reset();
      open();
      verify("after a reopen");
    }
    Oracle saved = oracle;
    bool abort = rng() % 5 == 0;
    {
      qs::transaction tx(*db);
      Set& s = Place::get(*db);
      const int grow = t % 4 == 3 ? 20 : 60;  // mostly grow, sometimes shrink
      for (int i = 0; i < 300; ++i) {
        auto k = Key::make(rng() % keys);
        auto r = static_cast<int>(rng() % 100);
        if (r < grow) {
          auto [it, inserted] = s.insert(k);
          bool had = oracle.count(k) > 0;
          oracle.insert(k);
          BT_EXPECT(inserted == (multi || !had), "insert's bool");
          BT_EXPECT(same(*it, k), "insert's iterator");
        } else if (r < grow + 15) {
          BT_EXPECT(s.erase(k) == oracle.erase(k), "erase(key)'s count");
        } else if (r < grow + 25) {
          auto it = s.lower_bound(k);
          auto o = oracle.lower_bound(k);
          if (o == oracle.end()) {
            BT_EXPECT(it == s.end(), "lower_bound past the end");
            continue;
          }
          auto next = s.erase(it);
          o = oracle.erase(o);
          BT_EXPECT(o == oracle.end() ? next == s.end() : next != s.end() && same(*next, *o), "erase(it)'s next");
        } else {
          const Set& c = s;
          BT_EXPECT(c.contains(k) == (oracle.count(k) > 0), "contains");
          BT_EXPECT(c.count(k) == oracle.count(k), "count");
          auto [a, b] = c.equal_range(k);
          BT_EXPECT(static_cast<std::size_t>(std::distance(a, b)) == oracle.count(k), "equal_range");
          auto u = c.upper_bound(k);
          auto ou = oracle.upper_bound(k);
          BT_EXPECT(ou == oracle.end() ? u == c.end() : u != c.end() && same(*u, *ou), "upper_bound");
          auto f = c.find(k);
          BT_EXPECT(oracle.count(k) ? f != c.end() && same(*f, k) : f == c.end(), "find");
        }
      }
      height = std::max(height, s.height());
      if (abort) {
        tx.abort();
      } else {
        tx.commit();
      }
    }
    if (abort) oracle = std::move(saved);
    verify(abort ? "after an abort" : "after a commit");
  }
  CHECK(height >= 2);
  {
    qs::transaction tx(*db);
    Place::get(*db).clear();
    oracle.clear();
    tx.commit();
  }
  verify("after clear");
}

struct i64_key {
  static std::int64_t make(std::uint64_t j) { return static_cast<std::int64_t>(j) * 7 - 1000; }
};
struct string_key_of {
  static std::string make(std::uint64_t j) { return string_key(j); }
};
// Few words, each with many documents.
struct word_doc_key {
  static word_doc make(std::uint64_t j) { return {string_key(j % 97), static_cast<std::int64_t>(j / 97) - 5}; }
};

}  // namespace

TEST_CASE("btree_set and btree_multiset agree with std::set and std::multiset", "[btree][set]") {
  test_dir dir;
  SECTION("a set of integers, a named root") {
    random_sets<i64_set_512, std::set<std::int64_t>, i64_key, at_set_root<i64_set_512>>(dir, 2000, 24, 11);
  }
  SECTION("a multiset of integers, a named root") {
    random_sets<i64_multiset_512, std::multiset<std::int64_t>, i64_key, at_set_root<i64_multiset_512>>(dir, 300, 24,
                                                                                                       12);
  }
  SECTION("a set of strings") {
    random_sets<string_set_512, std::set<std::string>, string_key_of, at_set_root<string_set_512>>(dir, 2000, 24, 13);
  }
  SECTION("a multiset of strings, default nodes") {
    random_sets<string_multiset_default, std::multiset<std::string>, string_key_of,
                at_set_root<string_multiset_default>>(dir, 500, 30, 14);
  }
  SECTION("a set of (word, document) tuples") {
    random_sets<posting_set_512, std::set<word_doc>, word_doc_key, at_set_root<posting_set_512>>(dir, 3000, 24, 16);
  }
  SECTION("a set as a member of a persistent object") {
    random_sets<qs::btree_set<std::int64_t>, std::set<std::int64_t>, i64_key, in_set_holder>(dir, 5000, 30, 15);
  }
}
