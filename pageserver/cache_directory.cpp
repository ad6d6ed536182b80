// Which pages each client caches, and the invalidations pushed to it
// (cache_directory.hpp).
#include "cache_directory.hpp"

#include <vector>

namespace qs::server {

cache_directory::cache_directory(std::uint64_t max_pages, std::size_t max_queue_bytes)
    : max_pages_(max_pages), max_queue_bytes_(max_queue_bytes) {}

void cache_directory::join(std::uint64_t client, wire::connection* conn) {
  auto p = std::make_shared<place>();
  p->conn = conn;
  std::lock_guard<std::mutex> g(m_);
  places_[client] = std::move(p);
}

void cache_directory::leave(std::uint64_t client) {
  std::shared_ptr<place> p;
  {
    std::lock_guard<std::mutex> g(m_);
    auto it = places_.find(client);
    if (it == places_.end()) return;
    p = std::move(it->second);
    places_.erase(it);
    counters_.entries -= p->pages.size();
    p->pages.clear();
  }
  // A flush in another thread may still be writing from p's queue (to its
  // connection, which outlives the place): wait for it.
  std::lock_guard<std::mutex> s(p->sending);
  std::lock_guard<std::mutex> g(m_);
  p->queue.clear();
}

std::shared_ptr<cache_directory::place> cache_directory::find(std::uint64_t client) {
  std::lock_guard<std::mutex> g(m_);
  auto it = places_.find(client);
  return it == places_.end() ? nullptr : it->second;
}

void cache_directory::note_sent(std::uint64_t client, std::uint64_t page, std::uint64_t version) {
  std::shared_ptr<place> flush_me;
  {
    std::lock_guard<std::mutex> g(m_);
    auto it = places_.find(client);
    if (it == places_.end() || it->second->cut) return;
    place& p = *it->second;
    // A commit of the page under way (pushed before this note, and not yet
    // counted by commits()): the client is told now, before the answer
    // that carries the page.
    if (auto f = inflight_.find(page); f != inflight_.end() && (f->second == wire::no_record || f->second > version)) {
      if (p.pages.erase(page)) --counters_.entries;
      wire::invalidate_response msg;
      msg.pages.push_back({page, f->second});
      queue_push(p, msg);
      flush_me = it->second;
    } else if (auto [at, added] = p.pages.try_emplace(page, version); !added) {
      at->second = version;
    } else if (++counters_.entries > max_pages_) {
      // Past the bound: this client is forgotten whole, and told so before
      // the answer that carries `page` (which it then holds, noted afresh).
      counters_.entries -= p.pages.size();
      p.pages.clear();
      wire::invalidate_response all;
      all.all = true;
      queue_push(p, all);
      ++counters_.told_all;
      p.pages.emplace(page, version);
      ++counters_.entries;
    }
  }
  if (flush_me) try_flush(*flush_me);
}

bool cache_directory::check_and_invalidate(std::uint64_t from, std::uint64_t seen,
                                           std::span<const wire::invalidation> changed) {
  std::vector<std::shared_ptr<place>> to_flush;
  {
    std::lock_guard<std::mutex> g(m_);
    if (seen != wire::unchecked_version) {
      auto self = places_.find(from);
      if (self != places_.end() && self->second->pushed > seen) return false;
    }
    if (!changed.empty()) {
      // The committing client holds what it wrote, from now on: noted
      // before any other commit can change the pages again (they are
      // locked until this one ends).
      for (const wire::invalidation& c : changed) inflight_[c.page] = c.version;
      auto self = places_.find(from);
      if (self != places_.end() && !self->second->cut) {
        auto& pages = self->second->pages;
        for (const wire::invalidation& c : changed) {
          if (c.version == wire::no_record) {
            if (pages.erase(c.page)) --counters_.entries;
          } else if (pages.insert_or_assign(c.page, c.version).second) {
            ++counters_.entries;
          }
        }
      }
      wire::invalidate_response msg;
      for (const auto& [id, p] : places_) {
        if (id == from || p->cut) continue;
        msg.pages.clear();
        for (const wire::invalidation& c : changed) {
          auto at = p->pages.find(c.page);
          if (at == p->pages.end()) continue;
          if (c.version != wire::no_record && at->second >= c.version) continue;
          msg.pages.push_back(c);
          p->pages.erase(at);
          --counters_.entries;
        }
        if (msg.pages.empty()) continue;
        queue_push(*p, msg);
        if (!p->cut) to_flush.push_back(p);
      }
    }
  }
  for (auto& p : to_flush) try_flush(*p);
  return true;
}

void cache_directory::commit_ended(std::span<const wire::invalidation> changed, bool committed) {
  if (committed) commits_.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> g(m_);
  for (const wire::invalidation& c : changed)
    if (auto f = inflight_.find(c.page); f != inflight_.end() && f->second == c.version) inflight_.erase(f);
}

void cache_directory::correct(std::uint64_t client, std::uint64_t page, std::uint64_t version) {
  std::shared_ptr<place> p;
  {
    std::lock_guard<std::mutex> g(m_);
    auto it = places_.find(client);
    if (it == places_.end() || it->second->cut) return;
    auto at = it->second->pages.find(page);
    if (at == it->second->pages.end() || (version != wire::no_record && at->second >= version)) return;
    it->second->pages.erase(at);
    --counters_.entries;
    wire::invalidate_response msg;
    msg.pages.push_back({page, version});
    queue_push(*it->second, msg);
    p = it->second;
  }
  try_flush(*p);
}

void cache_directory::queue_push(place& p, const wire::invalidate_response& msg) {
  wire::writer w;
  wire::encode(wire::response{msg}, w);
  const std::vector<std::byte>& f = w.finish();
  p.queue.emplace_back(reinterpret_cast<const char*>(f.data()), f.size());
  p.queued_bytes += f.size();
  ++p.pushed;
  ++counters_.pushes;
  counters_.invalidations += msg.pages.size();
  if (p.queued_bytes > max_queue_bytes_ && !p.cut) {
    // It does not read its socket: cut it off rather than hold more. Its
    // reader wakes and ends the session; the client reconnects and
    // revalidates everything.
    p.cut = true;
    counters_.entries -= p.pages.size();
    p.pages.clear();
    p.conn->shutdown();
    ++counters_.cut_off;
  }
}

void cache_directory::try_flush(place& p) {
  for (;;) {
    {
      std::unique_lock<std::mutex> s(p.sending, std::try_to_lock);
      // Another thread is writing to the socket: it looks at the queue
      // again once done (send).
      if (!s.owns_lock()) return;
      try {
        if (!flush(p, false)) return;  // the socket is full: the client is slow
      } catch (const wire::io_error&) {
        return;  // the client is gone: its session notices
      }
    }
    // Pushed while this thread held the socket (and gave up on it)?
    std::lock_guard<std::mutex> g(m_);
    if (p.cut || p.queue.empty()) return;
  }
}

void cache_directory::reset(std::uint64_t client) {
  std::shared_ptr<place> p;
  {
    std::lock_guard<std::mutex> g(m_);
    auto it = places_.find(client);
    if (it == places_.end() || it->second->cut) return;
    p = it->second;
    counters_.entries -= p->pages.size();
    p->pages.clear();
    wire::invalidate_response all;
    all.all = true;
    queue_push(*p, all);
    ++counters_.told_all;
  }
  try_flush(*p);
}

bool cache_directory::flush(place& p, bool wait) {
  for (;;) {
    const std::string* front;
    std::size_t off;
    {
      std::lock_guard<std::mutex> g(m_);
      if (p.cut || p.queue.empty()) return true;
      front = &p.queue.front();  // stays put: only the sender pops
      off = p.head_sent;
    }
    std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(front->data()) + off, front->size() - off);
    std::size_t n = rest.size();
    if (wait) p.conn->send(rest);
    else n = p.conn->try_send(rest);
    {
      std::lock_guard<std::mutex> g(m_);
      p.head_sent += n;
      p.queued_bytes -= n;
      if (p.head_sent == p.queue.front().size()) {
        p.queue.pop_front();
        p.head_sent = 0;
      }
    }
    if (n < rest.size()) return false;
  }
}

void cache_directory::send(std::uint64_t client, std::span<const std::byte> frame) {
  std::shared_ptr<place> p = find(client);
  if (!p) throw wire::io_error("the connection was cut off");
  {
    std::lock_guard<std::mutex> s(p->sending);
    flush(*p, true);
    p->conn->send(frame);
  }
  try_flush(*p);  // what a commit queued meanwhile
}

std::uint64_t cache_directory::pushed(std::uint64_t client) {
  std::lock_guard<std::mutex> g(m_);
  auto it = places_.find(client);
  return it == places_.end() ? 0 : it->second->pushed;
}

std::string cache_directory::line() const {
  const auto get = [](const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return "cache directory: " + std::to_string(get(counters_.entries)) + " pages held by clients, " +
         std::to_string(get(counters_.pushes)) + " invalidations sent naming " +
         std::to_string(get(counters_.invalidations)) + " pages, " + std::to_string(get(counters_.told_all)) +
         " clients told to revalidate everything (--directory-pages), " + std::to_string(get(counters_.cut_off)) +
         " disconnected for not reading them (--push-queue-kb)";
}

}  // namespace qs::server
