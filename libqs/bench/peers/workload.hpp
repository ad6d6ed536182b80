// workload.hpp: the one workload scripts/peers runs on qs, Boost.Interprocess,
// libpmemobj and plain memory, and what its programs share.
//
// The data is a complete ternary tree of n nodes of 64 bytes: node t's
// children are nodes 3t+1, 3t+2 and 3t+3 (those below n). Nodes are
// allocated in a shuffled order (allocation_order), so that neighbours in
// the tree are not neighbours in memory or on pages, and then linked in
// allocation order (each node's pointers are written once, page after page).
// A traversal visits every node depth-first from the root and adds up
// `value`, which starts as the node's tree index (the traverse phase runs
// one pass, then up to hot_passes more over what the first brought in); an update adds 1 to the
// value of 1% of the nodes (update_targets, distinct), each reached from
// the root along its path (path_to). Every program prints its figures as
// one line, "RESULT peer=<name> phase=<phase> key=value ...", that the
// script reads.
//
// Invariants: the orders are the same in every program and every run (a
// fixed seed and the program's own generator, never rand()): so the
// programs build the same tree and their sums agree.
//
// Thread-safety: plain functions of their arguments; no shared state.
#pragma once

#include <qs/cli/cli.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace peers {

// Bytes of one node in every program (kept by each program's static_assert).
constexpr std::size_t node_bytes = 64;
constexpr int fanout = 3;

// The tree index of the node allocated at each position, a fixed shuffle.
inline std::vector<std::uint32_t> allocation_order(std::uint32_t n) {
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(20240601);
  for (std::uint32_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  return order;
}

// The nodes the update phase changes: 1% of n (at least one), distinct.
inline std::vector<std::uint32_t> update_targets(std::uint32_t n) {
  std::vector<std::uint32_t> all(n);
  for (std::uint32_t i = 0; i < n; ++i) all[i] = i;
  std::uint32_t k = std::max<std::uint32_t>(1, n / 100);
  std::mt19937_64 rng(19940524);
  for (std::uint32_t i = 0; i < k; ++i) std::swap(all[i], all[i + rng() % (n - i)]);
  all.resize(k);
  return all;
}

// The child slots (0 to 2) leading from the root to node t.
inline std::vector<int> path_to(std::uint32_t t) {
  std::vector<int> slots;
  while (t > 0) {
    slots.push_back(static_cast<int>((t - 1) % fanout));
    t = (t - 1) / fanout;
  }
  std::reverse(slots.begin(), slots.end());
  return slots;
}

// The index of child slot c of node t, or n when it has none.
inline std::uint32_t child_of(std::uint32_t t, int c, std::uint32_t n) {
  std::uint64_t k = std::uint64_t{t} * fanout + 1 + static_cast<std::uint64_t>(c);
  return k < n ? static_cast<std::uint32_t>(k) : n;
}

struct tally {
  std::uint64_t nodes = 0;
  std::uint64_t sum = 0;
};

// Visits every node below p depth-first; child(p, c) gives child slot c of
// p as a pointer, or nullptr.
template <class Node, class Child>
void walk(const Node* p, const Child& child, tally& t) {
  ++t.nodes;
  t.sum += p->value;
  for (int c = 0; c < fanout; ++c)
    if (const Node* k = child(p, c)) walk(k, child, t);
}

// Node t, reached from the root along its path.
template <class Node, class Child>
Node* reach(Node* root, std::uint32_t t, const Child& child) {
  Node* p = root;
  for (int c : path_to(t)) p = child(p, c);
  return p;
}

using clock_type = std::chrono::steady_clock;
inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}
inline double ms_since(clock_type::time_point t0) { return 1000.0 * seconds_since(t0); }

// Hot passes after the first: the fastest of them is the hot time (one pass
// of a few milliseconds varies by a factor of two or more on a busy
// machine). Up to hot_passes of them, fewer when they take long (a pool
// smaller than the tree makes every pass fault).
constexpr int hot_passes = 5;
constexpr double hot_budget_ms = 1000;

// The fastest of the hot passes from root, in milliseconds.
template <class Node, class Child>
double hot_ms(const Node* root, const Child& child) {
  double best = 0, spent = 0;
  for (int i = 0; i < hot_passes && (i == 0 || spent < hot_budget_ms); ++i) {
    tally t;
    auto t0 = clock_type::now();
    walk(root, child, t);
    double ms = ms_since(t0);
    spent += ms;
    if (i == 0 || ms < best) best = ms;
  }
  return best;
}

// The command line every program takes: PHASE PATH N, with the options the
// program declared on `app` (peer-qs: --pool-pages) before or after them;
// PHASE is one of `phases`. A bad command line or --help ends the program
// here (qs_cli: exit status 2, or 0 after --help).
struct command {
  std::string phase;  // build, open, traverse, update (peer-mem: all)
  std::string path;
  std::uint32_t n = 0;
};

inline command parse(qs::cli::app& app, int argc, char** argv,
                     const std::vector<std::string>& phases = {"build", "open", "traverse", "update"}) {
  command c;
  std::string names;
  for (const std::string& p : phases) names += (names.empty() ? "" : "|") + p;
  app.add_option("PHASE", c.phase, "the phase to run")->type_name(names)->required()->check(qs::cli::one_of(phases));
  app.add_option("PATH", c.path, "where the peer keeps its data (peer-mem: ignored)")->type_name("")->required();
  app.add_option("N", c.n, "the number of nodes, 1 to 100000000")
      ->type_name("")
      ->required()
      ->check(qs::cli::whole(1, 100'000'000));
  if (auto status = app.parse(argc, argv)) std::exit(*status);
  return c;
}

// The four phases of a persistent peer.
struct phases {
  std::function<void()> build, open, traverse, update;
};

// Runs the phase `cmd` names; an exception that escapes is said on stderr,
// after the peer's name, and the exit status is 1.
inline int run_phase(const command& cmd, const char* peer, const phases& p) {
  try {
    if (cmd.phase == "build") p.build();
    else if (cmd.phase == "open") p.open();
    else if (cmd.phase == "traverse") p.traverse();
    else p.update();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", peer, e.what());
    return 1;
  }
  return 0;
}

// Ends the program when a traversal did not see the tree it built.
inline void check_tally(const char* peer, const tally& t, std::uint32_t n) {
  if (t.nodes != n) {
    std::fprintf(stderr, "%s: the traversal visited %llu nodes, not %u\n", peer,
                 static_cast<unsigned long long>(t.nodes), n);
    std::exit(1);
  }
}

}  // namespace peers
