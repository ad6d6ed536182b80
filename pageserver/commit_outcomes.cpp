// The outcomes of recent commits (commit_outcomes.hpp).
#include "commit_outcomes.hpp"

#include "log.hpp"

#include <qs/base/error.hpp>
#include <qs/format/keys.hpp>

#include <db_cxx.h>

#include <sys/random.h>
#include <filesystem>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

namespace qs::server {
namespace {

// Deleted by one sweep at most: bounds the sweep's transaction.
constexpr int sweep_batch = 4096;
constexpr std::uint64_t sweep_every = 256;           // commits
constexpr std::string_view horizon_key = "horizon";  // (an identity's key has 17 bytes)

// A cursor's key and value, read into buffers of their own
// (DB_DBT_USERMEM).
struct cursor_entry {
  unsigned char kbuf[64], vbuf[64];
  Dbt k, v;
  cursor_entry() {
    k.set_data(kbuf);
    k.set_ulen(sizeof kbuf);
    k.set_flags(DB_DBT_USERMEM);
    v.set_data(vbuf);
    v.set_ulen(sizeof vbuf);
    v.set_flags(DB_DBT_USERMEM);
  }
  cursor_entry(const cursor_entry&) = delete;
  cursor_entry& operator=(const cursor_entry&) = delete;
};

std::uint64_t now_ns() {
  auto t = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t).count());
}

std::uint64_t random_u64() {
  std::uint64_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  std::size_t got = 0;
  while (got < sizeof v) {
    ssize_t n = ::getrandom(p + got, sizeof v - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw store_error(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  return v;
}

// Records are in 16 lanes (a byte of the nonce), each in order of begin:
// concurrent commits write the right ends of different lanes, which are
// different B-tree leaves once the table is larger than a few, so they
// seldom wait for each other's leaf lock.
constexpr int lanes = 16;
constexpr std::size_t key_size = 17;  // lane, time, nonce

std::string key_of(const wire::commit_id& id) {
  return static_cast<char>(id.nonce % lanes) + detail::be64(id.time) + detail::be64(id.nonce);
}

Dbt dbt(std::string_view s) { return Dbt(const_cast<char*>(s.data()), static_cast<std::uint32_t>(s.size())); }

// A record's u64 value; nullopt when absent.
std::optional<std::uint64_t> get_u64(detail::bdb_env& env, Db& db, DbTxn* t, std::string_view key, const char* what) {
  Dbt k = dbt(key);
  unsigned char buf[8];
  Dbt v;
  v.set_data(buf);
  v.set_ulen(sizeof buf);
  v.set_flags(DB_DBT_USERMEM);
  int rc = db.get(t, &k, &v, 0);
  if (rc == DB_NOTFOUND) return std::nullopt;
  env.check(rc, std::string("read ") + what + " in outcomes.db");
  if (v.get_size() != sizeof buf)
    throw store_error("database " + env.dir() + ": outcomes.db: " + what + " has " + std::to_string(v.get_size()) +
                      " bytes, not 8");
  return detail::from_be64(std::string_view(reinterpret_cast<const char*>(buf), sizeof buf));
}

// Takes the lock of the identity whose key is `key` in t (released when t
// ends); returns Berkeley DB's code.
int lock_identity(detail::bdb_env& env, DbTxn* t, const std::string& key, db_lockmode_t mode, std::uint32_t flags) {
  return env.lock_object(t, "qs:c" + key, mode, flags);
}

}  // namespace

commit_outcomes::commit_outcomes(detail::bdb_env& env, std::uint64_t window_seconds)
    : env_(env),
      window_ns_(window_seconds > ~std::uint64_t{0} / 1000000000 ? ~std::uint64_t{0} : window_seconds * 1000000000) {
  db_ = std::make_unique<Db>(env_.env(), DB_CXX_NO_EXCEPTIONS);
  const bool read_only = env_.replica_reads();
  std::error_code ec;
  if (!read_only && !std::filesystem::exists(std::filesystem::path(env_.dir()) / "outcomes.db", ec))
    env_.about_to_write();
  int rc = db_->open(nullptr, "outcomes.db", nullptr, DB_BTREE,
                     (read_only ? DB_RDONLY : DB_CREATE) | DB_AUTO_COMMIT | DB_THREAD | env_.open_flags(), 0600);
  if (rc != 0) {
    db_->close(0);
    env_.check(rc, "open outcomes.db");
  }
  // What expired while the server was down (the master's sweeps reach a
  // replica through replication).
  if (!read_only)
    while (sweep()) {
    }
}

std::uint64_t commit_outcomes::newest_commit_ns(DbTxn* t) {
  Dbc* c = nullptr;
  env_.check(db_->cursor(t, &c, 0), "cursor on outcomes.db");
  struct closer {
    Dbc* c;
    ~closer() { c->close(); }
  } close_it{c};
  std::uint64_t newest = 0;
  cursor_entry entry;
  auto& [kbuf, vbuf, k, v] = entry;
  // Each lane's last identity began last; its commit is about the lane's
  // newest (a lower bound of it, so the lag derived is an upper bound).
  for (int lane = 0; lane < lanes; ++lane) {
    kbuf[0] = static_cast<unsigned char>(lane + 1);
    k.set_size(1);
    int rc = c->get(&k, &v, DB_SET_RANGE);
    rc = rc == DB_NOTFOUND ? c->get(&k, &v, DB_LAST) : (rc == 0 ? c->get(&k, &v, DB_PREV) : rc);
    if (rc == DB_NOTFOUND) continue;
    env_.check(rc, "read outcomes.db");
    if (k.get_size() != key_size || kbuf[0] != lane || v.get_size() != 8) continue;
    newest = std::max(newest, detail::from_be64(std::string_view(reinterpret_cast<const char*>(vbuf), 8)));
  }
  return newest;
}

std::uint64_t commit_outcomes::now() { return now_ns(); }

commit_outcomes::~commit_outcomes() { db_->close(0); }

wire::commit_id commit_outcomes::claim(DbTxn* t) {
  for (;;) {
    wire::commit_id id{now_ns(), random_u64()};
    // Nobody else holds a fresh identity's lock, unless a client asked
    // about it by chance at this very moment: then take another.
    int rc = lock_identity(env_, t, key_of(id), DB_LOCK_WRITE, DB_LOCK_NOWAIT);
    if (rc == DB_LOCK_NOTGRANTED) continue;
    env_.check(rc, "lock of a commit identity");
    return id;
  }
}

void commit_outcomes::record(DbTxn* t, const wire::commit_id& id) {
  std::string key = key_of(id), value = detail::be64(now_ns());
  Dbt k = dbt(key), v = dbt(value);
  env_.about_to_write();
  env_.check(db_->put(t, &k, &v, 0), "record a commit in outcomes.db");
}

void commit_outcomes::committed() noexcept {
  if (++commits_ % sweep_every != 0) return;
  try {
    sweep();
  } catch (...) {
    // The commit stands whatever the sweep does; the next one tries again.
  }
}

wire::commit_outcome commit_outcomes::outcome(const wire::commit_id& id) {
  sweep();
  const std::string key = key_of(id);
  DbTxn* t = env_.begin();
  try {
    int rc = lock_identity(env_, t, key, DB_LOCK_READ, DB_LOCK_NOWAIT);
    wire::commit_outcome o;
    if (rc == DB_LOCK_NOTGRANTED) {
      o = wire::commit_outcome::pending;  // its transaction has not ended
    } else {
      env_.check(rc, "lock of a commit identity");
      if (get_u64(env_, *db_, t, key, "a commit's record")) o = wire::commit_outcome::committed;
      else if (id.time <= get_u64(env_, *db_, t, horizon_key, "the horizon").value_or(0))
        o = wire::commit_outcome::expired;
      else o = wire::commit_outcome::aborted;
    }
    env_.commit(t, false);  // wrote nothing
    return o;
  } catch (...) {
    try {
      env_.abort(t);
    } catch (...) {
    }
    throw;
  }
}

bool commit_outcomes::sweep() {
  if (sweeping_.exchange(true)) return false;  // another thread is at it
  struct done {
    std::atomic<bool>& flag;
    ~done() { flag = false; }
  } unflag{sweeping_};
  const std::uint64_t now = now_ns();
  const std::uint64_t cutoff = now > window_ns_ ? now - window_ns_ : 0;
  DbTxn* t = nullptr;
  if (env_.env()->txn_begin(nullptr, &t, DB_TXN_NOWAIT) != 0) return false;
  Dbc* c = nullptr;
  int deleted = 0;
  try {
    env_.check(db_->cursor(t, &c, 0), "cursor on outcomes.db");
    std::uint64_t horizon = 0;
    cursor_entry entry;
    auto& [kbuf, vbuf, k, v] = entry;
    // Each lane oldest begin first: nothing after its first identity
    // younger than the cutoff can be old enough.
    for (int lane = 0; lane < lanes && deleted < sweep_batch; ++lane) {
      kbuf[0] = static_cast<unsigned char>(lane);
      k.set_size(1);
      for (std::uint32_t op = DB_SET_RANGE; deleted < sweep_batch; op = DB_NEXT) {
        int rc = c->get(&k, &v, op);
        if (rc == DB_NOTFOUND) break;
        env_.check(rc, "read outcomes.db");
        if (k.get_size() != key_size || kbuf[0] != lane || v.get_size() != 8) break;  // next lane, or the horizon
        std::string_view ks(reinterpret_cast<const char*>(kbuf), key_size);
        std::uint64_t begun = detail::from_be64(ks.substr(1, 8));
        if (begun > cutoff) break;
        std::uint64_t stamp =
            std::max(begun, detail::from_be64(std::string_view(reinterpret_cast<const char*>(vbuf), 8)));
        if (stamp > cutoff) continue;  // a long transaction that committed lately
        env_.about_to_write();
        env_.check(c->del(0), "delete from outcomes.db");
        horizon = std::max(horizon, stamp);
        ++deleted;
      }
    }
    env_.check(c->close(), "close a cursor on outcomes.db");
    c = nullptr;
    if (deleted > 0) {
      std::uint64_t was = get_u64(env_, *db_, t, horizon_key, "the horizon").value_or(0);
      if (horizon > was) {
        std::string value = detail::be64(horizon);
        Dbt hk = dbt(horizon_key), hv = dbt(value);
        env_.check(db_->put(t, &hk, &hv, 0), "write the horizon of outcomes.db");
      }
    }
  } catch (const deadlock&) {
    // A lock it would have waited for: the next sweep tries again.
    if (c) c->close();
    t->abort();
    return false;
  } catch (const std::exception& e) {
    if (c) c->close();
    t->abort();
    log_line(0, std::string("error: sweeping outcomes.db: ") + e.what());
    return false;
  }
  // Not durable: a sweep lost in a crash loses its horizon with it. A
  // commit that fails has aborted.
  if (int rc = t->commit(DB_TXN_NOSYNC); rc != 0) {
    if (rc != DB_LOCK_DEADLOCK && rc != DB_LOCK_NOTGRANTED)
      log_line(0, std::string("error: committing a sweep of outcomes.db: ") + db_strerror(rc));
    return false;
  }
  return deleted == sweep_batch;
}

}  // namespace qs::server
