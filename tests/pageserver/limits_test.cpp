// Integration tests of qs-pageserver's limits: connections that never finish
// their hello, logged-in sessions beyond the limit, TCP keepalive, a client
// that goes quiet holding locks, lock and transaction timeouts, and the
// shared budget of message buffers. Real servers on loopback and Unix
// sockets, real client processes.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "support.hpp"
#include "types.hpp"
#include "wire_client.hpp"

#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

using namespace qs_pstest;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Waits (10 s at most) until the server's log says `what` n times.
bool wait_for_log(const server_process& s, const std::string& what, std::size_t n) {
  for (int i = 0; i < 1000 && count(s.log(), what) < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return count(s.log(), what) >= n;
}

unsigned local_port(int fd) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  return ntohs(a.sin_port);
}

// The timer /proc/net/tcp shows for the IPv4 socket from local port `from` to
// `to` (2: keepalive), or -1 when there is no such socket.
int tcp_timer(unsigned from, unsigned to) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the heading
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state, queues, timer;
    f >> sl >> local >> remote >> state >> queues >> timer;
    auto port = [](const std::string& a) { return std::stoul(a.substr(a.find(':') + 1), nullptr, 16); };
    if (port(local) == from && port(remote) == to) return std::stoi(timer.substr(0, timer.find(':')), nullptr, 16);
  }
  return -1;
}

}  // namespace

TEST_CASE("connections that never finish their hello cannot keep a client out") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.set_options({"--handshake-timeout", "120"});  // only the handshake pool's size is tested here
  s.start();
  REQUIRE(run_worker(s, s.tcp_url(), {"setup"}, "setup") == 0);
  // More connections than there are places for sessions (256 by default),
  // each one byte into its hello, none finishing it.
  std::vector<std::unique_ptr<wire_client>> idle;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(std::make_unique<wire_client>(s.port()));
    idle.back()->send_bytes("\x10", 1);
  }
  process b = worker(s, s.tcp_url(), {"bump", "3"}, "bump");
  int st = b.wait(60000);
  INFO(b.err());
  CHECK(st == 0);
  CHECK(b.out() == "value=1\n");
  // It got in while the newest 63 of them (the handshake pool holds 64, the
  // client took one place) are still connected, waiting for their hello.
  int still = 0;
  for (std::size_t i = idle.size() - 63; i < idle.size(); ++i) still += idle[i]->open();
  CHECK(still == 63);
  // The oldest were closed, and told why.
  CHECK(idle[0]->drain().find("newer connections were waiting to log in (qs-pageserver --max-handshakes)") !=
        std::string::npos);
  CHECK(s.log().find("evicted before its hello") != std::string::npos);
}

TEST_CASE("the whole handshake has one deadline: trickled bytes do not extend it") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.set_options({"--handshake-timeout", "1"});
  s.start();
  wire_client c(s.port());
  // A hello of 1000 bytes, sent one byte every 20 ms: it would take 20 s.
  auto hello = wire_client::frame(qs::wire::hello_request{qs::wire::magic, qs::wire::version, std::string(980, 'x')});
  bool closed = false;
  std::string got;
  for (std::size_t i = 0; i < hello.size() && !closed; ++i) {
    c.send_bytes(&hello[i], 1);
    pollfd p{c.fd, POLLIN, 0};
    if (::poll(&p, 1, 20) == 1) {
      got = c.drain();
      closed = true;
    }
  }
  CHECK(closed);  // before the hello was whole
  CHECK(got.find("no complete hello within its handshake timeout of 1 s (qs-pageserver --handshake-timeout)") !=
        std::string::npos);
  CHECK(s.log().find("timed out in its handshake") != std::string::npos);
  CHECK(run_worker(s, s.tcp_url(), {"setup"}, "setup") == 0);  // a real client still gets in
}

TEST_CASE("logged-in sessions have a limit of their own; a hello beyond it is refused with the reason") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.set_options({"--max-connections", "2"});
  s.start();
  REQUIRE(run_worker(s, s.tcp_url(), {"setup"}, "setup") == 0);
  REQUIRE(wait_for_log(s, "connection closed by the client", 1));  // the setup's place is free
  auto a = std::make_unique<wire_client>(s.port());
  wire_client b(s.port());
  a->log_in(s.secret());
  b.log_in(s.secret());
  process w = worker(s, s.tcp_url(), {"bump", "3"}, "refused");
  CHECK(w.wait(30000) == 1);
  CHECK(w.err().find("the server has 2 sessions open, its limit (qs-pageserver --max-connections)") !=
        std::string::npos);
  // A place comes free when a session ends.
  a.reset();
  REQUIRE(wait_for_log(s, "connection closed by the client", 2));
  process v = worker(s, s.tcp_url(), {"bump", "3"}, "admitted");
  CHECK(v.wait(30000) == 0);
  CHECK(v.out() == "value=1\n");
}

TEST_CASE_METHOD(server_fixture, "TCP connections have keepalive at both ends") {
  wire_client c(s.port());  // connected by wire::connect_tcp, as the runtime's remote store is
  c.log_in(s.secret());
  int on = 0;
  socklen_t n = sizeof on;
  REQUIRE(::getsockopt(c.fd, SOL_SOCKET, SO_KEEPALIVE, &on, &n) == 0);
  CHECK(on == 1);
  // The server's end of the idle connection runs its keepalive timer (once
  // the hello's answer has been acknowledged).
  unsigned server_port = static_cast<unsigned>(s.port()), client_port = local_port(c.fd);
  int timer = -1;
  for (int i = 0; i < 200 && (timer = tcp_timer(server_port, client_port)) != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(timer == 2);
}

TEST_CASE("a transaction idle past --idle-timeout is aborted, blocking nobody meanwhile, and its client is told") {
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.set_options({"--idle-timeout", "1"});
  s.start();
  const bool tcp = GENERATE(true, false);  // the client over TCP, then over the Unix socket
  std::string url = tcp ? s.tcp_url() : s.unix_url();
  REQUIRE(run_worker(s, url, {"setup"}, "setup") == 0);
  // A session with no transaction open is not idle in this sense.
  wire_client quiet(s.port());
  quiet.log_in(s.secret());
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process h = worker(s, url, {"idle", "7", sync}, "idle");
  REQUIRE(wait_for_file(sync + "/held"));
  // The idle transaction wrote counter 7 but holds no lock: this commits
  // at once.
  process b = worker(s, url, {"bump", "7"}, "bump");
  int st = b.wait(30000);
  INFO(b.err() << s.log());
  CHECK(st == 0);
  CHECK(b.out() == "value=1\n");  // the idle transaction's +1000 never happened
  for (int i = 0; i < 1000 && s.log().find("idle for 1 s in a transaction") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(h.running());  // while its client waits, still connected as far as it knows
  { std::ofstream go(sync + "/go"); }
  int hs = h.wait(30000);
  INFO(h.out() << h.err());
  CHECK(hs == 4);
  // The client's commit then learns from the server that it was not done.
  CHECK(h.out() == "connection_lost: server " + url +
                       ": the server aborted the transaction and closed the connection: the transaction stayed open "
                       "with no request for 1 s (qs-pageserver --idle-timeout); the server did not commit "
                       "the transaction: it is aborted\n");
  CHECK(s.log().find("idle for 1 s in a transaction; its open transaction is aborted") != std::string::npos);
  quiet.send(qs::wire::ping_request{"still there?", 4});
  CHECK(std::holds_alternative<qs::wire::pong_response>(quiet.receive()));
}

TEST_CASE("a lock wait past --lock-timeout or --txn-timeout fails as a conflict (which db.run retries)") {
  // Page writes take no lock until the commit: a transaction that holds
  // one while its client computes is one that updated an index (Berkeley
  // DB locks the B-tree leaf until it commits).
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  const bool lock = GENERATE(true, false);  // the lock timeout, then the transaction timeout
  if (lock) s.set_options({"--lock-timeout", "0.5", "--idle-timeout", "0"});
  else s.set_options({"--txn-timeout", "0.5", "--lock-timeout", "0", "--idle-timeout", "0"});
  s.start();
  REQUIRE(run_worker(s, s.unix_url(), {"setup"}, "setup") == 0);
  std::string sync = dir.sub("sync");
  std::filesystem::create_directories(sync);
  process h = worker(s, s.unix_url(), {"hold", "7", sync, "index"}, "hold");
  REQUIRE(wait_for_file(sync + "/held"));
  // Its page write blocks nobody.
  process p = worker(s, s.unix_url(), {"once", "7"}, "once-page");
  CHECK(p.wait(30000) == 0);
  CHECK(p.out() == "value=1\n");
  // Its index entry does, until the timeout.
  process o = worker(s, s.unix_url(), {"once", "8", "index"}, "once");
  int st = o.wait(30000);
  INFO(o.out() << o.err());
  CHECK(st == 3);
  CHECK(o.out().find("deadlock: server " + s.unix_url()) != std::string::npos);
  CHECK(o.out().find("DB_LOCK_NOTGRANTED") != std::string::npos);
  CHECK(o.out().find(") or the transaction timeout (") != std::string::npos);
  CHECK(o.out().find("qs-pageserver --lock-timeout, --txn-timeout") != std::string::npos);
  CHECK(h.running());  // the holder keeps its lock: it is not waiting
  h.kill9();
  process b = worker(s, s.unix_url(), {"bump", "8"}, "bump");
  CHECK(b.wait(30000) == 0);
  CHECK(b.out() == "value=1\n");
}

TEST_CASE("a snapshot kept past --snapshot-max-age is released, and its transaction says why at every request") {
  using namespace qs::wire;
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.set_options({"--snapshot-max-age", "1"});
  s.start();
  wire_client a(s.port());
  a.log_in(s.secret());
  auto expect_released = [&](const request& r) {
    a.send(r);
    auto resp = a.receive();
    const auto* e = std::get_if<error_response>(&resp);
    REQUIRE(e);
    CHECK(e->code == error_code::store);
    CHECK(std::string(e->text) ==
          "the transaction failed: its snapshot was released after 1 s, the limit of qs-pageserver "
          "--snapshot-max-age (the server keeps every page version committed since a snapshot began); run it "
          "again, in less time");
  };
  const bool quiet = GENERATE(true, false);
  a.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(a.receive()));
  a.send(get_request{"r:nothing"});
  REQUIRE(std::holds_alternative<value_response>(a.receive()));
  if (quiet) {
    // Nobody asks: the server releases it when due, and keeps the connection.
    CHECK(wait_for_log(s, "snapshot released after 1 s (--snapshot-max-age); the transaction will abort", 1));
    CHECK(a.open());
  } else {
    // A client that keeps asking (pings are no reads) meets the limit at
    // its first request past it.
    for (int i = 0; i < 12; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      a.send(ping_request{"", 1});
      REQUIRE(std::holds_alternative<pong_response>(a.receive()));
    }
  }
  expect_released(read_page_request{1, {}});
  expect_released(get_request{"r:nothing"});
  expect_released(scan_request{"r:"});
  expect_released(commit_request{});
  CHECK(wait_for_log(s, "snapshot released after 1 s", 1));
  // The next transaction has a snapshot of its own.
  a.send(begin_request{});
  REQUIRE(std::holds_alternative<begun_response>(a.receive()));
  a.send(get_request{"r:nothing"});
  CHECK(std::holds_alternative<value_response>(a.receive()));
  a.send(abort_request{});
  CHECK(std::holds_alternative<ok_response>(a.receive()));
}

TEST_CASE("message buffers share one budget; a request that finds no room fails with the reason") {
  using qs_test::Blob;
  qs_test::test_dir dir;
  server_process s(dir.sub("s"));
  s.set_options({"--buffer-mb", "1", "--lock-timeout", "0.5"});
  s.start();
  qs::options o = qs_test::small_options(1024, qs_test::commits::durable);
  auto db = qs::database::open(s.unix_url(), o);
  auto blobs = [&](int n) {
    qs::transaction tx(db);
    for (int i = 0; i < n; ++i) {
      Blob* b = new (db) Blob{};
      b->words[0] = static_cast<std::uint64_t>(i);
      db.root<Blob*>("blob" + std::to_string(i)) = b;
    }
    tx.commit();
  };
  // A commit's pages go to the server in parts as they are written back
  // (remote_store.hpp): ten blobs (3.2 MiB) commit through the 1 MiB budget.
  blobs(10);
  // A request larger than the whole budget fails with the reason; the
  // connection goes on.
  auto pong = [](wire_client& c, std::size_t bytes) {
    c.send(qs::wire::ping_request{std::string(bytes, 'p'), 8});
    auto resp = c.receive();
    if (std::holds_alternative<qs::wire::pong_response>(resp)) return std::string();
    const auto* e = std::get_if<qs::wire::error_response>(&resp);
    REQUIRE(e);
    return std::string(e->text);
  };
  wire_client b(s.port());
  b.log_in(s.secret());
  CHECK(pong(b, 3300000)
            .find("from the server's shared buffers, which hold 1.0 MiB in all (qs-pageserver "
                  "--buffer-mb 1)") != std::string::npos);
  CHECK(pong(b, 1300000).empty());  // 1 MiB is the connection's own, the rest from the budget
  // Another connection holds the budget (its message of 1.9 MiB is half
  // sent): the same request now waits, then fails; once that message is in
  // and answered, it goes through again.
  wire_client a(s.port());
  a.log_in(s.secret());
  auto ping = wire_client::frame(qs::wire::ping_request{std::string(1900000, 'p'), 8});
  a.send_bytes(ping.data(), 1000000);
  bool refused = false;
  for (int i = 0; i < 100 && !refused; ++i) {
    // (Goes through while the server has not read the other message's length yet.)
    std::string why = pong(b, 1300000);
    if (why.empty()) continue;
    refused = true;
    CHECK(why.find("(qs-pageserver --buffer-mb 1), which had no room for 500 ms") != std::string::npos);
  }
  CHECK(refused);
  CHECK(s.log().find("had no room for 500 ms") != std::string::npos);
  a.send_bytes(ping.data() + 1000000, ping.size() - 1000000);
  CHECK(std::holds_alternative<qs::wire::pong_response>(a.receive()));
  CHECK(pong(b, 1300000).empty());
  blobs(4);
  // Answers count too, as they are gathered: four entries of 900 KB take
  // two copies each in an index scan's answer, three in a metadata scan's.
  auto refused_answer = [&](const qs::wire::request& r) {
    a.send(r);
    auto resp = a.receive();
    const auto* e = std::get_if<qs::wire::error_response>(&resp);
    REQUIRE(e);
    CHECK(std::string(e->text).find("which hold 1.0 MiB in all (qs-pageserver --buffer-mb 1)") != std::string::npos);
  };
  std::string big(900000, 'v');
  a.send(qs::wire::open_index_request{"big", true});
  auto ix = a.receive();
  REQUIRE(std::holds_alternative<qs::wire::index_response>(ix));
  std::uint32_t index = std::get<qs::wire::index_response>(ix).index;
  for (int i = 0; i < 4; ++i) {
    std::string key = "k" + std::to_string(i);
    a.send(qs::wire::index_insert_request{index, key, big});
    REQUIRE(std::holds_alternative<qs::wire::flag_response>(a.receive()));
    a.send(qs::wire::begin_request{});
    REQUIRE(std::holds_alternative<qs::wire::begun_response>(a.receive()));
    qs::wire::commit_request c;
    std::string root = "r:big" + std::to_string(i);
    c.metas.push_back({qs::wire::meta_op_kind::put, root, big});
    a.send(c);
    REQUIRE(std::holds_alternative<qs::wire::ok_response>(a.receive()));
  }
  refused_answer(qs::wire::index_scan_request{index, "k", "l", {}, 100});
  refused_answer(qs::wire::scan_request{"r:big"});
  a.send(qs::wire::index_scan_request{index, "k", "l", {}, 1});  // one entry fits
  auto one = a.receive();
  REQUIRE(std::holds_alternative<qs::wire::entries_response>(one));
  CHECK(std::get<qs::wire::entries_response>(one).entries.size() == 1);
  CHECK(s.running());
}
