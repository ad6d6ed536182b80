// The checker of the crash torture (check.hpp).
#include "check.hpp"

#include "store/bdb_store.hpp"
#include "store/remote_store.hpp"
#include "store_audit.hpp"
#include "verify.hpp"

#include <qs/inspect.hpp>
#include <qs/qs.hpp>

#include <cstdio>
#include <memory>

namespace qs_torture {

namespace {

// What the partitions held in one transaction: each one's K, and the live
// objects they should have.
struct logical_state {
  std::vector<std::int64_t> ks;
  std::int64_t items = 0, arrays = 0, tables = 0;
};

logical_state check_partitions(const std::string& target, std::uint64_t seed,
                               const std::vector<committed_floor>& floors, std::vector<std::string>& problems,
                               bool say) {
  logical_state st;
  const int parts = static_cast<int>(floors.size());
  try {
    qs::options o;
    o.pool_pages = 256;
    o.reservation_bytes = std::uint64_t{1} << 30;
    o.store_cache_bytes = 16u << 20;
    qs::database db = qs::database::open(target, o);
    qs::transaction tx(db);
    for (int p = 0; p < parts; ++p) {
      partition_check c = verify_partition(db, seed, p);
      if (say) std::printf("holds %d %lld\n", p, static_cast<long long>(c.k));
      const committed_floor f = floors[static_cast<std::size_t>(p)];
      if (c.k < f.k)
        problems.push_back("partition " + std::to_string(p) + ": transaction " + std::to_string(f.k) +
                           " was reported committed, the database holds " + std::to_string(c.k));
      if (c.k > f.k + f.unreported)
        problems.push_back("partition " + std::to_string(p) + " holds " + std::to_string(c.k) +
                           " transactions; at most " + std::to_string(f.k + f.unreported) + " can have committed");
      problems.insert(problems.end(), c.problems.begin(), c.problems.end());
      st.ks.push_back(c.k);
      st.items += c.items;
      st.arrays += c.arrays;
      st.tables += c.table ? 1 : 0;
    }
    tx.abort();  // read-only: nothing to commit (and no commit for a server's pause point to stop)
  } catch (const std::exception& e) {
    problems.push_back(std::string("reading the database: ") + e.what());
  }
  return st;
}

}  // namespace

int run_check(const std::string& target, std::uint64_t seed, const std::vector<committed_floor>& floors) {
  std::vector<std::string> problems;
  const int parts = static_cast<int>(floors.size());
  // The store audit reads in a transaction of its own, after the partitions'.
  // Through a page server that lives on, the commit a killed writer had
  // sent may still land between the two (a commit written in bulk syncs
  // pages.db first): then the partitions are read again, and the audit
  // compared with the state it saw.
  logical_state st = check_partitions(target, seed, floors, problems, true);
  for (int attempt = 1; problems.empty(); ++attempt) {
    std::unique_ptr<qs::detail::store> s;
    try {
      if (qs::detail::is_remote_url(target)) s = qs::detail::connect_remote_store(target, {});
      else s = std::make_unique<qs::detail::bdb_store>(target, qs::detail::bdb_options{8192, 16u << 20});
    } catch (const std::exception& e) {
      problems.push_back(std::string("opening the store: ") + e.what());
    }
    if (!s) break;
    std::vector<std::string> indexes;
    for (int p = 0; p < parts; ++p) indexes.push_back(index_name(p));
    audit_result a = audit_store(*s, indexes);
    s.reset();
    std::vector<std::string> again_problems;
    logical_state again = check_partitions(target, seed, floors, again_problems, false);
    if (again_problems.empty() && again.ks != st.ks && attempt < 3) {
      std::printf("a commit landed during the audit; audited again\n");
      for (std::size_t p = 0; p < again.ks.size(); ++p)
        std::printf("holds %zu %lld\n", p, static_cast<long long>(again.ks[p]));
      st = again;
      continue;
    }
    problems.insert(problems.end(), a.problems.begin(), a.problems.end());
    problems.insert(problems.end(), again_problems.begin(), again_problems.end());
    auto expect = [&](const char* type, std::int64_t n) {
      auto it = a.objects.find(type);
      std::int64_t found = it == a.objects.end() ? 0 : it->second;
      if (found != n)
        problems.push_back("store: " + std::to_string(found) + " objects of " + type + ", the partitions hold " +
                           std::to_string(n));
    };
    if (a.problems.empty()) {
      expect("qs_torture::Item", st.items);
      expect("qs_torture::Words", st.arrays);
      expect("qs_torture::Table", st.tables);
    }
    std::printf("audited %lld pages\n", static_cast<long long>(a.pages));
    break;
  }
  // And what qs-inspect verify checks (every page, pointer, mapping object,
  // free-space record, root and index entry), once the store above is closed.
  if (problems.empty()) {
    try {
      qs::inspector in(target);
      std::uint64_t n = in.verify([&](const std::string& line) { problems.push_back("verify: " + line); });
      std::printf("verified: %llu problems\n", static_cast<unsigned long long>(n));
    } catch (const std::exception& e) {
      problems.push_back(std::string("verify: ") + e.what());
    }
  }
  for (const std::string& p : problems) std::printf("problem: %s\n", p.c_str());
  if (problems.empty()) std::printf("ok\n");
  std::fflush(stdout);
  return problems.empty() ? 0 : 1;
}

}  // namespace qs_torture
