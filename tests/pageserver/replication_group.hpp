// replication_group.hpp: a replication group of qs-pageserver sites on
// loopback for tests (the replication test, the torture's kind e).
//
// Site i lives in DIR/site<i> (its database in DIR/site<i>/db) with a
// fixed replication port and a TCP port kept across restarts; every site
// names every other as a peer. The first site started on its empty
// directory creates the group: start it, wait_master(), then the others.
//
// Thread-safety: one thread per group.
#pragma once

#include "harness.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qs_pstest {

// A loopback port nothing listens on now.
int free_port();

struct replication_group {
  explicit replication_group(std::string where) : dir(std::move(where)) {}

  std::string dir;
  std::vector<std::unique_ptr<server_process>> sites;
  std::vector<int> repl_ports, tcp_ports;
  // More options for every site (--repl-ack none, say).
  std::vector<std::string> extra;

  // Site i's directory and ports; not started.
  void add();
  // Site i's replication options: --repl, every other site a peer, extra.
  std::vector<std::string> options(int i) const;
  // Sets them for site i's next start.
  void configure(int i) { sites[static_cast<std::size_t>(i)]->set_options(options(i)); }
  // Starts site i and waits until it is ready (a master, or a replica that
  // caught up).
  void start(int i);
  // qs://... naming the first n sites.
  std::string url(int n) const;
  std::string db(int i) const { return dir + "/site" + std::to_string(i) + "/db"; }
  // The site that last said it is the master, among those running; -1.
  int master() const;
  int wait_master(int timeout_ms = 30000) const;
  // The end of each site's log.
  std::string logs() const;
};

}  // namespace qs_pstest
