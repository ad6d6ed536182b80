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
// that is not timed). The ratios are to the in-memory tree. Not a test: it
// prints numbers and asserts only that every form found every key.
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
#include <filesystem>
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
using memory_tree = qs::btree_map<std::int64_t, std::int64_t, std::less<std::int64_t>, qs::in_memory<>>;

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

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000;
  std::string dir;
  CLI::App app(
      "qs::btree_map in a qs database beside the same tree in memory, std::map and\n"
      "qs::index: N inserts, lookups and an ordered scan of each, hot.\n",
      "qs_btree_bench");
  qs::cli::prepare(app);
  app.add_option("--keys", n, "distinct int64 keys, 1 to 10000000 (default 1000000)")
      ->type_name("N")
      ->check(qs::cli::whole(1, 10000000));
  app.add_option("--dir", dir, "where the database goes (default: a temporary directory, removed)")->type_name("DIR");
  if (auto status = qs::cli::parse(app, argc, argv)) return *status;
  bool own_dir = dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/qs-btree-bench-XXXXXX";
    if (!mkdtemp(tmpl)) fail("mkdtemp failed");
    dir = tmpl;
  }

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
  if (own_dir) std::filesystem::remove_all(dir);

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
  std::printf("BTREE keys=%zu", n);
  const char* tags[] = {"mem_tree", "std_map", "qs_tree", "qs_index"};
  for (std::size_t i = 0; i < results.size(); ++i)
    std::printf(" %s_insert_ns=%.1f %s_lookup_ns=%.1f %s_scan_ns=%.2f", tags[i], results[i].insert_ns, tags[i],
                results[i].lookup_ns, tags[i], results[i].scan_ns);
  std::printf(" qs_tree_pages=%" PRIu64 "\n", tree_pages);
  return 0;
}
