// The client of qs-pageserver: a store whose transactions run on the server
// (remote_store.hpp).
#include "store/remote_store.hpp"

#include <qs/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

namespace qs::detail {
namespace {

constexpr std::string_view tcp_scheme = "qs://";
constexpr std::string_view unix_scheme = "qs+unix://";
// Buffered writes beyond this go to the server before the commit.
constexpr std::size_t flush_bytes = 8u << 20;
// And once the commit's write-back has begun, beyond this: the server
// applies each part while the next is made.
constexpr std::size_t commit_flush_bytes = 64u << 10;

// Why the server closed the connection, when it said so before closing (an
// error response with code `closed`, waiting to be read); empty otherwise.
std::string closing_words(wire::connection& c, std::vector<std::byte>& buf) {
  try {
    wire::receive_limits l;
    l.max = wire::max_message;
    l.deadline = wire::receive_limits::clock::now();  // only what has come already
    if (c.receive(buf, l) != wire::received::frame) return {};
    wire::response r = wire::parse_response(buf);
    if (const auto* e = std::get_if<wire::error_response>(&r); e && e->code == wire::error_code::closed)
      return std::string(e->text);
  } catch (const error&) {
  }
  return {};
}

}  // namespace

// The server undid the commit: invalidations crossed it (commit()).
class remote_store::crossed_commit : public store_error {
 public:
  using store_error::store_error;
};

bool is_remote_url(const std::string& path) { return path.starts_with(tcp_scheme) || path.starts_with(unix_scheme); }

std::unique_ptr<store> connect_remote_store(const std::string& url, const remote_options& o) {
  std::string secret = o.secret;
  if (secret.empty())
    if (const char* s = std::getenv("QS_SECRET")) secret = s;
  remote_options with_secret = o;
  with_secret.secret = secret;
  return std::make_unique<remote_store>(url, with_secret);
}

remote_store::remote_store(const std::string& url, const remote_options& o) : url_(url), options_(o) {
  if (url.starts_with(unix_scheme)) {
    unix_ = true;
    unix_path_ = url.substr(unix_scheme.size());
    if (unix_path_.empty() || unix_path_[0] != '/')
      throw invalid_argument("server " + url + ": expected qs+unix:///absolute/path/to/socket");
  } else {
    std::string rest = url.substr(tcp_scheme.size());
    for (std::size_t at = 0;;) {
      std::size_t comma = rest.find(',', at);
      std::string one = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      try {
        sites_.push_back(wire::parse_tcp_address(one));
      } catch (const error& e) {
        throw invalid_argument("server " + url + ": " + e.what() +
                               " (expected qs://host:port, or qs://host:port,host:port,... for the sites of a "
                               "replication group)");
      }
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  connect();
}

remote_store::~remote_store() {
  if (in_txn_) {
    try {
      abort();
    } catch (...) {
    }
  }
}

void remote_store::connect() {
  for (open_index_entry& i : indexes_) i.server.reset();  // numbers of an earlier connection's server
  // A new connection's server knows nothing this client caches: every
  // cached page is revalidated before its next use.
  held_.clear();
  drop_all_ = true;
  connected_again_ = true;
  seen_ = checked_seen_ = 0;
  if (!follows_master()) {
    connect_to(0);
    return;
  }
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(options_.reconnect_budget_ms);
  for (;;) {
    std::string said;
    for (std::size_t k = 0; k < sites_.size(); ++k) {
      const std::size_t i = (site_ + k) % sites_.size();
      try {
        connect_to(i);
        site_ = i;
        return;
      } catch (const connection_lost& e) {
        said += std::string(said.empty() ? "" : "; ") + e.what();
      }
    }
    if (clock::now() >= deadline)
      throw connection_lost("server " + url_ + ": no site was the master within " +
                            std::to_string(options_.reconnect_budget_ms) +
                            " ms (options::reconnect_budget_ms): " + said);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void remote_store::connect_to(std::size_t site) {
  const std::string where =
      sites_.size() > 1 ? " (site " + sites_[site].host + ":" + std::to_string(sites_[site].port) + ")" : "";
  try {
    int fd = unix_ ? wire::connect_unix(unix_path_) : wire::connect_tcp(sites_[site]);
    conn_ = std::make_unique<wire::connection>(fd);
    conn_->set_spin(std::chrono::microseconds(options_.wait_spin_us));
  } catch (const error& e) {
    throw connection_lost("server " + url_ + where + ": " + e.what());
  }
  // A site of a group that takes the connection but does not answer (a
  // stopped or hung process) is passed over for the next.
  struct answer_by_guard {
    std::optional<std::chrono::steady_clock::time_point>& by;
    ~answer_by_guard() { by.reset(); }
  } guard{answer_by_};
  if (sites_.size() > 1) answer_by_ = std::chrono::steady_clock::now() + group_hello_wait;
  const auto& ok = call<wire::hello_ok_response>(
      wire::hello_request{wire::magic, wire::version, options_.secret, options_.read_replica});
  if (ok.version != wire::version) {
    lost();
    throw store_error("server " + url_ + ": the server speaks protocol version " + std::to_string(ok.version) +
                      ", this client version " + std::to_string(wire::version));
  }
}

std::function<void()> remote_store::backup(const std::string& target, backup_progress) {
  return [url = url_, o = options_, target] {
    // Its own connection: this store's goes on serving its transactions.
    remote_store other(url, o);
    other.call<wire::ok_response>(wire::backup_request{target});
  };
}

void remote_store::lost() {
  conn_.reset();
  // Nor the rest of a read_pages answer, nor a write's answer, will come.
  if (stream_) stream_->open = false;
  write_unanswered_ = false;
}

[[noreturn]] void remote_store::raise(const wire::error_response& r, wire::msg request) {
  std::string msg = "server " + url_ + ": " + std::string(r.text);
  switch (r.code) {
    case wire::error_code::crossed:
      if (request == wire::msg::commit) throw crossed_commit(msg);
      throw store_error(msg + " (a crossed commit answered to " + wire::name_of(request) + ")");
    case wire::error_code::conflict:
      // Only a begin (reserving pages), a commit and the index calls may
      // meet a conflict: the others are reads and writes made from faults,
      // where it must not be raised (a replica's reads never wait for its
      // apply of the master's log: bdb_env.hpp, the replica gate).
      if (request == wire::msg::begin || request == wire::msg::commit || request == wire::msg::index_insert ||
          request == wire::msg::index_erase || request == wire::msg::index_scan)
        throw conflict(msg);
      throw store_error(msg + " (a conflict answered to " + wire::name_of(request) + ", which cannot have one)");
    case wire::error_code::invalid: throw invalid_argument(msg);
    case wire::error_code::corrupt: throw corrupt_page(0, msg);
    case wire::error_code::closed:
      lost();  // and the server has closed it
      throw connection_lost(msg);
    case wire::error_code::not_master:
      lost();  // the replica closes it
      throw connection_lost(msg);
    case wire::error_code::unacknowledged:
      if (request == wire::msg::commit) throw commit_unknown(msg);
      throw store_error(msg + " (an unacknowledged commit answered to " + wire::name_of(request) + ")");
    case wire::error_code::protocol:
    case wire::error_code::auth:
      lost();  // the server closes such connections
      throw store_error(msg);
    default: throw store_error(msg);
  }
}

wire::writer remote_store::prepare(const wire::request& r) {
  const wire::msg type = wire::tag_of(r);
  // The rest of a read_pages answer, and the answer to a write sent ahead,
  // come before this one's.
  if (stream_ && stream_->open) finish_stream();
  if (write_unanswered_) collect_write();
  if (!conn_) {
    if (in_txn_) throw connection_lost("server " + url_ + ": the connection was lost; the transaction is aborted");
    if (type != wire::msg::hello) connect();
  }

  overtaken_.clear();
  wire::writer w;
  wire::encode(r, w);
  if (w.body_size() > wire::max_message)
    throw store_error("server " + url_ + ": a " + wire::name_of(type) + " message of " + std::to_string(w.body_size()) +
                      " bytes exceeds the protocol's limit of " + std::to_string(wire::max_message));
  return w;
}

template <class Response>
const Response& remote_store::call(const wire::request& r) {
  wire::writer w = prepare(r);
  return answer<Response>(wire::tag_of(r), &w);
}

void remote_store::connection_failed(wire::msg type, const wire::io_error& e) {
  // A Unix socket the server has closed refuses the send; what the server
  // said before closing may be waiting.
  std::string why = closing_words(*conn_, in_);
  lost();
  if (!why.empty()) throw connection_lost("server " + url_ + ": " + why);
  throw connection_lost("server " + url_ + ": connection lost during " + wire::name_of(type) + " (" + e.what() + ")" +
                        (in_txn_ && type != wire::msg::commit ? "; the transaction is aborted" : ""));
}

void remote_store::receive_frame() {
  wire::receive_limits l;
  l.max = wire::max_message;
  if (answer_by_) l.deadline = *answer_by_;
  if (conn_->receive(in_, l) != wire::received::frame) throw wire::io_error("the server closed the connection");
}

template <class Response>
const Response& remote_store::answer(wire::msg type, wire::writer* request) {
  try {
    if (request) conn_->send(request->finish());
    for (;;) {
      receive_frame();
      resp_ = wire::parse_response(in_);
      // Invalidations come between answers, unasked.
      const auto* inv = std::get_if<wire::invalidate_response>(&resp_);
      if (!inv) break;
      absorb(*inv);
    }

  } catch (const wire::io_error& e) {
    connection_failed(type, e);
  } catch (const wire::protocol_error& e) {
    lost();
    throw connection_lost("server " + url_ + ": malformed answer to " + wire::name_of(type) + " (" + e.what() +
                          "); connection closed");
  }
  if (const auto* e = std::get_if<wire::error_response>(&resp_)) raise(*e, type);
  if (const auto* a = std::get_if<Response>(&resp_)) return *a;
  lost();  // the conversation is out of step: start afresh
  throw store_error("server " + url_ + ": unexpected answer to " + wire::name_of(type) + " (" +
                    wire::name_of(wire::tag_of(resp_)) + ")");
}

void remote_store::begin() {
  if (in_txn_) throw store_error("server " + url_ + ": store transaction already open");
  clear_pending();
  // (Connects again first when the connection was lost.) The server takes
  // the transaction's snapshot before it answers, and the invalidations of
  // every commit the snapshot holds come before the answer: once the
  // runtime has taken them (take_invalidations), the cached pages it has
  // not revalidated are as the snapshot has them.
  wire::begin_request r;
  if (refused_in_a_row_ >= 8) {
    r.reserve = reserve_;
    r.reserve_read = reserve_read_;
  }
  const auto& begun = call<wire::begun_response>(r);
  commit_id_ = begun.id;
  replica_lag_ms_ = begun.replica_lag_ms;
  in_txn_ = true;
}

void remote_store::absorb(const wire::invalidate_response& m) {
  ++seen_;
  if (m.all) {
    held_.clear();
    drop_all_ = true;
  }
  for (const wire::invalidation& i : m.pages) {
    auto [at, fresh] = overtaken_.try_emplace(i.page, i.version);
    if (!fresh && i.version > at->second) at->second = i.version;
    auto it = held_.find(i.page);
    if (it != held_.end() && (i.version == wire::no_record || it->second < i.version)) held_.erase(it);
    // One received during a transaction names a commit after its snapshot:
    // a page read from the cache is still as the snapshot has it, but a
    // serializable transaction that writes is refused for having read it.
    invalidated_.push_back({i.page, i.version, in_txn_ && options_.serializable});
  }
  invalidations_ += m.pages.size();
}

void remote_store::poll() {
  if (!conn_) return;
  try {
    // Anything else that comes unasked is a farewell (the server is
    // closing): left for the next call to read and report.
    while (conn_->ready_frame_type() == static_cast<std::uint8_t>(wire::msg::invalidate)) {
      receive_frame();
      wire::response r = wire::parse_response(in_);
      absorb(std::get<wire::invalidate_response>(r));
    }
  } catch (const error&) {
    lost();  // the next call connects again, and every cached page is revalidated
  }
  overtaken_.clear();  // no answer is due
}

bool remote_store::take_invalidations(std::vector<invalidation>& out) {
  poll();
  out.insert(out.end(), invalidated_.begin(), invalidated_.end());
  invalidated_.clear();
  checked_seen_ = seen_;
  bool all = drop_all_;
  drop_all_ = false;
  return all;
}

void remote_store::hold(std::uint64_t page, std::uint64_t version) {
  // An invalidation that overtook this answer (pushed after the server
  // noted the page, before it sent the answer) stands.
  if (auto later = overtaken_.find(page); later != overtaken_.end() && later->second > version) return;
  if (options_.read_replica) return;  // no invalidations come from a replica
  held_[page] = version;
}

std::vector<wire::page_op> remote_store::page_ops() {
  std::vector<wire::page_op> ops;
  for (auto& entry : pages_) {
    // (Not a structured binding: the lambda below captures the record, which
    // clang before 16 refuses for bindings.)
    const std::uint64_t page = entry.first;
    auto& p = entry.second;
    wire::page_op op;
    op.kind = p.kind;
    op.page = page;
    op.base_version = p.base;
    if (p.kind == wire::page_op_kind::put) op.record = p.record;
    if (p.mapping) {
      op.mapping_op = p.mapping->empty() ? wire::mapping_change::remove : wire::mapping_change::set;
      op.mapping = *p.mapping;
    }
    if (p.kind == wire::page_op_kind::patch) {
      // Ranges from several writes of the page: sorted, merged, and sent
      // from the latest image.
      std::sort(p.ranges.begin(), p.ranges.end());
      std::uint32_t lo = p.ranges[0].first, hi = lo + p.ranges[0].second;
      auto emit = [&] { op.parts.push_back({lo, std::string_view(p.record).substr(lo, hi - lo)}); };
      for (std::size_t i = 1; i < p.ranges.size(); ++i) {
        auto [o, n] = p.ranges[i];
        if (o <= hi + 16) {
          hi = std::max(hi, o + n);
        } else {
          emit();
          lo = o;
          hi = o + n;
        }
      }
      emit();
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

std::vector<wire::meta_op> remote_store::meta_ops() const {
  std::vector<wire::meta_op> ops;
  for (auto& [k, v] : metas_)
    ops.push_back(v ? wire::meta_op{wire::meta_op_kind::put, k, *v} : wire::meta_op{wire::meta_op_kind::remove, k, {}});
  return ops;
}

void remote_store::clear_pending() {
  pages_.clear();
  sent_ahead_.clear();
  committing_ = false;
  adds_pages_ = 0;
  metas_.clear();
  pending_bytes_ = 0;
  read_versions_.clear();
  wrote_ = false;
}

remote_store::pending_page& remote_store::pending(std::uint64_t page, const record_header* h) {
  auto [it, fresh] = pages_.try_emplace(page);
  if (!fresh) return it->second;
  // Read in this transaction, or cached from an earlier one and used
  // without a round trip (no other client changed it since, or the commit
  // is refused); otherwise a page it created.
  if (auto r = read_versions_.find(page); r != read_versions_.end()) it->second.base = r->second;
  else if (auto c = held_.find(page); c != held_.end()) it->second.base = c->second;
  else if (h) it->second.base = wire::no_record;
  return it->second;
}

std::optional<std::uint64_t> remote_store::written_version(const pending_page& p) {
  if (p.kind == wire::page_op_kind::remove) return wire::no_record;
  record_header h{};
  if (p.record.size() < sizeof h) return std::nullopt;
  std::memcpy(&h, p.record.data(), sizeof h);
  return h.version;
}

void remote_store::committing(const std::vector<std::uint64_t>& stored, std::size_t pages) {
  committing_ = true;
  // Only when nothing went ahead before: the server begins a bulk
  // transaction only in a transaction that has written nothing.
  adds_pages_ = options_.durable_commits && sent_ahead_.empty() ? pages_added(stored, pages) : 0;
}

void remote_store::flush_if_large() {
  if (pending_bytes_ < (committing_ ? commit_flush_bytes : flush_bytes) || !in_txn_) return;
  // Pages only: metadata writes (small) wait for the commit, so that the
  // server's metadata B-tree is never write-locked while this client works.
  // The server counts the client holding them once the commit is through.
  for (const auto& [page, p] : pages_) sent_ahead_[page] = {p.base, written_version(p).value_or(wire::no_record)};
  wire::write_request w{page_ops(), {}, std::exchange(adds_pages_, 0)};
  if (!committing_) {
    call<wire::ok_response>(w);
  } else {
    // Its answer is read before the next request goes (call): the server
    // applies these pages while the runtime makes the next ones.
    call_unanswered(w);
  }
  shipped_ += pending_bytes_;
  pages_.clear();
  pending_bytes_ = 0;
}

void remote_store::call_unanswered(const wire::request& r) {
  wire::writer w = prepare(r);
  try {
    conn_->send(w.finish());
  } catch (const wire::io_error& e) {
    connection_failed(wire::tag_of(r), e);
  }
  write_unanswered_ = true;
}

void remote_store::collect_write() {
  write_unanswered_ = false;
  if (conn_) answer<wire::ok_response>(wire::msg::write, nullptr);
}

void remote_store::refuse_write(const char* what) {
  throw invalid_argument("server " + url_ + ": this transaction " + what +
                         ", and the database was opened with options::read_replica: its transactions only read "
                         "(open it without read_replica to write)");
}

void remote_store::commit(bool durable) {
  if (!in_txn_) throw store_error("server " + url_ + ": commit with no transaction open");
  if (options_.read_replica && wrote()) {
    abort();
    refuse_write("wrote");
  }
  // What the last write sent ahead met, before the commit goes (a lost
  // connection here is no question of the commit's outcome: it was not sent).
  if (write_unanswered_) collect_write();
  wire::commit_request r{durable, options_.serializable, page_ops(), meta_ops(), {}};
  // Cached pages read without a round trip are not in `reads`: the server
  // refuses the commit if an invalidation the runtime has not seen was on
  // its way. Read page by page, they are in `reads`.
  r.invalidations_seen = precise_ ? wire::unchecked_version : checked_seen_;
  if (options_.serializable)
    for (auto [page, version] : read_versions_)
      if (!pages_.contains(page) && !sent_ahead_.contains(page)) r.reads.push_back({page, version});
  const bool wrote = wrote_;
  std::vector<std::uint64_t> written, read;
  to_reserve(written, read);
  std::size_t bytes = pending_bytes_;
  for (auto& [k, v] : metas_) bytes += k.size() + (v ? v->size() : 0);
  std::vector<wire::invalidation> committed;
  for (const auto& [page, a] : sent_ahead_)
    if (!pages_.contains(page)) committed.push_back({page, a.version});
  for (const auto& [page, p] : pages_)
    if (auto v = written_version(p)) committed.push_back({page, *v});
  // The transaction ends here whatever the outcome: the server commits it or
  // aborts it.
  auto end = [&] {
    in_txn_ = false;
    clear_pending();
  };
  if (!conn_) {
    // Lost earlier in the transaction: the server has aborted it.
    end();
    throw connection_lost("server " + url_ + ": the connection was lost; the transaction is aborted");
  }
  try {
    for (int crossings = 1;; ++crossings) {
      try {
        call<wire::ok_response>(r);
        break;
      } catch (const crossed_commit&) {
        // Invalidations crossed the commit; they came before the answer
        // (overtaken_), and the server undid the commit, the transaction
        // still open. Committed again unless one names a page the
        // transaction could have read.
        std::string why;
        for (auto [page, version] : overtaken_)
          if (could_have_read_ && could_have_read_(page, version)) {
            why = "commit refused: page " + std::to_string(page) +
                  " was changed by another client's commit while this transaction ran";
            break;
          }
        if (why.empty() && crossings < 8) {
          checked_seen_ = seen_;
          r.invalidations_seen = checked_seen_;
          continue;
        }
        try {
          call<wire::ok_response>(wire::abort_request{});
        } catch (const connection_lost&) {
          // The server aborts the transaction of a lost connection itself.
        }
        throw conflict(why.empty() ? "commit refused: other clients' commits kept crossing it" : why);
      }
    }
  } catch (const conflict&) {
    end();
    note_refused(std::move(written), std::move(read));
    throw;
  } catch (const connection_lost& e) {
    // The commit went out, and perhaps its answer never came back.
    end();
    if (!wrote) return;  // nothing to commit: it read one snapshot, and that stands
    settle_commit(commit_id_, e.what());
    shipped_ += bytes;
    return;
  } catch (...) {
    end();
    throw;
  }
  // The server now counts this client holding what it committed, unless
  // another client's commit has changed it again since.
  for (const wire::invalidation& c : committed) {
    auto later = overtaken_.find(c.page);
    if (c.version == wire::no_record || (later != overtaken_.end() && later->second > c.version)) held_.erase(c.page);
    else held_[c.page] = c.version;
  }
  end();
  shipped_ += bytes;
  refused_in_a_row_ = 0;
  reserve_.clear();
  reserve_read_.clear();
}

void remote_store::to_reserve(std::vector<std::uint64_t>& written, std::vector<std::uint64_t>& read) const {
  // Those written that existed (new ones are numbered afresh next time),
  // and those read.
  for (const auto& [page, p] : pages_)
    if (p.base != wire::no_record && p.base != wire::unchecked_version && written.size() < wire::max_reserved)
      written.push_back(page);
  for (const auto& [page, a] : sent_ahead_)
    if (!pages_.contains(page) && a.base != wire::no_record && a.base != wire::unchecked_version &&
        written.size() < wire::max_reserved)
      written.push_back(page);
  if (!options_.serializable) return;
  for (auto [page, version] : read_versions_)
    if (version != wire::no_record && !pages_.contains(page) && !sent_ahead_.contains(page) &&
        written.size() + read.size() < wire::max_reserved)
      read.push_back(page);
}

void remote_store::note_refused(std::vector<std::uint64_t> written, std::vector<std::uint64_t> read) {
  ++refused_in_a_row_;
  reserve_ = std::move(written);
  reserve_read_ = std::move(read);
}

void remote_store::refuse(const std::string& why) {
  std::vector<std::uint64_t> written, read;
  to_reserve(written, read);
  abort();
  note_refused(std::move(written), std::move(read));
  throw conflict(why);
}

void remote_store::settle_commit(const wire::commit_id& id, const std::string& lost) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(options_.reconnect_budget_ms);
  auto pause = std::chrono::milliseconds(5);
  std::string last;
  for (;;) {
    std::optional<wire::commit_outcome> outcome;
    try {
      outcome = call<wire::verdict_response>(wire::outcome_request{id}).outcome;  // connects again first
    } catch (const connection_lost& e) {
      last = e.what();
    } catch (const deadlock& e) {
      last = e.what();
    } catch (const error& e) {
      throw commit_unknown(lost + "; asking the server whether the transaction committed failed (" + e.what() +
                           "): it may or may not have committed; reopen the database and check");
    }
    if (outcome == wire::commit_outcome::committed) return;
    if (outcome == wire::commit_outcome::aborted)
      throw connection_lost(lost + "; the server did not commit the transaction: it is aborted");
    if (outcome == wire::commit_outcome::expired)
      throw commit_unknown(lost +
                           "; the server no longer remembers whether the transaction committed: it may or "
                           "may not have; reopen the database and check");
    if (outcome == wire::commit_outcome::pending) last = "the server was still ending the transaction";
    if (clock::now() + pause > deadline)
      throw commit_unknown(lost + "; whether the transaction committed could not be learned within " +
                           std::to_string(options_.reconnect_budget_ms) + " ms (last: " + last +
                           "): it may or may not have committed; reopen the database and check");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

void remote_store::abort() {
  if (!in_txn_) return;
  clear_pending();
  if (write_unanswered_) {
    try {
      collect_write();
    } catch (const error&) {
      // Whatever it met, the transaction ends here.
    }
  }
  if (stream_ && stream_->open) {
    try {
      finish_stream();
    } catch (const error&) {
      // The rest of a read_pages answer met an error (a replica's reads
      // past --replica-read-max, say): the transaction ends here all the
      // same.
    }
  }
  if (conn_) {
    try {
      call<wire::ok_response>(wire::abort_request{});
    } catch (const connection_lost&) {
      // The server aborts the transaction of a lost connection itself.
    }
  }
  in_txn_ = false;
}

void remote_store::take_record(std::uint64_t page, std::string_view rec, record_header& h, std::byte* image) {
  if (rec.size() != sizeof h + page_size_)
    throw corrupt_page(page, "server " + url_ + ": page " + std::to_string(page) + " record has " +
                                 std::to_string(rec.size()) + " bytes, expected " +
                                 std::to_string(sizeof h + page_size_));
  std::memcpy(&h, rec.data(), sizeof h);
  std::memcpy(image, rec.data() + sizeof h, page_size_);
}

const wire::page_response& remote_store::call_read_page(const wire::read_page_request& r) {
  try {
    return call<wire::page_response>(r);
  } catch (const corrupt_page& e) {
    if (e.page() != 0) throw;
    throw corrupt_page(r.page, e.what());
  }
}

store::page_read remote_store::read_pending(std::uint64_t page, const pending_page& p, record_header& h,
                                            std::byte* image, std::string& mapping) {
  if (p.kind == wire::page_op_kind::remove) return page_read::absent;
  take_record(page, p.record, h, image);
  if (h.mapping_entries == 0) {
    mapping.clear();
  } else if (p.mapping) {
    mapping = *p.mapping;
  } else {
    // The write kept the stored mapping object: the server has it.
    const auto& resp = call_read_page(wire::read_page_request{page, {}});
    if (resp.status == wire::page_status::record) mapping.assign(resp.mapping);
    else mapping.clear();
  }
  return page_read::read;
}

bool remote_store::read_page(std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) {
  return read_page_if_changed(page, ~std::uint64_t{0}, h, image, mapping) == page_read::read;
}

store::page_read remote_store::read_page_if_changed(std::uint64_t page, std::uint64_t version, record_header& h,
                                                    std::byte* image, std::string& mapping) {
  if (auto it = pages_.find(page); it != pages_.end()) return read_pending(page, it->second, h, image, mapping);
  if (auto it = held_.find(page); it != held_.end() && it->second == version && conn_) {
    // The server would have said if another client had changed it.
    ++avoided_;
    if (in_txn_) read_versions_[page] = version;
    return page_read::unchanged;
  }
  wire::read_page_request r{page, {}};
  if (version != ~std::uint64_t{0}) r.known_version = version;
  const auto& resp = call_read_page(r);
  switch (resp.status) {
    case wire::page_status::absent:
      if (in_txn_) read_versions_[page] = wire::no_record;
      return page_read::absent;
    case wire::page_status::unchanged:
      if (!r.known_version) throw store_error("server " + url_ + ": answered 'unchanged' to a plain read");
      if (in_txn_) read_versions_[page] = version;
      hold(page, version);
      return page_read::unchanged;
    case wire::page_status::record: break;
  }
  take_record(page, resp.record, h, image);
  mapping.assign(resp.mapping);
  if (in_txn_) read_versions_[page] = h.version;
  hold(page, h.version);
  return page_read::read;
}

bool remote_store::read_range(
    std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
  std::vector<std::uint64_t> pages;
  for (std::uint64_t page = first;; ++page) {
    pages.push_back(page);
    if (page == last) break;
  }
  return read_pages(pages, want, got);
}

bool remote_store::read_pages(
    std::span<const std::uint64_t> pages, const std::function<std::byte*(std::uint64_t page)>& want,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
  std::vector<std::pair<std::uint64_t, std::byte*>> asked;
  for (std::uint64_t page : pages) {
    if (asked.size() == wire::max_batch) break;
    if (pages_.count(page)) continue;  // written in this transaction: read from its buffered write
    if (std::byte* image = want(page)) asked.emplace_back(page, image);
  }
  if (!asked.empty()) read_batch(asked, got);
  return true;
}

void remote_store::read_batch(
    const std::vector<std::pair<std::uint64_t, std::byte*>>& pages,
    const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) {
  wire::read_pages_request r;
  r.pages.reserve(pages.size());
  for (const auto& p : pages) r.pages.push_back(p.first);
  answer_stream s{pages, 0, {}, false};
  const auto& first = call<wire::records_response>(r);
  answer_stream* outer = stream_;  // (finished by the call)
  stream_ = &s;
  try {
    take_part(first);
    // Each part's pages are handed over before the next part is read: the
    // server reads that one meanwhile. A call `got` makes (the runtime
    // reading a page as it takes one in) reads the rest of the answer first.
    for (;;) {
      while (!s.taken.empty()) {
        taken_page t = std::move(s.taken.front());
        s.taken.pop_front();
        got(t.page, t.h, std::move(t.mapping));
      }
      if (!s.open) break;
      next_part();
    }
  } catch (...) {
    if (s.open) lost();  // the rest of the answer is unread: out of step
    stream_ = outer;
    throw;
  }
  stream_ = outer;
}

void remote_store::take_part(const wire::records_response& part) {
  answer_stream& s = *stream_;
  // The records come in the order asked, each once: anything else is the
  // server's error, and nothing after it is taken.
  for (const wire::page_record& rec : part.records) {
    while (s.next < s.asked.size() && s.asked[s.next].first != rec.page) ++s.next;
    if (s.next == s.asked.size()) {
      lost();
      throw store_error("server " + url_ + ": answered read_pages with page " + std::to_string(rec.page) +
                        ", which was not asked for, or not in the order asked; connection closed");
    }
    std::byte* image = s.asked[s.next++].second;
    record_header h;
    // A record that is not a whole page is left to the fault that touches
    // the page, which says what is wrong with it.
    if (rec.record.size() != sizeof h + page_size_) continue;
    take_record(rec.page, rec.record, h, image);
    hold(rec.page, h.version);
    s.taken.push_back({rec.page, h, h.mapping_entries ? std::string(rec.mapping) : std::string()});
  }
  s.open = part.more;
}

void remote_store::next_part() {
  // Closed unless the part says more follows: an error answer, or a lost
  // connection, ends it.
  stream_->open = false;
  take_part(answer<wire::records_response>(wire::msg::read_pages, nullptr));
}

void remote_store::finish_stream() {
  while (stream_->open) next_part();
}

void remote_store::note_read(std::uint64_t page, std::uint64_t version) {
  // Read in this transaction's snapshot (a page prefetched before it began
  // was made stale at its begin, and revalidated).
  if (in_txn_) read_versions_.emplace(page, version);
}

void remote_store::note_mapping(pending_page& p, const std::string* mapping) {
  if (!mapping) return;  // a later write that keeps it keeps an earlier one's
  p.mapping = *mapping;
  pending_bytes_ += mapping->size();
}

void remote_store::put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                            const std::string* mapping) {
  wrote_ = true;
  auto it = pages_.find(page);
  bool removed = it != pages_.end() && it->second.kind == wire::page_op_kind::remove;
  pending_page& p = pending(page, &h);
  // A record put where this transaction removed one has no mapping object to keep.
  if (removed) p.mapping = std::string();
  p.kind = wire::page_op_kind::put;
  p.ranges.clear();
  p.record.assign(reinterpret_cast<const char*>(&h), sizeof h);
  p.record.append(reinterpret_cast<const char*>(image), page_size_);
  pending_bytes_ += p.record.size();
  note_mapping(p, mapping);
  flush_if_large();
}

void remote_store::patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                              std::span<const byte_range> ranges, const std::string* mapping) {
  wrote_ = true;
  auto it = pages_.find(page);
  bool fresh = it == pages_.end() || it->second.kind == wire::page_op_kind::remove;
  pending_page& p = pending(page, &h);
  p.record.assign(reinterpret_cast<const char*>(&h), sizeof h);
  p.record.append(reinterpret_cast<const char*>(image), page_size_);
  if (fresh) {
    p.kind = wire::page_op_kind::patch;
    p.ranges.clear();
    p.mapping.reset();
  }
  if (p.kind == wire::page_op_kind::patch) {  // (a put sends the whole record anyway)
    p.ranges.push_back({0, static_cast<std::uint32_t>(sizeof h)});
    for (const byte_range& r : ranges) {
      p.ranges.push_back({static_cast<std::uint32_t>(sizeof h) + r.offset, r.length});
      pending_bytes_ += r.length;
    }
    pending_bytes_ += sizeof h;
  }
  note_mapping(p, mapping);
  flush_if_large();
}

void remote_store::delete_page(std::uint64_t page) {
  wrote_ = true;
  pending_page& p = pending(page, nullptr);
  p.kind = wire::page_op_kind::remove;
  p.record.clear();
  p.ranges.clear();
  p.mapping.reset();  // removed with the record
  pending_bytes_ += 16;
}

store::page_range remote_store::allocate_pages(std::uint64_t n) {
  if (options_.read_replica) refuse_write("allocates");
  if (n > spare_left_) {
    // What is left is too short for n contiguous pages: it stays unused.
    const std::uint64_t ask = std::max(n, next_ask_);
    next_ask_ = std::min(max_ask, 2 * next_ask_);
    const auto& resp = call<wire::pages_response>(wire::allocate_request{ask});
    spare_ = {resp.page, resp.frame};
    spare_left_ = ask;
  }
  const page_range r = spare_;
  spare_.page += n;
  spare_.frame += n;
  spare_left_ -= n;
  return r;
}

std::optional<std::string> remote_store::get(std::string_view key) {
  if (auto it = metas_.find(key); it != metas_.end()) return it->second;
  const auto& resp = call<wire::value_response>(wire::get_request{key});
  if (!resp.value) return std::nullopt;
  return std::string(*resp.value);
}

void remote_store::put(std::string_view key, std::string_view value) {
  if (!in_txn_) {
    // A write outside a transaction commits on its own.
    begin();
    try {
      put(key, value);
      commit(true);
    } catch (...) {
      abort();
      throw;
    }
    return;
  }
  wrote_ = true;
  metas_[std::string(key)] = std::string(value);
}

void remote_store::del(std::string_view key) {
  if (!in_txn_) {
    begin();
    try {
      del(key);
      commit(true);
    } catch (...) {
      abort();
      throw;
    }
    return;
  }
  wrote_ = true;
  metas_[std::string(key)] = std::nullopt;
}

void remote_store::scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) {
  const auto& resp = call<wire::entries_response>(wire::scan_request{prefix});
  // The server's entries, overlaid with this transaction's buffered writes.
  std::map<std::string, std::string, std::less<>> merged;
  for (auto& [k, v] : resp.entries) merged.emplace(std::string(k), std::string(v));
  for (auto it = metas_.lower_bound(prefix); it != metas_.end() && it->first.starts_with(prefix); ++it) {
    if (it->second) merged[it->first] = *it->second;
    else merged.erase(it->first);
  }
  for (auto& [k, v] : merged) f(k, v);
}

std::uint32_t remote_store::open_index(const std::string& name, bool unique) {
  std::uint32_t server = call<wire::index_response>(wire::open_index_request{name, unique}).index;
  for (std::size_t i = 0; i < indexes_.size(); ++i)
    if (indexes_[i].name == name) {
      indexes_[i].server = server;
      return static_cast<std::uint32_t>(i);
    }
  indexes_.push_back({name, unique, server});
  return static_cast<std::uint32_t>(indexes_.size() - 1);
}

std::uint32_t remote_store::server_index(std::uint32_t index) {
  if (index >= indexes_.size())
    throw invalid_argument("server " + url_ + ": no index number " + std::to_string(index) + " is open");
  open_index_entry& e = indexes_[index];
  if (!e.server) {
    std::uint32_t server = call<wire::index_response>(wire::open_index_request{e.name, e.unique}).index;
    e.server = server;  // after the call: a call that connects again resets every number
  }
  return *e.server;
}

bool remote_store::index_insert(std::uint32_t index, std::string_view key, std::string_view value) {
  wrote_ = true;
  return call<wire::flag_response>(wire::index_insert_request{server_index(index), key, value}).value;
}

bool remote_store::index_erase(std::uint32_t index, std::string_view key, std::string_view value) {
  wrote_ = true;
  return call<wire::flag_response>(wire::index_erase_request{server_index(index), key, value}).value;
}

void remote_store::index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                              const std::function<bool(std::string_view, std::string_view)>& f) {
  // In batches: each request starts after the last entry of the one before.
  std::string after_key, after_value;
  bool after = false;
  for (;;) {
    wire::index_scan_request r{server_index(index), after ? std::string_view(after_key) : lo, hi, {}, 4096};
    if (after) r.after = wire::entry{after_key, after_value};
    const auto& resp = call<wire::entries_response>(r);
    std::vector<std::pair<std::string, std::string>> batch;
    for (auto& [k, v] : resp.entries) batch.emplace_back(k, v);
    bool more = resp.more && !batch.empty();
    for (auto& [k, v] : batch)
      if (!f(k, v)) return;
    if (!more) return;
    after = true;
    after_key = batch.back().first;
    after_value = batch.back().second;
  }
}

}  // namespace qs::detail
