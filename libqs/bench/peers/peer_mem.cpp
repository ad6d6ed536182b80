// peer-mem: the workload of scripts/peers (workload.hpp) on plain memory,
// the floor: the same tree with new/delete, in one process.
//
//   peer-mem all - N
//
// Builds the tree (allocation in the shuffled order, then linking), runs a
// first traversal, the hot passes (workload.hpp) and the update of 1% of the
// nodes, and prints the times of each. Nothing is durable and nothing is
// opened.
#include "workload.hpp"

namespace {

struct Node {
  Node* kid[peers::fanout];
  std::uint64_t id;
  std::uint64_t value;
  std::uint64_t pad[3];
};
static_assert(sizeof(Node) == peers::node_bytes);

const auto child = [](const Node* p, int c) -> Node* { return p->kid[c]; };

}  // namespace

int main(int argc, char** argv) {
  qs::cli::app app("The workload of scripts/peers on plain memory, all phases in one process.\n", "peer-mem");
  peers::command cmd = peers::parse(app, argc, argv, {"all"});
  std::vector<std::uint32_t> order = peers::allocation_order(cmd.n);
  std::vector<std::uint32_t> targets = peers::update_targets(cmd.n);
  std::vector<Node*> at(cmd.n);

  auto t0 = peers::clock_type::now();
  for (std::uint32_t t : order) at[t] = new Node{{nullptr, nullptr, nullptr}, t, t, {}};
  for (std::uint32_t t : order)
    for (int c = 0; c < peers::fanout; ++c) {
      std::uint32_t k = peers::child_of(t, c, cmd.n);
      at[t]->kid[c] = k < cmd.n ? at[k] : nullptr;
    }
  Node* root = at[0];
  double build_s = peers::seconds_since(t0);

  peers::tally first;
  auto t1 = peers::clock_type::now();
  peers::walk(root, child, first);
  double first_ms = peers::ms_since(t1);
  double hot_ms = peers::hot_ms(root, child);
  peers::check_tally("peer-mem", first, cmd.n);

  auto t3 = peers::clock_type::now();
  for (std::uint32_t t : targets) peers::reach(root, t, child)->value += 1;
  double update_ms = peers::ms_since(t3);

  auto t4 = peers::clock_type::now();
  for (Node* p : at) delete p;
  double close_s = peers::seconds_since(t4);
  std::printf(
      "RESULT peer=mem phase=all n=%u build_s=%.4f close_s=%.4f first_ms=%.3f hot_ms=%.3f sum=%llu "
      "updated=%zu update_ms=%.3f\n",
      cmd.n, build_s, close_s, first_ms, hot_ms, static_cast<unsigned long long>(first.sum), targets.size(), update_ms);
}
