// Randomized operations on qs::btree_map and qs::btree_multimap against
// std::multimap, on real databases: transactions that commit or abort, the
// database closed and opened again every few transactions, check() and the
// whole contents compared after each transaction. The same source runs in
// hardware mode (qs_btree_tests) and software mode (qs_btree_tests_software).
#include "btree_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

using namespace btree_test;
using namespace qs_test;

namespace {

// ---- key kinds: the oracle's key for index j, and how to compare a tree's
// key view with it.

struct i64_keys {
  using okey = std::int64_t;
  using ocompare = std::less<std::int64_t>;
  static okey key(std::uint64_t j) { return static_cast<std::int64_t>(j) * 3 - 5000; }
  static bool same(std::int64_t a, const okey& b) { return a == b; }
  static std::string show(const okey& k) { return std::to_string(k); }
};

struct colour_keys {
  using okey = colour;
  using ocompare = std::less<colour>;
  static okey key(std::uint64_t j) { return static_cast<colour>(j); }
  static bool same(colour a, const okey& b) { return a == b; }
  static std::string show(const okey& k) { return std::to_string(static_cast<unsigned>(k)); }
};

struct pair_keys {
  using okey = pair_key;
  using ocompare = pair_order;
  static okey key(std::uint64_t j) {
    return {static_cast<std::int32_t>(j % 37) - 10, static_cast<std::int32_t>(j / 37) - 20};
  }
  static bool same(const pair_key& a, const okey& b) { return a.a == b.a && a.b == b.b; }
  static std::string show(const okey& k) { return "(" + std::to_string(k.a) + "," + std::to_string(k.b) + ")"; }
};

struct string_keys {
  using okey = std::string;
  using ocompare = std::less<std::string>;
  static okey key(std::uint64_t j) { return string_key(j); }
  static bool same(std::string_view a, const okey& b) { return a == b; }
  static std::string show(const okey& k) { return "\"" + k + "\""; }
};

// ---- value kinds: the oracle keeps an int64 id; the tree an integer or a
// reference to an Item holding the id.

struct int_values {
  using type = std::int64_t;
  static type make(qs::database&, std::int64_t id) { return id; }
  static std::int64_t id(const type& v) { return v; }
};

struct item_values {
  using type = qs::ref<Item>;
  static type make(qs::database& db, std::int64_t id) {
    qs::ref<Item> it = new (db) Item;
    qs::write(it)->id = id;
    return it;
  }
  static std::int64_t id(const type& v) { return v ? v->id : -1; }
};

// ---- where the tree is: a named root, or a member of a Holder (a named
// root's object).

template <class Tree>
struct at_root {
  static Tree& writable(qs::database& db) { return db.root<Tree>("tree"); }
  static const Tree& readable(qs::database& db) { return db.root<Tree>("tree"); }
  static void check_neighbours(qs::database&) {}
};

template <class Tree, Tree Holder::*Member>
struct in_holder {
  static qs::ref<Holder> holder(qs::database& db) {
    qs::ref<Holder>& h = db.root<qs::ref<Holder>>("holder");
    if (!h) h = new (db) Holder;
    return h;
  }
  static Tree& writable(qs::database& db) { return (*qs::write(holder(db))).*Member; }
  static const Tree& readable(qs::database& db) { return (*holder(db)).*Member; }
  static void check_neighbours(qs::database& db) {
    qs::ref<Holder> h = holder(db);
    BT_EXPECT(h->before == 0x1111 && h->after == 0x2222, "the holder's other members changed");
  }
};

// BT_TRACE=1 prints every operation and checks the tree after each.
const bool trace = std::getenv("BT_TRACE") != nullptr;

struct run_config {
  std::uint32_t page_size = 8192;
  std::uint32_t pool_pages = 256;
  int transactions = 40;
  int ops = 300;              // per transaction
  std::uint64_t keys = 3000;  // key indexes 0..keys-1
  int reopen_every = 5;       // transactions
  int abort_percent = 20;
  unsigned min_height = 2;      // the tree must reach this height at some point
  bool rare_key_erase = false;  // erase(key) removes a long run: do fewer
  std::uint64_t seed = 1;
};

template <class Tree, class Keys, class Values, class Place, bool Multi>
class random_run {
 public:
  using okey = typename Keys::okey;
  using oracle_t = std::multimap<okey, std::int64_t, typename Keys::ocompare>;
  using V = typename Values::type;
  static_assert(std::is_same_v<typename Tree::mapped_type, V>);

  explicit random_run(test_dir& dir, const run_config& c) : dir_(dir), cfg_(c), rng_(c.seed) {}

  void run() {
    open();
    for (int t = 0; t < cfg_.transactions; ++t) {
      if (t > 0 && t % cfg_.reopen_every == 0) {
        db_.reset();
        open();
        verify("after a reopen");
      }
      transaction(t);
    }
    db_.reset();
    open();
    verify("at the end");
    CHECK(max_height_ >= cfg_.min_height);
    CHECK(commits_ > 0);
    CHECK(aborts_ > 0);
    db_.reset();
  }

 private:
  void open() { db_.emplace(qs::database::open(dir_.sub("db"), tree_options(cfg_.page_size, cfg_.pool_pages))); }

  void transaction(int t) {
    qs::database& db = *db_;
    oracle_t saved = oracle_;
    std::int64_t saved_id = next_id_;
    bool abort = static_cast<int>(rng_() % 100) < cfg_.abort_percent;
    // Grow, mix or shrink: the tree goes up and down, through splits and merges.
    int phase = t % 4 == 3 ? 2 : t % 4 == 2 ? 1 : 0;
    {
      qs::transaction tx(db);
      Tree& tree = Place::writable(db);
      if (rng_() % 12 == 0) {
        tree.clear();
        oracle_.clear();
        BT_EXPECT(tree.empty() && tree.height() == 0, "clear left " << tree.size() << " entries");
      }
      for (int i = 0; i < cfg_.ops; ++i) {
        op_ = "transaction " + std::to_string(t) + " op " + std::to_string(i);
        try {
          step(db, tree, phase);
          if (trace) std::as_const(tree).check();
        } catch (const std::exception& e) {
          FAIL(op_ << ": " << e.what());
        }
        max_height_ = std::max(max_height_, std::as_const(tree).height());
      }
      BT_EXPECT(std::as_const(tree).size() == oracle_.size(),
                "size " << std::as_const(tree).size() << ", oracle " << oracle_.size());
      if (abort) {
        std::as_const(tree).check();
        tx.abort();
      } else {
        tx.commit();
      }
    }
    if (abort) {
      oracle_ = std::move(saved);
      next_id_ = saved_id;
      ++aborts_;
      verify("after an abort");
    } else {
      ++commits_;
      verify("after a commit");
    }
  }

  // Checks the tree and compares it with the oracle, in a transaction of its
  // own that reads only.
  void verify(const char* when) {
    INFO(when << ", after " << commits_ << " commits and " << aborts_ << " aborts");
    qs::database& db = *db_;
    qs::transaction tx(db);
    const Tree& tree = Place::readable(db);
    tree.check();
    Place::check_neighbours(db);
    REQUIRE(tree.size() == oracle_.size());
    REQUIRE(tree.empty() == oracle_.empty());
    REQUIRE((tree.height() == 0) == oracle_.empty());
    auto it = tree.begin();
    std::size_t n = 0;
    for (const auto& [k, v] : oracle_) {
      BT_EXPECT(it != tree.end(), "the tree ends after " << n << " entries of " << oracle_.size());
      BT_EXPECT(Keys::same(it->first, k) && Values::id(it->second) == v,
                "entry " << n << ": (" << show(it) << "), expected (" << Keys::show(k) << ", " << v << ")");
      ++it;
      ++n;
    }
    BT_EXPECT(it == tree.end(), "the tree has more than " << n << " entries");
    // Backwards, through the leaves' prev links.
    auto back = tree.end();
    for (auto o = oracle_.rbegin(); o != oracle_.rend(); ++o) {
      --back;
      BT_EXPECT(Keys::same(back->first, o->first) && Values::id(back->second) == o->second,
                "backwards: (" << show(back) << "), expected " << Keys::show(o->first));
    }
    BT_EXPECT(back == tree.begin(), "backwards: not at begin()");
    // A range-for over the const tree.
    std::size_t counted = 0;
    for (auto [k, v] : tree) {
      (void)k;
      (void)v;
      ++counted;
    }
    REQUIRE(counted == oracle_.size());
    tx.commit();
  }

  template <class It>
  static std::string show(const It& it) {
    std::ostringstream s;
    s << Keys::show(okey(it->first));
    s << ", " << Values::id(it->second);
    return s.str();
  }

  using citer = typename Tree::const_iterator;
  using oiter = typename oracle_t::const_iterator;

  // The tree's position and the oracle's name the same entry.
  void same_position(const Tree& tree, citer it, oiter o, const char* what) {
    if (o == oracle_.end()) {
      BT_EXPECT(it == tree.end(),
                op_ << ": " << what << ": the oracle is at the end, the tree at (" << show(it) << ")");
      return;
    }
    BT_EXPECT(it != tree.end(),
              op_ << ": " << what << ": the tree is at the end, the oracle at " << Keys::show(o->first));
    BT_EXPECT(Keys::same(it->first, o->first) && Values::id(it->second) == o->second,
              op_ << ": " << what << ": (" << show(it) << "), expected (" << Keys::show(o->first) << ", " << o->second
                  << ")");
  }

  // Walks up to `steps` entries forward from both positions.
  void walk_forward(const Tree& tree, citer it, oiter o, unsigned steps) {
    for (unsigned s = 0; s < steps && o != oracle_.end(); ++s) {
      ++it;
      ++o;
      same_position(tree, it, o, "forward");
    }
  }
  void walk_backward(const Tree& tree, citer it, oiter o, unsigned steps) {
    for (unsigned s = 0; s < steps && o != oracle_.begin(); ++s) {
      --it;
      --o;
      same_position(tree, it, o, "backward");
    }
    if (o == oracle_.begin()) BT_EXPECT(it == tree.begin(), op_ << ": backward: not at begin()");
  }

  void step(qs::database& db, Tree& tree, int phase) {
    const Tree& ct = tree;
    okey k = Keys::key(rng_() % cfg_.keys);
    unsigned r = static_cast<unsigned>(rng_() % 100);
    // Percentages of inserts and erases by phase: grow, mix, shrink.
    static constexpr unsigned inserts[] = {50, 28, 10};
    static constexpr unsigned erases[] = {12, 25, 45};
    if (trace) std::fprintf(stderr, "%s: r %u key %s\n", op_.c_str(), r, Keys::show(k).c_str());
    if (r < inserts[phase]) return insert(db, tree, k);
    r -= inserts[phase];
    if (r < erases[phase]) return erase(tree, k);
    // Lookups.
    unsigned which = static_cast<unsigned>(rng_() % 7);
    if (trace) std::fprintf(stderr, "  lookup %u\n", which);
    switch (which) {
      case 0: {  // find, contains
        citer it = ct.find(k);
        auto o = oracle_.lower_bound(k);
        bool found = o != oracle_.end() && !oracle_.key_comp()(k, o->first);
        BT_EXPECT(ct.contains(k) == found, op_ << ": contains " << Keys::show(k));
        if (found) same_position(ct, it, o, "find");
        else BT_EXPECT(it == ct.end(), op_ << ": find " << Keys::show(k) << " found (" << show(it) << ")");
        if constexpr (!Multi) {
          if (found) {
            BT_EXPECT(Values::id(ct.at(k)) == o->second, op_ << ": at");
          } else {
            bool threw = false;
            try {
              (void)ct.at(k);
            } catch (const std::out_of_range&) {
              threw = true;
            }
            BT_EXPECT(threw, op_ << ": at of an absent key");
          }
        }
        break;
      }
      case 1: {
        citer it = ct.lower_bound(k);
        auto o = oracle_.lower_bound(k);
        same_position(ct, it, o, "lower_bound");
        walk_forward(ct, it, o, static_cast<unsigned>(rng_() % 40));
        break;
      }
      case 2: {
        citer it = ct.upper_bound(k);
        auto o = oracle_.upper_bound(k);
        same_position(ct, it, o, "upper_bound");
        walk_forward(ct, it, o, static_cast<unsigned>(rng_() % 40));
        break;
      }
      case 3: {
        BT_EXPECT(ct.count(k) == oracle_.count(k),
                  op_ << ": count " << Keys::show(k) << ": " << ct.count(k) << ", expected " << oracle_.count(k));
        auto [a, b] = ct.equal_range(k);
        auto [oa, ob] = oracle_.equal_range(k);
        same_position(ct, a, oa, "equal_range first");
        same_position(ct, b, ob, "equal_range second");
        for (; oa != ob; ++oa, ++a) same_position(ct, a, oa, "equal_range");
        BT_EXPECT(a == b, op_ << ": equal_range is longer than the oracle's");
        break;
      }
      case 4: {  // backwards from upper_bound, or from end()
        bool from_end = rng_() % 4 == 0;
        citer it = from_end ? ct.end() : ct.upper_bound(k);
        auto o = from_end ? oracle_.cend() : oiter(oracle_.upper_bound(k));
        walk_backward(ct, it, o, static_cast<unsigned>(rng_() % 40));
        break;
      }
      case 5: {  // forward from begin()
        same_position(ct, ct.begin(), oracle_.begin(), "begin");
        walk_forward(ct, ct.begin(), oracle_.begin(), static_cast<unsigned>(rng_() % 20));
        break;
      }
      default: {  // a non-const iterator's value, read and written back
        if constexpr (std::is_same_v<V, std::int64_t>) {
          auto it = tree.lower_bound(k);
          auto o = oracle_.lower_bound(k);
          same_position(ct, it, o, "lower_bound (non-const)");
          if (o != oracle_.end()) {
            std::int64_t id = next_id_++;
            (*it).second = id;
            o->second = id;
          }
        }
        break;
      }
    }
  }

  void insert(qs::database& db, Tree& tree, const okey& k) {
    std::int64_t id = next_id_++;
    auto o = oracle_.lower_bound(k);
    bool existed = o != oracle_.end() && !oracle_.key_comp()(k, o->first);
    unsigned how = static_cast<unsigned>(rng_() % (Multi ? 3 : 5));
    if (trace) std::fprintf(stderr, "  insert how %u existed %d\n", how, int(existed));
    if (!Multi && how >= 3) {
      if constexpr (!Multi) {
        if (existed) o->second = id;
        else o = oracle_.emplace_hint(o, k, id);
        if (how == 3) {  // operator[]
          V v = Values::make(db, id);
          tree[k] = v;
        } else {
          auto [it, inserted] = tree.insert_or_assign(k, Values::make(db, id));
          BT_EXPECT(inserted == !existed, op_ << ": insert_or_assign's bool");
          same_position(tree, it, o, "insert_or_assign's iterator");
        }
        same_position(tree, std::as_const(tree).find(k), o, "after operator[] / insert_or_assign");
      }
      return;
    }
    if (!Multi && existed && how != 0) {  // a refused insert allocates no Item
      auto [it, inserted] = how == 1 ? tree.insert(k, V{}) : tree.emplace(k, V{});
      BT_EXPECT(!inserted, op_ << ": inserted a key the map has: " << Keys::show(k));
      same_position(tree, it, o, "refused insert");
      return;
    }
    V v = Values::make(db, id);
    std::pair<typename Tree::iterator, bool> r;
    if (how == 0) r = tree.insert(k, v);
    else if (how == 1) r = tree.insert(std::pair<okey, V>(k, v));
    else r = tree.emplace(k, v);
    if (Multi || !existed) {
      BT_EXPECT(r.second, op_ << ": insert refused " << Keys::show(k));
      auto at = oracle_.insert(oracle_.upper_bound(k), {k, id});
      same_position(tree, r.first, at, "insert's iterator");
    } else {
      BT_EXPECT(!r.second, op_ << ": inserted a key the map has: " << Keys::show(k));
      same_position(tree, r.first, o, "refused insert");
    }
  }

  void erase(Tree& tree, const okey& k) {
    const Tree& ct = tree;
    unsigned how = static_cast<unsigned>(rng_() % (Multi && std::is_same_v<V, std::int64_t> ? 4 : 3));
    if (how == 0 && cfg_.rare_key_erase && rng_() % 8 != 0) how = 1;
    if (trace) std::fprintf(stderr, "  erase how %u\n", how);
    if (how == 0) {  // by key
      std::size_t n = tree.erase(k);
      std::size_t on = oracle_.erase(k);
      BT_EXPECT(n == on, op_ << ": erase(" << Keys::show(k) << ") removed " << n << ", expected " << on);
      return;
    }
    if (how == 3) {  // erase_value: an entry there, or a value not there
      if constexpr (Multi && std::is_same_v<V, std::int64_t>) {
        auto [oa, ob] = oracle_.equal_range(k);
        std::int64_t v = -1;
        auto n = static_cast<std::size_t>(std::distance(oa, ob));
        if (n > 0 && rng_() % 5 != 0) v = std::next(oa, static_cast<std::ptrdiff_t>(rng_() % n))->second;
        auto o = std::find_if(oa, ob, [&](const auto& e) { return e.second == v; });
        bool erased = tree.erase_value(k, v);
        BT_EXPECT(erased == (o != ob), op_ << ": erase_value(" << Keys::show(k) << ", " << v << ")");
        if (o != ob) oracle_.erase(o);
      }
      return;
    }
    // At an iterator: the lower bound of k, a few entries on; erase returns
    // the entry after it.
    auto o = oracle_.lower_bound(k);
    if (o == oracle_.end()) return;
    for (unsigned s = static_cast<unsigned>(rng_() % 4); s > 0 && std::next(o) != oracle_.end(); --s) ++o;
    citer at = ct.find(o->first);
    for (auto e = oracle_.lower_bound(o->first); e != o; ++e) ++at;
    same_position(ct, at, o, "the entry to erase");
    typename Tree::iterator next;
    if (how == 1) {
      next = tree.erase(at);
    } else {  // through a non-const iterator
      typename Tree::iterator w = tree.lower_bound(o->first);
      for (auto e = oracle_.lower_bound(o->first); e != o; ++e) ++w;
      next = tree.erase(w);
    }
    auto onext = oracle_.erase(o);
    same_position(ct, next, onext, "erase's iterator");
  }

  test_dir& dir_;
  run_config cfg_;
  std::mt19937_64 rng_;
  std::optional<qs::database> db_;
  oracle_t oracle_;
  std::int64_t next_id_ = 1;
  unsigned max_height_ = 0;
  int commits_ = 0, aborts_ = 0;
  std::string op_;
};

template <class T>
struct is_multi;
template <class K, class V, class C, class N, bool M>
struct is_multi<qs::detail::basic_btree<K, V, C, N, M>> : std::bool_constant<M> {};

// One row of the table below: a tree type, what its keys and values are,
// where it lives, and its run.
template <class Tree, class Keys, class Values, class Place = at_root<Tree>>
struct random_case {
  const char* what;
  run_config config;
  void run() const {
    test_dir dir;
    random_run<Tree, Keys, Values, Place, is_multi<Tree>::value>(dir, config).run();
  }
};

using holder_by_id = decltype(Holder::by_id);
using holder_by_name = decltype(Holder::by_name);

// The random cases: node sizes from 512 bytes (deep trees) to a page, page
// sizes from 4 to 16 KiB, maps and multimaps of every key kind, at a root
// and inside a persistent object.
const auto random_cases = std::make_tuple(
    random_case<i64_multi_512, i64_keys, int_values>{
        "int64 multimap, 512-byte nodes (deep), 4 KiB pages",
        {.page_size = 4096, .transactions = 240, .ops = 800, .keys = 4000, .min_height = 3, .seed = 11}},
    random_case<i64_map_4064, i64_keys, int_values>{
        "int64 map, 4064-byte nodes, 8 KiB pages, operator[] and insert_or_assign",
        {.page_size = 8192, .transactions = 160, .ops = 800, .keys = 3000, .min_height = 2, .seed = 12}},
    random_case<i64_multi_8160, i64_keys, int_values>{
        "int64 multimap, 8160-byte nodes, 16 KiB pages",
        {.page_size = 16384, .transactions = 160, .ops = 1000, .keys = 20000, .min_height = 2, .seed = 13}},
    random_case<colour_multi_512, colour_keys, int_values>{
        "enum class keys, many equal keys, 512-byte nodes",  // runs of equal keys longer than a leaf
        {.page_size = 8192,
         .transactions = 160,
         .ops = 1000,
         .keys = 150,
         .min_height = 3,
         .rare_key_erase = true,
         .seed = 14}},
    random_case<pair_map_512, pair_keys, int_values>{
        "struct keys with their own order, 512-byte nodes, 4 KiB pages",
        {.page_size = 4096, .transactions = 160, .ops = 600, .keys = 3000, .min_height = 3, .seed = 15}},
    random_case<string_multi_512, string_keys, int_values>{
        "std::string keys (24 inline bytes), 512-byte nodes",
        {.page_size = 8192, .transactions = 160, .ops = 600, .keys = 2000, .min_height = 3, .seed = 16}},
    random_case<short_string_map_512, string_keys, item_values>{
        "inline_string<8> keys, qs::ref values, 512-byte nodes, 4 KiB pages",
        {.page_size = 4096, .transactions = 160, .ops = 600, .keys = 2000, .min_height = 3, .seed = 17}},
    random_case<short_string_multi_default, string_keys, int_values>{
        "inline_string<8> multimap, default nodes, 16 KiB pages",
        {.page_size = 16384, .transactions = 120, .ops = 800, .keys = 3000, .min_height = 2, .seed = 18}},
    random_case<holder_by_id, i64_keys, item_values, in_holder<holder_by_id, &Holder::by_id>>{
        "a map in a persistent object, qs::ref values, 512-byte nodes",
        {.page_size = 16384, .transactions = 160, .ops = 600, .keys = 3000, .min_height = 3, .seed = 19}},
    random_case<holder_by_name, string_keys, int_values, in_holder<holder_by_name, &Holder::by_name>>{
        "a string multimap in a persistent object, default nodes",
        {.page_size = 8192, .transactions = 120, .ops = 600, .keys = 3000, .min_height = 2, .seed = 20}});

// Each row in a section of its own: a run of the test case runs one row,
// and a failure names it.
template <class Row>
void run_in_section(const Row& row) {
  SECTION(row.what) { row.run(); }
}

}  // namespace

TEST_CASE("btree random: every row of the table", "[btree][random]") {
  std::apply([](const auto&... row) { (run_in_section(row), ...); }, random_cases);
}
