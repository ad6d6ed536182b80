// Tuple keys (qs/btree_keys.hpp): a map keyed by a short string and two
// numbers, ordered part by part as std::tuple orders, across reopens; and a
// lookup by a word alone, as an index of postings does it.
#include "btree_support.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

using namespace btree_test;
using namespace qs_test;

TEST_CASE("tuple keys order part by part, strings as bytes, and outlive the process", "[btree][tuple]") {
  test_dir dir;
  std::map<std::tuple<std::string, std::int32_t, std::int64_t>, std::int64_t> oracle;
  const char* names[] = {"", "a", "ab", "abcdefgh", "abcdefghi", "b", "\xff", "zz-longer-than-eight"};
  {
    auto db = qs::database::open(dir.sub("db"), tree_options(8192, 256));
    qs::transaction tx(db);
    auto& t = db.root<triple_map_512>("t");
    std::int64_t v = 0;
    for (const char* n : names)
      for (std::int32_t part = 3; part >= -3; --part)
        for (std::int64_t serial : {std::int64_t{1} << 40, std::int64_t{7}, std::int64_t{-1}}) {
          CHECK(t.insert({n, part, serial}, v).second);
          oracle[{n, part, serial}] = v++;
        }
    // A map refuses a key it has, whatever its value.
    CHECK_FALSE(t.insert({"ab", 0, 7}, -5).second);
    tx.commit();
  }
  auto db = qs::database::open(dir.sub("db"), tree_options(8192, 256));
  qs::transaction tx(db);
  auto& t = db.root<triple_map_512>("t");
  t.check();
  REQUIRE(t.size() == oracle.size());
  CHECK(t.height() >= 2);
  auto it = std::as_const(t).begin();
  for (const auto& [k, v] : oracle) {
    REQUIRE(it != std::as_const(t).end());
    auto [name, part, serial] = (*it).first;
    CHECK(std::tuple(std::string(name), part, serial) == k);
    CHECK((*it).second == v);
    ++it;
  }
  CHECK(it == std::as_const(t).end());
  // Every key of a name: from (name, lowest, lowest) to before the next name.
  auto lo = t.lower_bound({"abcdefgh", INT32_MIN, INT64_MIN});
  auto hi = t.lower_bound({"abcdefghi", INT32_MIN, INT64_MIN});
  CHECK(std::distance(lo, hi) == 21);
  CHECK(std::get<0>((*lo).first) == "abcdefgh");
  CHECK(t.find({"abcdefgh", 4, 7}) == t.end());
  CHECK(t.at({"zz-longer-than-eight", -3, 7}) == oracle.at({"zz-longer-than-eight", -3, 7}));
  CHECK(t.erase({"", 0, -1}) == 1);
  CHECK_FALSE(t.contains({"", 0, -1}));
  t.check();
  tx.commit();
}
