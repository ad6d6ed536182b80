// btree_support.hpp: what the qs::btree_map tests share: database options
// by page size, failing a test without Catch's cost per assertion in
// loops of hundreds of thousands of operations, and a tree's entries
// walked against an ordered model.
#pragma once

#include "btree_types.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

namespace btree_test {

// Fails the test case with `what` when cond is false: one Catch assertion
// when it fails, none when it holds (the loops check millions of things).
#define BT_EXPECT(cond, what)                                               \
  do {                                                                      \
    if (!(cond)) FAIL("expected " #cond " (" << __LINE__ << "): " << what); \
  } while (0)

inline qs::options tree_options(std::uint32_t page_size, std::uint32_t pool_pages) {
  qs::options o = qs_test::small_options(pool_pages);
  o.page_size = page_size;
  return o;
}

// Checks the tree (check()) and walks it against `model`, an ordered
// container of (key, value) pairs (a std::map, or a std::set of pairs):
// the same entries in the same order.
template <class Tree, class Model>
void same_entries(const Tree& t, const Model& model) {
  t.check();
  REQUIRE(t.size() == model.size());
  auto e = model.begin();
  for (auto [k, v] : t) {
    BT_EXPECT(k == e->first && v == e->second,
              "(" << k << ", " << v << "), expected (" << e->first << ", " << e->second << ")");
    ++e;
  }
}

// The key spaces of the tests, from an index j.
inline std::string string_key(std::uint64_t j) {
  switch (j % 5) {
    case 0: return std::to_string(j);                                     // short
    case 1: return "common-prefix-" + std::to_string(j);                  // past 8 bytes, within 24
    case 2: return std::string(26, 'x') + std::to_string(j);              // past 24: decided out of line
    case 3: return std::string(j % 41, 'a');                              // prefixes of each other, "" too
    default: return "\xc3\xa9t\xff" + std::to_string(j * 7919 % 100000);  // bytes above 0x7f
  }
}

}  // namespace btree_test
