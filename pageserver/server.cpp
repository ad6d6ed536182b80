// qs-pageserver's listeners, accept loop and connection threads (server.hpp).
#include "server.hpp"

#include "log.hpp"
#include "session.hpp"
#include "shared_secret.hpp"

#include <qs/bdb/read_around.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <netinet/tcp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace qs::server {
namespace {

std::string peer_name(int fd, bool tcp) {
  if (!tcp) return "unix socket";
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return "tcp peer";
  return "tcp " + wire::address_text(reinterpret_cast<sockaddr*>(&a));
}

}  // namespace

server::server(const server_options& o) : o_(o), limits_(o.max_connections, o.max_handshakes), budget_(o.buffer_bytes) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw error(std::string("pipe: ") + std::strerror(errno));
  // The same lock file as the embedded store's: no embedded client opens
  // the directory while it is served, and no second server does.
  // Only a failed flock means another process: the directory that cannot be
  // made or opened says why.
  std::error_code ec;
  if (std::filesystem::exists(o_.dir, ec) && !std::filesystem::is_directory(o_.dir, ec))
    throw invalid_argument("database " + o_.dir + " is not a directory (a database is a directory of its own)");
  std::filesystem::create_directories(o_.dir, ec);
  if (ec) throw store_error("database " + o_.dir + ": cannot create the directory: " + ec.message());
  std::string lock_path = o_.dir + "/" + detail::database_lock_file;
  lock_fd_ = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd_ < 0)
    throw store_error("database " + o_.dir + ": cannot open " + lock_path + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    throw database_in_use("database " + o_.dir + " is open in another process (" + lock_path + " is locked)");
  log_line(0, "opening the environment in " + o_.dir);
  // Multiversion: each client transaction reads a snapshot (optimistic_transaction.hpp).
  if (o_.replication) {
    const detail::replication_options& r = *o_.replication;
    std::string peers;
    for (const auto& p : r.peers) peers += " " + p.text();
    log_line(0, "replication: this site is " + r.local.text() + ", its peers" + (peers.empty() ? " none" : peers) +
                    ", acknowledgements " + detail::ack_policy_name(r.ack) + ", priority " +
                    std::to_string(r.priority));
  }
  env_ = std::make_unique<detail::bdb_env>(o_.dir, o_.cache_bytes, true, detail::default_max_locks, true,
                                           o_.replication ? &*o_.replication : nullptr);
  env_->about_to_write();  // the environment is shared from here on
  numbers_ = std::make_unique<page_numbers>(*env_);
  directory_ = std::make_unique<cache_directory>(o_.directory_pages, o_.push_queue_bytes);
  timeouts_ = std::make_unique<lock_timeouts>(*env_, o_.lock_timeout, o_.txn_timeout);
  // A site of a group serves once it is the master (run()).
  if (!env_->replicated()) {
    outcomes_ = std::make_unique<commit_outcomes>(*env_, o_.outcome_window_seconds);
    serving_.store(as_master, std::memory_order_release);
  }
  if (o_.unix_path) {
    unix_fd_ = wire::listen_unix(*o_.unix_path);
    log_line(0, "listening on unix socket " + *o_.unix_path);
  }
  if (o_.tcp) {
    tcp_fd_ = wire::listen_tcp(*o_.tcp);
    log_line(0, "listening on tcp " + o_.tcp->host + ":" + std::to_string(wire::bound_port(tcp_fd_)) +
                    " (clients must present the shared secret)");
  }
  if (!env_->replicated()) write_ready_file();
}

void server::write_ready_file() {
  if (o_.ready_file.empty()) return;
  std::string tmp = o_.ready_file + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%u\n", tcp_fd_ >= 0 ? wire::bound_port(tcp_fd_) : 0u);
    std::fclose(f);
    std::rename(tmp.c_str(), o_.ready_file.c_str());
  }
}

bool server::serve_as(int how) {
  // Nobody is served while the databases change: every connection is
  // closed (its transaction aborted; clients connect again).
  serving_.store(not_serving, std::memory_order_release);
  reap(true);
  outcomes_.reset();
  try {
    if (how == as_master) env_->open_as_master();
    if (how == as_replica) env_->open_as_replica();
    if (how != not_serving) outcomes_ = std::make_unique<commit_outcomes>(*env_, o_.outcome_window_seconds);
  } catch (const std::exception& e) {
    // A new master's first opens can meet Berkeley DB's own locks (a
    // replica being initialised from it: a deadlock victim, say); a
    // replica's databases may be locked out while replication brings them
    // up to date. The next round tries again.
    outcomes_.reset();
    log_line(0, std::string("replication: cannot serve yet (trying again): ") + e.what());
    return false;
  }
  serving_.store(how, std::memory_order_release);
  if (o_.replication)
    log_line(0, how == as_master ? "replication: serving clients as the master"
                                 : "replication: serving clients that read (options::read_replica) as a replica");
  return true;
}

server::~server() {
  // No new client from here (a client of a group looks for the next
  // master), and no commit once the sessions have ended.
  if (unix_fd_ >= 0) {
    ::close(unix_fd_);
    ::unlink(o_.unix_path->c_str());
  }
  if (tcp_fd_ >= 0) ::close(tcp_fd_);
  reap(true);
  detail::replication* repl = env_ ? env_->replicated() : nullptr;
  if (repl && serving_.load() == as_master && repl->role() == detail::replication::role_kind::master) {
    try {
      log_line(0, "replication: the master stops: waiting (at most " + std::to_string(hand_over_patience.count()) +
                      " ms) until the replicas have all of its log");
      log_line(0, repl->hand_over(*env_->env(), hand_over_patience));
      log_line(0, "replication: the master stops; its connections close and the other sites elect another");
    } catch (const std::exception& e) {
      log_line(0, std::string("replication: hand-over: ") + e.what());
    }
  }
  timeouts_.reset();
  numbers_.reset();
  outcomes_.reset();
  env_.reset();  // checkpoints and closes
  ::close(wake_[0]);
  ::close(wake_[1]);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  log_line(0, "stopped");
}

void server::stop() noexcept {
  char b = 's';
  ssize_t n = ::write(wake_[1], &b, 1);
  (void)n;
}

std::string server::flushes_line() {
  // Durable commits of concurrent clients share Berkeley DB's log flushes
  // (group commit): commits per flush says how many at a time.
  std::uint64_t flushes = 0;
  try {
    flushes = env_->log_flushes();
  } catch (const std::exception&) {
  }
  std::uint64_t writing = counters_.commits.load() - counters_.read_only.load();
  char per[32];
  std::snprintf(per, sizeof per, "%.2f", flushes ? static_cast<double>(writing) / static_cast<double>(flushes) : 0.0);
  return std::to_string(flushes) + " log flushes (" + per + " writing commits per flush)";
}

std::string server::read_around_line() {
  const detail::read_around* r = detail::installed_read_around();
  if (!r) return "Berkeley DB reads: only what it asks for (--read-around-kb 0)";
  const detail::read_around_counts c = r->counts();
  return "Berkeley DB reads: " + std::to_string(c.reads) + ", " + std::to_string(c.blocks_started) +
         " of them missed the page cache and read the " + std::to_string(r->window() >> 10) +
         " KiB block around them (" + std::to_string(c.blocks_unused) + " blocks went unused)";
}

void server::report() noexcept {
  char b = 'r';
  ssize_t n = ::write(wake_[1], &b, 1);
  (void)n;
}

int server::run() {
  for (;;) {
    pollfd fds[3];
    int n = 0;
    fds[n++] = {wake_[0], POLLIN, 0};
    int unix_at = -1, tcp_at = -1;
    if (unix_fd_ >= 0) {
      unix_at = n;
      fds[n++] = {unix_fd_, POLLIN, 0};
    }
    if (tcp_fd_ >= 0) {
      tcp_at = n;
      fds[n++] = {tcp_fd_, POLLIN, 0};
    }
    detail::replication* repl = env_->replicated();
    int rc = ::poll(fds, static_cast<nfds_t>(n), repl ? 100 : 1000);
    if (rc < 0) {
      if (errno == EINTR) continue;
      log_line(0, std::string("error: poll: ") + std::strerror(errno));
      return 1;
    }
    reap(false);
    if (repl) {
      using role = detail::replication::role_kind;
      const role now_role = repl->role();
      const bool master = now_role == role::master;
      if (!ready_ && now_role != role::starting) {
        // A new site is initialised from the group first; a site with a
        // log catches up. Its ready file says it has.
        ready_ = true;
        if (!master)
          log_line(0, "replication: this site is a replica, caught up with the master " + repl->master(*env_->env()));
        write_ready_file();
      }
      const int serving = serving_.load();
      if (master && serving != as_master) {
        if (!master_said_) log_line(0, "replication: this site is the master");
        master_said_ = true;
        serve_as(as_master);
      } else if (!master && serving == as_master) {
        log_line(0, "replication: this site is no longer the master (the master is " + repl->master(*env_->env()) +
                        "); stopping, to start again as a replica");
        return 3;
      }
      auto now = std::chrono::steady_clock::now();
      if (now_role == role::replica && now >= next_serve_try_ &&
          (serving != as_replica || env_->handles_dead() || repl->master_changes() != master_changes_)) {
        // A new master may roll this replica's databases back: their
        // handles are opened again after each change.
        master_changes_ = repl->master_changes();
        if (!serve_as(as_replica)) next_serve_try_ = now + std::chrono::seconds(1);
      }
      if (now >= next_report_) {
        repl->report_progress(*env_->env());  // a replica's, for the master's status line and hand-over
        next_report_ = now + std::chrono::milliseconds(250);
      }
      if (now >= next_archive_) {
        repl->archive(*env_->env());
        next_archive_ = now + std::chrono::seconds(10);
      }
    }
    if (fds[0].revents) {
      char b[64];
      bool stopping = false;
      for (ssize_t got; (got = ::read(wake_[0], b, sizeof b)) > 0;)
        for (ssize_t i = 0; i < got; ++i) stopping = stopping || b[i] == 's';
      log_line(0, counters_.line() + "; " + flushes_line());
      log_line(0, directory_->line());
      log_line(0, reads_.line());
      log_line(0, read_around_line());
      if (detail::replication* r = env_->replicated()) log_line(0, r->status(*env_->env()));
      if (stopping) {
        log_line(0, "stopping (signal)");
        return 0;
      }
    }
    if (unix_at >= 0 && fds[unix_at].revents) accept_one(unix_fd_, false);
    if (tcp_at >= 0 && fds[tcp_at].revents) accept_one(tcp_fd_, true);
  }
}

void server::accept_one(int listen_fd, bool tcp) {
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
      log_line(0, std::string("error: accept: ") + std::strerror(errno));
    return;
  }
  std::lock_guard<std::mutex> g(clients_mutex_);
  std::uint64_t id = next_id_++;
  if (tcp) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    wire::enable_keepalive(fd);
  }
  wire::set_send_timeout(fd, o_.handshake_timeout);
  auto c = std::make_unique<client>();
  c->id = id;
  c->conn = std::make_unique<wire::connection>(fd);
  c->conn->set_spin(o_.wait_spin);
  c->tcp = tcp;
  c->accepted = std::chrono::steady_clock::now();
  log_line(id, "connection from " + peer_name(fd, tcp));
  // The connection lives until its thread is reaped, after it has left the limits.
  wire::connection* conn = c->conn.get();
  if (auto evicted = limits_.arrive(id, [conn] { conn->shutdown_receive(); }))
    log_line(*evicted, "evicted before its hello to make room: " + std::to_string(o_.max_handshakes) +
                           " connections are in their handshake (--max-handshakes)");
  client* raw = c.get();
  clients_.push_back(std::move(c));
  raw->thread = std::thread([this, raw] { serve(raw); });
}

void server::refuse_not_master(client* c) {
  std::vector<std::byte> buf;
  wire::receive_limits l;
  l.max = 4096;
  l.deadline = c->accepted + o_.handshake_timeout;
  try {
    if (c->conn->receive(buf, l) == wire::received::frame) {
      // Where the master is, only to a client that presents the secret.
      const wire::request req = wire::parse_request(buf);
      const auto* h = std::get_if<wire::hello_request>(&req);
      wire::writer out;
      if (!h || (c->tcp && !same_secret(h->secret, o_.secret))) {
        wire::encode(wire::error_response{wire::error_code::auth, "authentication failed: wrong shared secret"}, out);
      } else {
        detail::replication* r = env_->replicated();
        std::string text = "this site (" + r->options().local.text() +
                           ") is a replica of a replication group, not its master; the master is " +
                           r->master(*env_->env());
        wire::encode(wire::error_response{wire::error_code::not_master, text}, out);
      }
      c->conn->send(out.finish());
    }
  } catch (const std::exception&) {
  }
  limits_.leave(c->id);
  log_line(c->id, "connection refused: this site is not the master");
  c->conn->shutdown();
  c->done = true;
}

void server::serve(client* c) {
  const int serving = serving_.load(std::memory_order_acquire);
  if (serving == not_serving) {
    refuse_not_master(c);
    return;
  }
  std::string not_master;
  if (serving == as_replica) {
    detail::replication* r = env_->replicated();
    not_master = "this site (" + r->options().local.text() +
                 ") is a replica of a replication group, not its master; the master is " + r->master(*env_->env());
  }
  using clock = std::chrono::steady_clock;
  std::string reason = "closed by the client";
  std::string farewell;  // why the server closes the connection: its last message
  bool said_why = false;
  {
    buffer_budget::grant held(budget_);
    // Scan answers take from the budget as they grow, without waiting: the
    // scan holds a Berkeley DB cursor.
    auto charge = [&held](std::size_t n) {
      std::string refusal;
      if (!held.add(n, std::chrono::milliseconds(0), refusal)) throw store_error(refusal);
    };
    session s(
        {{env_.get(), outcomes_.get(), &counters_, &commit_gate_, directory_.get(), &sending_ahead_, o_.log_conflicts,
          serving == as_replica ? o_.replica_read_max : o_.snapshot_max_age, serving == as_replica},
         &reads_,
         numbers_.get(),
         c->tcp,
         o_.secret,
         charge,
         [&](std::span<const std::byte> frame) { directory_->send(c->id, frame); },
         o_.backup_dir,
         serving == as_replica,
         not_master,
         o_.outcome_window_seconds * 1000},
        c->id);
    std::vector<std::byte> buf;
    wire::writer out;  // each answer, in turn
    std::string refusal;
    bool greeted = false;
    try {
      for (;;) {
        wire::receive_limits l;
        bool idle_limited = false;
        if (!greeted) {
          // Before hello, only a small frame: an unauthenticated peer cannot
          // make the server allocate a large buffer. The whole handshake has
          // one deadline, however slowly its bytes come.
          l.max = 4096;
          l.deadline = c->accepted + o_.handshake_timeout;
        } else {
          l.max = wire::max_message;
          if (o_.idle_timeout.count() > 0) {
            l.frame_time = o_.idle_timeout;
            if (s.transaction_open()) {
              l.deadline = clock::now() + o_.idle_timeout;
              idle_limited = true;
            }
          }
          // A quiet client's snapshot is released when due, not at its
          // next request: until then Berkeley DB keeps page versions for it.
          l.quiet_deadline = s.snapshot_deadline();
          // A large body waits for room in the budget as long as a lock
          // request would wait for its lock.
          l.admit = [&](std::uint32_t n) { return held.add(n, o_.lock_timeout, refusal); };
        }
        wire::received got;
        try {
          got = c->conn->receive(buf, l);
        } catch (const wire::protocol_error& e) {
          // An oversized or empty frame: answer, then close.
          log_line(c->id, std::string("error: protocol: ") + e.what() + "; closing the connection");
          out.clear();
          std::string text = std::string("protocol error: ") + e.what();
          wire::encode(wire::error_response{wire::error_code::protocol, text}, out);
          try {
            c->conn->send(out.finish());
          } catch (...) {
          }
          reason = "protocol error";
          break;
        } catch (const wire::timeout_error& e) {
          // A snapshot that fell due while the client was quiet: released,
          // and the connection stays (the client is told at its next request).
          if (greeted && !e.inside_frame() && !(idle_limited && clock::now() >= l.deadline) &&
              s.release_snapshot_if_due())
            continue;
          if (!greeted) {
            reason = "timed out in its handshake";
            farewell = "the server closed the connection: no complete hello within its handshake timeout of " +
                       seconds(o_.handshake_timeout) + " (qs-pageserver --handshake-timeout)";
          } else if (idle_limited && !e.inside_frame()) {
            reason = "idle for " + seconds(o_.idle_timeout) + " in a transaction";
            farewell =
                "the server aborted the transaction and closed the connection: the transaction stayed open "
                "with no request for " +
                seconds(o_.idle_timeout) + " (qs-pageserver --idle-timeout)";
          } else {
            reason = "a request did not arrive whole within " + seconds(o_.idle_timeout);
            farewell = "the server closed the connection: a request did not arrive whole within " +
                       seconds(o_.idle_timeout) + " (qs-pageserver --idle-timeout)" +
                       (s.transaction_open() ? "; the transaction is aborted" : "");
          }
          break;
        }
        if (got == wire::received::end) break;
        out.clear();
        bool close = false;
        if (got == wire::received::dropped) {
          s.refuse(buf, refusal, out);
        } else {
          s.handle(buf, out, close);
        }
        if (!greeted && !close) {
          // The hello succeeded: the connection needs a session's place.
          std::string why;
          if (limits_.admit(c->id, why)) {
            greeted = true;
            wire::set_send_timeout(c->conn->fd(), o_.idle_timeout);
            directory_->join(c->id, c->conn.get());
          } else {
            out.clear();
            wire::encode(wire::error_response{wire::error_code::closed, why}, out);
            close = true;
            said_why = true;
            reason = "refused: " + why;
          }
        }
        // After the invalidations queued for the client (cache_directory.hpp).
        if (greeted) directory_->send(c->id, out.finish());
        else c->conn->send(out.finish());
        held.release();
        if (buf.capacity() > buffer_budget::allowance) std::vector<std::byte>().swap(buf);
        if (out.capacity() > buffer_budget::allowance) out = wire::writer();
        if (close) {
          if (!said_why) reason = "closed by the server";
          break;
        }
      }
    } catch (const wire::timeout_error& e) {
      // A send the client took nothing of.
      log_line(c->id, std::string("error: ") + e.what());
      reason = "the client read no answer for " + seconds(greeted ? o_.idle_timeout : o_.handshake_timeout);
    } catch (const std::exception& e) {
      log_line(c->id, std::string("error: ") + e.what());
      reason = "connection failed";
    }
    if (!greeted && !said_why && farewell.empty() && limits_.evicted(c->id, farewell))
      reason = "evicted before its hello";
    if (s.in_transaction()) reason += "; its open transaction is aborted";
  }                          // the session ends: its transaction is aborted, its locks are free
  directory_->leave(c->id);  // no push writes to the connection from now on
  if (!farewell.empty()) {
    wire::writer out;
    wire::encode(wire::error_response{wire::error_code::closed, farewell}, out);
    try {
      c->conn->send(out.finish());
    } catch (...) {
    }
  }
  limits_.leave(c->id);
  log_line(c->id, "connection " + reason);
  c->conn->shutdown();  // the peer sees the end now; the descriptor closes when the thread is reaped
  c->done = true;
}

void server::reap(bool all) {
  std::list<std::unique_ptr<client>> finished;
  {
    std::lock_guard<std::mutex> g(clients_mutex_);
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (all && !(*it)->done) (*it)->conn->shutdown();
      if (all || (*it)->done) {
        finished.push_back(std::move(*it));
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : finished)
    if (c->thread.joinable()) c->thread.join();
}

}  // namespace qs::server
