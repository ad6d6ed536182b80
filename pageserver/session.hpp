// session.hpp: one client connection's conversation with the server: the
// protocol's state machine, one handler per request.
//
// States: waiting for hello -> idle <-> in a transaction.
//
// A transaction is optimistic (as THOR's were): its snapshot, locks,
// noted reads and commit validation are an optimistic_transaction's
// (optimistic_transaction.hpp); the session checks that each request may
// come in its state, hands it over, and turns what comes back, or what is
// thrown, into the answer.
//
// handle() turns one request body into one response (read_pages: the parts
// before its last go out through send_part as they are read) and says
// whether the connection must close (a protocol error, a failed hello). It never throws
// for anything a client sends. refuse() answers a request the server did not
// take (its body was dropped): the request fails, and so does its
// transaction, as after a store error.
#pragma once

#include "optimistic_transaction.hpp"
#include "page_numbers.hpp"
#include "read_counters.hpp"

#include <qs/bdb/bdb_env.hpp>
#include <qs/wire/messages.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace qs::server {

struct session_config {
  // What its transactions share with every other session's.
  transaction_config txn;
  // The pages sent, counted with every other session's.
  read_counters* reads;
  page_numbers* numbers;
  bool need_secret;
  std::string secret;
  // Told the bytes an answer is about to take as a scan gathers it; throws
  // (a qs::error, whose text the client gets) when the server cannot give
  // them. Empty: answers are not counted.
  std::function<void(std::size_t)> charge;
  // Sends a part of an answer ahead of the rest (a frame: the records of a
  // read_pages answer read so far), after what is queued for the client;
  // throws when the connection fails. Empty: answers go whole.
  std::function<void(std::span<const std::byte>)> send_part;
  // Where hot backups go (backup NAME makes backup_dir/NAME); empty: the
  // server makes none.
  std::string backup_dir;
  // The server is a replica of a replication group: only clients that read
  // (hello's read_replica) are served, and nothing they send may write;
  // others are refused with replica_refusal (naming the master).
  bool replica = false;
  std::string replica_refusal;
  // How old a replica's snapshot may be when it holds no recorded commit.
  std::uint64_t outcome_window_ms = 0;
};

class session {
 public:
  session(const session_config& c, std::uint64_t id);
  ~session();  // aborts an open transaction
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Handles a request body; writes the response to `out`. Sets `close` when
  // the connection must be closed after the response is sent.
  void handle(std::span<const std::byte> body, wire::writer& out, bool& close);
  // `first` holds the refused request's first byte (its type); `why` is the
  // error's text.
  void refuse(std::span<const std::byte> first, const std::string& why, wire::writer& out);
  bool in_transaction() const { return state_ == state::txn; }
  // A Berkeley DB transaction is open (and may hold locks).
  bool transaction_open() const { return txn_.open(); }
  // When the open transaction's snapshot is due to be released (max: never).
  std::chrono::steady_clock::time_point snapshot_deadline() const { return txn_.snapshot_deadline(); }
  // Releases the snapshot if it is due (optimistic_transaction.hpp): the
  // transaction fails. Says whether it released one.
  bool release_snapshot_if_due() { return txn_.release_snapshot_if_due(); }

 private:
  enum class state { hello, idle, txn };
  // Answers one request: hello first, then the handler of its type (on).
  wire::response dispatch(const wire::request& r);
  wire::response hello(const wire::hello_request& m);
  // One handler per request type.
  wire::response on(const wire::hello_request& m);  // a second hello: refused
  wire::response on(const wire::begin_request& m);
  wire::response on(const wire::abort_request& m);
  wire::response on(const wire::write_request& m);
  wire::response on(const wire::commit_request& m);
  wire::response on(const wire::read_page_request& m);
  wire::response on(const wire::read_pages_request& m);
  wire::response on(const wire::get_request& m);
  wire::response on(const wire::scan_request& m);
  wire::response on(const wire::allocate_request& m);
  wire::response on(const wire::open_index_request& m);
  wire::response on(const wire::index_insert_request& m);
  wire::response on(const wire::index_erase_request& m);
  wire::response on(const wire::index_scan_request& m);
  wire::response on(const wire::log_position_request& m);
  wire::response on(const wire::outcome_request& m);
  wire::response on(const wire::ping_request& m);
  wire::response on(const wire::backup_request& m);
  // What a read of `page` (or of metadata, without one) reads: the open
  // transaction's view, or nullptr outside one; throws the failure of a
  // transaction whose snapshot was released.
  DbTxn* reader(std::optional<std::uint64_t> page = std::nullopt) const;
  // Refuses (protocol_error) a request of `type` outside a transaction.
  void require_txn(wire::msg type) const;
  // Whether an index call runs in the open transaction; throws its failure.
  bool index_in_txn() const;
  wire::response error_reply(wire::error_code code, std::string text);
  // The client is sent `page` at `version`: noted in the cache directory,
  // and corrected at once when a commit since the view began changed it.
  void note_sent(std::uint64_t page, std::uint64_t version);

  session_config c_;
  detail::bdb_env& env_;
  std::uint64_t id_;
  state state_ = state::hello;
  optimistic_transaction txn_;
  // Commits done (cache_directory::commits) when the view the reads read
  // began: the transaction's begin, or the read outside one.
  std::uint64_t view_ = 0;
  std::vector<std::byte> scratch_;
  std::string mapping_;     // the mapping object sent with the last page
  std::string batch_;       // the records and mapping objects of a read_pages answer
  wire::writer part_;       // a part of it, sent ahead
  std::string text_;        // backs byte strings of the response (value, pong)
  std::string error_text_;  // backs an error response's text
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace qs::server
