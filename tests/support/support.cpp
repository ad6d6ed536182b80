#include "support.hpp"

#include <qs/inspect.hpp>

#include <qs/bdb/bdb_env.hpp>

#include "core/page_format.hpp"

#include <catch2/catch.hpp>

#include <db_cxx.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace qs_test {

env_var::env_var(const char* name, const char* value) : name_(name) {
  const char* was = std::getenv(name);
  was_set_ = was != nullptr;
  if (was) saved_ = was;
  ::setenv(name, value, 1);
}

env_var::~env_var() {
  if (was_set_) ::setenv(name_.c_str(), saved_.c_str(), 1);
  else ::unsetenv(name_.c_str());
}

process spawn_worker(const std::vector<std::string>& args, const std::string& pause_at,
                     const std::string& stderr_path) {
  return spawn_program(QS_CRASH_WORKER, args, pause_at, stderr_path);
}

process spawn_program(const std::string& program, const std::vector<std::string>& args, const std::string& pause_at,
                      const std::string& stderr_path) {
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  spawn_options o;
  o.err_path = stderr_path;
  o.pause_at = pause_at;
  return spawn(argv, o);
}

namespace {

// Opens the closed database's Berkeley DB file `file` in `dir` and calls
// f(db); checkpoints, so that the change is in the file when it returns.
void with_store_file(const std::string& dir, const char* file, const std::function<void(Db&)>& f) {
  DbEnv env(0);
  env.open(dir.c_str(), DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL | DB_PRIVATE, 0600);
  {
    Db db(&env, 0);
    db.open(nullptr, file, nullptr, DB_BTREE, DB_AUTO_COMMIT, 0);
    f(db);
    db.close(0);
  }
  env.txn_checkpoint(0, 0, 0);
  env.close(0);
}

// Lets change(record bytes, size) rewrite the stored record of `page`
// (through the store's own environment, which keeps records in pieces).
void rewrite_record(const std::string& dir, std::uint64_t page,
                    const std::function<void(std::byte* record, std::size_t size)>& change) {
  qs::detail::bdb_env env(dir, 16u << 20);
  std::vector<std::byte> record(std::size_t{1} << 17);
  std::uint32_t n = env.read_record(nullptr, page, record.data(), static_cast<std::uint32_t>(record.size()));
  if (n == 0) throw std::runtime_error("no such page");
  change(record.data(), n);
  env.put_record(nullptr, page, record.data(), n);
}

}  // namespace

void corrupt_stored_page(const std::string& dir, std::uint64_t page, std::uint32_t offset) {
  rewrite_record(dir, page, [&](std::byte* bytes, std::size_t) {
    bytes[sizeof(qs::detail::record_header) + offset] ^= std::byte{0x5a};  // past the record header
  });
}

void delete_stored_piece(const std::string& dir, std::uint64_t page, unsigned piece) {
  with_store_file(dir, "pages.db", [&](Db& db) {
    unsigned char k[9];
    for (int i = 7; i >= 0; --i, page >>= 8) k[i] = static_cast<unsigned char>(page);
    k[8] = static_cast<unsigned char>(piece);
    Dbt key(k, sizeof k);
    if (db.del(nullptr, &key, DB_AUTO_COMMIT) != 0) throw std::runtime_error("no such piece");
  });
}

void put_stored_record(const std::string& dir, const std::string& key, const std::string& value) {
  with_store_file(dir, "meta.db", [&](Db& db) {
    Dbt k(const_cast<char*>(key.data()), static_cast<u_int32_t>(key.size()));
    Dbt v(const_cast<char*>(value.data()), static_cast<u_int32_t>(value.size()));
    db.put(nullptr, &k, &v, DB_AUTO_COMMIT);
  });
}

void rewrite_stored_page(const std::string& dir, std::uint64_t page,
                         const std::function<void(std::byte* header, std::byte* image)>& change) {
  rewrite_record(dir, page, [&](std::byte* bytes, std::size_t size) {
    change(bytes, bytes + sizeof(qs::detail::record_header));
    auto* h = reinterpret_cast<qs::detail::record_header*>(bytes);
    h->checksum = qs::detail::record_checksum(*h, bytes + sizeof *h, size - sizeof *h);
  });
}

void rewrite_stored_mapping(const std::string& dir, std::uint64_t page,
                            const std::function<void(std::string&)>& change) {
  qs::detail::bdb_env env(dir, 16u << 20);
  std::string m = env.read_mapping(nullptr, page).value_or("");
  change(m);
  env.put_mapping(nullptr, page, m);
}

void check_verifies(const std::string& db) {
  std::string problems;
  std::uint64_t n = qs::inspector(db).verify([&](const std::string& line) { problems += line + "\n"; });
  INFO("qs-inspect verify " << db << ":\n" << problems);
  CHECK(n == 0);
}

int committed_transactions(const std::string& db, int nodes) {
  auto c = spawn_worker({db, "check", std::to_string(nodes)});
  int st = c.wait();
  REQUIRE(st >= 10);
  return st - 10;
}

int commits_said(const std::string& err) {
  int n = 0;
  for (std::size_t at = err.find("committed "); at != std::string::npos; at = err.find("committed ", at + 1)) ++n;
  return n;
}

long fill_holds(const std::string& db, int slabs, const std::string& err_path, int* status) {
  auto c = spawn_worker({db, "fillcheck", std::to_string(slabs)}, "", err_path);
  int st = c.wait();
  if (status) *status = st;
  std::string said = read_file(err_path);
  std::size_t at = said.find("holds ");
  return st == 0 && at != std::string::npos ? std::atol(said.c_str() + at + 6) : -1;
}

long last_committed(const std::string& said) {
  long last = 0;
  for (std::size_t at = 0; at < said.size(); at = said.find('\n', at) + 1) {
    if (said.compare(at, 10, "committed ") == 0) last = std::atol(said.c_str() + at + 10);
    if (said.find('\n', at) == std::string::npos) break;
  }
  return last;
}

void kill_at_chosen_points(int nodes, const std::vector<std::string>& extra, const std::string& mode,
                           const std::vector<std::string>& more_points) {
  struct point {
    std::string name;
    int expect;  // transactions committed when killed; -1: as many as the worker said
  };
  std::vector<point> points = {
      {"worker.mid:3", 2},                  // inside the transaction
      {"commit.half_written:3", 2},         // half the pages in the store transaction
      {"commit.before_store_commit:3", 2},  // everything written, not committed
      {"commit.after_store_commit:3", 3},   // committed, nothing cleaned up
  };
  for (const std::string& name : more_points) points.push_back({name, -1});
  auto run = [&](const std::string& db, const char* txns) {
    std::vector<std::string> args{db, mode, txns, std::to_string(nodes)};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  for (const point& p : points) {
    DYNAMIC_SECTION(mode << " " << p.name) {
      test_dir dir;
      std::string db = dir.sub("db");
      auto c = spawn_worker(run(db, "5"), p.name, dir.sub("worker.err"));
      c.kill9();
      CHECK(c.wait() == -SIGKILL);
      int expect = p.expect;
      if (expect < 0) {
        expect = commits_said(c.err());
        INFO("the worker's standard error:\n" << c.err());
        REQUIRE(expect >= 1);  // killed after a commit, so that one must survive it
        REQUIRE(expect < 5);   // and before the last
      }
      CHECK(committed_transactions(db, nodes) == expect);
      check_verifies(db);
      // The database goes on working after recovery.
      auto again = spawn_worker(run(db, "1"));
      CHECK(again.wait() == 0);
      CHECK(committed_transactions(db, nodes) == expect + 1);
      check_verifies(db);
    }
  }
}

}  // namespace qs_test
