// peer-qs: the workload of scripts/peers (workload.hpp) on qs, through its
// public API: `new (db) Node`, a named root, transactions.
//
//   peer-qs [--pool-pages P] {build|open|traverse|update} DIR N
//
// build     creates the database in DIR (removed first), allocates the N
//           nodes and links them in one transaction, and commits it durably
//           (Berkeley DB's log is on disk when commit returns; a crash
//           before leaves none of the tree, after, all of it)
// open      opens the database and reads the root node
// traverse  depth-first passes in one transaction: the first faults
//           every page in, the next ones (workload.hpp's hot_ms) run over
//           resident pages; then the same passes, one transaction each
//           (hot_txn_ms)
// update    adds 1 to 1% of the nodes (update_targets) in one transaction,
//           committed durably
// Options are qs's defaults (qs::options{}) unless --pool-pages is given.
#include <qs/qs.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "workload.hpp"

// A persistent type has external linkage: schema-gen fills its descriptor slot.
namespace peer_qs {
struct Node {
  QS_PERSISTENT(Node)
  Node* kid[peers::fanout];
  std::uint64_t id;
  std::uint64_t value;
  std::uint64_t pad[3];
};
static_assert(sizeof(Node) == peers::node_bytes);
}  // namespace peer_qs

namespace {

using peer_qs::Node;

const auto child = [](const Node* p, int c) -> Node* { return p->kid[c]; };

// The tree's root; a database without one was not built by the build phase.
Node* tree_root(qs::database& db, const peers::command& cmd) {
  Node* root = db.has_root("tree") ? db.root<Node*>("tree") : nullptr;
  if (!root) throw std::runtime_error(cmd.path + " holds no tree (run the build phase first)");
  return root;
}

void print_stats(const qs::statistics& s) {
  std::printf(
      " read_faults=%llu write_faults=%llu before_images_in_file=%llu evictions=%llu dirty_evictions=%llu"
      " log_bytes=%llu",
      static_cast<unsigned long long>(s.read_faults), static_cast<unsigned long long>(s.write_faults),
      static_cast<unsigned long long>(s.before_images_in_file), static_cast<unsigned long long>(s.evictions),
      static_cast<unsigned long long>(s.dirty_evictions), static_cast<unsigned long long>(s.log_bytes));
  // Where the faults' time went (qs::statistics, QuickStore's Table 6).
  std::printf(" fault_ms=%.1f fetch_ms=%.1f mapping_ms=%.1f swizzle_ms=%.1f protect_ms=%.1f",
              static_cast<double>(s.fault_ns) / 1e6, static_cast<double>(s.fetch_ns) / 1e6,
              static_cast<double>(s.mapping_ns) / 1e6, static_cast<double>(s.swizzle_ns) / 1e6,
              static_cast<double>(s.protect_ns) / 1e6);
  std::printf(" prefetched=%llu prefetch_watched=%llu prefetched_used=%llu pages_mapped=%llu prefetch_ms=%.1f",
              static_cast<unsigned long long>(s.pages_prefetched), static_cast<unsigned long long>(s.prefetch_watched),
              static_cast<unsigned long long>(s.prefetched_used), static_cast<unsigned long long>(s.pages_mapped),
              static_cast<double>(s.prefetch_ns) / 1e6);
  std::printf(" resident_pages=%llu mappings=%llu frames=%s", static_cast<unsigned long long>(s.resident_pages),
              static_cast<unsigned long long>(s.kernel_mappings), s.frame_control);
}

void build_phase(const peers::command& cmd, const qs::options& opts) {
  std::filesystem::remove_all(cmd.path);
  std::vector<std::uint32_t> order = peers::allocation_order(cmd.n);
  std::vector<Node*> at(cmd.n);
  auto t0 = peers::clock_type::now();
  std::optional<qs::database> db = qs::database::open(cmd.path, opts);
  {
    qs::transaction tx(*db);
    for (std::uint32_t t : order) at[t] = new (*db) Node{{nullptr, nullptr, nullptr}, t, t, {}};
    for (std::uint32_t t : order)
      for (int c = 0; c < peers::fanout; ++c) {
        std::uint32_t k = peers::child_of(t, c, cmd.n);
        at[t]->kid[c] = k < cmd.n ? at[k] : nullptr;
      }
    db->root<Node*>("tree") = at[0];
    tx.commit();
  }
  double build_s = peers::seconds_since(t0);
  qs::statistics s = db->stats();
  std::uint32_t pool_pages = db->pool_pages();
  auto t1 = peers::clock_type::now();
  db.reset();
  double close_s = peers::seconds_since(t1);
  std::printf("RESULT peer=qs phase=build n=%u build_s=%.4f close_s=%.4f pool_pages=%u", cmd.n, build_s, close_s,
              pool_pages);
  print_stats(s);
  std::printf("\n");
}

void open_phase(const peers::command& cmd, const qs::options& opts) {
  auto t0 = peers::clock_type::now();
  auto db = qs::database::open(cmd.path, opts);
  qs::transaction tx(db);
  Node* root = tree_root(db, cmd);
  volatile std::uint64_t v = root->value;
  double open_ms = peers::ms_since(t0);
  (void)v;
  tx.commit();
  std::printf("RESULT peer=qs phase=open n=%u open_ms=%.3f\n", cmd.n, open_ms);
}

void traverse_phase(const peers::command& cmd, const qs::options& opts) {
  auto t0 = peers::clock_type::now();
  auto db = qs::database::open(cmd.path, opts);
  qs::transaction tx(db);
  Node* root = tree_root(db, cmd);
  double open_ms = peers::ms_since(t0);
  peers::tally first;
  auto t1 = peers::clock_type::now();
  peers::walk(root, child, first);
  double first_ms = peers::ms_since(t1);
  qs::statistics s = db.stats();
  double hot_ms = peers::hot_ms(root, child);
  std::uint64_t hot_faults = db.stats().read_faults - s.read_faults;
  tx.commit();
  peers::check_tally("peer-qs", first, cmd.n);
  // The same passes, one transaction each, as a program of short
  // transactions over a resident working set runs them (through a page
  // server, each transaction may find pages other clients changed).
  double hot_txn_ms = 0, hot_txn_spent = 0;
  for (int i = 0; i < peers::hot_passes && (i == 0 || hot_txn_spent < peers::hot_budget_ms); ++i) {
    auto t2 = peers::clock_type::now();
    qs::transaction pass(db);
    peers::tally t;
    peers::walk(tree_root(db, cmd), child, t);
    pass.commit();
    double ms = peers::ms_since(t2);
    hot_txn_spent += ms;
    if (i == 0 || ms < hot_txn_ms) hot_txn_ms = ms;
  }
  std::printf(
      "RESULT peer=qs phase=traverse n=%u open_ms=%.3f first_ms=%.3f hot_ms=%.3f hot_txn_ms=%.3f sum=%llu "
      "hot_read_faults=%llu",
      cmd.n, open_ms, first_ms, hot_ms, hot_txn_ms, static_cast<unsigned long long>(first.sum),
      static_cast<unsigned long long>(hot_faults));
  print_stats(s);
  std::printf("\n");
}

void update_phase(const peers::command& cmd, const qs::options& opts) {
  std::vector<std::uint32_t> targets = peers::update_targets(cmd.n);
  std::optional<qs::database> db = qs::database::open(cmd.path, opts);
  auto t0 = peers::clock_type::now();
  double update_ms = 0, commit_ms = 0;
  {
    qs::transaction tx(*db);
    Node* root = tree_root(*db, cmd);
    for (std::uint32_t t : targets) peers::reach(root, t, child)->value += 1;
    auto t1 = peers::clock_type::now();
    tx.commit();
    update_ms = peers::ms_since(t0);
    commit_ms = peers::ms_since(t1);
  }
  qs::statistics s = db->stats();
  // The close beside it: what the commit left to the page file's writer
  // thread (background_apply.hpp) is written by then.
  auto t2 = peers::clock_type::now();
  db.reset();
  double close_s = peers::seconds_since(t2);
  std::printf("RESULT peer=qs phase=update n=%u updated=%zu update_ms=%.3f commit_ms=%.3f close_s=%.4f", cmd.n,
              targets.size(), update_ms, commit_ms, close_s);
  print_stats(s);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  qs::cli::app app("The workload of scripts/peers on qs (hardware mode, an embedded database).\n", "peer-qs");
  qs::options o;
  app.add_option("--pool-pages", o.pool_pages, "the qs buffer pool in pages, 1 to 4294967295 (default qs's)")
      ->type_name("P")
      ->check(qs::cli::whole(1, 0xffffffff));
  std::uint64_t cache_mb = 0;
  app.add_option("--store-cache-mb", cache_mb, "the embedded store's cache in MiB (default qs's)")
      ->type_name("M")
      ->check(qs::cli::whole(1, 1 << 20));
  peers::command cmd = peers::parse(app, argc, argv);
  o.store_cache_bytes = cache_mb << 20;
  // qs::error among what may escape
  return peers::run_phase(cmd, "peer-qs",
                          {[&] { build_phase(cmd, o); }, [&] { open_phase(cmd, o); }, [&] { traverse_phase(cmd, o); },
                           [&] { update_phase(cmd, o); }});
}
