// peer-pmemobj: the workload of scripts/peers (workload.hpp) on libpmemobj
// (PMDK), through its C API: a pool file mapped whole, nodes linked by
// PMEMoid (pool id and offset, 16 bytes), followed with pmemobj_direct.
//
//   peer-pmemobj {build|open|traverse|update} FILE N
//
// build     creates the pool FILE (removed first; preallocated at
//           N * 160 bytes + 16 MiB, since a pool has a fixed size),
//           allocates the N nodes with pmemobj_tx_alloc and links them in
//           one transaction (objects allocated in a transaction need no
//           snapshot; their ranges are flushed at commit), sets the root
//           object, commits
// open      opens the pool (which runs its recovery) and reads the root node
// traverse  a depth-first pass, then the hot passes (workload.hpp), in one
//           process
// update    adds 1 to 1% of the nodes in one transaction, each value
//           snapshotted with pmemobj_tx_add_range_direct, commits
// A commit is atomic against a crash of the process in both settings.
// Whether it is durable depends on the mapping: on real persistent memory
// (DAX) a flush of the CPU caches is. On a normal file system, libpmem
// uses msync() for every flush unless PMEM_IS_PMEM_FORCE=1, which makes it
// flush the CPU caches only: the data reaches the page cache, not the
// disk, and an operating-system crash or power loss can lose or tear it.
// The program says which setting it ran with (pmem_force=).
#include <libpmemobj.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "workload.hpp"

namespace {

struct Node {
  PMEMoid kid[peers::fanout];
  std::uint64_t id;
  std::uint64_t value;
};
static_assert(sizeof(Node) == peers::node_bytes);

struct Root {
  PMEMoid tree;
};

constexpr const char* layout = "qs-peers";
constexpr std::uint64_t node_type = 1;

const auto child = [](const Node* p, int c) -> Node* { return static_cast<Node*>(pmemobj_direct(p->kid[c])); };

const char* pmem_force() {
  const char* f = std::getenv("PMEM_IS_PMEM_FORCE");
  return f != nullptr && *f != '\0' ? f : "unset";
}

[[noreturn]] void fail(const std::string& what) {
  std::string msg = what + ": " + pmemobj_errormsg();
  if (pmemobj_tx_stage() == TX_STAGE_WORK) pmemobj_tx_abort(ECANCELED);
  if (pmemobj_tx_stage() != TX_STAGE_NONE) pmemobj_tx_end();
  throw std::runtime_error(msg);
}

// Opens a transaction whose failures return (and are checked) instead of
// jumping.
void begin(PMEMobjpool* pop) {
  if (pmemobj_tx_begin(pop, nullptr, TX_PARAM_NONE) != 0) fail("pmemobj_tx_begin");
  pmemobj_tx_set_failure_behavior(POBJ_TX_FAILURE_RETURN);
}

void commit() {
  pmemobj_tx_commit();
  if (pmemobj_tx_end() != 0) fail("pmemobj_tx_commit");
}

PMEMobjpool* open_pool(const std::string& path) {
  PMEMobjpool* pop = pmemobj_open(path.c_str(), layout);
  if (pop == nullptr) fail(path + ": pmemobj_open");
  return pop;
}

Node* root_node(PMEMobjpool* pop) {
  auto* r = static_cast<Root*>(pmemobj_direct(pmemobj_root(pop, sizeof(Root))));
  auto* n = static_cast<Node*>(pmemobj_direct(r->tree));
  if (n == nullptr) throw std::runtime_error("the pool has no tree");
  return n;
}

void build_phase(const peers::command& cmd) {
  std::filesystem::remove(cmd.path);
  std::vector<std::uint32_t> order = peers::allocation_order(cmd.n);
  std::vector<PMEMoid> at(cmd.n);
  auto t0 = peers::clock_type::now();
  std::size_t pool_bytes = std::size_t{cmd.n} * 160 + (std::size_t{16} << 20);
  PMEMobjpool* pop = pmemobj_create(cmd.path.c_str(), layout, pool_bytes, 0600);
  if (pop == nullptr) fail(cmd.path + ": pmemobj_create");
  PMEMoid root = pmemobj_root(pop, sizeof(Root));
  if (OID_IS_NULL(root)) fail("pmemobj_root");
  begin(pop);
  for (std::uint32_t t : order) {
    at[t] = pmemobj_tx_alloc(sizeof(Node), node_type);
    if (OID_IS_NULL(at[t])) fail("pmemobj_tx_alloc");
    *static_cast<Node*>(pmemobj_direct(at[t])) = Node{{OID_NULL, OID_NULL, OID_NULL}, t, t};
  }
  for (std::uint32_t t : order) {
    auto* p = static_cast<Node*>(pmemobj_direct(at[t]));
    for (int c = 0; c < peers::fanout; ++c) {
      std::uint32_t k = peers::child_of(t, c, cmd.n);
      p->kid[c] = k < cmd.n ? at[k] : OID_NULL;
    }
  }
  if (pmemobj_tx_add_range(root, 0, sizeof(Root)) != 0) fail("pmemobj_tx_add_range");
  static_cast<Root*>(pmemobj_direct(root))->tree = at[0];
  commit();
  double build_s = peers::seconds_since(t0);
  auto t1 = peers::clock_type::now();
  pmemobj_close(pop);
  double close_s = peers::seconds_since(t1);
  std::printf("RESULT peer=pmemobj phase=build n=%u build_s=%.4f close_s=%.4f pool_bytes=%zu pmem_force=%s\n", cmd.n,
              build_s, close_s, pool_bytes, pmem_force());
}

void open_phase(const peers::command& cmd) {
  auto t0 = peers::clock_type::now();
  PMEMobjpool* pop = open_pool(cmd.path);
  volatile std::uint64_t v = root_node(pop)->value;
  double open_ms = peers::ms_since(t0);
  (void)v;
  pmemobj_close(pop);
  std::printf("RESULT peer=pmemobj phase=open n=%u open_ms=%.3f\n", cmd.n, open_ms);
}

void traverse_phase(const peers::command& cmd) {
  auto t0 = peers::clock_type::now();
  PMEMobjpool* pop = open_pool(cmd.path);
  Node* root = root_node(pop);
  double open_ms = peers::ms_since(t0);
  peers::tally first;
  auto t1 = peers::clock_type::now();
  peers::walk(root, child, first);
  double first_ms = peers::ms_since(t1);
  double hot_ms = peers::hot_ms(root, child);
  pmemobj_close(pop);
  peers::check_tally("peer-pmemobj", first, cmd.n);
  std::printf("RESULT peer=pmemobj phase=traverse n=%u open_ms=%.3f first_ms=%.3f hot_ms=%.3f sum=%llu\n", cmd.n,
              open_ms, first_ms, hot_ms, static_cast<unsigned long long>(first.sum));
}

void update_phase(const peers::command& cmd) {
  std::vector<std::uint32_t> targets = peers::update_targets(cmd.n);
  PMEMobjpool* pop = open_pool(cmd.path);
  auto t0 = peers::clock_type::now();
  Node* root = root_node(pop);
  begin(pop);
  for (std::uint32_t t : targets) {
    Node* p = peers::reach(root, t, child);
    if (pmemobj_tx_add_range_direct(&p->value, sizeof p->value) != 0) fail("pmemobj_tx_add_range_direct");
    p->value += 1;
  }
  auto t1 = peers::clock_type::now();
  commit();
  double update_ms = peers::ms_since(t0);
  double commit_ms = peers::ms_since(t1);
  pmemobj_close(pop);
  std::printf("RESULT peer=pmemobj phase=update n=%u updated=%zu update_ms=%.3f commit_ms=%.3f pmem_force=%s\n", cmd.n,
              targets.size(), update_ms, commit_ms, pmem_force());
}

}  // namespace

int main(int argc, char** argv) {
  qs::cli::app app("The workload of scripts/peers on libpmemobj.\n", "peer-pmemobj");
  peers::command cmd = peers::parse(app, argc, argv);
  return peers::run_phase(
      cmd, "peer-pmemobj",
      {[&] { build_phase(cmd); }, [&] { open_phase(cmd); }, [&] { traverse_phase(cmd); }, [&] { update_phase(cmd); }});
}
