// qs-pageserver: serves a qs database (a Berkeley DB environment in DIR) to
// many clients over a Unix socket and/or TCP. See `qs-pageserver --help`.
#include "log.hpp"
#include "server.hpp"

#include <qs/error.hpp>

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

const char* usage =
    "usage: qs-pageserver --dir DIR [--unix PATH] [--tcp [HOST:]PORT] [--secret-file FILE]\n"
    "                     [--ready-file FILE] [--cache-mb N] [--outcome-window SECONDS]\n"
    "                     [--log-conflicts] [limits]\n"
    "\n"
    "Serves the qs database in DIR (a Berkeley DB environment, created when absent and\n"
    "recovered at start) to clients that open qs+unix://PATH or qs://HOST:PORT.\n"
    "\n"
    "  --dir DIR           the database directory (required)\n"
    "  --unix PATH         listen on a Unix socket (mode 0600: the owner's clients only)\n"
    "  --tcp [HOST:]PORT   listen on TCP; HOST defaults to 127.0.0.1 (loopback). Port 0\n"
    "                      takes a free port (see --ready-file). Needs --secret-file.\n"
    "  --secret-file FILE  the shared secret TCP clients must present (the file's first\n"
    "                      line; the file must not be readable by group or others).\n"
    "                      Clients give it in qs::options::server_secret or $QS_SECRET.\n"
    "  --ready-file FILE   once listening, write the TCP port (0 without TCP) to FILE\n"
    "  --cache-mb N        Berkeley DB cache size in MiB (default 128); open snapshots keep\n"
    "                      old page versions there, and in temporary files past it\n"
    "  --outcome-window S  how long the outcome of each commit is remembered, for clients\n"
    "                      whose connection dropped during the commit (default 600 s)\n"
    "  --log-conflicts     log each commit refused for a conflict (by default they are\n"
    "                      counted: SIGUSR1 logs the counts, and so does stopping)\n"
    "  --help              this text\n"
    "\n"
    "Limits (SECONDS may have a fraction; 0 turns a timeout off):\n"
    "  --max-connections N      logged-in sessions at once (default 256); a hello beyond\n"
    "                           is refused\n"
    "  --max-handshakes N       connections that have not finished their hello (default\n"
    "                           64), counted apart from sessions; a new one beyond\n"
    "                           closes the oldest\n"
    "  --handshake-timeout SECONDS  the whole hello must arrive within this of the\n"
    "                           connect (default 10)\n"
    "  --idle-timeout SECONDS   a transaction with no request for this long is aborted\n"
    "                           and its connection closed; any request must arrive whole\n"
    "                           within it, and any answer be read (default 300)\n"
    "  --lock-timeout SECONDS   a lock request waiting longer fails as a conflict (the\n"
    "                           client's db.run retries); also how long a large request\n"
    "                           waits for buffer room (default 60)\n"
    "  --txn-timeout SECONDS    a transaction older than this fails as a conflict when it\n"
    "                           next waits for a lock (default 600)\n"
    "  --buffer-mb N            message buffers all connections share, in MiB, beyond\n"
    "                           1 MiB each (default 512); a request that finds no room\n"
    "                           fails with an error\n"
    "\n"
    "SIGTERM or SIGINT stop the server cleanly: open transactions are aborted and the\n"
    "environment is checkpointed. Each connection and each error is logged on stderr.\n"
    "SIGUSR1 logs the commit counters: commits, conflicts per commit, retries, aborts.\n";

// A count of at least 1.
unsigned parse_count(const std::string& option, const std::string& v) {
  std::size_t used = 0;
  unsigned long n = 0;
  try {
    n = std::stoul(v, &used);
  } catch (const std::exception&) {
  }
  if (v.empty() || used != v.size() || v[0] == '-' || n < 1 || n > 1000000)
    throw qs::invalid_argument(option + " takes a whole number from 1 to 1000000, not '" + v + "'");
  return static_cast<unsigned>(n);
}

// Seconds, with a fraction, up to `most`; 0 only where `zero_ok`.
std::chrono::milliseconds parse_seconds(const std::string& option, const std::string& v, bool zero_ok,
                                        double most = 86400.0 * 365) {
  std::size_t used = 0;
  double s = -1;
  try {
    s = std::stod(v, &used);
  } catch (const std::exception&) {
  }
  if (v.empty() || used != v.size() || !(s >= 0) || s > most || (!zero_ok && s < 0.001))
    throw qs::invalid_argument(option + " takes seconds up to " + std::to_string(static_cast<long>(most)) + " (" +
                               (zero_ok ? "0 for none, " : "") + "a fraction allowed), not '" + v + "'");
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000 + 0.5));
}

qs::server::server* running = nullptr;

void on_signal(int) {
  if (running) running->stop();
}

void on_report(int) {
  if (running) running->report();
}

std::string read_secret(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw qs::error("secret file " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw qs::error("secret file " + path + " is not a regular file");
  if (st.st_mode & 077)
    throw qs::error("secret file " + path + " is readable or writable by group or others (mode " + [&] {
      char b[8];
      std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return std::string(b);
    }() + "); chmod 600 it");
  std::ifstream in(path);
  std::string secret;
  std::getline(in, secret);
  while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  if (secret.empty()) throw qs::error("secret file " + path + " holds no secret on its first line");
  if (secret.size() > 1024) throw qs::error("secret file " + path + ": the secret is longer than 1024 bytes");
  return secret;
}

}  // namespace

int main(int argc, char** argv) {
  qs::server::server_options o;
  std::string secret_file;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw qs::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        std::cout << usage;
        return 0;
      } else if (a == "--dir") {
        o.dir = value();
      } else if (a == "--unix") {
        o.unix_path = value();
      } else if (a == "--tcp") {
        std::string v = value();
        if (v.find(':') == std::string::npos) v = "127.0.0.1:" + v;
        o.tcp = qs::wire::parse_tcp_address(v);
      } else if (a == "--secret-file") {
        secret_file = value();
      } else if (a == "--ready-file") {
        o.ready_file = value();
      } else if (a == "--cache-mb") {
        o.cache_bytes = std::stoull(value()) << 20;
      } else if (a == "--outcome-window") {
        o.outcome_window_seconds = std::stoull(value());
      } else if (a == "--log-conflicts") {
        o.log_conflicts = true;
      } else if (a == "--max-connections") {
        o.max_connections = parse_count(a, value());
      } else if (a == "--max-handshakes") {
        o.max_handshakes = parse_count(a, value());
      } else if (a == "--handshake-timeout") {
        o.handshake_timeout = parse_seconds(a, value(), false);
      } else if (a == "--idle-timeout") {
        o.idle_timeout = parse_seconds(a, value(), true);
      } else if (a == "--lock-timeout") {
        o.lock_timeout = parse_seconds(a, value(), true, 4294);  // Berkeley DB's limit
      } else if (a == "--txn-timeout") {
        o.txn_timeout = parse_seconds(a, value(), true, 4294);
      } else if (a == "--buffer-mb") {
        o.buffer_bytes = std::uint64_t{parse_count(a, value())} << 20;
      } else {
        throw qs::invalid_argument("unknown option " + a);
      }
    }
    if (o.dir.empty()) throw qs::invalid_argument("--dir is required");
    if (!o.unix_path && !o.tcp) throw qs::invalid_argument("give --unix PATH, --tcp [HOST:]PORT, or both");
    if (o.tcp && secret_file.empty())
      throw qs::invalid_argument("--tcp needs --secret-file: TCP clients must present a shared secret");
    if (!secret_file.empty()) o.secret = read_secret(secret_file);
  } catch (const std::exception& e) {
    std::cerr << "qs-pageserver: " << e.what() << "\n\n" << usage;
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
