// verify.hpp: the checker's comparison of a partition, read through qs,
// with the state after a whole number of its transactions (plan.hpp).
//
// The partition's count root says K; every other part must then be exactly
// state_after(K): the table (its number and the transaction that made it),
// every slot's chain (each Item's fields, its data's every element, the
// pages reached through its pointers), the named roots r0..r7 (present with
// the right value, or absent), and the index t<part>_heads (one entry per
// non-empty slot, naming the chain's head). Pages come in through qs's own
// faults, so each is checked (checksum, structure) on the way.
//
// Thread-safety: called inside the caller's open transaction on `db`.
#pragma once

#include "plan.hpp"

#include <qs/qs.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace qs_torture {

struct partition_check {
  std::int64_t k = 0;                  // transactions the partition holds
  std::int64_t items = 0, arrays = 0;  // objects state_after(k) has
  bool table = false;
  std::vector<std::string> problems;  // empty: the partition is state_after(k)
};

partition_check verify_partition(qs::database& db, std::uint64_t seed, int part);

}  // namespace qs_torture
