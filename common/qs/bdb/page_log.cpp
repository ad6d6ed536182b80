// Page writes as Berkeley DB application log records (see page_log.hpp).
#include <qs/bdb/page_log.hpp>

#include <qs/base/pause_point.hpp>

#include <db_cxx.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace qs::detail {
namespace {

// A record: what Berkeley DB reads of every record (its type, the
// transaction's id, the transaction's previous record), then the page, the
// slot size it was written for, the number of pieces, and each piece's
// offset, length and bytes.
constexpr std::size_t prefix_bytes = 4 + 4 + sizeof(DB_LSN);
constexpr std::size_t fixed_bytes = prefix_bytes + 8 + 4 + 4;

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store_at(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// Calls f(page, offset, length, bytes) for each piece of `rec`, a record
// this process built (so not checked), until f returns false. Returns the
// record's size, or 0 when f stopped.
template <class F>
std::size_t for_each_piece(const std::byte* rec, F&& f) {
  const auto page = load<std::uint64_t>(rec + prefix_bytes);
  const auto count = load<std::uint32_t>(rec + prefix_bytes + 12);
  std::size_t at = fixed_bytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto offset = load<std::uint32_t>(rec + at);
    const auto length = load<std::uint32_t>(rec + at + 4);
    at += page_log::piece_head_bytes;
    if (!f(page, offset, length, rec + at)) return 0;
    at += length;
  }
  return at;
}

// The page record `rec` writes (one for_each_piece may walk).
std::uint64_t page_of(const std::byte* rec) { return load<std::uint64_t>(rec + prefix_bytes); }

// Appends the pieces of `rec` (one for_each_piece may walk) to `out`;
// returns the record's size.
std::size_t pieces_of(const std::byte* rec, std::vector<page_log::piece>& out) {
  return for_each_piece(rec, [&](std::uint64_t, std::uint32_t offset, std::uint32_t length, const std::byte* bytes) {
    out.push_back({offset, length, bytes});
    return true;
  });
}

// Checks record `rec`; calls f(page, offset, length, bytes) for each piece
// when `f` is given. Returns "" or what is wrong.
template <class F>
std::string walk(const std::byte* rec, std::size_t size, std::uint32_t slot_bytes, F&& f) {
  if (size < fixed_bytes) return "it is " + std::to_string(size) + " bytes, shorter than its fixed part";
  if (load<std::uint32_t>(rec) != page_log::page_write_record)
    return "its type is " + std::to_string(load<std::uint32_t>(rec)) + ", not a qs page write";
  const auto page = load<std::uint64_t>(rec + prefix_bytes);
  const auto slot = load<std::uint32_t>(rec + prefix_bytes + 8);
  const auto count = load<std::uint32_t>(rec + prefix_bytes + 12);
  if (slot != slot_bytes)
    return "it writes page " + std::to_string(page) + " for slots of " + std::to_string(slot) +
           " bytes; the page file's are " + std::to_string(slot_bytes);
  std::size_t at = fixed_bytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (size - at < page_log::piece_head_bytes)
      return "piece " + std::to_string(i) + " of page " + std::to_string(page) + " is cut short";
    const auto offset = load<std::uint32_t>(rec + at);
    const auto length = load<std::uint32_t>(rec + at + 4);
    at += page_log::piece_head_bytes;
    if (std::uint64_t{offset} + length > slot_bytes || size - at < length)
      return "piece " + std::to_string(i) + " of page " + std::to_string(page) + " (" + std::to_string(length) +
             " bytes at " + std::to_string(offset) + ") lies outside the slot or the record";
    f(page, offset, length, rec + at);
    at += length;
  }
  if (at != size) return "it has " + std::to_string(size - at) + " bytes past its last piece";
  return {};
}

}  // namespace

int page_log::write(DbEnv& env, DbTxn* t, std::uint64_t page, std::span<const piece> pieces) {
  std::size_t size = fixed_bytes;
  for (const piece& p : pieces) size += piece_head_bytes + p.length;
  DB_TXN* txn = t->get_DB_TXN();
  std::lock_guard<std::mutex> g(mutex_);
  pending& mine = txns_[t];
  std::byte* rec = mine.append(size);
  store_at(rec, page_write_record);
  store_at(rec + 4, static_cast<std::uint32_t>(txn->txnid));
  store_at(rec + prefix_bytes, page);
  store_at(rec + prefix_bytes + 8, file_.slot_bytes());
  store_at(rec + prefix_bytes + 12, static_cast<std::uint32_t>(pieces.size()));
  std::size_t at = fixed_bytes;
  for (const piece& p : pieces) {
    store_at(rec + at, p.offset);
    store_at(rec + at + 4, p.length);
    std::memcpy(rec + at + piece_head_bytes, p.bytes, p.length);
    at += piece_head_bytes + p.length;
  }
  // Chained into the transaction as Berkeley DB's own records are: the
  // previous record's LSN goes in, the new one becomes the transaction's
  // last (and its first, when it logged nothing before).
  DB_LSN lsn{};
  DB_LSN* begin_lsn = &lsn;
  DB_LSN* last_lsn = nullptr;
  DB_SET_TXN_LSNP(txn, &begin_lsn, &last_lsn);
  std::memcpy(rec + 8, last_lsn, sizeof(DB_LSN));
  DBT d{};
  d.data = rec;
  d.size = static_cast<std::uint32_t>(size);
  DB_ENV* e = env.get_DB_ENV();
  int rc = e->log_put(e, begin_lsn, &d, 0);
  if (rc != 0) {
    mine.chunks.back().used -= size;
    return rc;
  }
  *last_lsn = *begin_lsn;
  mine.by_page[page].push_back(rec);
  return 0;
}

std::byte* page_log::pending::append(std::size_t size) {
  if (chunks.empty() || chunks.back().size - chunks.back().used < size) {
    chunk c;
    c.size = std::max(size, chunk_bytes);
    c.bytes.reset(new std::byte[c.size]);
    chunks.push_back(std::move(c));
  }
  chunk& c = chunks.back();
  std::byte* at = c.bytes.get() + c.used;
  c.used += size;
  return at;
}

bool page_log::overlay(DbTxn* t, std::uint64_t page, void* record, std::uint32_t cap) const {
  auto* out = static_cast<std::byte*>(record);
  auto lay = [&](const pending& p) {
    auto w = p.by_page.find(page);
    if (w == p.by_page.end()) return false;
    for (const std::byte* rec : w->second)
      for_each_piece(rec, [&](std::uint64_t, std::uint32_t offset, std::uint32_t length, const std::byte* bytes) {
        if (offset < cap) std::memcpy(out + offset, bytes, std::min<std::uint32_t>(length, cap - offset));
        return true;
      });
    return true;
  };
  std::lock_guard<std::mutex> g(mutex_);
  bool laid = lay(committed_);
  if (t)
    if (auto it = txns_.find(t); it != txns_.end()) laid |= lay(it->second);
  return laid;
}

void page_log::defer(DbTxn* t) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = txns_.find(t);
  if (it == txns_.end()) return;
  // A chunk at least half used moves as it is; the records of one less
  // used (a small transaction's, in a chunk of chunk_bytes) are copied, so
  // that many small commits waiting keep their bytes, not a chunk each.
  for (chunk& c : it->second.chunks) {
    const std::byte* base = c.bytes.get();
    const std::size_t used = c.used;
    const bool moved = used * 2 >= c.size;
    if (moved) committed_.chunks.push_back(std::move(c));
    for (const std::byte* rec = base; rec < base + used;) {
      const std::size_t size =
          for_each_piece(rec, [](std::uint64_t, std::uint32_t, std::uint32_t, const std::byte*) { return true; });
      const std::byte* at = rec;
      if (!moved) {
        std::byte* to = committed_.append(size);
        std::memcpy(to, rec, size);
        at = to;
      }
      committed_.by_page[load<std::uint64_t>(rec + prefix_bytes)].push_back(at);
      committed_bytes_ += size;
      rec += size;
    }
  }
  txns_.erase(it);
}

bool page_log::deferred(std::uint64_t page) const {
  std::lock_guard<std::mutex> g(mutex_);
  return committed_.by_page.count(page) != 0;
}

std::size_t page_log::deferred_bytes() const {
  std::lock_guard<std::mutex> g(mutex_);
  return committed_bytes_;
}

std::uint64_t page_log::applications() const { return applications_.load(std::memory_order_acquire); }

int page_log::apply_committed(const std::function<int()>& flush, int& flush_error, const char* halfway_point) {
  // Under the mutex throughout: a read that overlays waits until the file
  // holds the writes, then sees the count changed and reads again.
  std::lock_guard<std::mutex> g(mutex_);
  flush_error = 0;
  if (committed_bytes_ == 0) return 0;
  if ((flush_error = flush()) != 0) return 0;
  const int rc = write_out(committed_, halfway_point);
  committed_ = pending{};
  committed_bytes_ = 0;
  applications_.fetch_add(1, std::memory_order_acq_rel);
  return rc;
}

bool page_log::wrote(DbTxn* t) const {
  std::lock_guard<std::mutex> g(mutex_);
  return txns_.count(t) != 0;
}

bool page_log::wrote(DbTxn* t, std::uint64_t page) const {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = txns_.find(t);
  return it != txns_.end() && it->second.by_page.count(page) != 0;
}

int page_log::write_out(const pending& p, const char* halfway_point) {
  std::size_t total = 0, done = 0;
  for (const chunk& c : p.chunks) total += c.used;
  bool halfway = false;
  std::vector<piece> pieces;
  for (const chunk& c : p.chunks) {
    for (const std::byte* rec = c.bytes.get(); rec < c.bytes.get() + c.used;) {
      if (!halfway && 2 * done >= total) {
        halfway = true;
        pause_point(halfway_point);
      }
      // A record's pieces, in one write when there are many (write_pieces).
      pieces.clear();
      const std::size_t size = pieces_of(rec, pieces);
      if (int rc = file_.write_pieces(page_of(rec), pieces)) return rc;
      rec += size;
      done += size;
    }
  }
  return 0;
}

void page_log::forget(DbTxn* t) {
  std::lock_guard<std::mutex> g(mutex_);
  txns_.erase(t);
}

int page_log::redo(page_file& file, const void* rec, std::size_t size, std::string& why) {
  const auto* r = static_cast<const std::byte*>(rec);
  why = walk(r, size, file.slot_bytes(), [](std::uint64_t, std::uint32_t, std::uint32_t, const std::byte*) {});
  if (!why.empty()) return EINVAL;
  // Checked: its pieces are walked as this process's own are.
  std::vector<piece> pieces;
  pieces_of(r, pieces);
  return file.write_pieces(page_of(r), pieces);
}

}  // namespace qs::detail
