// cache_directory.hpp: which pages each connected client caches, and the
// invalidations the server pushes to a client when another client's commit
// changes one of them (THOR's invalidation protocol, on pages).
//
// A session notes each page it sends its client, with the version sent
// (note_sent); a commit notes the pages its client wrote. A commit calls
// invalidate() with the pages it changed and their new versions: every
// other client holding an older version of one gets an `invalidate` message
// naming it, and is no longer counted as holding it (one message per page
// until the client reads the page again). The client then uses every page
// not invalidated with no round trip (libqs's remote store).
//
// Ordering, the invariant the client's consistency rests on: every
// invalidation of a commit that a snapshot holds is queued before the
// answer to the begin that took the snapshot, and an answer never overtakes
// what was queued before it. Pushes are queued per client and written
// without blocking; the session's answers go through send(), which writes
// what is queued first. A commit pushes before its Berkeley DB commit makes
// the change visible. A client that notes the page meanwhile, from an older
// snapshot, is told at once (the commit's pages are in flight until
// commit_ended); one that notes it later checks its version against the
// committed one (session.cpp). So no client keeps a stale page unwarned.
//
// Bounds:
//  * entries: at most max_pages over all clients (about 64 bytes each). A
//    client whose note would pass it is forgotten whole and sent `all`: it
//    revalidates every cached page at its next transaction, one round trip
//    each, and is noted afresh (qs-pageserver --directory-pages).
//  * queued bytes: a client that does not read its socket lets its pushes
//    pile up; past max_queue_bytes queued, its connection is shut down
//    (never waited for): the client reconnects at its next call and
//    revalidates its whole cache. A client holds at most one pending
//    invalidation per page it was sent, so the queue stays small unless a
//    client holds many pages and stops reading.
//
// Thread-safety: every member may be called from any thread. Writes to one
// client's socket are serialized (one sender at a time); a commit never
// waits for a client's socket.
#pragma once

#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>

namespace qs::server {

struct directory_counters {
  std::atomic<std::uint64_t> pushes{0};         // invalidate messages queued
  std::atomic<std::uint64_t> invalidations{0};  // pages named in them
  std::atomic<std::uint64_t> told_all{0};       // clients forgotten whole (the bound)
  std::atomic<std::uint64_t> cut_off{0};        // clients disconnected (queue bound)
  std::atomic<std::uint64_t> entries{0};        // pages noted now, over all clients
};

class cache_directory {
 public:
  cache_directory(std::uint64_t max_pages, std::size_t max_queue_bytes);

  // A client's place, from its hello to the end of its connection. `conn`
  // outlives the place.
  void join(std::uint64_t client, wire::connection* conn);
  void leave(std::uint64_t client);

  // The client was sent (or committed) `page` at `version`.
  void note_sent(std::uint64_t client, std::uint64_t page, std::uint64_t version);
  // Pushes each (page, version) to every client but `from` that holds an
  // older version of page (no_record: any), and forgets that it holds it.
  // First, unless `seen` is wire::unchecked_version: when more invalidate
  // messages were queued for `from` than `seen` (its commit's
  // invalidations_seen), pushes nothing and returns false. The check and the
  // pushes are one step: of two commits that each changed a page the other's
  // client read from its cache, the second to take the step is refused.
  // `from` is then noted holding the changed pages at their new versions,
  // and the pages are in flight until commit_ended (the commit holds their
  // locks until then).
  bool check_and_invalidate(std::uint64_t from, std::uint64_t seen, std::span<const wire::invalidation> changed);
  // The client is forgotten whole and sent `all`: a commit of its failed
  // after check_and_invalidate noted it holding what it wrote.
  void reset(std::uint64_t client);
  // Pushes (page, version) to `client` alone, if it holds an older version:
  // the page it was just sent came from a snapshot older than a commit that
  // changed it.
  void correct(std::uint64_t client, std::uint64_t page, std::uint64_t version);
  // A commit that called check_and_invalidate has ended in
  // Berkeley DB, `committed` or not: counted in commits(), and its pages no
  // longer in flight.
  void commit_ended(std::span<const wire::invalidation> changed, bool committed);
  // Commits ended so far: a session that noted a page from a view older
  // than the last of them checks its version (session.cpp).
  std::uint64_t commits() const { return commits_.load(std::memory_order_acquire); }

  // Sends `frame` to `client` after everything queued for it (blocking: the
  // session's thread). Throws what wire::connection::send throws.
  void send(std::uint64_t client, std::span<const std::byte> frame);
  // How many invalidate messages were queued for `client` so far.
  std::uint64_t pushed(std::uint64_t client);

  // The counters, for the log (SIGUSR1, and when the server stops).
  std::string line() const;

 private:
  struct place {
    wire::connection* conn;
    std::unordered_map<std::uint64_t, std::uint64_t> pages;  // page -> version sent
    std::deque<std::string> queue;                           // frames still to write
    std::size_t head_sent = 0;                               // of queue.front()
    std::size_t queued_bytes = 0;
    std::uint64_t pushed = 0;
    bool cut = false;
    std::mutex sending;  // held while writing to the socket
  };
  // Queues an invalidate message (m_ held).
  void queue_push(place& p, const wire::invalidate_response& msg);
  // Writes what the socket takes of p's queue now, unless another thread is
  // writing to it.
  void try_flush(place& p);
  // Writes p's queue (p.sending held; blocking when `wait`). False when
  // the socket took only part of it.
  bool flush(place& p, bool wait);
  std::shared_ptr<place> find(std::uint64_t client);

  const std::uint64_t max_pages_;
  const std::size_t max_queue_bytes_;
  std::mutex m_;  // the places, their pages and queues
  std::unordered_map<std::uint64_t, std::shared_ptr<place>> places_;
  std::atomic<std::uint64_t> commits_{0};
  // Pages of commits between their pushes and their end, with the version
  // each gives: a note of an older version in that time is answered with
  // an invalidation at once (a snapshot taken before the commit ended may
  // still be read).
  std::unordered_map<std::uint64_t, std::uint64_t> inflight_;
  directory_counters counters_;
};

}  // namespace qs::server
