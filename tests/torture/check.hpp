// check.hpp: the checker the crash torture runs after each recovery.
//
// It opens the database the way a program does (an embedded directory runs
// Berkeley DB recovery here; a page server has recovered when it started),
// compares each partition with the state after a whole number K of its
// transactions (verify.hpp), and then audits the store record by record
// (store_audit.hpp), comparing the live objects it finds with those the
// partitions should hold. Partition p passes when it is exactly such a
// state and floor[p].k <= K <= floor[p].k + floor[p].unreported: k is the
// last transaction its writers reported committed (or an earlier check
// found); each writer process killed since may have committed one more
// without living to say so (a writer says each commit before it begins the
// next transaction).
//
// Output, on standard output: "holds P K" per partition, then "ok", or one
// line per problem. Exit status 0 when everything passed, 1 when not.
//
// Thread-safety: one check per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qs_torture {

struct committed_floor {
  std::int64_t k = 0;
  std::int64_t unreported = 1;  // writer processes killed since k was known
};

int run_check(const std::string& target, std::uint64_t seed, const std::vector<committed_floor>& floors);

}  // namespace qs_torture
