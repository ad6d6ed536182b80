// One site of a replication group on Berkeley DB's replication manager
// (replication.hpp).
#include <qs/bdb/replication.hpp>

#include <qs/base/error.hpp>

#include <db_cxx.h>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

namespace qs::detail {
namespace {

thread_local bool unacknowledged = false;

// Whether something accepts a TCP connection at `a` within a moment: ""
// when it does, else why not.
std::string answers(const site_address& a) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(a.host.c_str(), std::to_string(a.port).c_str(), &hints, &res); rc != 0)
    return std::string("its host is not known: ") + ::gai_strerror(rc);
  std::string why = "no address";
  for (addrinfo* r = res; r && !why.empty(); r = r->ai_next) {
    int fd = ::socket(r->ai_family, r->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, r->ai_protocol);
    if (fd < 0) continue;
    int err = 0;
    if (::connect(fd, r->ai_addr, r->ai_addrlen) == 0) {
      why.clear();
    } else if (errno != EINPROGRESS) {
      err = errno;
    } else {
      pollfd p{fd, POLLOUT, 0};
      socklen_t n = sizeof err;
      if (::poll(&p, 1, 500) != 1) err = ETIMEDOUT;
      else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0) err = errno;
      if (err == 0) why.clear();
    }
    if (err) why = std::strerror(err);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return why;
}

// Sets TCP_NODELAY on every TCP socket of the process. Berkeley DB's
// replication manager does not: a commit's log record, sent behind a
// message the replica has not acknowledged yet, waited for the replica's
// delayed acknowledgement (40 ms a commit on loopback, against 1.5 ms with
// acknowledgements off). Its sockets are the process's own, and the
// option changes nothing else (qs-pageserver's client sockets have it).
void no_delay_everywhere() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    char* end = nullptr;
    const std::string name = e.path().filename().string();
    long fd = std::strtol(name.c_str(), &end, 10);
    if (!end || *end) continue;
    int type = 0, domain = 0;
    socklen_t n = sizeof type;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &n) != 0 || type != SOCK_STREAM) continue;
    n = sizeof domain;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &n) != 0 ||
        (domain != AF_INET && domain != AF_INET6))
      continue;
    int one = 1;
    ::setsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
}

void check(int rc, const std::string& what) {
  if (rc != 0) throw store_error("replication: " + what + ": " + db_strerror(rc));
}

}  // namespace

ack_policy parse_ack_policy(const std::string& s) {
  if (s == "quorum") return ack_policy::quorum;
  if (s == "all") return ack_policy::all;
  if (s == "one") return ack_policy::one;
  if (s == "none") return ack_policy::none;
  throw invalid_argument("acknowledgement policy '" + s + "': expected quorum, all, one or none");
}

const char* ack_policy_name(ack_policy a) {
  switch (a) {
    case ack_policy::quorum: return "quorum";
    case ack_policy::all: return "all";
    case ack_policy::one: return "one";
    case ack_policy::none: return "none";
  }
  return "?";
}

void replication::configure(DbEnv& env, void (*events)(DbEnv*, std::uint32_t, void*),
                            void (*messages)(DbEnv*, DbChannel*, Dbt*, std::uint32_t, std::uint32_t)) {
  check(env.set_event_notify(events), "set_event_notify");
  check(env.repmgr_msg_dispatch(messages, 0), "repmgr_msg_dispatch");
  int policy = DB_REPMGR_ACKS_QUORUM;
  switch (o_.ack) {
    case ack_policy::quorum: policy = DB_REPMGR_ACKS_QUORUM; break;
    case ack_policy::all: policy = DB_REPMGR_ACKS_ALL; break;
    case ack_policy::one: policy = DB_REPMGR_ACKS_ONE; break;
    case ack_policy::none: policy = DB_REPMGR_ACKS_NONE; break;
  }
  check(env.repmgr_set_ack_policy(policy), "repmgr_set_ack_policy");
  check(env.rep_set_priority(o_.priority), "rep_set_priority");
  // A group of two never elects two masters (each would, alone).
  check(env.rep_set_config(DB_REPMGR_CONF_2SITE_STRICT, 1), "rep_set_config 2SITE_STRICT");
  auto us = [](std::chrono::milliseconds t) { return static_cast<db_timeout_t>(t.count() * 1000); };
  check(env.rep_set_timeout(DB_REP_ACK_TIMEOUT, us(o_.ack_timeout)), "ack timeout");
  // A lost master is noticed by its closed connections at once, or by its
  // missing heartbeats within 3 s; elections and connections are retried
  // every second.
  check(env.rep_set_timeout(DB_REP_HEARTBEAT_SEND, 500000), "heartbeat send");
  check(env.rep_set_timeout(DB_REP_HEARTBEAT_MONITOR, 3000000), "heartbeat monitor");
  check(env.rep_set_timeout(DB_REP_ELECTION_RETRY, 1000000), "election retry");
  check(env.rep_set_timeout(DB_REP_CONNECTION_RETRY, 1000000), "connection retry");
  // A master's checkpoint otherwise waits 30 s before its record, for the
  // replicas to flush their caches: a commit that checkpoints, and a clean
  // stop, would wait with it.
  check(env.rep_set_timeout(DB_REP_CHECKPOINT_DELAY, 0), "checkpoint delay");
}

void replication::start(DbEnv& env, bool fresh, std::chrono::milliseconds patience) {
  // A peer that does not answer is said at once (Berkeley DB goes on
  // trying it, silently).
  bool create = fresh;
  for (const site_address& p : o_.peers) {
    const std::string why = answers(p);
    if (why.empty()) create = false;
    else if (o_.log)
      o_.log("replication: peer " + p.text() + " does not answer on its replication address (" + why + ")");
  }
  if (create && o_.creating_group) o_.creating_group();
  DbSite* site = nullptr;
  check(env.repmgr_site(o_.local.host.c_str(), o_.local.port, &site, 0), "site " + o_.local.text());
  int rc = site->set_config(DB_LOCAL_SITE, 1);
  if (rc == 0 && create) rc = site->set_config(DB_GROUP_CREATOR, 1);
  site->close();
  check(rc, "local site " + o_.local.text());
  for (const site_address& p : o_.peers) {
    check(env.repmgr_site(p.host.c_str(), p.port, &site, 0), "site " + p.text());
    rc = site->set_config(DB_BOOTSTRAP_HELPER, 1);
    if (rc == 0) rc = site->set_config(DB_REPMGR_PEER, 1);
    site->close();
    check(rc, "peer " + p.text());
  }
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    rc = env.repmgr_start(3, DB_REP_ELECTION);
    // DB_REP_UNAVAIL: no site could add this one to the group yet (no
    // master, or another site joining at the same time).
    if (rc != DB_REP_UNAVAIL || std::chrono::steady_clock::now() >= until) break;
    if (std::string why = o_.refusal ? o_.refusal() : std::string(); !why.empty())
      throw store_error("replication: site " + o_.local.text() + " cannot join the group: " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (rc == DB_REP_UNAVAIL)
    throw store_error("replication: site " + o_.local.text() + " could not join the group through its peers within " +
                      std::to_string(patience.count() / 1000) + " s: none of them is a running master");
  check(rc, "repmgr_start at " + o_.local.text());
}

void replication::event(std::uint32_t which, void*) {
  switch (which) {
    case DB_EVENT_REP_MASTER:
      is_master_ = true;
      role_ = static_cast<int>(role_kind::master);
      break;
    case DB_EVENT_REP_CLIENT:
    case DB_EVENT_REP_DUPMASTER:
      is_master_ = false;
      role_ = static_cast<int>(started_up_ ? role_kind::replica : role_kind::starting);
      break;
    case DB_EVENT_REP_STARTUPDONE:
      started_up_ = true;
      if (!is_master_) role_ = static_cast<int>(role_kind::replica);
      break;
    case DB_EVENT_REP_PERM_FAILED: unacknowledged = true; break;
    case DB_EVENT_REP_CONNECT_ESTD: no_delay_everywhere(); break;
    case DB_EVENT_REP_NEWMASTER: ++master_changes_; break;
    default: break;
  }
}

namespace {
constexpr std::string_view progress_word = "qs-applied ";
}

void replication::report_progress(DbEnv& env) {
  if (role() != role_kind::replica) return;
  DB_REP_STAT* rs = nullptr;
  if (env.rep_stat(&rs, 0) != 0) return;
  const DB_LSN applied = rs->st_next_lsn;
  std::free(rs);
  std::string text = std::string(progress_word) + o_.local.text() + " " + std::to_string(applied.file) + " " +
                     std::to_string(applied.offset);
  DbChannel* channel = nullptr;
  if (env.repmgr_channel(DB_EID_MASTER, &channel, 0) != 0 || !channel) return;
  Dbt m(text.data(), static_cast<std::uint32_t>(text.size()));
  channel->send_msg(&m, 1, 0);  // no master now: the next report
  channel->close();
}

void replication::message(const Dbt* messages, std::uint32_t n) {
  // From a site that passed the handshake, read as hostile all the same:
  // a malformed report is dropped.
  if (n != 1 || !messages || messages->get_size() > 300) return;
  const std::string text(static_cast<const char*>(messages->get_data()), messages->get_size());
  if (!text.starts_with(progress_word)) return;
  std::istringstream in(text.substr(progress_word.size()));
  std::string site;
  std::uint64_t file = 0, offset = 0;
  if (!(in >> site >> file >> offset) || file > UINT32_MAX || offset > UINT32_MAX || site.size() > 280) return;
  std::lock_guard<std::mutex> l(progress_mutex_);
  if (progress_.size() >= 64 && !progress_.count(site)) return;
  progress_[site] = {static_cast<std::uint32_t>(file), static_cast<std::uint32_t>(offset),
                     std::chrono::steady_clock::now()};
}

bool replication::took_unacknowledged() {
  bool was = unacknowledged;
  unacknowledged = false;
  return was;
}

void replication::clear_unacknowledged() { unacknowledged = false; }

std::string replication::master(DbEnv& env) const {
  if (is_master_) return o_.local.text();
  DB_REP_STAT* st = nullptr;
  if (env.rep_stat(&st, 0) != 0) return "unknown";
  int eid = static_cast<int>(st->st_master);
  std::free(st);
  if (eid == DB_EID_INVALID) return "none";
  DbSite* site = nullptr;
  if (env.repmgr_site_by_eid(eid, &site) != 0) return "unknown";
  const char* host = nullptr;
  unsigned port = 0;
  std::string out =
      site->get_address(&host, &port) == 0 && host ? std::string(host) + ":" + std::to_string(port) : "unknown";
  site->close();
  return out;
}

namespace {

// Where the log ends (the next record's position); nullopt when Berkeley
// DB cannot say.
std::optional<DB_LSN> log_end(DbEnv& env) {
  DB_LOG_STAT* ls = nullptr;
  if (env.log_stat(&ls, 0) != 0) return std::nullopt;
  DB_LSN end{ls->st_cur_file, ls->st_cur_offset};
  std::free(ls);
  return end;
}

// A site of repmgr_site_list as "host:port", the name replicas report under.
std::string site_name(const DB_REPMGR_SITE& s) { return std::string(s.host) + ":" + std::to_string(s.port); }

}  // namespace

std::string replication::status(DbEnv& env) const {
  const char* roles[] = {"starting", "replica", "master"};
  std::string out = std::string("replication: this site ") + o_.local.text() + " is " + roles[role_.load()];
  // The log's end; on the master, how far behind each replica is is
  // measured from it in bytes (log files are lg_max bytes).
  std::uint32_t cur_file = 0, cur_offset = 0, lg_max = 0;
  if (const auto end = log_end(env)) {
    cur_file = end->file;
    cur_offset = end->offset;
    out += ", log at " + std::to_string(cur_file) + "/" + std::to_string(cur_offset);
    env.get_lg_max(&lg_max);
  }
  DB_REP_STAT* rs = nullptr;
  if (role() != role_kind::master && env.rep_stat(&rs, 0) == 0) {
    // How far this replica has applied the master's log, and what it waits for.
    out += ", applied up to " + std::to_string(rs->st_next_lsn.file) + "/" + std::to_string(rs->st_next_lsn.offset);
    if (rs->st_waiting_lsn.file)
      out += ", waiting for " + std::to_string(rs->st_waiting_lsn.file) + "/" +
             std::to_string(rs->st_waiting_lsn.offset) + " (" + std::to_string(rs->st_log_queued) + " records queued)";
    std::free(rs);
  }
  out += "; master " + master(env) + "; acknowledgements " + ack_policy_name(o_.ack);
  DB_REPMGR_STAT* ms = nullptr;
  if (env.repmgr_stat(&ms, 0) == 0) {
    // Commits that stood on the master alone (their clients told so).
    out += " (" + std::to_string(ms->st_perm_failed) + " not acknowledged in time; " +
           std::to_string(ms->st_connection_drop) + " connections dropped)";
    std::free(ms);
  }
  // On the master, how far each replica is behind, from its last report.
  unsigned n = 0;
  DB_REPMGR_SITE* list = nullptr;
  if (env.repmgr_site_list(&n, &list) == 0) {
    const auto now = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < n; ++i) {
      const std::string name = site_name(list[i]);
      out += "; site " + name + (list[i].status == DB_REPMGR_CONNECTED ? " connected" : " not connected");
      if (role() != role_kind::master) continue;
      std::lock_guard<std::mutex> l(progress_mutex_);
      auto it = progress_.find(name);
      if (it == progress_.end()) continue;
      const progress& p = it->second;
      const std::int64_t behind =
          (static_cast<std::int64_t>(cur_file) - p.file) * lg_max + (static_cast<std::int64_t>(cur_offset) - p.offset);
      const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - p.at).count();
      out += ", applied up to " + std::to_string(p.file) + "/" + std::to_string(p.offset) + " (" +
             std::to_string(std::max<std::int64_t>(behind, 0)) + " bytes of log behind, said " +
             std::to_string(ago / 1000) + "." + std::to_string(ago % 1000 / 100) + " s ago)";
    }
    std::free(list);
  }
  return out;
}

std::string replication::hand_over(DbEnv& env, std::chrono::milliseconds patience) {
  const auto log_at = log_end(env);
  if (!log_at) return "replication: no hand-over (the log's end is unknown)";
  const std::uint32_t end_file = log_at->file, end_offset = log_at->offset;
  const std::string end = std::to_string(end_file) + "/" + std::to_string(end_offset);
  const auto began = std::chrono::steady_clock::now();
  const auto deadline = began + patience;
  std::vector<std::string> have, lack, silent;
  for (;;) {
    have.clear();
    lack.clear();
    silent.clear();
    unsigned n = 0;
    DB_REPMGR_SITE* list = nullptr;
    if (env.repmgr_site_list(&n, &list) == 0) {
      for (unsigned i = 0; i < n; ++i) {
        if (list[i].status != DB_REPMGR_CONNECTED) continue;
        const std::string name = site_name(list[i]);
        std::lock_guard<std::mutex> l(progress_mutex_);
        auto it = progress_.find(name);
        // A report from before the hand-over began counts: the log it
        // names is the replica's. A site that never reported (one being
        // initialised from the group) holds the hand-over up only while
        // no other site has caught up.
        if (it == progress_.end()) {
          silent.push_back(name + " (no report)");
        } else if (it->second.file > end_file || (it->second.file == end_file && it->second.offset >= end_offset)) {
          have.push_back(name);
        } else {
          lack.push_back(name + " at " + std::to_string(it->second.file) + "/" + std::to_string(it->second.offset));
        }
      }
      std::free(list);
    }
    if ((lack.empty() && (silent.empty() || !have.empty())) || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& x : v) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  lack.insert(lack.end(), silent.begin(), silent.end());
  if (have.empty() && lack.empty())
    return "replication: no replica is connected to hand over to; the log up to " + end +
           " is on this site alone (commits acknowledged by replicas are on them too)";
  if (have.empty())
    return "replication: no replica has all of this site's log (up to " + end + ") after " +
           std::to_string(took.count()) + " ms: " + join(lack) +
           "; commits past what they have stand on this site alone until it starts again";
  return "replication: handed over in " + std::to_string(took.count()) + " ms: " + join(have) + " ha" +
         (have.size() == 1 ? "s" : "ve") + " all of this site's log (up to " + end + ")" +
         (lack.empty() ? "" : "; still behind: " + join(lack));
}

void replication::archive(DbEnv& env) {
  char** list = nullptr;
  if (env.log_archive(&list, DB_ARCH_ABS) != 0 || !list) return;
  std::vector<std::string> files;
  for (char** p = list; *p; ++p) files.emplace_back(*p);
  std::free(list);
  // Oldest first; the newest few stay for replicas that fall behind.
  if (files.size() <= kept_log_files) return;
  std::error_code ec;
  for (std::size_t i = 0; i + kept_log_files < files.size(); ++i) std::filesystem::remove(files[i], ec);
}

}  // namespace qs::detail
