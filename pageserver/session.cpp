// One client connection's protocol state and Berkeley DB transaction
// (session.hpp).
#include "session.hpp"

#include "log.hpp"

#include <keys.hpp>
#include <page_record.hpp>
#include <qs/error.hpp>
#include <qs/pause_point.hpp>

#include <db_cxx.h>

#include <cstring>

namespace qs::server {
namespace {

class auth_failure : public qs::error {
 public:
  using qs::error::error;
};

bool same_secret(std::string_view a, std::string_view b) {
  // Takes as long whatever the first difference.
  unsigned d = a.size() != b.size();
  std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    d |= static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^ static_cast<unsigned char>(i < b.size() ? b[i] : 0);
  return d == 0;
}

}  // namespace

session::session(const session_config& c, std::uint64_t id) : c_(c), id_(id) {}

session::~session() { abort_quietly(); }

void session::abort_quietly() {
  locks_.clear();
  if (!txn_) return;
  DbTxn* t = txn_;
  txn_ = nullptr;
  try {
    c_.env->abort(t);
  } catch (const std::exception& e) {
    log_line(id_, std::string("error: abort failed: ") + e.what());
  }
}

std::uint32_t session::page_size() {
  if (page_size_ == 0) {
    if (auto v = c_.env->get(nullptr, "page_size")) {
      unsigned long n = std::strtoul(v->c_str(), nullptr, 10);
      if (n >= 4096 && n <= 65536 && (n & (n - 1)) == 0) page_size_ = static_cast<std::uint32_t>(n);
    }
  }
  return page_size_;
}

void session::lock_object(const std::string& object, bool exclusive) {
  auto it = locks_.find(object);
  if (it != locks_.end() && (it->second || !exclusive)) return;
  Dbt obj(const_cast<char*>(object.data()), static_cast<std::uint32_t>(object.size()));
  DbLock lock;
  int rc = c_.env->env()->lock_get(txn_->id(), 0, &obj, exclusive ? DB_LOCK_WRITE : DB_LOCK_READ, &lock);
  c_.env->check(rc, std::string(exclusive ? "exclusive" : "shared") + " lock on " +
                        (object.starts_with("qs:p") ? "page " + std::to_string(detail::from_be64(object.substr(4)))
                                                    : "metadata " + object.substr(4)));
  locks_[object] = exclusive;
}

void session::lock_page(std::uint64_t page, bool exclusive) { lock_object("qs:p" + detail::be64(page), exclusive); }

void session::lock_meta(std::string_view key, bool exclusive) {
  if (key.starts_with("s:")) return;
  lock_object("qs:m" + std::string(key.starts_with("t:") ? std::string_view("t:") : key), exclusive);
}

void session::apply(const std::vector<wire::page_op>& pages, const std::vector<wire::meta_op>& metas, bool commit) {
  std::uint32_t ps = page_size();
  std::uint64_t record = ps ? sizeof(detail::record_header) + ps : wire::max_record;
  // Every lock first, then the writes: while this transaction holds B-tree
  // write locks it waits only for other transactions' writes (commits,
  // page-number allocations), never for a client that is computing; the
  // server's allocation mutex could otherwise close a cycle the deadlock
  // detector cannot see.
  for (const wire::page_op& op : pages) lock_page(op.page, true);
  for (const wire::meta_op& op : metas) lock_meta(op.key, true);
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const wire::page_op& op = pages[i];
    if (commit && i == pages.size() / 2) pause_point("server.commit.half_applied");
    switch (op.kind) {
      case wire::page_op_kind::put:
        if (op.record.size() != record && !(ps == 0 && op.record.size() > sizeof(detail::record_header)))
          throw wire::protocol_error("a record of " + std::to_string(op.record.size()) + " bytes for page " +
                                     std::to_string(op.page) + ", whose records have " + std::to_string(record));
        c_.env->put_record(txn_, op.page, op.record.data(), static_cast<std::uint32_t>(op.record.size()));
        break;
      case wire::page_op_kind::patch:
        for (const wire::part& p : op.parts) {
          if (p.offset + p.data.size() > record)
            throw wire::protocol_error("a patch of page " + std::to_string(op.page) + " past the end of its record");
          c_.env->put_record_part(txn_, op.page, p.offset, p.data.data(), static_cast<std::uint32_t>(p.data.size()));
        }
        break;
      case wire::page_op_kind::remove:
        c_.env->delete_record(txn_, op.page);  // and its mapping object
        break;
    }
    if (op.mapping_op == wire::mapping_change::set) c_.env->put_mapping(txn_, op.page, op.mapping);
    else if (op.mapping_op == wire::mapping_change::remove) c_.env->put_mapping(txn_, op.page, {});
  }
  // Whether the database existed before this write (its creation writes
  // the records the server owns afterwards).
  bool exists = !metas.empty() && c_.env->get(txn_, "page_size").has_value();
  for (const wire::meta_op& op : metas) {
    check_meta(op, exists);
    if (op.kind == wire::meta_op_kind::put) c_.env->put(txn_, op.key, op.value);
    else c_.env->del(txn_, op.key);
  }
}

void session::check_meta(const wire::meta_op& op, bool exists) {
  std::string key(op.key);
  static constexpr std::string_view owned[] = {"format", "page_size", "base", "reservation", "next_page", "next_frame"};
  bool is_owned = false;
  for (std::string_view k : owned) is_owned = is_owned || key == k;
  if (!is_owned) {
    if (key.starts_with("t:") || key.starts_with("r:") || key.starts_with("s:")) return;
    throw wire::protocol_error("a write of metadata record '" + key.substr(0, 64) + "', which no client writes");
  }
  // The database's own records: written once, by the client that creates
  // it; then the server's (it hands out page and frame numbers itself).
  if (exists)
    throw wire::protocol_error("a write of metadata record '" + key +
                               "', which the server owns once the database exists");
  if (op.kind != wire::meta_op_kind::put)
    throw wire::protocol_error("a removal of metadata record '" + key + "' while creating the database");
  std::string v(op.value);
  bool ok = !v.empty() && v.size() <= 20 && v.find_first_not_of("0123456789") == std::string::npos;
  if (key == "format") ok = v == "qs 4" || v == "qs 4 software";
  else if (key == "next_page") ok = v == "1";
  else if (key == "next_frame") ok = v == "0";
  else if (ok && key == "page_size") {
    unsigned long ps = std::stoul(v);
    ok = ps >= 4096 && ps <= 65536 && (ps & (ps - 1)) == 0;
  }
  if (!ok) throw wire::protocol_error("metadata record '" + key + "' created as '" + v.substr(0, 40) + "'");
}

void session::end_transaction(bool commit, bool durable) {
  DbTxn* t = txn_;
  txn_ = nullptr;
  state_ = state::idle;
  locks_.clear();
  if (commit) c_.env->commit(t, durable);
  else c_.env->abort(t);
}

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
    resp = dispatch(wire::parse_request(body));
  } catch (const wire::protocol_error& e) {
    log_line(id_, std::string("error: protocol: ") + e.what() + "; closing the connection");
    resp = error_reply(wire::error_code::protocol, std::string("protocol error: ") + e.what());
    close = true;
  } catch (const auth_failure& e) {
    log_line(id_, std::string("error: ") + e.what() + "; closing the connection");
    resp = error_reply(wire::error_code::auth, e.what());
    close = true;
  } catch (const std::exception& e) {
    wire::error_code code = wire::error_code::store;
    if (dynamic_cast<const deadlock*>(&e)) code = wire::error_code::deadlock;
    else if (dynamic_cast<const invalid_argument*>(&e)) code = wire::error_code::invalid;
    else if (dynamic_cast<const corrupt_page*>(&e)) code = wire::error_code::corrupt;
    std::string text = e.what();
    if (state_ == state::txn && code != wire::error_code::invalid) {
      // The transaction cannot go on: abort it now, so that its locks go to
      // the others, and refuse its requests until the client aborts too.
      abort_quietly();
      state_ = state::doomed;
      doomed_code_ = code;
      doomed_text_ = "the transaction was aborted: " + text;
      log_line(id_, "error: " + text + "; transaction aborted");
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
  std::string text = why;
  const bool aborted = state_ == state::txn;
  if (aborted) {
    abort_quietly();
    state_ = state::doomed;
    doomed_code_ = wire::error_code::store;
    doomed_text_ = text = "the transaction was aborted: " + why;
  }
  log_line(id_, "error: " + why + (aborted ? "; transaction aborted" : ""));
  // A commit ends the transaction either way.
  if (!first.empty() && first[0] == static_cast<std::byte>(wire::msg::commit)) state_ = state::idle;
  wire::encode(error_reply(wire::error_code::store, text), out);
}

namespace {

// One callable from a lambda per message type.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

}  // namespace

wire::response session::dispatch(const wire::request& r) {
  using wire::msg;
  const msg type = wire::tag_of(r);
  if (state_ == state::hello) {
    const auto* h = std::get_if<wire::hello_request>(&r);
    if (!h) throw wire::protocol_error(std::string("expected hello, got ") + wire::name_of(type));
    if (h->magic != wire::magic) throw wire::protocol_error("hello with a bad magic number");
    if (h->version != wire::version)
      throw wire::protocol_error("the client speaks protocol version " + std::to_string(h->version) +
                                 ", the server version " + std::to_string(wire::version));
    if (c_.need_secret && h->secret.empty())
      throw auth_failure(
          "authentication failed: the server needs a shared secret and the client gave none (set "
          "qs::options::server_secret or QS_SECRET)");
    if (c_.need_secret && !same_secret(h->secret, c_.secret))
      throw auth_failure("authentication failed: wrong shared secret");
    state_ = state::idle;
    return wire::hello_ok_response{wire::version};
  }
  if (type == msg::hello) throw wire::protocol_error("a second hello");
  if (state_ == state::doomed && type != msg::abort && type != msg::ping) {
    if (type == msg::commit) state_ = state::idle;  // a commit ends the transaction either way
    return error_reply(doomed_code_, doomed_text_);
  }
  const bool in_txn = state_ == state::txn;
  DbTxn* t = in_txn ? txn_ : nullptr;
  // Reads in a transaction are read-committed (see session.hpp).
  const std::uint32_t read_flags = t ? DB_READ_COMMITTED : 0;
  auto require_txn = [&] {
    if (!in_txn) throw wire::protocol_error(std::string(wire::name_of(type)) + " outside a transaction");
  };
  return std::visit(
      overloaded{
          [&](const wire::hello_request&) -> wire::response { throw wire::protocol_error("a second hello"); },
          [&](const wire::begin_request&) -> wire::response {
            if (state_ != state::idle) throw wire::protocol_error("begin inside a transaction");
            txn_ = c_.env->begin();
            locks_.clear();
            try {
              commit_id_ = c_.outcomes->claim(txn_);
            } catch (...) {
              abort_quietly();
              throw;
            }
            state_ = state::txn;
            return wire::begun_response{commit_id_};
          },
          [&](const wire::abort_request&) -> wire::response {
            if (state_ == state::txn) end_transaction(false, false);
            abort_quietly();
            state_ = state::idle;
            return wire::ok_response{};
          },
          [&](const wire::write_request& m) -> wire::response {
            require_txn();
            apply(m.pages, m.metas, false);
            return wire::ok_response{};
          },
          [&](const wire::commit_request& m) -> wire::response {
            require_txn();
            try {
              apply(m.pages, m.metas, true);
              c_.outcomes->record(txn_, commit_id_);
              pause_point("server.commit.before_commit");
            } catch (...) {
              abort_quietly();
              state_ = state::idle;
              throw;
            }
            end_transaction(true, m.durable);
            pause_point("server.commit.after_commit");  // committed; the client not told yet
            c_.outcomes->committed();
            return wire::ok_response{};
          },
          [&](const wire::read_page_request& m) -> wire::response {
            if (t) lock_page(m.page, false);
            if (m.known_version) {
              detail::record_header h{};
              std::uint32_t n = c_.env->read_record(t, m.page, &h, sizeof h, read_flags, true);
              if (n == 0) return wire::page_response{wire::page_status::absent, {}, {}};
              if (n == sizeof h && h.version == *m.known_version)
                return wire::page_response{wire::page_status::unchanged, {}, {}};
            }
            scratch_.resize(wire::max_record);
            std::uint32_t n = c_.env->read_record(t, m.page, scratch_.data(), wire::max_record, read_flags);
            if (n == 0) return wire::page_response{wire::page_status::absent, {}, {}};
            // The page's mapping object comes with it: the client's fault needs both.
            detail::record_header h{};
            if (n >= sizeof h) std::memcpy(&h, scratch_.data(), sizeof h);
            mapping_.clear();
            if (h.mapping_entries)
              if (auto mo = c_.env->read_mapping(t, m.page, read_flags)) mapping_ = std::move(*mo);
            return wire::page_response{wire::page_status::record,
                                       std::string_view(reinterpret_cast<const char*>(scratch_.data()), n), mapping_};
          },
          [&](const wire::lock_write_request& m) -> wire::response {
            require_txn();
            lock_page(m.page, true);
            return wire::ok_response{};
          },
          [&](const wire::get_request& m) -> wire::response {
            if (t) lock_meta(m.key, false);
            auto v = c_.env->get(t, m.key, read_flags);
            if (!v) return wire::value_response{};
            text_ = std::move(*v);
            return wire::value_response{text_};
          },
          [&](const wire::scan_request& m) -> wire::response {
            if (t && m.prefix.starts_with("t:")) lock_meta(m.prefix, false);
            entries_.clear();
            // Counted three times: gathered, copied here, encoded.
            std::function<void(std::size_t)> admit;
            if (c_.charge) admit = [&](std::size_t n) { c_.charge(3 * (n + 8)); };
            c_.env->scan(
                t, m.prefix, [&](std::string_view k, std::string_view v) { entries_.emplace_back(k, v); }, read_flags,
                admit);
            wire::entries_response resp;
            for (auto& [k, v] : entries_) resp.entries.emplace_back(k, v);
            return resp;
          },
          [&](const wire::allocate_request& m) -> wire::response {
            page_range pr = c_.numbers->take(m.n);
            return wire::pages_response{pr.page, pr.frame};
          },
          [&](const wire::open_index_request& m) -> wire::response {
            // Index handles are shared by all sessions: opened (created)
            // outside any client's transaction.
            return wire::index_response{c_.env->open_index(nullptr, std::string(m.name), m.unique)};
          },
          [&](const wire::index_insert_request& m) -> wire::response {
            return wire::flag_response{c_.env->index_insert(t, m.index, m.key, m.value)};
          },
          [&](const wire::index_erase_request& m) -> wire::response {
            return wire::flag_response{c_.env->index_erase(t, m.index, m.key, m.value_prefix)};
          },
          [&](const wire::index_scan_request& m) -> wire::response {
            entries_.clear();
            std::size_t limit = m.limit ? m.limit : 4096, bytes = 0;
            bool more = false;
            c_.env->index_scan(t, m.index, m.lo, m.hi, [&](std::string_view k, std::string_view v) {
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
            });
            wire::entries_response resp;
            resp.more = more;
            for (auto& [k, v] : entries_) resp.entries.emplace_back(k, v);
            return resp;
          },
          [&](const wire::log_position_request&) -> wire::response {
            return wire::position_response{c_.env->log_position()};
          },
          [&](const wire::outcome_request& m) -> wire::response {
            if (state_ != state::idle) throw wire::protocol_error("outcome inside a transaction");
            wire::commit_outcome o = c_.outcomes->outcome(m.id);
            static constexpr const char* names[] = {"", "committed", "aborted", "pending", "expired"};
            if (o != wire::commit_outcome::pending)
              log_line(id_, std::string("outcome of a commit: ") + names[static_cast<int>(o)]);
            return wire::verdict_response{o};
          },
          [&](const wire::ping_request& m) -> wire::response {
            text_.assign(m.reply_bytes, 'p');
            return wire::pong_response{text_};
          },
      },
      r);
}

}  // namespace qs::server
