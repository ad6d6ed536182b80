// One client connection's protocol state and Berkeley DB transaction
// (session.hpp).
#include "session.hpp"

#include "log.hpp"

#include <keys.hpp>
#include <page_format.hpp>
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
  if (key.starts_with("m:") || key.starts_with("s:")) return;
  lock_object("qs:m" + std::string(key.starts_with("t:") ? std::string_view("t:") : key), exclusive);
}

void session::apply(const wire::request& r) {
  std::uint32_t ps = page_size();
  std::uint64_t record = ps ? sizeof(detail::record_header) + ps : wire::max_record;
  // Every lock first, then the writes: while this transaction holds B-tree
  // write locks it waits only for other transactions' writes (commits,
  // page-number allocations), never for a client that is computing; the
  // server's allocation mutex could otherwise close a cycle the deadlock
  // detector cannot see.
  for (const wire::page_op& op : r.pages) lock_page(op.page, true);
  for (const wire::meta_op& op : r.metas) lock_meta(op.key, true);
  for (std::size_t i = 0; i < r.pages.size(); ++i) {
    const wire::page_op& op = r.pages[i];
    if (r.type == wire::msg::commit && i == r.pages.size() / 2) pause_point("server.commit.half_applied");
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
        c_.env->delete_record(txn_, op.page);
        break;
    }
  }
  for (const wire::meta_op& op : r.metas) {
    if (op.kind == wire::meta_op_kind::put) c_.env->put(txn_, op.key, op.value);
    else c_.env->del(txn_, op.key);
  }
}

void session::end_transaction(bool commit, bool durable) {
  DbTxn* t = txn_;
  txn_ = nullptr;
  state_ = state::idle;
  locks_.clear();
  if (commit) c_.env->commit(t, durable);
  else c_.env->abort(t);
}

void session::handle(std::span<const std::byte> body, wire::writer& out, bool& close) {
  wire::response resp;
  close = false;
  try {
    wire::request r = wire::parse_request(body);
    dispatch(r, resp);
  } catch (const wire::protocol_error& e) {
    log_line(id_, std::string("error: protocol: ") + e.what() + "; closing the connection");
    resp = {};
    resp.type = wire::msg::error;
    resp.code = wire::error_code::protocol;
    text_ = std::string("protocol error: ") + e.what();
    resp.text = text_;
    close = true;
  } catch (const auth_failure& e) {
    log_line(id_, std::string("error: ") + e.what() + "; closing the connection");
    resp = {};
    resp.type = wire::msg::error;
    resp.code = wire::error_code::auth;
    text_ = e.what();
    resp.text = text_;
    close = true;
  } catch (const std::exception& e) {
    wire::error_code code = wire::error_code::store;
    if (dynamic_cast<const deadlock*>(&e)) code = wire::error_code::deadlock;
    else if (dynamic_cast<const invalid_argument*>(&e)) code = wire::error_code::invalid;
    else if (dynamic_cast<const corrupt_page*>(&e)) code = wire::error_code::corrupt;
    text_ = e.what();
    if (state_ == state::txn && code != wire::error_code::invalid) {
      // The transaction cannot go on: abort it now, so that its locks go to
      // the others, and refuse its requests until the client aborts too.
      abort_quietly();
      state_ = state::doomed;
      doomed_code_ = code;
      doomed_text_ = "the transaction was aborted: " + text_;
      log_line(id_, "error: " + text_ + "; transaction aborted");
    } else {
      log_line(id_, "error: " + text_);
    }
    resp = {};
    resp.type = wire::msg::error;
    resp.code = code;
    resp.text = text_;
  }
  wire::encode(resp, out);
  if (out.body_size() > wire::max_message) {
    // A scan that does not fit: say so instead.
    out = wire::writer();
    wire::response e;
    e.type = wire::msg::error;
    e.code = wire::error_code::store;
    e.text = "the answer exceeds the protocol's message limit";
    wire::encode(e, out);
  }
}

void session::dispatch(const wire::request& r, wire::response& resp) {
  using wire::msg;
  resp.type = msg::ok;
  if (state_ == state::hello) {
    if (r.type != msg::hello) throw wire::protocol_error(std::string("expected hello, got ") + wire::name_of(r.type));
    if (r.magic != wire::magic) throw wire::protocol_error("hello with a bad magic number");
    if (r.version != wire::version)
      throw wire::protocol_error("the client speaks protocol version " + std::to_string(r.version) +
                                 ", the server version " + std::to_string(wire::version));
    if (c_.need_secret && !same_secret(r.secret, c_.secret))
      throw auth_failure("authentication failed: wrong shared secret");
    state_ = state::idle;
    resp.type = msg::hello_ok;
    resp.a = wire::version;
    return;
  }
  if (r.type == msg::hello) throw wire::protocol_error("a second hello");
  if (state_ == state::doomed && r.type != msg::abort && r.type != msg::ping) {
    if (r.type == msg::commit) state_ = state::idle;  // a commit ends the transaction either way
    resp.type = msg::error;
    resp.code = doomed_code_;
    resp.text = doomed_text_;
    return;
  }
  const bool in_txn = state_ == state::txn;
  DbTxn* t = in_txn ? txn_ : nullptr;
  auto require_txn = [&] {
    if (!in_txn) throw wire::protocol_error(std::string(wire::name_of(r.type)) + " outside a transaction");
  };
  switch (r.type) {
    case msg::begin:
      if (state_ != state::idle) throw wire::protocol_error("begin inside a transaction");
      txn_ = c_.env->begin();
      locks_.clear();
      state_ = state::txn;
      return;
    case msg::abort:
      if (state_ == state::txn) end_transaction(false, false);
      abort_quietly();
      state_ = state::idle;
      return;
    case msg::write:
      require_txn();
      apply(r);
      return;
    case msg::commit:
      require_txn();
      try {
        apply(r);
        pause_point("server.commit.before_commit");
      } catch (...) {
        abort_quietly();
        state_ = state::idle;
        throw;
      }
      end_transaction(true, r.flag);
      return;
    case msg::read_page: {
      if (t) lock_page(r.page, false);
      std::uint32_t flags = t ? DB_READ_COMMITTED : 0;
      resp.type = msg::page;
      if (r.flag) {
        detail::record_header h{};
        std::uint32_t n = c_.env->read_record(t, r.page, &h, sizeof h, flags, true);
        if (n == 0) {
          resp.status = wire::page_status::absent;
          return;
        }
        if (n == sizeof h && h.version == r.page_version) {
          resp.status = wire::page_status::unchanged;
          return;
        }
      }
      scratch_.resize(wire::max_record);
      std::uint32_t n = c_.env->read_record(t, r.page, scratch_.data(), wire::max_record, flags);
      resp.status = n ? wire::page_status::record : wire::page_status::absent;
      resp.text = std::string_view(reinterpret_cast<const char*>(scratch_.data()), n);
      // The page's mapping object comes with it: the client's fault needs both.
      detail::record_header h{};
      if (n >= sizeof h) std::memcpy(&h, scratch_.data(), sizeof h);
      mapping_.clear();
      if (h.mapping_entries)
        if (auto m = c_.env->get(t, detail::mapping_key(r.page), flags)) mapping_ = std::move(*m);
      resp.mapping = mapping_;
      return;
    }
    case msg::lock_write:
      require_txn();
      lock_page(r.page, true);
      return;
    case msg::get: {
      if (t) lock_meta(r.key, false);
      auto v = c_.env->get(t, r.key, t ? DB_READ_COMMITTED : 0);
      resp.type = msg::value;
      resp.flag = v.has_value();
      if (v) text_ = std::move(*v);
      resp.text = text_;
      return;
    }
    case msg::scan: {
      if (t && r.key.starts_with("t:")) lock_meta(r.key, false);
      entries_.clear();
      c_.env->scan(t, r.key, [&](std::string_view k, std::string_view v) { entries_.emplace_back(k, v); },
                   t ? DB_READ_COMMITTED : 0);
      resp.type = msg::entries;
      for (auto& [k, v] : entries_) resp.entries.emplace_back(k, v);
      return;
    }
    case msg::allocate: {
      page_range pr = c_.numbers->take(r.n);
      resp.type = msg::pages;
      resp.a = pr.page;
      resp.b = pr.frame;
      return;
    }
    case msg::open_index:
      // Index handles are shared by all sessions: opened (created) outside
      // any client's transaction.
      resp.type = msg::number;
      resp.a = c_.env->open_index(nullptr, std::string(r.name), r.flag);
      return;
    case msg::index_insert:
      resp.type = msg::flag;
      resp.flag = c_.env->index_insert(t, r.index, r.key, r.value);
      return;
    case msg::index_erase:
      resp.type = msg::flag;
      resp.flag = c_.env->index_erase(t, r.index, r.key, r.value);
      return;
    case msg::index_scan: {
      entries_.clear();
      std::size_t limit = r.limit ? r.limit : 4096, bytes = 0;
      bool more = false;
      c_.env->index_scan(t, r.index, r.lo, r.hi, [&](std::string_view k, std::string_view v) {
        if (r.flag && (k < r.key || (k == r.key && v <= r.value))) return true;  // up to where the last batch ended
        if (entries_.size() >= limit || bytes > wire::max_message / 4) {
          more = true;
          return false;
        }
        bytes += k.size() + v.size() + 8;
        entries_.emplace_back(k, v);
        return true;
      });
      resp.type = msg::entries;
      resp.flag = more;
      for (auto& [k, v] : entries_) resp.entries.emplace_back(k, v);
      return;
    }
    case msg::log_position:
      resp.type = msg::number;
      resp.a = c_.env->log_position();
      return;
    case msg::ping:
      resp.type = msg::pong;
      text_.assign(r.limit, 'p');
      resp.text = text_;
      return;
    default:
      throw wire::protocol_error(std::string("unexpected message ") + wire::name_of(r.type));
  }
}

}  // namespace qs::server
