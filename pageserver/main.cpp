// qs-pageserver: serves a qs database (a Berkeley DB environment in DIR) to
// many clients over a Unix socket and/or TCP. See `qs-pageserver --help`.
#include "log.hpp"
#include "replication_guard.hpp"
#include "server.hpp"
#include "shared_secret.hpp"

#include <qs/cli/cli.hpp>
#include <qs/wire/connection.hpp>

#include <qs/base/error.hpp>
#include <qs/bdb/read_around.hpp>

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

qs::server::server* running = nullptr;

void on_signal(int) {
  if (running) running->stop();
}

void on_report(int) {
  if (running) running->report();
}

// --tcp's [HOST:]PORT; HOST is 127.0.0.1 when not given.
qs::wire::tcp_address listen_address(const std::string& v) {
  return qs::wire::parse_tcp_address(v.find(':') == std::string::npos ? "127.0.0.1:" + v : v);
}

}  // namespace

int main(int argc, char** argv) {
  qs::server::server_options o;
  std::string unix_path, tcp, secret_file;
  std::uint64_t cache_mb = o.cache_bytes >> 20, buffer_mb = o.buffer_bytes >> 20;
  std::uint64_t wait_spin_us = static_cast<std::uint64_t>(o.wait_spin.count());
  auto in_seconds = [](std::chrono::milliseconds t) { return static_cast<double>(t.count()) / 1000; };
  double handshake_s = in_seconds(o.handshake_timeout), idle_s = in_seconds(o.idle_timeout),
         lock_s = in_seconds(o.lock_timeout), txn_s = in_seconds(o.txn_timeout),
         snapshot_s = in_seconds(o.snapshot_max_age), replica_read_s = in_seconds(o.replica_read_max);
  qs::cli::app app(
      "Serves the qs database in DIR (a Berkeley DB environment, created when absent and\n"
      "recovered at start) to clients that open qs+unix://PATH or qs://HOST:PORT.\n",
      "qs-pageserver");
  app.add_option("--dir", o.dir, "the database directory")->type_name("DIR")->required();
  qs::cli::option* unix_option =
      app.add_option("--unix", unix_path, "listen on a Unix socket (mode 0600: the owner's clients only)")
          ->type_name("PATH");
  app.add_option("--tcp", tcp,
                 "listen on TCP; HOST defaults to 127.0.0.1 (loopback). PORT 0\n"
                 "takes a free port (see --ready-file). Needs --secret-file.")
      ->type_name("[HOST:]PORT")
      ->check(qs::cli::validator([](std::string& v) -> std::string {
        try {
          listen_address(v);
          return {};
        } catch (const qs::error&) {
          return "expected [HOST:]PORT with PORT from 0 to 65535, got '" + v + "'";
        }
      }));
  app.add_option("--secret-file", secret_file,
                 "the shared secret TCP clients must present (the file's first\n"
                 "line; the file must not be readable by group or others).\n"
                 "Clients give it in qs::options::server_secret or $QS_SECRET.")
      ->type_name("FILE");
  app.add_option("--backup-dir", o.backup_dir,
                 "where hot backups clients ask for go (qs::database::backup,\n"
                 "qs-inspect backup NAME): each into DIR/NAME, a new directory;\n"
                 "without it the server makes none")
      ->type_name("DIR");
  const std::string replication = "Replication (a group of sites on Berkeley DB's replication manager)";
  std::string repl, repl_ack = "quorum";
  std::vector<std::string> repl_peers;
  std::uint32_t repl_priority = 100;
  auto address_check = qs::cli::validator([](std::string& v) -> std::string {
    try {
      if (listen_address(v).port != 0) return {};
    } catch (const qs::error&) {
    }
    return "expected [HOST:]PORT with PORT from 1 to 65535, got '" + v + "'";
  });
  app.add_option("--repl", repl,
                 "this site's replication address; HOST defaults to 127.0.0.1.\n"
                 "Sites present the shared secret (--secret-file) to each other,\n"
                 "in the clear: a non-loopback HOST needs a trusted network or a\n"
                 "tunnel against eavesdroppers. The first site\n"
                 "started on an empty DIR, whose peers do not answer, creates the\n"
                 "group; a site on an empty DIR that reaches a peer joins it")
      ->type_name("[HOST:]PORT")
      ->check(address_check)
      ->group(replication);
  app.add_option("--repl-peer", repl_peers, "another site's replication address (repeat for each)")
      ->type_name("[HOST:]PORT")
      ->check(address_check)
      ->group(replication);
  app.add_option("--repl-ack", repl_ack,
                 "when the master's commit returns: quorum (default; a commit\n"
                 "survives the loss of any one site of three), all, one, none")
      ->type_name("POLICY")
      ->check(qs::cli::one_of({"quorum", "all", "one", "none"}))
      ->group(replication);
  app.add_option("--repl-priority", repl_priority, "election priority, 0 to 1000000 (default 100); 0: never master")
      ->type_name("N")
      ->check(qs::cli::whole(0, 1000000))
      ->group(replication);
  app.add_option("--ready-file", o.ready_file, "once listening, write the TCP port (0 without TCP) to FILE")
      ->type_name("FILE");
  app.add_option("--cache-mb", cache_mb,
                 "Berkeley DB cache size in MiB, 1 to 1048576 (default 128); open\n"
                 "snapshots keep old page versions there, and in temporary files\n"
                 "past it")
      ->type_name("N")
      ->check(qs::cli::whole(1, 1048576));
  std::int64_t read_around_kb = -1;  // the device's read-ahead
  app.add_option("--read-around-kb", read_around_kb,
                 "when Berkeley DB reads a page the OS page cache does not hold, the\n"
                 "aligned block of this many KiB around it is read too, as the kernel\n"
                 "reads around a mapped file's fault (4 to 65536, rounded down to a\n"
                 "power of two; 0: only what is read). Default: the read_ahead_kb of\n"
                 "DIR's device, 128 when it has none")
      ->type_name("N")
      ->check(qs::cli::whole(0, 65536));
  app.add_option("--wait-spin-us", wait_spin_us,
                 "how long a connection's thread polls for the client's next\n"
                 "request before it sleeps (adaptive: a client that keeps it\n"
                 "waiting longer is not polled for); 0 never polls, up to\n"
                 "100000 (default 500)")
      ->type_name("US")
      ->check(qs::cli::whole(0, 100000));
  app.add_option("--outcome-window", o.outcome_window_seconds,
                 "how long the outcome of each commit is remembered, for clients\n"
                 "whose connection dropped during the commit, in whole seconds up\n"
                 "to 31536000 (default 600; 0 remembers none)")
      ->type_name("SECONDS")
      ->check(qs::cli::whole(0, 31536000));
  app.add_flag("--log-conflicts", o.log_conflicts,
               "log each commit refused for a conflict (by default they are\n"
               "counted: SIGUSR1 logs the counts, and so does stopping)");
  const std::string limits = "Limits (SECONDS may have a fraction; 0 turns a timeout off)";
  app.add_option("--max-connections", o.max_connections,
                 "logged-in sessions at once, 1 to 1000000 (default 256); a hello\n"
                 "beyond is refused")
      ->type_name("N")
      ->check(qs::cli::whole(1, 1000000))
      ->group(limits);
  app.add_option("--max-handshakes", o.max_handshakes,
                 "connections that have not finished their hello, 1 to 1000000\n"
                 "(default 64), counted apart from sessions; a new one beyond\n"
                 "closes the oldest")
      ->type_name("N")
      ->check(qs::cli::whole(1, 1000000))
      ->group(limits);
  const double year = 86400.0 * 365, bdb_most = 4294;  // Berkeley DB's timeouts are 32-bit microseconds
  app.add_option("--handshake-timeout", handshake_s,
                 "the whole hello must arrive within this of the connect, 0.001\n"
                 "to 31536000 (default 10)")
      ->type_name("SECONDS")
      ->check(qs::cli::seconds(year))
      ->group(limits);
  app.add_option("--idle-timeout", idle_s,
                 "a transaction with no request for this long is aborted and\n"
                 "its connection closed; any request must arrive whole within\n"
                 "it, and any answer be read; up to 31536000 (default 300)")
      ->type_name("SECONDS")
      ->check(qs::cli::seconds(year, "none"))
      ->group(limits);
  app.add_option("--lock-timeout", lock_s,
                 "a lock request waiting longer fails as a conflict (the\n"
                 "client's db.run retries); also how long a large request waits\n"
                 "for buffer room; up to 4294 (default 60)")
      ->type_name("SECONDS")
      ->check(qs::cli::seconds(bdb_most, "none"))
      ->group(limits);
  app.add_option("--txn-timeout", txn_s,
                 "a transaction older than this fails as a conflict when it next\n"
                 "waits for a lock; up to 4294 (default 600)")
      ->type_name("SECONDS")
      ->check(qs::cli::seconds(bdb_most, "none"))
      ->group(limits);
  app.add_option("--snapshot-max-age", snapshot_s,
                 "a transaction's snapshot is released after this long, and the\n"
                 "transaction fails: page versions written since a snapshot began\n"
                 "are kept for it (__db.freezer files past --cache-mb); up to\n"
                 "31536000 (default 120)")
      ->type_name("SECONDS")
      ->check(qs::cli::seconds(year, "none"))
      ->group(limits);
  app.add_option("--replica-read-max", replica_read_s,
                 "on a replica of a replication group, a read-only transaction's\n"
                 "reads keep their locks at most this long, holding up the apply\n"
                 "of the master's log meanwhile, and then the transaction fails;\n"
                 "up to 31536000 (default 2)")
      ->type_name("SECONDS")
      ->check(qs::cli::seconds(year, "none"))
      ->group(limits);
  app.add_option("--buffer-mb", buffer_mb,
                 "message buffers all connections share, in MiB, beyond 1 MiB\n"
                 "each, 1 to 1000000 (default 512); a request that finds no room\n"
                 "fails with an error")
      ->type_name("N")
      ->check(qs::cli::whole(1, 1000000))
      ->group(limits);
  std::uint64_t push_queue_kb = o.push_queue_bytes >> 10;
  app.add_option("--directory-pages", o.directory_pages,
                 "pages the server remembers clients caching, over all clients, about\n"
                 "64 bytes each, 1024 to 1000000000 (default 4194304); a client whose\n"
                 "next page would pass it is told to revalidate its whole cache")
      ->type_name("N")
      ->check(qs::cli::whole(1024, 1000000000))
      ->group(limits);
  app.add_option("--push-queue-kb", push_queue_kb,
                 "invalidations queued for one client that does not read them, in\n"
                 "KiB, 64 to 1048576 (default 4096); past it the client is\n"
                 "disconnected (it reconnects and revalidates its cache)")
      ->type_name("N")
      ->check(qs::cli::whole(64, 1048576))
      ->group(limits);
  app.footer(
      "SIGTERM or SIGINT stop the server cleanly: open transactions are aborted and the\n"
      "environment is checkpointed. Each connection and each error is logged on stderr.\n"
      "SIGUSR1 logs the commit counters: commits, conflicts per commit, retries, aborts,\n"
      "and with --repl each site's role and connection. A master that finds another site\n"
      "elected in its place exits with status 3, to be started again as a replica.");
  app.final_check([&] {
    if (o.dir.empty()) throw qs::cli::usage_error("--dir", "expected a directory, got ''");
    if (!unix_option->given() && tcp.empty())
      throw qs::cli::usage_error("give --unix PATH, --tcp [HOST:]PORT, or both");
    if (repl.empty() && !repl_peers.empty()) throw qs::cli::usage_error("--repl-peer needs --repl");
    if (!repl.empty() && secret_file.empty())
      throw qs::cli::usage_error("--repl needs --secret-file: the sites of a group present the shared secret");
    if (!repl.empty()) {
      const qs::wire::tcp_address own = listen_address(repl);
      for (const std::string& p : repl_peers)
        if (const qs::wire::tcp_address peer = listen_address(p); peer.host == own.host && peer.port == own.port)
          throw qs::cli::usage_error("--repl-peer " + p + " is this site's own address (--repl " + repl + ")");
    }
    if (!tcp.empty() && secret_file.empty())
      throw qs::cli::usage_error("--tcp needs --secret-file: TCP clients must present a shared secret");
  });
  if (auto status = app.parse(argc, argv)) return *status;
  try {
    if (unix_option->given()) o.unix_path = unix_path;
    if (!tcp.empty()) o.tcp = listen_address(tcp);
    o.cache_bytes = cache_mb << 20;
    o.buffer_bytes = buffer_mb << 20;
    o.push_queue_bytes = push_queue_kb << 10;
    o.handshake_timeout = std::chrono::milliseconds(qs::cli::milliseconds(handshake_s));
    o.idle_timeout = std::chrono::milliseconds(qs::cli::milliseconds(idle_s));
    o.wait_spin = std::chrono::microseconds(static_cast<std::int64_t>(wait_spin_us));
    o.lock_timeout = std::chrono::milliseconds(qs::cli::milliseconds(lock_s));
    o.txn_timeout = std::chrono::milliseconds(qs::cli::milliseconds(txn_s));
    o.snapshot_max_age = std::chrono::milliseconds(qs::cli::milliseconds(snapshot_s));
    o.replica_read_max = std::chrono::milliseconds(qs::cli::milliseconds(replica_read_s));
    if (!secret_file.empty()) o.secret = qs::server::read_secret(secret_file);
    if (!repl.empty()) {
      auto site = [](const std::string& v) {
        qs::wire::tcp_address a = listen_address(v);
        return qs::detail::site_address{a.host, a.port};
      };
      qs::detail::replication_options r;
      r.local = site(repl);
      for (const std::string& p : repl_peers) r.peers.push_back(site(p));
      r.ack = qs::detail::parse_ack_policy(repl_ack);
      r.priority = repl_priority;
      r.creating_group = qs::server::create_replication_group;
      r.refusal = qs::server::replication_refusal;
      r.log = [](const std::string& line) { qs::server::log_line(0, line); };
      o.replication = r;
      qs::server::arm_replication_guard(o.dir, r.local.port, o.secret);
    }
  } catch (const std::exception& e) {
    std::cerr << "qs-pageserver: " << e.what() << "\n";
    return 2;
  }
  try {
    // SIGTERM/SIGINT stay blocked until the server can take them: the ready
    // file is written (and a test may signal) before run() starts.
    sigset_t stop_signals, old;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGUSR1);
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, &old);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    sa.sa_handler = on_report;
    ::sigaction(SIGUSR1, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    // Berkeley DB's reads of the data files read the block around a miss
    // (qs/bdb/read_around.hpp): for the whole process, before the
    // environment opens.
    const std::size_t around =
        read_around_kb < 0 ? qs::detail::device_read_ahead(o.dir) : static_cast<std::size_t>(read_around_kb) << 10;
    if (around > 0) qs::detail::install_read_around(around);
    qs::server::server s(o);
    running = &s;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    int rc = s.run();
    running = nullptr;
    return rc;
  } catch (const std::exception& e) {
    qs::server::log_line(0, std::string("error: ") + e.what());
    return 1;
  }
}
