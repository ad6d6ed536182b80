// qs/bdb/replication.hpp: one site of a replication group, on Berkeley DB's
// replication manager (repmgr).
//
// A replicated environment (bdb_env given replication_options) is one site
// of a group: one master takes writes, the other sites (replicas) apply its
// log. Berkeley DB does all of the replicating: log shipping, elections,
// acknowledgements, a new site's initialisation from a running one; this
// class declares the sites, chooses the settings and follows the events.
//
// * Sites. This site listens for replication on `local` (loopback unless
//   told otherwise); each peer is declared a bootstrap helper. A site whose
//   directory holds no environment yet, and none of whose peers answers on
//   its replication address, creates the group (DB_GROUP_CREATOR): the
//   first site started. Any other site joins through a peer and, when its
//   directory is empty, is initialised from the group (internal init).
//   Starting two sites of a new group at once on empty directories can
//   make two groups: start the first and wait for it before the others.
// * Acknowledgements. A commit on the master returns once the policy is
//   met (`quorum`: enough electable sites that an election after the loss
//   of any one site finds the commit; `all`, `one`, `none`), or when the
//   acknowledgement timeout passes, in which case the commit stands on the
//   master but took_unacknowledged() says so (Berkeley DB's PERM_FAILED
//   event, raised in the committing thread).
// * Roles. role() follows the events: master, or replica once started up
//   (its log caught up with the master's at least once: STARTUPDONE).
//   Elections run by themselves when the master is lost (its connections
//   close, or its heartbeats stop for heartbeat_monitor).
// * Logs. Log files are not removed automatically (that would make every
//   lagging replica re-initialise from scratch); archive() removes those no
//   site's recovery needs, keeping the newest `kept_log_files` of them for
//   replicas that fall behind.
//
// * Sockets. Berkeley DB's replication manager does not set TCP_NODELAY;
//   every TCP socket of the process gets it when a replication connection
//   is made (a commit otherwise waits for the replica's delayed
//   acknowledgement of the message before it: 40 ms).
//
// * Elections. Berkeley DB 5.3 can count one voter more than its tally
//   holds and write past it: a replicated environment installs
//   allocation_slack.hpp first.
//
// Berkeley DB's replication traffic is not authenticated by itself: it
// listens on loopback by default, and qs-pageserver puts a handshake with
// the shared secret in front of each of its connections (the server's
// replication_guard.hpp).
//
// Thread-safety: role(), master() and took_unacknowledged() from any
// thread; the rest from the thread that owns the environment.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

class DbChannel;
class DbEnv;
class Dbt;

namespace qs::detail {

struct site_address {
  std::string host;
  unsigned port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

enum class ack_policy { quorum, all, one, none };

struct replication_options {
  site_address local;
  std::vector<site_address> peers;
  ack_policy ack = ack_policy::quorum;
  // Higher wins elections among sites with the same log; 0 never becomes
  // master.
  std::uint32_t priority = 100;
  // How long a commit waits for its acknowledgements.
  std::chrono::milliseconds ack_timeout{5000};
  // Called before the replication manager starts when this site creates
  // the group.
  std::function<void()> creating_group;
  // Why a peer refused this site (its secret or group), or "": a site that
  // cannot join says so at once rather than at the end of its patience.
  std::function<std::string()> refusal;
  // Where the site's own lines go (the server's log), from start().
  std::function<void(const std::string&)> log;
};

// "quorum", "all", "one", "none"; throws qs::invalid_argument otherwise.
ack_policy parse_ack_policy(const std::string& s);
const char* ack_policy_name(ack_policy a);

class replication {
 public:
  enum class role_kind : int { starting, replica, master };

  explicit replication(const replication_options& o) : o_(o) {}
  replication(const replication&) = delete;
  replication& operator=(const replication&) = delete;

  // Before DbEnv::open: the event callback, timeouts, acknowledgement
  // policy, priority and the sites. `events` is the environment's event
  // callback, which must pass every event to event().
  // `messages` is the environment's message callback (Berkeley DB's
  // message channels), which must pass every message to message().
  void configure(DbEnv& env, void (*events)(DbEnv*, std::uint32_t, void*),
                 void (*messages)(DbEnv*, DbChannel*, Dbt*, std::uint32_t, std::uint32_t));
  // After DbEnv::open (with DB_INIT_REP): starts the replication manager,
  // creating the group when `fresh` (no environment was in the directory)
  // and no peer answers. Retries while the group cannot take this site yet
  // (a master still being elected), up to `patience`; throws qs::store_error
  // after it.
  void start(DbEnv& env, bool fresh, std::chrono::milliseconds patience);

  // Called from the environment's event callback (any thread).
  void event(std::uint32_t which, void* info);
  // Called from the environment's message callback (any thread): a
  // replica's report of how far it has applied the master's log.
  void message(const Dbt* messages, std::uint32_t n);
  // A replica tells the master how far it has applied its log (over the
  // replication connection, a message channel); the master's status line
  // shows how far each replica is behind, and hand_over() waits for them.
  // Call a few times a second.
  void report_progress(DbEnv& env);

  role_kind role() const { return static_cast<role_kind>(role_.load(std::memory_order_acquire)); }
  // How many times a (new) master was announced to this site.
  std::uint64_t master_changes() const { return master_changes_.load(std::memory_order_acquire); }
  // Whether the last commit of the calling thread missed its
  // acknowledgements; clears the mark.
  static bool took_unacknowledged();
  // Clears the calling thread's mark before a commit.
  static void clear_unacknowledged();

  // The master's replication address, or "none" when no master is known.
  std::string master(DbEnv& env) const;
  // One line: this site's role and log position, the master, and each
  // site with its connection state; on the master, how far behind each
  // replica said it was, and when.
  std::string status(DbEnv& env) const;
  // A clean stop of the master, once no commit can begin: waits until
  // every connected replica says it has all of this site's log (their
  // reports, report_progress; a site that never reported, one being
  // initialised, only while no other has), at most `patience`, so that
  // the election after this site closes its connections finds every
  // commit, whatever the acknowledgement policy. Returns a line saying
  // which replicas have it, and when none has, what may be lost. Berkeley
  // DB 5.3 cannot name the next master: the election that follows the
  // close picks the site with the most log, one of those that caught up.
  std::string hand_over(DbEnv& env, std::chrono::milliseconds patience);
  // Removes the log files no recovery needs beyond the newest few.
  void archive(DbEnv& env);
  const replication_options& options() const { return o_; }

  static constexpr unsigned kept_log_files = 8;

 private:
  replication_options o_;
  std::atomic<int> role_{static_cast<int>(role_kind::starting)};
  std::atomic<bool> started_up_{false};
  std::atomic<bool> is_master_{false};
  // What each replica last reported (master), by its address.
  struct progress {
    std::uint32_t file = 0, offset = 0;
    std::chrono::steady_clock::time_point at;
  };
  mutable std::mutex progress_mutex_;
  std::map<std::string, progress> progress_;
  std::atomic<std::uint64_t> master_changes_{0};
};

}  // namespace qs::detail
