// The OO7 programs oo7-qs and oo7-mem (one source, see mode.hpp): database
// generation and the benchmark driver of OO7-SPEC 5.
//
//   oo7-qs gen   SIZE DIR                      generate (SIZE: tiny little small medium large, or a config file)
//   oo7-qs bench SIZE DIR COUNT OP one|many    run OP COUNT times (OO7-SPEC 5.3)
//   oo7-qs ops                                 list the operations
// options, before or after the command: --work N (T1WW's gettimeofday calls
// per DoNothing), --pool PAGES|BYTES (qs buffer pool), --no-durable,
// --warm-os (keep the OS page cache of the store's files), --quiet,
// --relocate PERCENT (force that share of pages to other frames as they come
// in), --one-time (one-time relocation: relocated pages are written back at
// commit; the default is continual), --evolve. `oo7-qs --help` lists them
// with their ranges; a bad command line exits with status 2 (qs_cli).
//
// In qs mode, bench is a cold run: before opening the database it flushes
// and drops every file of the store directory from the OS page cache
// (posix_fadvise DONTNEED), and the new process starts with an empty qs pool
// and an empty Berkeley DB cache. Iteration 0 is cold, 1..COUNT-2 are hot.
// In mem mode, bench generates the database in memory first (DIR is
// ignored) and times the same iterations.
//
// The last line of bench is machine-readable: `RESULT key=value ...`.
#include "oo7.hpp"

#include <qs/cli/cli.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

struct Options {
  int work = 0;
  std::uint64_t pool_pages = 0, pool_bytes = 0;  // 0 and 0: qs's default
  bool durable = true, warm_os = false, quiet = false, one_time = false, evolve = false;
  unsigned relocate = 0;
};

#ifdef OO7_ON_QS
std::uint64_t dir_bytes(const std::string& dir, bool data_only) {
  std::uint64_t total = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      if (data_only && (n.rfind("log.", 0) == 0 || n.rfind("__db", 0) == 0)) continue;
      struct stat st {};
      if (::stat((dir + "/" + n).c_str(), &st) == 0 && S_ISREG(st.st_mode))
        total += static_cast<std::uint64_t>(st.st_size);
    }
    ::closedir(d);
  }
  return total;
}

// Flushes and drops every file of the store from the OS page cache.
void drop_os_cache(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw oo7::error("cannot open directory " + dir);
  while (dirent* e = ::readdir(d)) {
    std::string p = dir + "/" + e->d_name;
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  ::closedir(d);
}
#endif

double cpu_user() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec) / 1e6;
}
double cpu_sys() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_stime.tv_sec) + static_cast<double>(u.ru_stime.tv_usec) / 1e6;
}

#ifdef OO7_ON_QS
qs::options store_options(const Options& o) {
  qs::options q;
  q.pool_pages = static_cast<std::uint32_t>(o.pool_pages);
  q.pool_bytes = o.pool_bytes;
  q.durable = o.durable;
  q.force_relocation_percent = o.relocate;
  q.relocation_policy = o.one_time ? qs::relocation::one_time : qs::relocation::continual;
  q.evolve = o.evolve;
  return q;
}
// What the pool and the kernel's mappings were, for the report.
std::string pool_fields(const qs::database& h) {
  qs::statistics s = h.stats();
  char buf[160];
  std::snprintf(buf, sizeof buf, "pool_pages=%u resident_pages=%" PRIu64 " mappings=%" PRIu64 " frames=%s",
                h.pool_pages(), s.resident_pages, s.kernel_mappings, s.frame_control);
  return buf;
}
#endif

int cmd_gen(const std::string& size, const std::string& dir, const Options& o) {
  oo7::Config cfg = oo7::config_named(size);
  oo7::Db db;
#ifdef OO7_ON_QS
  std::string pool;
  {
    auto h = qs::database::open(dir, store_options(o));
    db.st.db = &h;
    oo7::generate(db, cfg, o.quiet);
    auto s = h.stats();
    if (!o.quiet)
      std::printf("  %" PRIu64 " pages written, %" PRIu64 " log bytes, commit %.1f ms, %" PRIu64
                  " dirty pages evicted\n",
                  s.pages_written, s.log_bytes, static_cast<double>(s.commit_ns) / 1e6, s.dirty_evictions);
    pool = pool_fields(h);
  }  // closed: the store's files are complete
  if (!o.quiet)
    std::printf("Database size on disk: %.2f MB of data files (%.2f MB with the log)\n",
                static_cast<double>(dir_bytes(dir, true)) / 1e6, static_cast<double>(dir_bytes(dir, false)) / 1e6);
  std::printf("DBSIZE mode=%s size=%s indexes=%s data_bytes=%" PRIu64 " %s\n", oo7::mode_name, size.c_str(),
              oo7::bdb_indexes_requested() ? "bdb" : "btree", dir_bytes(dir, true), pool.c_str());
#else
  (void)dir;
  oo7::generate(db, cfg, o.quiet);
#endif
  return 0;
}

int cmd_bench(const std::string& size, const std::string& dir, int count, const std::string& op, bool many,
              const Options& o) {
  if (count < 1) throw oo7::error("COUNT must be at least 1");
  auto names = oo7::op_names();
  if (std::find(names.begin(), names.end(), op) == names.end()) throw oo7::error("unknown operation '" + op + "'");
  oo7::Db db;
  db.workAmount = o.work;
  db.quiet = o.quiet;
#ifdef OO7_ON_QS
  (void)size;
  if (!o.warm_os) drop_os_cache(dir);
  auto h = qs::database::open(dir, store_options(o));
  db.st.db = &h;
  {
    oo7::txn setup(db.st);  // OO7-SPEC 5.2: open in a short transaction
    db.attach();
    setup.commit();
  }
#else
  (void)dir;
  oo7::generate(db, oo7::config_named(size), true);
  if (op == "d") {
    // Delete removes what Insert added in an earlier process (OO7-SPEC 4.3).
    // A fresh in-memory database has nothing to delete: insert, untimed, as
    // many parts as the iterations will delete.
    oo7::txn t(db.st);
    for (int i = 0; i < count; ++i) oo7::op_insert(db);
    t.commit();
  }
  {
    oo7::txn setup(db.st);
    db.attach();
    setup.commit();
  }
#endif
  // Measured before the run, on a page of its own.
  double detect_ns = oo7::fault_detection_ns();
  oo7::txn tx(db.st, false);
  double cold_ms = 0, last_ms = 0;
  clk::time_point hot_start{};
  double hot_ms = -1;
  oo7::stats_t s0 = oo7::stats_now(db.st), cold_end{};
  long result = 0;
  for (int i = 0; i < count; ++i) {
    if (!o.quiet) std::printf("RUNNING OO7 BENCHMARK OPERATION %s, iteration = %d.\n", op.c_str(), i);
    double u0 = cpu_user(), sy0 = cpu_sys();
    auto t0 = clk::now();
    if (i == 1) hot_start = t0;
    if (!tx.open()) tx.begin();
    oo7::OpResult res = oo7::run_op(db, op);
    if (i == 0) result = res.count;
    if (i == count - 1 || many) tx.commit();
    auto t1 = clk::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (i == 0) {
      cold_ms = ms;
      cold_end = oo7::stats_now(db.st);
    }
    last_ms = ms;
    double u = cpu_user() - u0, sy = cpu_sys() - sy0;
    if (!o.quiet) {
      std::printf("%s operation= %s, iteration= %d, elapsedTime= %.6f seconds\n", i == 0 ? "Cold" : "Hot", op.c_str(),
                  i, ms / 1e3);
      std::printf("%s\n", res.line.c_str());
      std::printf("CPU time: %.6f seconds.\n(%.6f seconds user, %.6f seconds system.)\n", u + sy, u, sy);
    }
    if (count > 2 && i == count - 2) {
      hot_ms = std::chrono::duration<double, std::milli>(t1 - hot_start).count() / (count - 2);
      if (!o.quiet) std::printf("Average hot time for %d iterations: %.6f seconds\n", count - 2, hot_ms / 1e3);
    }
  }
  oo7::stats_t s1 = oo7::stats_now(db.st);
  std::string pool;
#ifdef OO7_ON_QS
  pool = pool_fields(h);
#endif
  std::printf(
      "RESULT mode=%s op=%s indexes=%s count=%d xacts=%s result=%ld cold_ms=%.3f hot_ms=%.4f last_ms=%.3f "
      "cold_read_faults=%" PRIu64 " cold_write_faults=%" PRIu64 " cold_pages_fetched=%" PRIu64 " read_faults=%" PRIu64
      " write_faults=%" PRIu64 " pages_fetched=%" PRIu64 " pages_written=%" PRIu64 " evictions=%" PRIu64
      " log_bytes=%" PRIu64 " commit_ms=%.3f diff_bytes=%" PRIu64 " cold_fault_ns=%" PRIu64 " cold_fetch_ns=%" PRIu64
      " cold_mapping_ns=%" PRIu64 " cold_swizzle_ns=%" PRIu64 " cold_protect_ns=%" PRIu64 " detect_ns=%.0f %s\n",
      oo7::mode_name, op.c_str(), db.bdbIndexes ? "bdb" : "btree", count, many ? "many" : "one", result, cold_ms,
      hot_ms, last_ms, cold_end.read_faults - s0.read_faults, cold_end.write_faults - s0.write_faults,
      cold_end.pages_fetched - s0.pages_fetched, s1.read_faults - s0.read_faults, s1.write_faults - s0.write_faults,
      s1.pages_fetched - s0.pages_fetched, s1.pages_written - s0.pages_written, s1.evictions - s0.evictions,
      s1.log_bytes - s0.log_bytes, static_cast<double>(s1.commit_ns - s0.commit_ns) / 1e6,
      s1.diff_bytes - s0.diff_bytes, cold_end.fault_ns - s0.fault_ns, cold_end.fetch_ns - s0.fetch_ns,
      cold_end.mapping_ns - s0.mapping_ns, cold_end.swizzle_ns - s0.swizzle_ns, cold_end.protect_ns - s0.protect_ns,
      detect_ns, pool.c_str());
  return 0;
}

// --pool: PAGES, or BYTES with a unit (K, M, G).
qs::cli::validator pool_size() {
  return qs::cli::validator([](std::string& v) -> std::string {
    std::string digits = v;
    if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'M' || digits.back() == 'G')) digits.pop_back();
    std::string unit = v.substr(digits.size());
    std::uint64_t most = unit.empty() ? 0xffffffffu : unit == "K" ? 1u << 30 : unit == "M" ? 1u << 20 : 1u << 10;
    std::string check = digits;
    if (!qs::cli::whole(1, most)(check).empty())
      return "expected PAGES from 1 to 4294967295, or BYTES with a unit up to 1024G (64M, 2G), got '" + v + "'";
    return {};
  });
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string size, dir, op, xacts, pool;
  unsigned count = 0;
  const std::string name = std::string("oo7-") + oo7::mode_name;
  qs::cli::app app("The OO7 benchmark (OO7-SPEC): database generation and the operations' driver.\n", name);
  app.fallthrough();  // options before or after the command
  app.require_subcommand(1);
  app.add_option("--work", o.work, "T1WW's gettimeofday calls per DoNothing, 0 to 1000000 (default 0)")
      ->type_name("N")
      ->check(qs::cli::whole(0, 1000000));
  app.add_option("--pool", pool,
                 "the qs buffer pool, in pages (1536) or bytes with a unit (64M, 2G);\n"
                 "default qs's")
      ->type_name("PAGES|BYTES")
      ->check(pool_size());
  app.add_flag(
      "--no-durable", [&] { o.durable = false; }, "commits without flushing the log");
  app.add_flag("--warm-os", o.warm_os, "keep the OS page cache of the store's files (bench)");
  app.add_flag("--quiet", o.quiet, "print only the machine-readable lines");
  app.add_option("--relocate", o.relocate, "force that share of pages to other frames as they come in, 0 to 100")
      ->type_name("PERCENT")
      ->check(qs::cli::whole(0, 100));
  app.add_flag("--one-time", o.one_time,
               "one-time relocation: relocated pages are written back at commit\n"
               "(the default is continual)");
  app.add_flag("--evolve", o.evolve, "convert a database whose types changed (qs::options::evolve)");
  const char* size_help = "tiny little small medium large, or a config file (OO7-SPEC 2.1)";
  qs::cli::command* gen = app.add_subcommand("gen", "generate the database in DIR");
  gen->add_option("SIZE", size, size_help)->type_name("")->required();
  gen->add_option("DIR", dir, "the database directory")->type_name("")->required();
  qs::cli::command* bench =
      app.add_subcommand("bench", "run OP COUNT times (OO7-SPEC 5.3); the last line is RESULT key=value ...");
  bench->add_option("SIZE", size, size_help)->type_name("")->required();
  bench->add_option("DIR", dir, "the database directory (oo7-mem: ignored)")->type_name("")->required();
  bench->add_option("COUNT", count, "iterations, 1 to 1000000: iteration 0 is cold, 1..COUNT-2 are hot")
      ->type_name("")
      ->required()
      ->check(qs::cli::whole(1, 1000000));
  bench->add_option("OP", op, "the operation (oo7-" + std::string(oo7::mode_name) + " ops lists them)")
      ->type_name("")
      ->required();
  bench->add_option("XACTS", xacts, "one transaction for all iterations, or many: one each")
      ->type_name("one|many")
      ->required()
      ->check(qs::cli::one_of({"one", "single", "many"}));
  qs::cli::command* ops = app.add_subcommand("ops", "list the operations");
  if (auto status = app.parse(argc, argv)) return *status;
  if (!pool.empty()) {
    std::uint64_t n = std::stoull(pool);
    switch (pool.back()) {
      case 'K': o.pool_bytes = n << 10; break;
      case 'M': o.pool_bytes = n << 20; break;
      case 'G': o.pool_bytes = n << 30; break;
      default: o.pool_pages = n;
    }
  }
  try {
    if (*ops) {
      for (auto& n : oo7::op_names()) std::printf("%s\n", n.c_str());
      return 0;
    }
    if (*gen) return cmd_gen(size, dir, o);
    return cmd_bench(size, dir, static_cast<int>(count), op, xacts == "many", o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return 1;
  }
}
