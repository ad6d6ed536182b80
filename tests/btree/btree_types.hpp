// btree_types.hpp: the persistent types of the qs::btree_map tests, built in
// hardware mode (qs_btree_tests, qs_btree_worker) and in software mode
// (qs_btree_tests_software, qs_btree_worker_software) from the same sources;
// schema-gen describes them and the tree node types they instantiate.
#pragma once

#include <qs/btree.hpp>
#include <qs/qs.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>

namespace btree_test {

struct Item {
  QS_PERSISTENT(Item)
  std::int64_t id = 0;
};

// An enum key; the tests use values beyond the named ones too.
enum class colour : std::uint16_t { red, green, blue };

// A fixed-size key with a comparator of its own: ordered by (b, a).
struct pair_key {
  std::int32_t a = 0, b = 0;
};
struct pair_order {
  bool operator()(const pair_key& x, const pair_key& y) const { return x.b != y.b ? x.b < y.b : x.a < y.a; }
};

template <std::size_t Bytes>
using nodes = qs::in_database<Bytes>;

// The trees of the randomized tests (named roots unless in Holder).
using i64_multi_512 = qs::btree_multimap<std::int64_t, std::int64_t, std::less<std::int64_t>, nodes<512>>;
using i64_map_4064 = qs::btree_map<std::int64_t, std::int64_t, std::less<std::int64_t>, nodes<4064>>;
using i64_multi_8160 = qs::btree_multimap<std::int64_t, std::int64_t, std::less<std::int64_t>, nodes<8160>>;
using colour_multi_512 = qs::btree_multimap<colour, std::int64_t, std::less<colour>, nodes<512>>;
using pair_map_512 = qs::btree_map<pair_key, std::int64_t, pair_order, nodes<512>>;
using string_multi_512 = qs::btree_multimap<std::string, std::int64_t, std::less<std::string>, nodes<512>>;
using short_string_map_512 = qs::btree_map<qs::inline_string<8>, qs::ref<Item>, std::less<>, nodes<512>>;
using short_string_multi_default = qs::btree_multimap<qs::inline_string<8>, std::int64_t>;

// The sets of the randomized set tests (named roots, and in SetHolder).
using i64_set_512 = qs::btree_set<std::int64_t, std::less<std::int64_t>, nodes<512>>;
using i64_multiset_512 = qs::btree_multiset<std::int64_t, std::less<std::int64_t>, nodes<512>>;
using string_set_512 = qs::btree_set<std::string, std::less<std::string>, nodes<512>>;
using string_multiset_default = qs::btree_multiset<std::string>;
// Tuple keys: a word and a document (an index's postings), and a short
// name, a part and a serial number.
using word_doc = std::tuple<std::string, std::int64_t>;
using posting_set_512 = qs::btree_set<word_doc, std::less<word_doc>, nodes<512>>;
using triple_key = std::tuple<qs::inline_string<8>, std::int32_t, std::int64_t>;
using triple_map_512 = qs::btree_map<triple_key, std::int64_t, std::less<>, nodes<512>>;

// The large tree (more pages than the buffer pool), of default nodes.
using big_map = qs::btree_map<std::int64_t, std::int64_t>;

// The crash worker's trees.
using crash_map = qs::btree_map<std::int64_t, std::int64_t, std::less<std::int64_t>, nodes<512>>;
using crash_strings = qs::btree_multimap<qs::inline_string<8>, std::int64_t, std::less<>, nodes<512>>;

// The worker's keys: transaction c's i-th key, interleaved with every other
// transaction's (c < 1000).
inline std::int64_t crash_key(std::int64_t i, std::int64_t c) { return i * 1000 + c; }
inline std::string crash_string(std::int64_t i, std::int64_t c) {
  std::string n = std::to_string(i);
  return "key-" + std::string(6 - std::min<std::size_t>(n.size(), 6), '0') + n + "-" + std::to_string(c);
}

// Trees as members of a persistent object.
struct Holder {
  QS_PERSISTENT(Holder)
  std::int64_t before = 0x1111;  // the tree must not spill over its neighbours
  qs::btree_map<std::int64_t, qs::ref<Item>, std::less<std::int64_t>, nodes<512>> by_id;
  qs::btree_multimap<std::string, std::int64_t> by_name;
  std::int64_t after = 0x2222;
};

// A set as a member of a persistent object.
struct SetHolder {
  QS_PERSISTENT(SetHolder)
  std::int64_t before = 0x1111;
  qs::btree_set<std::int64_t> ids;
  std::int64_t after = 0x2222;
};

}  // namespace btree_test
