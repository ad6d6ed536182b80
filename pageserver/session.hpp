// session.hpp: one client connection's conversation with the server: the
// protocol's state machine and its Berkeley DB transaction.
//
// States: waiting for hello -> idle <-> in a transaction. A transaction the
// deadlock detector chose as a victim (or that failed in the store) is
// aborted at once, so that its locks go to the others; the session then
// answers every request but abort with the error until the client aborts.
//
// Each transaction has an identity (commit_outcomes.hpp), sent with the
// answer to begin and recorded by its commit, by which a client whose
// connection dropped during the commit asks (outcome, outside a
// transaction) whether it committed.
//
// Locks, all taken with the transaction's Berkeley DB locker so that they are
// released when it ends and the deadlock detector sees them:
//  * the transaction's identity: exclusive, from begin (commit_outcomes.hpp).
//  * page p: lock object "qs:p" + p; shared when the page is read,
//    exclusive on lock_write and for every page the commit writes. A page's
//    mapping object is part of its record, under the same lock.
//  * metadata: free-space hints (s:) are not locked (they are advice). Schema
//    records (t:) share one lock object; every other key (roots, the
//    database's parameters) is its own object: shared when read in a
//    transaction, exclusive when written. So two clients creating the same
//    root, or adding types, serialize (one may be a deadlock victim).
// Reads of B-trees are read-committed: the explicit locks above give the
// isolation, and no client holds a B-tree read lock while it computes. A
// write or commit takes all its explicit locks before its first B-tree write,
// so a transaction holding B-tree write locks never waits for a client.
// Everything a session waits for is a Berkeley DB lock (visible to the
// deadlock detector), except the page-number mutex, whose holder waits only
// for transactions that are writing.
//
// handle() turns one request body into one response and says whether the
// connection must close (a protocol error, a failed hello). It never throws
// for anything a client sends. refuse() answers a request the server did not
// take (its body was dropped): the request fails, and so does its
// transaction, as after a store error.
#pragma once

#include "commit_outcomes.hpp"
#include "page_numbers.hpp"

#include <bdb_env.hpp>
#include <messages.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

namespace qs::server {

struct session_config {
  detail::bdb_env* env;
  page_numbers* numbers;
  commit_outcomes* outcomes;
  bool need_secret;
  std::string secret;
  // Told the bytes an answer is about to take as a scan gathers it; throws
  // (a qs::error, whose text the client gets) when the server cannot give
  // them. Empty: answers are not counted.
  std::function<void(std::size_t)> charge;
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
  bool in_transaction() const { return state_ == state::txn || state_ == state::doomed; }
  // A Berkeley DB transaction is open (and may hold locks).
  bool transaction_open() const { return txn_ != nullptr; }

 private:
  enum class state { hello, idle, txn, doomed };
  wire::response dispatch(const wire::request& r);
  wire::response error_reply(wire::error_code code, std::string text);
  void lock_page(std::uint64_t page, bool exclusive);
  void lock_meta(std::string_view key, bool exclusive);
  void lock_object(const std::string& object, bool exclusive);
  // The writes of a write or commit request.
  void apply(const std::vector<wire::page_op>& pages, const std::vector<wire::meta_op>& metas, bool commit);
  // Refuses a metadata write no client may make: a record the server owns
  // (page and frame counters, page size, format, base) once the database
  // exists, one created with a value out of range, or an unknown key.
  void check_meta(const wire::meta_op& op, bool database_exists);
  void end_transaction(bool commit, bool durable);
  void abort_quietly();
  std::uint32_t page_size();

  session_config c_;
  std::uint64_t id_;
  state state_ = state::hello;
  DbTxn* txn_ = nullptr;
  wire::commit_id commit_id_{};  // the open transaction's
  wire::error_code doomed_code_{};
  std::string doomed_text_;
  // Locks this transaction holds: object -> exclusive.
  std::unordered_map<std::string, bool> locks_;
  std::vector<std::byte> scratch_;
  std::string mapping_;  // the mapping object sent with the last page
  std::uint32_t page_size_ = 0;
  std::string text_;        // backs byte strings of the response (value, pong)
  std::string error_text_;  // backs an error response's text
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace qs::server
