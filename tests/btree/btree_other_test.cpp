// qs::btree_map beyond random operations: a tree larger than the buffer
// pool, kill -9 during commits that split nodes (btree_worker.cpp), nodes
// changed behind the tree's back, and the trees' lifecycle (a named root's
// first insert aborted, a database tree that is not in the database).
#include "btree_support.hpp"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace btree_test;
using namespace qs_test;

namespace {

// ---- a tree larger than the buffer pool

// The keys 0..n-1, in batches of neighbouring keys, each batch in a
// scattered order (7919 is a prime that divides no batch size used here).
std::int64_t batch_key(std::int64_t i, std::int64_t batch) { return i / batch * batch + i % batch * 7919 % batch; }

void large_tree_hardware() {
  test_dir dir;
  constexpr std::int64_t n = 300000, batch = 30000;
  const qs::options o = tree_options(8192, 64);  // a pool of 512 KiB; a batch alone needs more
  std::uint64_t evictions = 0;
  {
    auto db = qs::database::open(dir.sub("db"), o);
    for (std::int64_t b = 0; b < n / batch; ++b) {
      qs::transaction tx(db);
      auto& t = db.root<big_map>("big");
      for (std::int64_t i = b * batch; i < (b + 1) * batch; ++i) {
        std::int64_t k = batch_key(i, batch);
        BT_EXPECT(t.insert(k, 2 * k + 1).second, "key " << k);
      }
      tx.commit();
    }
    evictions = db.stats().evictions;
  }
  CHECK(evictions > 0);  // the tree did not fit in the pool
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    const big_map& t = db.root<big_map>("big");
    t.check();
    REQUIRE(t.size() == static_cast<std::size_t>(n));
    CHECK(t.height() >= 3);
    std::int64_t at = 0;
    for (auto [k, v] : t) {
      BT_EXPECT(k == at && v == 2 * k + 1, "entry " << at << ": " << k << ", " << v);
      ++at;
    }
    REQUIRE(at == n);
    // Lookups all over the tree, in a scattered order.
    for (std::int64_t i = 0; i < 40000; ++i) {
      std::int64_t k = i * 7919 % n;
      auto it = t.find(k);
      BT_EXPECT(it != t.end() && it->second == 2 * k + 1, "find " << k);
    }
    CHECK(t.find(n) == t.end());
    CHECK(t.find(-1) == t.end());
    CHECK(db.stats().resident_pages <= 64);
    tx.commit();
  }
  // Erase a third under the same pool: merges while pages come and go.
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    auto& t = db.root<big_map>("big");
    for (std::int64_t i = 0; i < n; i += 3) {
      std::int64_t k = batch_key(i, batch);
      BT_EXPECT(t.erase(k) == 1, "erase " << k);
    }
    tx.commit();
  }
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    const big_map& t = db.root<big_map>("big");
    t.check();
    REQUIRE(t.size() == static_cast<std::size_t>(n - (n + 2) / 3));
    for (std::int64_t i = 0; i < n; i += 5)
      BT_EXPECT(t.contains(batch_key(i, batch)) == (i % 3 != 0), "key " << batch_key(i, batch));
    tx.commit();
  }
}

// Software mode: a transaction's pages must fit in the pool, so the tree
// grows in batches of neighbouring keys and is read back in chunks, each in
// a transaction of its own; the whole tree is several times the pool.
void large_tree_software() {
  test_dir dir;
  constexpr std::int64_t n = 400000, batch = 25000;
  const qs::options o = tree_options(8192, 256);
  {
    auto db = qs::database::open(dir.sub("db"), o);
    for (std::int64_t b = 0; b < n / batch; ++b) {
      qs::transaction tx(db);
      auto& t = db.root<big_map>("big");
      for (std::int64_t j = 0; j < batch; ++j) {
        std::int64_t k = batch_key(b * batch + j, batch);
        BT_EXPECT(t.insert(k, 2 * k + 1).second, "key " << k);
      }
      tx.commit();
    }
  }
  auto db = qs::database::open(dir.sub("db"), o);
  for (std::int64_t b = 0; b < n / batch; ++b) {
    qs::transaction tx(db);
    const big_map& t = db.root<big_map>("big");
    REQUIRE(t.size() == static_cast<std::size_t>(n));
    auto it = t.lower_bound(b * batch);
    for (std::int64_t k = b * batch; k < (b + 1) * batch; ++k, ++it)
      BT_EXPECT(it != t.end() && it->first == k && it->second == 2 * k + 1, "chunk " << b << ", key " << k);
    for (std::int64_t k = b * batch; k < (b + 1) * batch; k += 97) BT_EXPECT(t.contains(k), "find " << k);
    tx.commit();
  }
  {
    qs::transaction tx(db);
    const big_map& t = db.root<big_map>("big");
    auto last = t.end();
    --last;
    CHECK(last->first == n - 1);
    CHECK(t.upper_bound(n - 1) == t.end());
    tx.commit();
  }
  CHECK(db.stats().evictions > 0);  // the chunks did not all fit in the pool
}

// ---- kill -9 during commits

qs::options crash_options() {
  qs::options o = small_options(2048);  // the worker's: software mode reads the whole tree in one transaction
  o.durable = true;
  return o;
}

process spawn_btree_worker(const std::vector<std::string>& args, const std::string& pause_at = "") {
  return spawn_program(QS_BTREE_WORKER, args, pause_at);
}

constexpr int crash_keys = 1500;  // per transaction: with 512-byte nodes, splits in every leaf

// Checks the database the worker left: both trees pass check() and hold
// exactly what the committed transactions (the root "count") put there.
// Returns the count.
std::int64_t check_crashed(const std::string& path) {
  auto db = qs::database::open(path, crash_options());
  qs::transaction tx(db);
  std::int64_t count = db.has_root("count") ? db.root<std::int64_t>("count") : 0;
  INFO("after " << count << " committed transactions");
  if (count > 0) {
    REQUIRE(db.has_root("map"));
    REQUIRE(db.has_root("strings"));
  }
  if (db.has_root("map")) {
    const crash_map& map = db.root<crash_map>("map");
    std::map<std::int64_t, std::int64_t> expect;
    for (std::int64_t c = 1; c <= count; ++c)
      for (std::int64_t i = 0; i < crash_keys; ++i)
        if (i % 3 != 0 || c + 2 > count) expect.emplace(crash_key(i, c), c);
    same_entries(map, expect);
  }
  if (db.has_root("strings")) {
    const crash_strings& strings = db.root<crash_strings>("strings");
    std::multimap<std::string, std::int64_t> expect;
    for (std::int64_t c = 1; c <= count; ++c)
      for (std::int64_t i = 0; i < crash_keys / 8; ++i) expect.emplace(crash_string(i, c), c);
    same_entries(strings, expect);
  }
  tx.commit();
  return count;
}

std::vector<std::string> grow(const std::string& db, int txns) {
  return {db, "grow", std::to_string(txns), std::to_string(crash_keys)};
}

// ---- nodes changed behind the tree's back

// The start of a tree's header object (qs/btree.hpp's btree_meta): the root,
// the first and the last leaf, the size, the height, the mark.
struct meta_view {
  qs::ref<qs::detail::btree_head> root, first, last;
  std::uint64_t size;
  std::uint32_t height, mark;
};

template <class Tree>
qs::ref<meta_view> header_of(const Tree& t) {
  static_assert(sizeof(Tree) == sizeof(qs::ref<meta_view>), "a tree is its header link");
  qs::ref<meta_view> h;
  std::memcpy(static_cast<void*>(&h), static_cast<const void*>(&t), sizeof h);
  return h;
}

}  // namespace

TEST_CASE("btree: an insert logs the entries it moves in its segment, not the half of the leaf after it",
          "[btree][log]") {
  test_dir dir;
  auto db = qs::database::open(dir.sub("db"), tree_options(8192, 256));
  constexpr std::int64_t n = 300;  // one leaf of 16-byte entries, loaded in random order
  static_assert(i64_multi_8160::leaf_capacity > n + 30);
  std::mt19937 rng(7);
  {
    std::vector<std::int64_t> keys;
    for (std::int64_t k = 0; k < n; ++k) keys.push_back(2 * k + 2);
    std::shuffle(keys.begin(), keys.end(), rng);
    qs::transaction tx(db);
    auto& t = db.root<i64_multi_8160>("t");
    for (std::int64_t k : keys) t.insert(k, k);
    tx.commit();
  }
  // 30 inserts, a transaction each, at random places among the 300.
  const qs::statistics s0 = db.stats();
  std::multimap<std::int64_t, std::int64_t> expect;
  for (std::int64_t k = 0; k < n; ++k) expect.emplace(2 * k + 2, 2 * k + 2);
  for (int r = 0; r < 30; ++r) {
    const std::int64_t k = 2 * static_cast<std::int64_t>(rng() % n) + 1;
    qs::transaction tx(db);
    db.root<i64_multi_8160>("t").insert(k, -k);
    expect.emplace(k, -k);
    tx.commit();
  }
  const qs::statistics s1 = db.stats();
  // One sorted array would move half the leaf's entries an insert: 2,400
  // bytes on average here. Within a segment of 63 it is a tenth of that,
  // and an occasional spread of the whole leaf.
  const double per_insert = static_cast<double>(s1.diff_bytes - s0.diff_bytes) / 30;
  INFO("bytes diffed per insert into a leaf of 300 entries: " << per_insert);
  CHECK(per_insert < 1000);
  qs::transaction tx(db);
  const auto& t = db.root<i64_multi_8160>("t");
  t.check();
  REQUIRE(t.size() == expect.size());
  auto it = expect.begin();
  for (auto [k, v] : t) {
    CHECK(k == it->first);
    CHECK(v == it->second);
    ++it;
  }
}

TEST_CASE("btree: a tree larger than the buffer pool", "[btree][large]") {
  if constexpr (qs::software_swizzling) large_tree_software();
  else large_tree_hardware();
}

TEST_CASE("btree: kill -9 at chosen points of a commit that splits nodes", "[btree][crash]") {
  struct point {
    const char* name;
    std::int64_t expect;  // transactions committed when killed in the third
  };
  const point points[] = {
      {"worker.mid:3", 2},
      {"commit.half_written:3", 2},
      {"commit.before_store_commit:3", 2},
      {"commit.after_store_commit:3", 3},
  };
  for (const point& p : points) {
    DYNAMIC_SECTION(p.name) {
      test_dir dir;
      std::string db = dir.sub("db");
      process c = spawn_btree_worker(grow(db, 5), p.name);
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      CHECK(check_crashed(db) == p.expect);
      check_verifies(db);
      // The database goes on working after recovery.
      process again = spawn_btree_worker(grow(db, 2));
      REQUIRE(again.wait() == 0);
      CHECK(check_crashed(db) == p.expect + 2);
      check_verifies(db);
    }
  }
}

TEST_CASE("btree: kill -9 at random moments", "[btree][crash]") {
  std::random_device seed_source;
  const unsigned seed = seed_source();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  test_dir dir;
  std::string db = dir.sub("db");
  std::int64_t before = 0;
  for (int round = 0; round < 4; ++round) {
    process c = spawn_btree_worker(grow(db, 15));
    long delay_ms = 30 + static_cast<long>(rng() % 400);
    INFO("round " << round << ", killed after " << delay_ms << " ms");
    timespec ts{delay_ms / 1000, (delay_ms % 1000) * 1000000};
    ::nanosleep(&ts, nullptr);
    c.kill9();
    int st = c.wait();
    CHECK((st == -SIGKILL || st == 0));
    std::int64_t count = check_crashed(db);
    CHECK(count >= before);
    check_verifies(db);
    before = count;
  }
  process again = spawn_btree_worker(grow(db, 1));
  REQUIRE(again.wait() == 0);
  CHECK(check_crashed(db) == before + 1);
}

TEST_CASE("btree: nodes changed behind the tree's back raise qs::corrupt_btree", "[btree][hostile]") {
  static_assert(std::is_base_of_v<qs::error, qs::corrupt_btree>);
  test_dir dir;
  const qs::options o = tree_options(8192, 256);
  constexpr std::int64_t n = 3000;
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    auto& t = db.root<crash_map>("t");
    for (std::int64_t i = 0; i < n; ++i) t.insert(i, i);
    REQUIRE(t.height() == 3);
    tx.commit();
  }
  // What to change, and whether a lookup must notice it (check() must).
  enum class change { leaf_count, leaf_fill, inner_level, leaf_mark, leaf_order, header_size, header_mark };
  struct kind {
    const char* name;
    change what;
    bool lookup_notices;
  };
  const kind kinds[] = {
      {"a leaf's count beyond its capacity", change::leaf_count, true},
      {"a leaf's segment holding more than its slots", change::leaf_fill, true},
      {"the root's level", change::inner_level, true},
      {"a leaf's mark", change::leaf_mark, true},
      {"two keys of a leaf swapped", change::leaf_order, false},
      {"the header's size", change::header_size, false},
      {"the header's mark", change::header_mark, false},
  };
  for (const kind& k : kinds) {
    DYNAMIC_SECTION(k.name) {
      {
        auto db = qs::database::open(dir.sub("db"), o);
        qs::transaction tx(db);
        qs::ref<meta_view> h = header_of(db.root<crash_map>("t"));
        switch (k.what) {
          case change::leaf_count: qs::write(h->first)->count = 60000; break;
          case change::leaf_fill: {
            // The fill counts follow the leaf's head and its two links.
            auto* bytes = reinterpret_cast<std::byte*>(qs::write(h->first));
            auto* fill = reinterpret_cast<std::uint16_t*>(bytes + sizeof(qs::detail::btree_head) +
                                                          2 * sizeof(qs::ref<qs::detail::btree_head>));
            // Segment 1's entries counted in segment 0: the count still adds up.
            fill[0] = static_cast<std::uint16_t>(fill[0] + fill[1]);
            fill[1] = 0;
            REQUIRE(fill[0] > crash_map::leaf_capacity / crash_map::leaf_segments);
            break;
          }
          case change::inner_level: qs::write(h->root)->level = 7; break;
          case change::leaf_mark: qs::write(h->last)->mark = 0x12345678; break;
          case change::leaf_order: {
            // The leaf's keys follow its head, its two links and its
            // segments' fill counts; the first segment's first two keys.
            auto* bytes = reinterpret_cast<std::byte*>(qs::write(h->first));
            auto* keys = reinterpret_cast<std::int64_t*>(bytes + sizeof(qs::detail::btree_head) +
                                                         2 * sizeof(qs::ref<qs::detail::btree_head>) +
                                                         2 * crash_map::leaf_segments);
            REQUIRE(keys[0] == 0);
            REQUIRE(keys[1] == 1);
            std::swap(keys[0], keys[1]);
            break;
          }
          case change::header_size: qs::write(h)->size += 1; break;
          case change::header_mark: qs::write(h)->mark = 0; break;
        }
        tx.commit();
      }
      auto db = qs::database::open(dir.sub("db"), o);
      qs::transaction tx(db);
      const crash_map& t = db.root<crash_map>("t");
      CHECK_THROWS_AS(t.check(), qs::corrupt_btree);
      CHECK_THROWS_WITH(t.check(), Catch::Contains("qs::btree_map"));
      if (k.lookup_notices) {
        std::int64_t key = k.what == change::leaf_mark ? n - 1 : 0;
        CHECK_THROWS_AS(t.find(key), qs::corrupt_btree);
        CHECK_THROWS_AS(t.lower_bound(key), qs::error);
        // So must a walk along the leaf links, in either direction.
        auto walk_forward = [&] {
          std::int64_t seen = 0;
          for (auto it = t.begin(); it != t.end(); ++it) ++seen;
          return seen;
        };
        auto walk_backward = [&] {
          std::int64_t seen = 0;
          for (auto it = t.end(); it != t.begin(); --it) ++seen;
          return seen;
        };
        if (k.what != change::inner_level) {
          CHECK_THROWS_AS(walk_forward(), qs::corrupt_btree);
          CHECK_THROWS_AS(walk_backward(), qs::corrupt_btree);
        }
      } else {
        CHECK(t.find(n / 2) != t.end());  // the lookup trusts what it cannot check
      }
    }
  }
}

TEST_CASE("btree: a leaf of the layout before segments is refused by name", "[btree][hostile]") {
  test_dir dir;
  auto o = tree_options(8192, 256);
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    auto& t = db.root<i64_multi_8160>("t");
    for (std::int64_t k = 0; k < 10; ++k) t.insert(k, k);
    qs::write(header_of(t)->first)->mark = qs::detail::btree_sorted_leaf_mark;
    tx.commit();
  }
  auto db = qs::database::open(dir.sub("db"), o);
  qs::transaction tx(db);
  const auto& t = db.root<i64_multi_8160>("t");
  CHECK_THROWS_AS(t.find(3), qs::corrupt_btree);
  CHECK_THROWS_WITH(t.find(3), Catch::Contains("before leaves had segments"));
  CHECK_THROWS_WITH(t.check(), Catch::Contains("before leaves had segments"));
}

TEST_CASE("btree: a database tree outside the database is refused", "[btree][lifecycle]") {
  test_dir dir;
  auto db = qs::database::open(dir.sub("db"), tree_options(8192, 64));
  std::string in_tx, out_of_tx;
  {
    qs::transaction tx(db);
    try {
      i64_map_4064 local;
      FAIL("a tree of database nodes was constructed on the stack");
    } catch (const qs::error& e) {
      in_tx = e.what();
    }
    tx.commit();
  }
  try {
    i64_multi_512 local;
    FAIL("a tree of database nodes was constructed on the stack");
  } catch (const qs::error& e) {
    out_of_tx = e.what();
  }
  INFO("a local tree, in a transaction: " << in_tx);
  INFO("a local tree, outside any transaction: " << out_of_tx);
  CHECK(in_tx.find("not persistent") != std::string::npos);
  CHECK(out_of_tx.find("not persistent") != std::string::npos);
  CHECK(in_tx.find("lives in a persistent object or a named root") != std::string::npos);
  CHECK(out_of_tx.find("qs::in_memory makes a transient tree") != std::string::npos);
  // A tree of in_memory nodes is the transient one.
  qs::btree_multimap<std::int64_t, std::int64_t, std::less<std::int64_t>, qs::in_memory<512>> mem;
  for (std::int64_t i = 0; i < 5000; ++i) mem.insert(i % 1000, i);
  mem.check();
  CHECK(mem.size() == 5000);
  CHECK(mem.count(7) == 5);
  CHECK(mem.erase(7) == 5);
  mem.check();
  // Erasing at end() is an error of the program, said as a qs::error.
  CHECK_THROWS_AS(mem.erase(mem.end()), qs::invalid_argument);
  CHECK(mem.size() == 4995);
}

TEST_CASE("btree: a named root's first insert, aborted, leaves an empty tree", "[btree][lifecycle]") {
  test_dir dir;
  const qs::options o = tree_options(4096, 256);
  {
    auto db = qs::database::open(dir.sub("db"), o);
    {
      qs::transaction tx(db);
      auto& t = db.root<string_multi_512>("t");
      for (std::int64_t i = 0; i < 500; ++i) t.insert(string_key(static_cast<std::uint64_t>(i)), i);
      REQUIRE(t.size() == 500);
      tx.abort();
    }
    {
      qs::transaction tx(db);
      const auto& t = db.root<string_multi_512>("t");
      CHECK(t.empty());
      CHECK(t.height() == 0);
      CHECK(t.begin() == t.end());
      CHECK(t.find("x") == t.end());
      t.check();
      tx.commit();
    }
    qs::transaction tx(db);
    auto& t = db.root<string_multi_512>("t");
    for (std::int64_t i = 0; i < 500; ++i) t.insert(string_key(static_cast<std::uint64_t>(i)), i);
    tx.commit();
  }
  {
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    auto& t = db.root<string_multi_512>("t");
    t.check();
    REQUIRE(t.size() == 500);
    // Emptied entry by entry, the tree is an empty tree again (no root).
    while (!t.empty()) t.erase(t.begin());
    CHECK(t.height() == 0);
    t.check();
    tx.commit();
  }
  auto db = qs::database::open(dir.sub("db"), o);
  qs::transaction tx(db);
  auto& t = db.root<string_multi_512>("t");
  t.check();
  CHECK(t.empty());
  t.insert("again", 1);
  CHECK(t.count("again") == 1);
  tx.commit();
}

TEST_CASE("btree: deleting the object that holds trees frees their nodes", "[btree][lifecycle]") {
  // (Software mode: the freed header no longer answers to its reference.)
  test_dir dir;
  const qs::options o = tree_options(8192, 256);
  auto db = qs::database::open(dir.sub("db"), o);
  qs::ref<meta_view> header;
  for (int round = 0; round < 3; ++round) {
    {
      qs::transaction tx(db);
      qs::ref<Holder> h = new (db) Holder;
      for (std::int64_t i = 0; i < 3000; ++i) {
        qs::ref<Item> it = new (db) Item;
        qs::write(it)->id = i;
        qs::write(h)->by_id.insert(i, it);
        qs::write(h)->by_name.insert(string_key(static_cast<std::uint64_t>(i)), i);
      }
      db.root<qs::ref<Holder>>("h") = h;
      tx.commit();
    }
    {
      qs::transaction tx(db);
      qs::ref<Holder> h = db.root<qs::ref<Holder>>("h");
      h->by_id.check();
      h->by_name.check();
      REQUIRE(h->by_id.size() == 3000);
      REQUIRE(h->by_id.find(1234)->second->id == 1234);
      header = header_of(h->by_id);
      delete &*h;
      db.root<qs::ref<Holder>>("h") = nullptr;
      tx.commit();
    }
    qs::transaction tx(db);
    CHECK(!db.root<qs::ref<Holder>>("h"));
    if constexpr (qs::software_swizzling) CHECK_THROWS_AS(header->size, qs::dangling_reference);
    tx.commit();
  }
}
