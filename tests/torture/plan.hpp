// plan.hpp: what transaction k of a partition does, and what a partition
// holds after its first K transactions.
//
// A torture database is written by transactions numbered 1, 2, ... per
// partition. Transaction k rewrites a few slots of the partition's table with
// new chains of Items (several objects, on several pages, some with arrays of
// Words larger than a page), empties some, touches every Item of a few others
// (their stamp and the first and last word of their data), sometimes moves
// the table to a new object (the table root changes), sets one of the named
// roots r0..r7 to k, and keeps the index "t<part>_heads" (slot -> the chain's
// head) in step. Everything is a pure function of (seed, partition, k): the
// writer (writer.hpp) follows plan_of, and the checker (verify.hpp) compares
// a database with state_after.
//
// Invariants: plan_of(.., 1) makes the table; the slots a plan rewrites and
// those it touches are distinct.
// Thread-safety: pure functions.
#pragma once

#include "torture_types.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace qs_torture {

constexpr int root_count = 8;

struct item_spec {
  std::int64_t words;  // 0: no data array
  bool near;           // allocated near the Item after it in the chain
};

struct rewrite {
  int slot;
  std::vector<item_spec> chain;  // from the head; empty: the slot is emptied
};

struct txn_plan {
  std::vector<rewrite> rewrites;
  std::vector<int> touches;
  bool new_table = false;
  int root = 0;  // root r<root> is set to k
};

txn_plan plan_of(std::uint64_t seed, int part, std::int64_t k);

// Element i of the data of the Item at `seq` in the chain that transaction
// `born` wrote into `slot` (the first and last element hold the stamp).
std::int64_t word_of(std::uint64_t seed, int part, int slot, std::int64_t born, std::int64_t seq, std::int64_t i);

struct slot_state {
  std::int64_t born = 0;  // 0: the slot is empty
  std::int64_t stamp = 0;
  std::vector<item_spec> chain;
};

struct partition_state {
  std::int64_t k = 0;
  std::int64_t table_born = 0;  // 0: no table yet
  std::array<slot_state, slots> slot;
  std::array<std::int64_t, root_count> roots{};  // 0: the root does not exist
  std::int64_t items() const;
  std::int64_t arrays() const;  // Items with data
};

// The partition after its transactions 1..k (found from the last
// transactions that wrote each part, scanning back from k).
partition_state state_after(std::uint64_t seed, int part, std::int64_t k);

// Names of the partition's roots and index.
std::string root_name(int part, const std::string& what);
std::string index_name(int part);

}  // namespace qs_torture
