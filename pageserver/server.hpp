// server.hpp: qs-pageserver's listeners and connections.
//
// The server owns the Berkeley DB environment (recovered at start; the
// directory's qs.lock keeps embedded clients and other servers out) and
// listens on a Unix socket, a TCP address, or both. Each accepted connection
// gets a thread running a session (session.hpp) until the client goes away,
// breaks the protocol, or the server stops. A connection that closes in a
// transaction has it aborted, which frees its locks.
//
// What no client can take from the others:
//  * places: connections before their hello and logged-in sessions are
//    counted apart (connection_limits.hpp);
//  * time: the whole handshake must be done within handshake_timeout of the
//    accept; a session whose Berkeley DB transaction is open must send its
//    next request, whole, within idle_timeout of the last answer, or the
//    transaction is aborted (its locks freed) and the connection closed; any
//    request, once begun, must arrive whole within idle_timeout; an answer
//    the client takes no byte of for idle_timeout ends the connection. Before
//    closing for a limit the server sends an error with code `closed` whose
//    text names the option. Lock waits are bounded by lock_timeouts.hpp;
//    TCP keepalive notices a peer whose host vanished.
//  * disk: a transaction's snapshot is released after snapshot_max_age,
//    at its next request or when the wait for one runs out (optimistic_transaction.hpp).
//  * memory: message buffers beyond a small allowance per connection come
//    from one budget (buffer_budget.hpp); the directory of cached pages and
//    the invalidations queued for a client are bounded
//    (cache_directory.hpp).
//
// A site of a replication group serves clients that may write only while
// it is the master: elsewhere their hello is answered `not_master`, and a
// site that becomes master opens its databases then and serves. A replica
// serves clients that only read (options::read_replica) from its databases
// opened read-only, opened again (every connection closed) after each
// change of master, since the new master may roll them back. A master
// that loses its place (another site was elected while it was cut off)
// stops, with exit status 3, so that it starts again as a replica: its
// sessions' snapshots and caches belong to a history the group left.
//
// run() returns when stop() is called (from the SIGTERM handler, through a
// pipe): listeners close, every connection is shut down, threads are joined,
// open transactions are aborted; a master of a group then hands over: it
// waits, at most hand_over_patience, until the connected replicas have all
// of its log (replication::hand_over), so that the election its leaving
// starts loses no commit; the commit counters are logged
// (commit_counters.hpp; report() logs them any time, from SIGUSR1) and the
// environment is checkpointed and closed.
#pragma once

#include "buffer_budget.hpp"
#include "cache_directory.hpp"
#include "commit_counters.hpp"
#include "commit_outcomes.hpp"
#include "connection_limits.hpp"
#include "lock_timeouts.hpp"
#include "page_numbers.hpp"
#include "read_counters.hpp"

#include <qs/bdb/bdb_env.hpp>
#include <qs/wire/connection.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>

namespace qs::server {

// How long a master's clean stop waits for its replicas to have all of its
// log (a replica stopped but connected holds the stop up this long).
inline constexpr std::chrono::milliseconds hand_over_patience{10000};

struct server_options {
  std::string dir;
  std::optional<std::string> unix_path;
  std::optional<wire::tcp_address> tcp;
  std::string secret;      // required of TCP clients
  std::string ready_file;  // written (TCP port, or 0) once listening
  std::uint64_t cache_bytes = std::uint64_t{128} << 20;
  unsigned max_connections = 256;  // logged-in sessions
  unsigned max_handshakes = 64;    // connections before their hello
  std::chrono::milliseconds handshake_timeout{10'000};
  std::chrono::milliseconds idle_timeout{300'000};  // zero: none
  std::chrono::milliseconds lock_timeout{60'000};   // zero: none
  std::chrono::milliseconds txn_timeout{600'000};   // zero: none
  // How long a transaction's snapshot is kept (optimistic_transaction.hpp); zero: no limit.
  std::chrono::milliseconds snapshot_max_age{120'000};
  // On a replica, how long a read-only transaction's reads keep their
  // locks (they hold up the apply of the master's log; zero: no limit).
  std::chrono::milliseconds replica_read_max{2'000};
  std::uint64_t buffer_bytes = std::uint64_t{512} << 20;
  // How long a connection's thread polls for the next request before it
  // sleeps (qs/wire/spin_wait.hpp); zero: never.
  std::chrono::microseconds wait_spin = wire::spin_wait::default_budget;
  // How long the outcome of a commit is remembered (commit_outcomes.hpp).
  std::uint64_t outcome_window_seconds = 600;
  // A log line for each commit refused for a conflict (they are counted
  // either way).
  bool log_conflicts = false;
  // The cache directory's bounds (cache_directory.hpp): pages noted over
  // all clients, and invalidation bytes queued for one client that does not
  // read them.
  std::uint64_t directory_pages = std::uint64_t{4} << 20;
  std::size_t push_queue_bytes = std::size_t{4} << 20;
  // Where hot backups clients ask for go (backup_dir/NAME); empty: none.
  std::string backup_dir;
  // This server is a site of a replication group (qs/bdb/replication.hpp).
  std::optional<detail::replication_options> replication;
};

class server {
 public:
  explicit server(const server_options& o);
  ~server();
  // Serves until stop(). Returns the process exit status.
  int run();
  // Async-signal-safe.
  void stop() noexcept;
  // Async-signal-safe: the commit counters go to the log (SIGUSR1).
  void report() noexcept;

 private:
  struct client {
    std::uint64_t id;
    std::unique_ptr<wire::connection> conn;
    bool tcp;
    std::chrono::steady_clock::time_point accepted;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void accept_one(int listen_fd, bool tcp);
  void serve(client* c);
  void reap(bool all);
  // Writes o_.ready_file: the TCP port, or 0.
  void write_ready_file();
  // What the sessions are served as (serving_).
  enum : int { not_serving = 0, as_master = 1, as_replica = 2 };
  // Closes every connection and opens the databases and commit outcomes
  // for `how`: writable on the master, read-only on a replica. False
  // (logged) when it failed, to be tried again.
  bool serve_as(int how);
  // Answers a connection's hello on a site that is not the master.
  void refuse_not_master(client* c);
  // The log flushes so far, for the statistics line.
  std::string flushes_line();
  // What Berkeley DB read, and read around (qs/bdb/read_around.hpp).
  static std::string read_around_line();

  server_options o_;
  std::unique_ptr<detail::bdb_env> env_;
  std::unique_ptr<page_numbers> numbers_;
  std::unique_ptr<commit_outcomes> outcomes_;
  std::unique_ptr<lock_timeouts> timeouts_;
  std::unique_ptr<cache_directory> directory_;
  commit_counters counters_;
  read_counters reads_;
  std::shared_mutex commit_gate_;  // optimistic_transaction.hpp
  std::atomic<int> sending_ahead_{0};
  std::atomic<int> serving_{0};  // not_serving, as_master, as_replica: the session objects are ready
  std::chrono::steady_clock::time_point next_serve_try_{};  // a replica's serve_as, after a failure
  std::uint64_t master_changes_ = 0;  // replication::master_changes() when the replica opened its databases
  std::chrono::steady_clock::time_point next_archive_{};  // replication::archive, from run()
  std::chrono::steady_clock::time_point next_report_{};   // replication::report_progress, from run()
  bool ready_ = false;
  bool master_said_ = false;  // "this site is the master" was logged                                    // a replicated
                              // site: its ready file is written (run())
  connection_limits limits_;
  buffer_budget budget_;
  int unix_fd_ = -1, tcp_fd_ = -1, lock_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::uint64_t next_id_ = 1;
  std::mutex clients_mutex_;
  std::list<std::unique_ptr<client>> clients_;
};

}  // namespace qs::server
