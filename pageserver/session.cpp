// One client connection's protocol state machine (session.hpp).
#include "session.hpp"

#include "log.hpp"
#include "shared_secret.hpp"

#include <qs/base/error.hpp>
#include <qs/format/page_record.hpp>

#include <db_cxx.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

namespace qs::server {
namespace {

class auth_failure : public qs::error {
 public:
  using qs::error::error;
};

// A client that may write, at a replica (answered not_master, then closed).
class replica_refusal : public qs::error {
 public:
  using qs::error::error;
};

}  // namespace

session::session(const session_config& c, std::uint64_t id) : c_(c), env_(*c.txn.env), id_(id), txn_(c.txn, id) {}

session::~session() = default;  // txn_ aborts an open transaction

wire::response session::error_reply(wire::error_code code, std::string text) {
  // An error's text is for people: a few KiB say enough.
  if (text.size() > 4096) text.resize(4096);
  error_text_ = std::move(text);
  return wire::error_response{code, error_text_};
}

void session::handle(std::span<const std::byte> body, wire::writer& out, bool& close) {
  wire::response resp;
  close = false;
  try {
    release_snapshot_if_due();
    resp = dispatch(wire::parse_request(body));
  } catch (const wire::protocol_error& e) {
    std::string why = e.what();
    // A hello of another protocol version may be laid out otherwise: its
    // version, read before the rest, says why it did not parse.
    if (body.size() >= 9 && body[0] == static_cast<std::byte>(wire::msg::hello)) {
      auto le32 = [&](std::size_t at) {
        std::uint32_t v = 0;
        for (std::size_t i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(body[at + i]) << (8 * i);
        return v;
      };
      if (le32(1) == wire::magic && le32(5) != wire::version)
        why = "the client speaks protocol version " + std::to_string(le32(5)) + ", the server version " +
              std::to_string(wire::version);
    }
    log_line(id_, "error: protocol: " + why + "; closing the connection");
    resp = error_reply(wire::error_code::protocol, "protocol error: " + why);
    close = true;
  } catch (const transaction_failure& e) {
    resp = error_reply(e.code, e.text);
  } catch (const auth_failure& e) {
    log_line(id_, std::string("error: ") + e.what() + "; closing the connection");
    resp = error_reply(wire::error_code::auth, e.what());
    close = true;
  } catch (const replica_refusal& e) {
    resp = error_reply(wire::error_code::not_master, e.what());
    close = true;
  } catch (const connection_lost& e) {
    // A replica's databases are being rolled back or initialised: the
    // server opens them again; the client's next transaction connects
    // again.
    log_line(id_, std::string("error: ") + e.what() + "; closing the connection");
    resp = error_reply(wire::error_code::closed, e.what());
    close = true;
  } catch (const std::exception& e) {
    wire::error_code code = wire::error_code::store;
    if (dynamic_cast<const conflict*>(&e)) code = wire::error_code::conflict;
    else if (dynamic_cast<const invalid_argument*>(&e)) code = wire::error_code::invalid;
    else if (dynamic_cast<const corrupt_page*>(&e)) code = wire::error_code::corrupt;
    else if (dynamic_cast<const commit_unknown*>(&e)) code = wire::error_code::unacknowledged;
    std::string text = e.what();
    if (state_ == state::txn && code != wire::error_code::invalid) {
      // The transaction cannot commit: its write transaction is aborted
      // now, so that its locks go to the others; its reads go on.
      txn_.fail_request(code, text);
    } else {
      log_line(id_, "error: " + text);
    }
    resp = error_reply(code, text);
  }
  wire::encode(resp, out);
  entries_ = {};  // a scan's entries are in `out` now
  if (out.body_size() > wire::max_message) {
    // A scan that does not fit: say so instead.
    out = wire::writer();
    wire::encode(error_reply(wire::error_code::store, "the answer exceeds the protocol's message limit"), out);
  }
}

void session::refuse(std::span<const std::byte> first, const std::string& why, wire::writer& out) {
  const bool in_txn = state_ == state::txn;
  log_line(id_, "error: " + why + (in_txn ? "; the transaction will abort" : ""));
  if (in_txn) txn_.fail(wire::error_code::store, why);
  // A commit ends the transaction either way.
  if (!first.empty() && first[0] == static_cast<std::byte>(wire::msg::commit)) {
    txn_.abort();
    state_ = state::idle;
  }
  wire::encode(error_reply(wire::error_code::store, in_txn ? "the transaction failed: " + why : why), out);
}

wire::response session::dispatch(const wire::request& r) {
  if (state_ == state::hello) {
    const auto* h = std::get_if<wire::hello_request>(&r);
    if (!h) throw wire::protocol_error(std::string("expected hello, got ") + wire::name_of(wire::tag_of(r)));
    return hello(*h);
  }
  if (c_.replica) {
    // A replica takes no writes: its clients read (options::read_replica).
    const wire::msg type = wire::tag_of(r);
    const auto* commit = std::get_if<wire::commit_request>(&r);
    if (type == wire::msg::write || type == wire::msg::allocate || type == wire::msg::index_insert ||
        type == wire::msg::index_erase || type == wire::msg::backup || type == wire::msg::outcome ||
        (commit && (!commit->pages.empty() || !commit->metas.empty())))
      throw invalid_argument(std::string("this site is a replica of a replication group: it takes no ") +
                             wire::name_of(type) + " (a database opened with options::read_replica only reads)");
  }
  return std::visit([this](const auto& m) { return on(m); }, r);
}

DbTxn* session::reader(std::optional<std::uint64_t> page) const {
  if (state_ != state::txn) return nullptr;
  return page ? txn_.reader_of(*page) : txn_.snapshot();
}

void session::require_txn(wire::msg type) const {
  if (state_ != state::txn) throw wire::protocol_error(std::string(wire::name_of(type)) + " outside a transaction");
}

bool session::index_in_txn() const {
  // Index calls of a failed transaction get its error; inside a
  // transaction they run in its write transaction (reads too, once it has
  // one: they see its own updates).
  if (state_ != state::txn) return false;
  txn_.throw_if_failed();
  return true;
}

wire::response session::hello(const wire::hello_request& h) {
  if (h.magic != wire::magic) throw wire::protocol_error("hello with a bad magic number");
  if (h.version != wire::version)
    throw wire::protocol_error("the client speaks protocol version " + std::to_string(h.version) +
                               ", the server version " + std::to_string(wire::version));
  if (c_.need_secret && h.secret.empty())
    throw auth_failure(
        "authentication failed: the server needs a shared secret and the client gave none (set "
        "qs::options::server_secret or QS_SECRET)");
  if (c_.need_secret && !same_secret(h.secret, c_.secret))
    throw auth_failure("authentication failed: wrong shared secret");
  if (c_.replica && !h.read_replica) throw replica_refusal(c_.replica_refusal);
  state_ = state::idle;
  return wire::hello_ok_response{wire::version};
}

wire::response session::on(const wire::hello_request&) { throw wire::protocol_error("a second hello"); }

wire::response session::on(const wire::begin_request& m) {
  if (state_ != state::idle) throw wire::protocol_error("begin inside a transaction");
  std::uint64_t lag_ms = 0;
  if (c_.replica) {
    // How stale what it reads may be: the age of the newest commit the
    // replica holds (or of the outcome window, when it holds none). Read
    // first, outside the transaction, whose gate would hold up the apply
    // meanwhile: an upper bound of the staleness of what it then reads.
    const std::uint64_t newest = c_.txn.outcomes->newest_commit_ns(nullptr);
    const std::uint64_t now = commit_outcomes::now();
    lag_ms = newest ? (now > newest ? (now - newest) / 1000000 : 0) : c_.outcome_window_ms;
  }
  // Before the snapshot is taken (at its first read): a commit counted
  // after this may be missing from it (note_sent).
  view_ = c_.txn.directory->commits();
  if (auto refused = txn_.begin(m.reserve, m.reserve_read)) return error_reply(refused->code, refused->text);
  state_ = state::txn;
  wire::begun_response b{txn_.id()};
  b.replica_lag_ms = lag_ms;
  return b;
}

wire::response session::on(const wire::abort_request&) {
  if (state_ == state::txn) c_.txn.counters->add(c_.txn.counters->aborts);
  txn_.abort();
  state_ = state::idle;
  return wire::ok_response{};
}

wire::response session::on(const wire::write_request& m) {
  require_txn(wire::msg::write);
  txn_.write_ahead(m);
  return wire::ok_response{};
}

wire::response session::on(const wire::commit_request& m) {
  require_txn(wire::msg::commit);
  // The commit ends the transaction, whatever its outcome, unless
  // invalidations crossed it (optimistic_transaction.hpp).
  state_ = state::idle;
  if (auto refused = txn_.commit(m)) {
    if (refused->code == wire::error_code::crossed) state_ = state::txn;
    return error_reply(refused->code, refused->text);
  }
  return wire::ok_response{};
}

void session::note_sent(std::uint64_t page, std::uint64_t version) {
  // A replica pushes no invalidations: its clients keep no page across
  // transactions.
  if (c_.replica) return;
  if (state_ == state::txn && txn_.sent_ahead(page)) return;  // not committed: the client has it pending
  cache_directory& d = *c_.txn.directory;
  d.note_sent(id_, page, version);
  if (d.commits() == view_) return;
  // A commit since the view began may have changed the page after its
  // pushes were sent (cache_directory.hpp): compare with the committed
  // version, read from a snapshot of its own (which waits for no lock).
  DbTxn* now = env_.begin(detail::bdb_env::txn_kind::snapshot);
  detail::record_header h{};
  std::uint32_t n;
  try {
    n = env_.read_record(now, page, &h, sizeof h, 0, true);
  } catch (...) {
    env_.abort(now);
    throw;
  }
  env_.abort(now);
  std::uint64_t current = n == sizeof h ? h.version : wire::no_record;
  if (current != version) d.correct(id_, page, current);
}

wire::response session::on(const wire::read_page_request& m) {
  // A page this transaction sent ahead is read as it wrote it.
  if (state_ != state::txn) view_ = c_.txn.directory->commits();
  DbTxn* rt = reader(m.page);
  if (m.known_version) {
    detail::record_header h{};
    std::uint32_t n = env_.read_record(rt, m.page, &h, sizeof h, 0, true);
    if (n == 0) return wire::page_response{wire::page_status::absent, {}, {}};
    if (n == sizeof h && h.version == *m.known_version) {
      note_sent(m.page, h.version);
      c_.reads->add(c_.reads->unchanged);
      return wire::page_response{wire::page_status::unchanged, {}, {}};
    }
  }
  scratch_.resize(wire::max_record);
  std::uint32_t n = env_.read_record(rt, m.page, scratch_.data(), wire::max_record, 0);
  if (n == 0) return wire::page_response{wire::page_status::absent, {}, {}};
  // The page's mapping object comes with it: the client's fault needs both.
  detail::record_header h{};
  if (n >= sizeof h) std::memcpy(&h, scratch_.data(), sizeof h);
  mapping_.clear();
  if (h.mapping_entries)
    if (auto mo = env_.read_mapping(rt, m.page)) mapping_ = std::move(*mo);
  if (n >= sizeof h) note_sent(m.page, h.version);
  c_.reads->add(c_.reads->pages);
  return wire::page_response{wire::page_status::record,
                             std::string_view(reinterpret_cast<const char*>(scratch_.data()), n), mapping_};
}

wire::response session::on(const wire::read_pages_request& m) {
  // Each record is read as read_page reads it; the answer ends where the
  // budget does (the client reads what is left out when it needs it). What
  // is read goes out in parts of part_bytes: the client takes in one part's
  // pages while the next is read.
  struct placed {
    std::uint64_t page;
    std::size_t at;
    std::uint32_t record, mapping;
  };
  std::vector<placed> found;                // in the part being read
  std::unordered_set<std::uint64_t> taken;  // every page answered (a page asked twice is sent once)
  taken.reserve(m.pages.size());
  auto answer = [&](bool more) {
    c_.reads->add(c_.reads->parts);
    c_.reads->add(c_.reads->prefetched, found.size());
    if (!more) c_.reads->add(c_.reads->answers);
    wire::records_response resp;
    resp.more = more;
    resp.records.reserve(found.size());
    for (const placed& p : found) {
      std::string_view at(batch_.data() + p.at, std::size_t{p.record} + p.mapping);
      resp.records.push_back({p.page, at.substr(0, p.record), at.substr(p.record)});
    }
    return resp;
  };
  if (state_ != state::txn) view_ = c_.txn.directory->commits();
  batch_.clear();
  std::size_t total = 0;
  scratch_.resize(wire::max_record);
  for (std::size_t i = 0; i < m.pages.size(); ++i) {
    const std::uint64_t page = m.pages[i];
    if (total + batch_.size() >= wire::batch_bytes) break;
    if (taken.count(page) != 0) continue;
    DbTxn* rt = reader(page);
    std::uint32_t n = 0;
    try {
      n = env_.read_record(rt, page, scratch_.data(), wire::max_record, 0);
    } catch (const corrupt_page&) {
      continue;  // a prefetch is a guess: the fault on this page reads it alone and says what is wrong
    }
    if (n == 0) continue;
    detail::record_header h{};
    if (n >= sizeof h) std::memcpy(&h, scratch_.data(), sizeof h);
    std::optional<std::string> mo;
    if (n >= sizeof h && h.mapping_entries) mo = env_.read_mapping(rt, page);
    const std::uint32_t mn = mo ? static_cast<std::uint32_t>(mo->size()) : 0;
    // Counted twice: gathered here, encoded. What the server's buffer
    // budget cannot hold now is left out, not refused: a prefetch is a guess.
    if (c_.charge) {
      try {
        c_.charge(2 * (std::size_t{n} + mn + 24));
      } catch (const store_error&) {
        break;
      }
    }
    if (n >= sizeof h) note_sent(page, h.version);
    found.push_back({page, batch_.size(), n, mn});
    taken.insert(page);
    batch_.append(reinterpret_cast<const char*>(scratch_.data()), n);
    if (mo) batch_.append(*mo);
    if (c_.send_part && batch_.size() >= wire::part_bytes && i + 1 < m.pages.size()) {
      part_.clear();
      wire::encode(answer(true), part_);
      c_.send_part(part_.finish());
      total += batch_.size();
      found.clear();
      batch_.clear();
    }
  }
  return answer(false);
}

wire::response session::on(const wire::get_request& m) {
  DbTxn* t = reader();
  auto v = env_.get(t, m.key);
  if (t) txn_.note_read(m.key, v);
  if (!v) return wire::value_response{};
  text_ = std::move(*v);
  return wire::value_response{text_};
}

wire::response session::on(const wire::scan_request& m) {
  DbTxn* t = reader();
  entries_.clear();
  // Counted three times: gathered, copied here, encoded.
  std::function<void(std::size_t)> admit;
  if (c_.charge) admit = [&](std::size_t n) { c_.charge(3 * (n + 8)); };
  env_.scan(
      t, m.prefix, [&](std::string_view k, std::string_view v) { entries_.emplace_back(k, v); }, 0, admit);
  if (t) txn_.note_scan(m.prefix, entries_);
  wire::entries_response resp;
  for (auto& [k, v] : entries_) resp.entries.emplace_back(k, v);
  return resp;
}

wire::response session::on(const wire::allocate_request& m) {
  // The counters are in metadata that a transaction writing in bulk may be
  // writing too: Berkeley DB allows no other writer of its files meanwhile
  // (optimistic_transaction.hpp).
  std::shared_lock<std::shared_mutex> gate(*c_.txn.commit_gate, std::defer_lock);
  if (!txn_.writes_in_bulk()) gate.lock();
  page_range pr = c_.numbers->take(m.n);
  return wire::pages_response{pr.page, pr.frame};
}

wire::response session::on(const wire::open_index_request& m) {
  // Index handles are shared by all sessions: opened (created) outside any
  // client's transaction.
  return wire::index_response{env_.open_index(nullptr, std::string(m.name), m.unique)};
}

wire::response session::on(const wire::index_insert_request& m) {
  if (index_in_txn()) return wire::flag_response{txn_.index_insert(m.index, m.key, m.value)};
  return wire::flag_response{env_.index_insert(nullptr, m.index, m.key, m.value)};
}

wire::response session::on(const wire::index_erase_request& m) {
  if (index_in_txn()) return wire::flag_response{txn_.index_erase(m.index, m.key, m.value_prefix)};
  return wire::flag_response{env_.index_erase(nullptr, m.index, m.key, m.value_prefix)};
}

wire::response session::on(const wire::index_scan_request& m) {
  entries_.clear();
  std::size_t limit = m.limit ? m.limit : 4096, bytes = 0;
  bool more = false;
  auto take = [&](std::string_view k, std::string_view v) {
    if (m.after && (k < m.after->first || (k == m.after->first && v <= m.after->second)))
      return true;  // up to where the last batch ended
    if (entries_.size() >= limit || bytes > wire::max_message / 4) {
      more = true;
      return false;
    }
    bytes += k.size() + v.size() + 8;
    if (c_.charge) c_.charge(2 * (k.size() + v.size() + 8));  // copied here, encoded
    entries_.emplace_back(k, v);
    return true;
  };
  if (index_in_txn()) txn_.scan_view(m.index, m.lo, m.hi, take);
  else env_.index_scan(nullptr, m.index, m.lo, m.hi, take);
  wire::entries_response resp;
  resp.more = more;
  for (auto& [k, v] : entries_) resp.entries.emplace_back(k, v);
  return resp;
}

wire::response session::on(const wire::log_position_request&) { return wire::position_response{env_.log_position()}; }

wire::response session::on(const wire::outcome_request& m) {
  if (state_ != state::idle) throw wire::protocol_error("outcome inside a transaction");
  wire::commit_outcome o = c_.txn.outcomes->outcome(m.id);
  static constexpr const char* names[] = {"", "committed", "aborted", "pending", "expired"};
  if (o != wire::commit_outcome::pending)
    log_line(id_, std::string("outcome of a commit: ") + names[static_cast<int>(o)]);
  return wire::verdict_response{o};
}

wire::response session::on(const wire::backup_request& m) {
  if (state_ != state::idle) throw wire::protocol_error("backup inside a transaction");
  if (c_.backup_dir.empty())
    throw invalid_argument("this server makes no backups: start it with --backup-dir DIR (backups go into DIR/NAME)");
  const std::string name(m.name);
  bool plain = name.front() != '.';
  for (char ch : name)
    plain = plain && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.');
  if (!plain)
    throw invalid_argument(
        "a backup's name is a directory under the server's --backup-dir: letters, digits, '-', "
        "'_' and '.', not first; not '" +
        name + "'");
  const std::string target = c_.backup_dir + "/" + name;
  const auto t0 = std::chrono::steady_clock::now();
  env_.backup(target);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  log_line(id_, "hot backup into " + target + " in " + std::to_string(took.count()) + " s");
  return wire::ok_response{};
}

wire::response session::on(const wire::ping_request& m) {
  text_.assign(m.reply_bytes, 'p');
  return wire::pong_response{text_};
}

}  // namespace qs::server
