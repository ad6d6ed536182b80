// qs_btree_bench: an ordered map of integer keys in four forms, measured side
// by side in one run, hot: qs::btree_map in a qs database (hardware mode,
// an embedded store), the same tree on plain memory (qs::in_memory), a
// std::map, and qs::index (a Berkeley DB B-tree of the database's store).
//
//   qs_btree_bench [--keys N] [--dir DIR]
//
// For each form, N distinct int64 keys (default 1,000,000) in a random order:
//   insert   N inserts in one transaction, then its commit (shown apart)
//   lookup   N finds in another random order, every key present
//   scan     one ordered pass over every entry, summing the values
// "Hot" means the database's pages are resident: the lookups and the scan
// run in a transaction that has already touched every page once (a pass
// that is not timed). The ratios are to the in-memory tree.
//
// Then the qs tree cold: opened again (nothing resident) with a buffer
// pool of a quarter of its pages, 20,000 random lookups (--cold-lookups),
// with prefetch off and with each prefetch_order, three rounds of each
// (--cold-rounds) taking turns, the median shown. For each: the
// time per lookup, the pages it fetches (with what prefetch read ahead),
// their ratio to the pages a lookup touches (its faults with prefetch
// off), and how many pages prefetch read, watched and saw used.
// The files stay in the OS cache (dropping it needs root; scripts/peers
// does where it can).
//
// Last, a durable load (--load-keys, default 1,000,000): string keys
// ("key-" and ten digits, in random order) in batches of 10,000, each batch
// a durable commit, into a qs::btree_map<std::string, int64> and into a
// qs::index<std::string, Item> (every key to one object), each in a
// database of its own: the time, the commits' share of it, and the store's
// log bytes per key.
//
// Then postings: a multimap from each of 1,000 keys to 1,000 values (a
// word's occurrences, --postings keys of as many values), loaded in random
// order, of which 20,000 random entries (key, value) are removed, hot:
// erase_value in qs::btree_multimap, in a qs database and in memory, beside
// the walk along the key's entries that finds the value (what erase_value
// did while equal keys stayed in insertion order; std::multimap's only
// way).
//
// Not a test: it prints numbers and asserts only that every form found
// every key.
#include "bench_dir.hpp"

#include <qs/btree.hpp>
#include <qs/qs.hpp>

#include <qs/cli/cli.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace btree_bench {

// What the Berkeley DB index maps keys to (it holds references).
struct Item {
  QS_PERSISTENT(Item)
  std::int64_t value;
};

using tree = qs::btree_map<std::int64_t, std::int64_t>;
using string_tree = qs::btree_map<std::string, std::int64_t>;
using memory_tree = qs::btree_map<std::int64_t, std::int64_t, std::less<std::int64_t>, qs::in_memory<>>;
using postings = qs::btree_multimap<std::int64_t, std::int64_t>;
using memory_postings = qs::btree_multimap<std::int64_t, std::int64_t, std::less<std::int64_t>, qs::in_memory<>>;

}  // namespace btree_bench

using namespace btree_bench;

namespace {

using clock_type = std::chrono::steady_clock;
double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

struct result {
  const char* name;
  double insert_ns = 0, commit_ms = 0, lookup_ns = 0, scan_ns = 0;
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "qs_btree_bench: %s\n", what);
  std::exit(1);
}

template <class Map>
void measure_inserts(Map& m, const std::vector<std::int64_t>& keys, result& r) {
  auto t0 = clock_type::now();
  for (std::int64_t k : keys) m.insert({k, k * 3});
  r.insert_ns = ns_since(t0) / static_cast<double>(keys.size());
}

// Times the lookups and the ordered scan; returns the scan's sum, having
// checked that the lookups found the same values.
template <class Map>
std::int64_t measure_reads(const Map& m, const std::vector<std::int64_t>& probes, result& r) {
  auto t0 = clock_type::now();
  std::int64_t sum = 0;
  for (std::int64_t k : probes) sum += m.find(k)->second;
  r.lookup_ns = ns_since(t0) / static_cast<double>(probes.size());
  t0 = clock_type::now();
  std::int64_t total = 0;
  for (auto it = m.begin(), e = m.end(); it != e; ++it) total += (*it).second;
  r.scan_ns = ns_since(t0) / static_cast<double>(probes.size());
  if (sum != total) fail("a lookup found the wrong value");
  return total;
}

qs::options bench_options() {
  qs::options o;
  o.durable = false;  // the CPU's cost, not the disk's flush
  return o;
}

// Random lookups in the tree at `path`, opened afresh with a pool of
// `pool` pages and the given prefetch (0 pages: off).
struct cold_result {
  const char* name;
  double lookup_us = 0, touched = 0, fetched = 0, prefetch_ms = 0;
  std::uint64_t prefetched = 0, watched = 0, used = 0;
};
cold_result cold_lookups(const std::string& path, std::uint32_t pool, const char* name, std::uint32_t prefetch,
                         qs::prefetch_order order, const std::vector<std::int64_t>& probes) {
  qs::options o = bench_options();
  o.pool_pages = pool;
  o.prefetch_pages = prefetch;
  o.prefetch_along = order;
  auto db = qs::database::open(path, o);
  qs::transaction tx(db);
  const tree& t = db.root<tree>("tree");
  const qs::statistics s0 = db.stats();
  auto t0 = clock_type::now();
  std::int64_t sum = 0;
  for (std::int64_t k : probes) sum += t.find(k)->second;
  const double ns = ns_since(t0);
  const qs::statistics s1 = db.stats();
  tx.commit();
  std::int64_t want = 0;
  for (std::int64_t k : probes) want += k * 3;
  if (sum != want) fail("a cold lookup found the wrong value");
  const auto per = [&](std::uint64_t v) { return static_cast<double>(v) / static_cast<double>(probes.size()); };
  cold_result r{name};
  r.lookup_us = ns / 1e3 / static_cast<double>(probes.size());
  r.prefetched = s1.pages_prefetched - s0.pages_prefetched;
  r.watched = s1.prefetch_watched - s0.prefetch_watched;
  r.used = s1.prefetched_used - s0.prefetched_used;
  r.touched = per(s1.read_faults - s0.read_faults);  // the pages touched, when prefetch is off
  r.fetched = per(s1.pages_fetched - s0.pages_fetched);
  r.prefetch_ms = static_cast<double>(s1.prefetch_ns - s0.prefetch_ns) / 1e6;
  return r;
}

// A durable load of `keys` in batches of `batch`, each a transaction that
// commits durably: into a qs::btree_map, or a qs::index.
struct load_result {
  const char* name;
  double seconds = 0, commit_seconds = 0, log_per_key = 0;
};
template <class Insert>
load_result durable_load(const char* name, const std::string& path, const std::vector<std::string>& keys,
                         std::size_t batch, Insert insert) {
  qs::options o;
  o.durable = true;
  auto db = qs::database::open(path, o);
  load_result r{name};
  const std::uint64_t log0 = db.stats().log_bytes;
  auto t0 = clock_type::now();
  double commits = 0;
  for (std::size_t at = 0; at < keys.size(); at += batch) {
    qs::transaction tx(db);
    for (std::size_t i = at; i < std::min(keys.size(), at + batch); ++i)
      insert(db, keys[i], static_cast<std::int64_t>(i));
    auto c0 = clock_type::now();
    tx.commit();
    commits += ns_since(c0);
  }
  r.seconds = ns_since(t0) / 1e9;
  r.commit_seconds = commits / 1e9;
  r.log_per_key = static_cast<double>(db.stats().log_bytes - log0) / static_cast<double>(keys.size());
  return r;
}

// Removes each of `gone` from m, by erase_value or by a walk along its
// key; ns per removal.
template <class Multi>
double erase_by_value(Multi& m, const std::vector<std::pair<std::int64_t, std::int64_t>>& gone) {
  auto t0 = clock_type::now();
  for (const auto& [k, v] : gone)
    if (!m.erase_value(k, v)) fail("erase_value missed an entry");
  return ns_since(t0) / static_cast<double>(gone.size());
}
template <class Multi>
double erase_by_walk(Multi& m, const std::vector<std::pair<std::int64_t, std::int64_t>>& gone) {
  auto t0 = clock_type::now();
  for (const auto& [k, v] : gone) {
    auto it = m.lower_bound(k);
    while (it != m.end() && (*it).first == k && (*it).second != v) ++it;
    if (it == m.end() || (*it).first != k) fail("the walk missed an entry");
    m.erase(it);
  }
  return ns_since(t0) / static_cast<double>(gone.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000;
  std::size_t cold_n = 20000;
  std::size_t cold_rounds = 3;
  std::string dir;
  qs::cli::app app(
      "qs::btree_map in a qs database beside the same tree in memory, std::map and\n"
      "qs::index: N inserts, lookups and an ordered scan of each, hot.\n",
      "qs_btree_bench");
  app.add_option("--keys", n, "distinct int64 keys, 1 to 10000000 (default 1000000)")
      ->type_name("N")
      ->check(qs::cli::whole(1, 10000000));
  app.add_option("--cold-lookups", cold_n, "random lookups of the cold phase, 1 to 10000000 (default 20000)")
      ->type_name("N")
      ->check(qs::cli::whole(1, 10000000));
  app.add_option("--cold-rounds", cold_rounds,
                 "rounds of the cold phase, each setting once a round, the median shown, 1 to 99 (default 3)")
      ->type_name("N")
      ->check(qs::cli::whole(1, 99));
  std::size_t load_n = 1000000;
  app.add_option("--load-keys", load_n, "string keys of the durable load, 0 to 10000000 (default 1000000)")
      ->type_name("N")
      ->check(qs::cli::whole(0, 10000000));
  std::size_t postings_n = 1000;
  app.add_option("--postings", postings_n,
                 "keys of the postings phase, each with as many values, 0 to 3000 (default 1000)")
      ->type_name("N")
      ->check(qs::cli::whole(0, 3000));
  app.add_option("--dir", dir, "where the database goes (default: a temporary directory, removed)")->type_name("DIR");
  if (auto status = app.parse(argc, argv)) return *status;
  const qs::bench::bench_dir work(dir, "qs_btree_bench");
  dir = work.path();

  std::vector<std::int64_t> keys(n);
  std::iota(keys.begin(), keys.end(), std::int64_t{0});
  for (auto& k : keys) k = k * 2 + 1;
  std::mt19937_64 rng(42);
  std::shuffle(keys.begin(), keys.end(), rng);
  std::vector<std::int64_t> probes = keys;
  std::shuffle(probes.begin(), probes.end(), rng);

  std::vector<result> results;

  {
    result r{"qs::btree_map in memory"};
    memory_tree m;
    measure_inserts(m, keys, r);
    measure_reads(m, probes, r);
    results.push_back(r);
  }
  {
    result r{"std::map"};
    std::map<std::int64_t, std::int64_t> m;
    measure_inserts(m, keys, r);
    measure_reads(m, probes, r);
    results.push_back(r);
  }
  std::uint64_t tree_pages = 0;
  {
    result r{"qs::btree_map in qs"};
    auto db = qs::database::open(dir + "/tree", bench_options());
    {
      qs::transaction tx(db);
      measure_inserts(db.root<tree>("tree"), keys, r);
      auto t0 = clock_type::now();
      tx.commit();
      r.commit_ms = ns_since(t0) / 1e6;
      tree_pages = db.stats().pages_written;
    }
    qs::transaction tx(db);
    const tree& t = db.root<tree>("tree");
    std::int64_t warm = 0;
    for (auto it = t.begin(); it != t.end(); ++it) warm += (*it).second;  // every page resident
    if (measure_reads(t, probes, r) != warm) fail("the qs tree found the wrong value");
    tx.commit();
    results.push_back(r);
  }
  {
    result r{"qs::index (Berkeley DB)"};
    auto db = qs::database::open(dir + "/index", bench_options());
    {
      qs::transaction tx(db);
      Item* item = new (db) Item{1};
      qs::index<std::int64_t, Item> ix(db, "ix", qs::unique);
      auto t0 = clock_type::now();
      for (std::int64_t k : keys) ix.insert(k, item);
      r.insert_ns = ns_since(t0) / static_cast<double>(n);
      t0 = clock_type::now();
      tx.commit();
      r.commit_ms = ns_since(t0) / 1e6;
    }
    qs::transaction tx(db);
    qs::index<std::int64_t, Item> ix(db, "ix", qs::unique);
    std::int64_t warm = 0;
    ix.range(0, std::int64_t(2 * n + 2), [&](std::int64_t, Item* p) {
      warm += p->value;
      return true;
    });
    auto t0 = clock_type::now();
    std::int64_t sum = 0;
    for (std::int64_t k : probes) sum += ix.find(k)->value;
    r.lookup_ns = ns_since(t0) / static_cast<double>(n);
    t0 = clock_type::now();
    std::int64_t total = 0;
    ix.range(0, std::int64_t(2 * n + 2), [&](std::int64_t, Item* p) {
      total += p->value;
      return true;
    });
    r.scan_ns = ns_since(t0) / static_cast<double>(n);
    if (sum != static_cast<std::int64_t>(n) || total != sum || warm != total) fail("the index missed a key");
    tx.commit();
    results.push_back(r);
  }
  std::vector<cold_result> colds;
  std::uint32_t cold_pool = 0;
  std::size_t cold_n_done = 0;
  {
    std::vector<std::int64_t> cold_probes(
        probes.begin(), probes.begin() + static_cast<std::ptrdiff_t>(std::min(cold_n, probes.size())));
    const auto pool = static_cast<std::uint32_t>(std::max<std::uint64_t>(64, tree_pages / 4));
    cold_pool = pool;
    cold_n_done = cold_probes.size();
    // Each setting runs cold_rounds times, the settings taking turns (each
    // round starts one setting later), so that no setting always runs first
    // or last; each row is the round with the median time.
    struct setting {
      const char* name;
      std::uint32_t pages;
      qs::prefetch_order order;
    };
    // Prefetch's window as a program gets it (options::prefetch_pages).
    const std::uint32_t window = qs::options{}.prefetch_pages;
    const setting settings[] = {{"prefetch off", 0, qs::prefetch_order::page_order},
                                {"page_order", window, qs::prefetch_order::page_order},
                                {"pointers", window, qs::prefetch_order::pointers},
                                {"both", window, qs::prefetch_order::both}};
    constexpr std::size_t n_settings = std::size(settings);
    std::vector<std::vector<cold_result>> runs(n_settings);
    for (std::size_t round = 0; round < cold_rounds; ++round)
      for (std::size_t i = 0; i < n_settings; ++i) {
        const setting& st = settings[(i + round) % n_settings];
        runs[(i + round) % n_settings].push_back(
            cold_lookups(dir + "/tree", pool, st.name, st.pages, st.order, cold_probes));
      }
    for (std::vector<cold_result>& r : runs) {
      std::sort(r.begin(), r.end(),
                [](const cold_result& a, const cold_result& b) { return a.lookup_us < b.lookup_us; });
      colds.push_back(r[r.size() / 2]);
    }
  }
  std::vector<load_result> loads;
  constexpr std::size_t load_batch = 10000;
  if (load_n > 0) {
    std::vector<std::string> strings(load_n);
    std::vector<std::uint64_t> order(load_n);
    std::iota(order.begin(), order.end(), std::uint64_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i = 0; i < load_n; ++i) {
      char b[32];
      std::snprintf(b, sizeof b, "key-%010" PRIu64, order[i] * 7919 % std::uint64_t{10000000000});
      strings[i] = b;
    }
    loads.push_back(durable_load("qs::btree_map in qs", dir + "/load-tree", strings, load_batch,
                                 [](qs::database& db, const std::string& k, std::int64_t v) {
                                   db.root<string_tree>("t").insert({k, v});
                                 }));
    Item* item = nullptr;
    loads.push_back(durable_load("qs::index (Berkeley DB)", dir + "/load-index", strings, load_batch,
                                 [&](qs::database& db, const std::string& k, std::int64_t) {
                                   if (!item) item = new (db) Item{1};
                                   qs::index<std::string, Item>(db, "ix", qs::unique).insert(k, item);
                                 }));
    {
      auto db = qs::database::open(dir + "/load-tree", bench_options());
      qs::transaction tx(db);
      const string_tree& t = db.root<string_tree>("t");
      if (t.size() != load_n) fail("the durable load lost a key");
      for (std::size_t i = 0; i < load_n; i += 997)
        if (t.find(strings[i])->second != static_cast<std::int64_t>(i)) fail("the durable load lost a value");
      tx.commit();
    }
  }

  struct erase_row {
    const char* name;
    double ns;
    double load_ns = 0;  // per insert of the tree's load, where timed
  };
  std::vector<erase_row> erases;
  std::size_t gone_n = 0;
  if (postings_n > 0) {
    const auto pn = static_cast<std::int64_t>(postings_n);
    std::vector<std::pair<std::int64_t, std::int64_t>> entries;
    entries.reserve(postings_n * postings_n);
    for (std::int64_t k = 0; k < pn; ++k)
      for (std::int64_t v = 0; v < pn; ++v) entries.push_back({k, v});
    std::shuffle(entries.begin(), entries.end(), rng);
    // The entries removed: a sample apart from the load's order (the first
    // loaded would be the first of their key where equal keys keep
    // insertion order).
    std::vector<std::pair<std::int64_t, std::int64_t>> gone = entries;
    std::shuffle(gone.begin(), gone.end(), rng);
    gone.resize(std::min<std::size_t>(20000, gone.size()));
    gone_n = gone.size();
    auto db = qs::database::open(dir + "/postings", bench_options());
    double qs_load_ns = 0;
    {
      qs::transaction tx(db);
      for (const char* name : {"by_value", "by_walk"}) {
        postings& m = db.root<postings>(name);
        auto t0 = clock_type::now();
        for (const auto& [k, v] : entries) m.insert(k, v);
        if (qs_load_ns == 0) qs_load_ns = ns_since(t0) / static_cast<double>(entries.size());
      }
      tx.commit();
    }
    qs::transaction tx(db);
    std::int64_t warm = 0;
    for (const char* name : {"by_value", "by_walk"}) {  // every page resident
      const postings& m = db.root<postings>(name);
      for (auto it = m.begin(); it != m.end(); ++it) warm += (*it).second;
    }
    if (warm != pn * pn * (pn - 1)) fail("a postings tree lost an entry");
    erases.push_back(
        {"qs::btree_multimap in qs, erase_value", erase_by_value(db.root<postings>("by_value"), gone), qs_load_ns});
    erases.push_back({"the same, a walk along the key", erase_by_walk(db.root<postings>("by_walk"), gone)});
    tx.commit();
    {
      memory_postings a, b;
      auto t0 = clock_type::now();
      for (const auto& [k, v] : entries) a.insert(k, v);
      const double load_ns = ns_since(t0) / static_cast<double>(entries.size());
      for (const auto& [k, v] : entries) b.insert(k, v);
      erases.push_back({"in memory, erase_value", erase_by_value(a, gone), load_ns});
      erases.push_back({"in memory, a walk along the key", erase_by_walk(b, gone)});
    }
    {
      std::multimap<std::int64_t, std::int64_t> m;
      auto t0 = clock_type::now();
      for (const auto& [k, v] : entries) m.emplace(k, v);
      const double load_ns = ns_since(t0) / static_cast<double>(entries.size());
      erases.push_back({"std::multimap, a walk along the key", erase_by_walk(m, gone), load_ns});
    }
  }

  const result& floor = results[0];
  std::printf("qs_btree_bench: %zu int64 keys in random order, hot; ns per operation (ratio to the in-memory tree)\n",
              n);
  std::printf("%-26s %16s %14s %16s %16s\n", "", "insert", "commit ms", "lookup", "scan/entry");
  for (const result& r : results) {
    char ins[32], look[32], scan[32], commit[32];
    std::snprintf(ins, sizeof ins, "%.0f (%.2f)", r.insert_ns, r.insert_ns / floor.insert_ns);
    std::snprintf(look, sizeof look, "%.0f (%.2f)", r.lookup_ns, r.lookup_ns / floor.lookup_ns);
    std::snprintf(scan, sizeof scan, "%.1f (%.2f)", r.scan_ns, r.scan_ns / floor.scan_ns);
    if (r.commit_ms > 0) std::snprintf(commit, sizeof commit, "%.0f", r.commit_ms);
    else std::snprintf(commit, sizeof commit, "-");
    std::printf("%-26s %16s %14s %16s %16s\n", r.name, ins, commit, look, scan);
  }
  std::printf("qs_btree_bench: the qs tree cold, %zu random lookups, pool of %u of its %" PRIu64
              " pages (a fresh open; OS cache warm)\n",
              cold_n_done, cold_pool, tree_pages);
  // The pages a lookup touches do not depend on prefetch: those of the run
  // with prefetch off, each a fault.
  const double touched = colds.empty() ? 0 : colds[0].touched;
  // "prefetch %": the share of the lookups' time spent choosing and reading
  // pages ahead (statistics::prefetch_ns), which a run-to-run spread of
  // several percent on a busy machine hides in the ratio.
  std::printf("%-14s %10s %7s %12s %16s %11s %8s %6s %10s\n", "prefetch", "us/lookup", "ratio", "pages fetched",
              "fetched/touched", "prefetched", "watched", "used", "prefetch %");
  for (const cold_result& c : colds)
    std::printf("%-14s %10.2f %7.2f %12.2f %16.2f %11" PRIu64 " %8" PRIu64 " %6" PRIu64 " %10.2f\n", c.name,
                c.lookup_us, c.lookup_us / colds[0].lookup_us, c.fetched, touched > 0 ? c.fetched / touched : 0.0,
                c.prefetched, c.watched, c.used,
                c.lookup_us > 0 ? 100 * c.prefetch_ms * 1e3 / (c.lookup_us * static_cast<double>(cold_n_done)) : 0.0);
  if (!loads.empty()) {
    std::printf("qs_btree_bench: durable load of %zu string keys in batches of %zu (a durable commit each)\n", load_n,
                load_batch);
    std::printf("%-26s %10s %10s %10s %14s\n", "", "s", "us/key", "commit s", "log bytes/key");
    for (const load_result& l : loads)
      std::printf("%-26s %10.2f %10.2f %10.2f %14.1f\n", l.name, l.seconds,
                  l.seconds * 1e6 / static_cast<double>(load_n), l.commit_seconds, l.log_per_key);
  }
  if (!erases.empty()) {
    std::printf(
        "qs_btree_bench: postings, %zu keys of %zu values each (loaded in random order), %zu random entries "
        "removed, hot; ns per removal (ratio to erase_value in memory), and per insert of the load\n",
        postings_n, postings_n, gone_n);
    std::printf("%-40s %16s %10s\n", "", "removal", "load");
    for (const erase_row& e : erases) {
      char removal[32], load[32] = "-";
      std::snprintf(removal, sizeof removal, "%.0f (%.2f)", e.ns, e.ns / erases[2].ns);
      if (e.load_ns > 0) std::snprintf(load, sizeof load, "%.0f", e.load_ns);
      std::printf("%-40s %16s %10s\n", e.name, removal, load);
    }
  }
  std::printf("BTREE keys=%zu", n);
  const char* tags[] = {"mem_tree", "std_map", "qs_tree", "qs_index"};
  for (std::size_t i = 0; i < results.size(); ++i)
    std::printf(" %s_insert_ns=%.1f %s_lookup_ns=%.1f %s_scan_ns=%.2f", tags[i], results[i].insert_ns, tags[i],
                results[i].lookup_ns, tags[i], results[i].scan_ns);
  std::printf(" qs_tree_pages=%" PRIu64, tree_pages);
  const char* cold_tags[] = {"off", "page_order", "pointers", "both"};
  for (std::size_t i = 0; i < colds.size(); ++i)
    std::printf(" cold_%s_lookup_us=%.2f cold_%s_fetched=%.2f cold_%s_prefetch_ms=%.1f", cold_tags[i],
                colds[i].lookup_us, cold_tags[i], colds[i].fetched, cold_tags[i], colds[i].prefetch_ms);
  const char* load_tags[] = {"load_tree", "load_index"};
  for (std::size_t i = 0; i < loads.size(); ++i)
    std::printf(" %s_s=%.3f %s_commit_s=%.3f %s_log_per_key=%.1f", load_tags[i], loads[i].seconds, load_tags[i],
                loads[i].commit_seconds, load_tags[i], loads[i].log_per_key);
  const char* erase_tags[] = {"qs_erase_value", "qs_walk", "mem_erase_value", "mem_walk", "std_walk"};
  for (std::size_t i = 0; i < erases.size(); ++i) std::printf(" postings_%s_ns=%.0f", erase_tags[i], erases[i].ns);
  std::printf("\n");
  return 0;
}
