// qs_delete_bench: the cost of `delete` by the order a transaction deletes
// in, against plain new/delete in the same run. N 24-byte objects are made
// and committed, then deleted in one transaction in creation order, in
// reverse and shuffled; each order on a database of its own, the delete
// loop alone timed (the commit after it is not). A delete checks that an
// object starts where it is told to (core/page_heap.hpp): these orders take
// different paths through that check.
#include "bench_dir.hpp"

#include <qs/qs.hpp>

#include <qs/cli/cli.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace delete_bench {

struct Cell {
  QS_PERSISTENT(Cell)
  std::int64_t v[3];
};

}  // namespace delete_bench

using namespace delete_bench;

namespace {

using clock_type = std::chrono::steady_clock;

void arrange(std::vector<Cell*>& cells, const std::string& order) {
  if (order == "reverse") std::reverse(cells.begin(), cells.end());
  if (order == "shuffled") std::shuffle(cells.begin(), cells.end(), std::mt19937_64(42));
}

double persistent_ns(const std::string& dir, std::size_t n, const std::string& order) {
  qs::options o;
  o.durable = false;  // the CPU's cost, not the disk's flush
  auto db = qs::database::open(dir, o);
  std::vector<Cell*> cells;
  cells.reserve(n);
  db.run([&] {
    for (std::size_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::int64_t>(i);
      cells.push_back(new (db) Cell{{v, v, v}});
    }
  });
  arrange(cells, order);
  qs::transaction tx(db);
  const auto t0 = clock_type::now();
  for (Cell* c : cells) delete c;
  const double ns = std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
  tx.commit();
  return ns / static_cast<double>(n);
}

double memory_ns(std::size_t n, const std::string& order) {
  std::vector<Cell*> cells;
  cells.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::int64_t>(i);
    cells.push_back(new Cell{{v, v, v}});
  }
  arrange(cells, order);
  const auto t0 = clock_type::now();
  for (Cell* c : cells) delete c;
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 200000;
  std::string dir;
  qs::cli::app app(
      "qs_delete_bench: N objects deleted in one transaction in creation order, reversed and\n"
      "shuffled, beside plain new/delete in the same orders.\n",
      "qs_delete_bench");
  app.add_option("--objects", n, "objects, 1 to 10000000 (default 200000)")
      ->type_name("N")
      ->check(qs::cli::whole(1, 10000000));
  app.add_option("--dir", dir, "where the databases go (default: a temporary directory, removed)")->type_name("DIR");
  if (auto status = app.parse(argc, argv)) return *status;
  const qs::bench::bench_dir work(dir, "qs_delete_bench");
  dir = work.path();
  std::printf("%zu objects of %zu bytes, deleted in one transaction (ns per delete)\n", n, sizeof(Cell));
  std::printf("%-10s %10s %10s %8s\n", "order", "qs", "memory", "qs/mem");
  try {
    for (const char* order : {"creation", "reverse", "shuffled"}) {
      const double q = persistent_ns(dir + "/" + order, n, order);
      const double m = memory_ns(n, order);
      std::printf("%-10s %10.1f %10.1f %8.2f\n", order, q, m, q / m);
    }
  } catch (const qs::error& e) {
    std::fprintf(stderr, "qs_delete_bench: %s\n", e.what());
    return 1;
  }
}
