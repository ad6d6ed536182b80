// store/remote_store.hpp: the store of a database served by qs-pageserver, the
// client side of the wire protocol (qs/wire/messages.hpp).
//
// Opened by qs::database::open("qs://host:port") (TCP, with the shared
// secret from options::server_secret or $QS_SECRET) or
// open("qs+unix:///path/to/socket"). A URL may name the sites of a
// replication group, qs://host1:port1,host2:port2,...: the store connects
// to whichever is the master (a replica answers its hello `not_master`),
// and after a lost connection to the master that follows, waiting up to
// reconnect_budget_ms for an election; database::run then runs an aborted
// transaction again there. Each store transaction reads one
// consistent snapshot of the database on the server and takes no lock
// (pageserver/optimistic_transaction.hpp). The store notes the version of every page it
// reads in the transaction; the commit sends, with the writes, each written
// page's version in the snapshot and, when the isolation is serializable,
// the pages read and their versions. The server checks them and refuses a
// commit that met another's with qs::conflict, which only commit() and the
// index calls throw: a read, or the writes a large transaction sends ahead,
// never do (the server answers the latter's conflict at the commit). After
// three commits in a row were refused, the next transaction's begin reserves
// the pages the last one wrote and read, so that it cannot lose them again.
//
// Writes (pages and metadata) are buffered here and sent with the commit, so
// that the server holds no B-tree write locks while the client computes; a
// transaction that buffers more than a few MiB of pages sends those early in
// `write` messages. Once the runtime writes back a transaction's pages for
// its commit (committing), they go ahead in parts of a few hundred KiB, each
// answer read only before the next request: the server applies one part
// while the runtime makes the next; the first says how many pages the
// commit adds, when the database's commits are durable, and the server
// writes a commit that adds many in a bulk transaction. Reads see the
// buffered writes first.
//
// Page numbers come from the server in blocks (allocate_pages): a new page
// is not a round trip of its own.
//
// A fault is one round trip: the server sends a page's mapping object with
// the page. Prefetch (read_range, read_pages) asks for many pages in one
// round trip (read_pages), whose answer comes in parts: each part's pages
// go to the runtime before the next part is read, so that the runtime
// takes them in while the server reads on (a call made meanwhile reads the
// rest of the answer first); a page it brings counts as read by the
// transaction when the runtime first uses it (note_read). A page written in the transaction is read from the buffered
// write; when that write kept the stored mapping object, the server sends it.
//
// The store is `shared` and `coherent` (store.hpp): the server pushes an
// invalidation for every page this client holds that another client's
// commit changes (pageserver/cache_directory.hpp). The store reads them
// between answers (and, with nothing asked, at take_invalidations), and
// keeps the pages the server counts it holding (held_): revalidating one
// of those costs no round trip; any other is revalidated by version, and
// the server answers "unchanged" without resending the page. A new
// connection (a dropped one, a restarted server) holds nothing: every
// cached page is revalidated.
//
// A dropped connection throws qs::connection_lost; the server aborts the
// transaction and frees its locks. The next transaction (or a read outside
// one) connects again.
//
// Index numbers handed to the runtime are this store's own. The server's
// numbers are given in the order its clients open indexes, so another
// server process (a restart) gives other ones: after each new connection
// the store asks for an index's server number again, by name, when it
// first uses the index. log_position() counts the bytes of writes shipped to
// the server (the client's log records), not the server's log.
//
// A commit whose connection drops after the commit was sent may have
// committed on the server. The server gave the transaction an identity when
// it began (wire::commit_id); commit() connects again and asks the server
// what became of it, retrying for reconnect_budget_ms: committed, commit()
// returns as if the answer had come; aborted, it throws
// qs::connection_lost; pending (the server has not finished with it yet),
// it asks again. When the budget runs out, or the server no longer
// remembers, it throws qs::commit_unknown. The transaction has ended in
// every case.
//
// Thread-safety: one thread at a time (store.hpp).
#pragma once

#include <qs/wire/connection.hpp>
#include <qs/wire/messages.hpp>
#include "store/store.hpp"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qs::detail {

struct remote_options {
  // The shared secret of a server reached over TCP (qs://host:port); when
  // empty, the environment variable QS_SECRET gives it.
  std::string secret;
  // How long a commit whose connection dropped tries to learn its outcome.
  std::uint32_t reconnect_budget_ms = 30000;
  // Serializable commits (the reads are checked too), or snapshot isolation.
  bool serializable = true;
  // Reads only, from any site of a group, a replica included
  // (options::read_replica).
  bool read_replica = false;
  // How long a wait for an answer polls before it sleeps
  // (options::server_wait_spin_us).
  std::uint32_t wait_spin_us = static_cast<std::uint32_t>(wire::spin_wait::default_budget.count());
  // Commits are durable (options::durable): the first part of a commit's
  // write-back says how many pages it adds, so that the server may write a
  // large one in bulk (wire::write_request::adds_pages).
  bool durable_commits = true;
};

bool is_remote_url(const std::string& path);
std::unique_ptr<store> connect_remote_store(const std::string& url, const remote_options& o);

class remote_store final : public store {
 public:
  remote_store(const std::string& url, const remote_options& o);
  ~remote_store() override;

  void set_page_size(std::uint32_t page_size) override { page_size_ = page_size; }
  void begin() override;
  void commit(bool durable) override;
  void abort() override;
  bool in_transaction() const override { return in_txn_; }

  bool read_page(std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) override;
  page_read read_page_if_changed(std::uint64_t page, std::uint64_t version, record_header& h, std::byte* image,
                                 std::string& mapping) override;
  bool read_range(
      std::uint64_t first, std::uint64_t last, const std::function<std::byte*(std::uint64_t page)>& want,
      const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) override;
  bool read_pages(
      std::span<const std::uint64_t> pages, const std::function<std::byte*(std::uint64_t page)>& want,
      const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got) override;
  void note_read(std::uint64_t page, std::uint64_t version) override;
  bool checks_reads() const override { return options_.serializable && !options_.read_replica; }
  void committing(const std::vector<std::uint64_t>& stored, std::size_t pages) override;
  // A replica's pages change by replication, which sends no invalidations.
  bool coherent() const override { return !options_.read_replica; }
  bool take_invalidations(std::vector<invalidation>& out) override;
  bool take_new_connection() override { return std::exchange(connected_again_, false); }
  bool wrote() const override { return wrote_ || !pages_.empty() || !metas_.empty(); }
  void track_reads(bool precise) override { precise_ = precise; }
  coherence_counters coherence() const override { return {invalidations_, avoided_, replica_lag_ms_}; }
  [[noreturn]] void refuse(const std::string& why) override;
  void on_crossed(cache_check could_have_read) override { could_have_read_ = std::move(could_have_read); }
  void put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                const std::string* mapping) override;
  void patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                  std::span<const byte_range> ranges, const std::string* mapping) override;
  void delete_page(std::uint64_t page) override;
  page_range allocate_pages(std::uint64_t n) override;
  std::uint64_t pages_in_hand() const override { return spare_left_; }
  bool shared() const override { return true; }
  bool follows_master() const override { return sites_.size() > 1 || options_.read_replica; }

  std::optional<std::string> get(std::string_view key) override;
  void put(std::string_view key, std::string_view value) override;
  void del(std::string_view key) override;
  void scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) override;

  std::uint32_t open_index(const std::string& name, bool unique) override;
  bool index_insert(std::uint32_t index, std::string_view key, std::string_view value) override;
  bool index_erase(std::uint32_t index, std::string_view key, std::string_view value) override;
  void index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                  const std::function<bool(std::string_view, std::string_view)>& f) override;

  std::uint64_t log_position() override { return shipped_; }
  // The server makes the copy, under its --backup-dir (`target` is a name
  // there), asked on a connection of the job's own.
  std::function<void()> backup(const std::string& target, backup_progress progress) override;
  const std::string& name() const override { return url_; }

 private:
  struct pending_page {
    wire::page_op_kind kind;
    std::string record;                                           // header + image, as of the last write
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;  // patch: (offset, length) in the record
    // The mapping object written with the page: nullopt keeps the stored
    // one, an empty string removes it.
    std::optional<std::string> mapping;
    // The version of the page in the transaction's snapshot, as known when
    // the transaction first wrote it (wire::page_op::base_version).
    std::uint64_t base = wire::unchecked_version;
  };

  class crossed_commit;
  class not_master;
  // Throws qs::invalid_argument: a read_replica store takes no writes.
  [[noreturn]] void refuse_write(const char* what);
  // Connects to the server; with several sites named, to the one that is
  // the master, trying each in turn until one is, for up to
  // reconnect_budget_ms (an election). A site that takes the connection
  // but does not answer the hello within group_hello_wait (a stopped or
  // hung process) is passed over.
  void connect();
  void connect_to(std::size_t site);
  // Reads the next frame into in_ (by answer_by_, when set); throws
  // wire::io_error when the server closed the connection or was late.
  void receive_frame();
  void lost();
  // Takes an invalidate message in (call, poll).
  void absorb(const wire::invalidate_response& m);
  // Takes in the invalidate messages that have arrived whole, without
  // waiting (no answer is due).
  void poll();
  // The server now counts this client holding `page` at `version`.
  void hold(std::uint64_t page, std::uint64_t version);
  // Sends r and returns the response, which must be a Response (its byte
  // strings view a buffer that the next call reuses); throws for an error
  // response or an unexpected one.
  template <class Response>
  const Response& call(const wire::request& r);
  // call() for one page: a corrupt answer (whose text names the page) is
  // raised as qs::corrupt_page naming it too.
  const wire::page_response& call_read_page(const wire::read_page_request& r);
  // What comes before a request is sent (call, call_unanswered): the rest
  // of an answer owed is read, the connection made again if it was lost
  // outside a transaction; returns r encoded.
  wire::writer prepare(const wire::request& r);
  // Sends `request` (when given) and receives the answer to a request of
  // `type`, as call does.
  template <class Response>
  const Response& answer(wire::msg type, wire::writer* request);
  // The connection failed during a request of `type`: closed, and
  // connection_lost thrown with what the server said before closing, if it
  // did.
  [[noreturn]] void connection_failed(wire::msg type, const wire::io_error& e);
  [[noreturn]] void raise(const wire::error_response& r, wire::msg request);
  // After the connection dropped during the commit of transaction `id`
  // (`lost` says how): returns when the server committed it; throws
  // connection_lost when it did not, commit_unknown when that cannot be told.
  void settle_commit(const wire::commit_id& id, const std::string& lost);
  // The page and metadata operations of the buffered writes.
  std::vector<wire::page_op> page_ops();
  // The pages to reserve should the open transaction's commit be refused.
  void to_reserve(std::vector<std::uint64_t>& written, std::vector<std::uint64_t>& read) const;
  // A commit was refused for a conflict: counted, and these pages reserved
  // should the refusals go on (begin()).
  void note_refused(std::vector<std::uint64_t> written, std::vector<std::uint64_t> read);
  // The buffered write of `page`, made when the transaction first writes it:
  // its base version is then the version read in the transaction, or, for
  // a put or patch of a page not read in it (one it created), no_record.
  pending_page& pending(std::uint64_t page, const record_header* h);
  std::vector<wire::meta_op> meta_ops() const;
  void clear_pending();
  void flush_if_large();
  // Sends r, a write, and leaves its answer to be read before the next
  // request (collect_write).
  void call_unanswered(const wire::request& r);
  void collect_write();
  // Takes a page written in this transaction from its buffered write.
  page_read read_pending(std::uint64_t page, const pending_page& p, record_header& h, std::byte* image,
                         std::string& mapping);
  void note_mapping(pending_page& p, const std::string* mapping);
  // The version a buffered write gives its page (wire::no_record: removed;
  // nullopt: a record too short to say).
  static std::optional<std::uint64_t> written_version(const pending_page& p);
  void take_record(std::uint64_t page, std::string_view rec, record_header& h, std::byte* image);
  // Prefetch: asks for `pages` (each with where its image goes) in one
  // read_pages round trip, and hands what comes back to `got`, part by
  // part as the answer's parts come.
  void read_batch(const std::vector<std::pair<std::uint64_t, std::byte*>>& pages,
                  const std::function<void(std::uint64_t page, const record_header&, std::string mapping)>& got);
  // A read_pages answer being received (read_batch): the pages asked, in
  // order, with where their images go; the next one a record may be; the
  // pages taken into their images and not handed over yet; whether more
  // parts are to come.
  struct taken_page {
    std::uint64_t page;
    record_header h;
    std::string mapping;
  };
  struct answer_stream {
    const std::vector<std::pair<std::uint64_t, std::byte*>>& asked;
    std::size_t next = 0;
    std::deque<taken_page> taken;
    bool open = false;
  };
  // Takes one part of the answer stream_ receives; next_part receives it.
  void take_part(const wire::records_response& part);
  void next_part();
  // Receives the rest of stream_'s answer (before another call).
  void finish_stream();
  // The server's number of index `index` (an index of indexes_), asked for
  // on this connection when not known yet.
  std::uint32_t server_index(std::uint32_t index);

  struct open_index_entry {
    std::string name;
    bool unique;
    std::optional<std::uint32_t> server;  // for the current connection
  };

  std::string url_;
  bool unix_ = false;
  std::string unix_path_;
  // The sites named (qs://A,B,C: a replication group's), and the one
  // connected to last (the master when there are several).
  std::vector<wire::tcp_address> sites_;
  std::size_t site_ = 0;
  // As given (connect_remote_store fills in QS_SECRET's secret); a
  // backup's own connection opens with the same.
  const remote_options options_;
  std::uint64_t replica_lag_ms_ = 0;
  std::unique_ptr<wire::connection> conn_;
  std::vector<std::byte> in_;
  // When set, an answer must have come by then (a group's hello: a site
  // that does not answer is passed over for the next).
  std::optional<std::chrono::steady_clock::time_point> answer_by_;
  wire::response resp_;
  std::uint32_t page_size_ = 8192;
  bool in_txn_ = false;
  wire::commit_id commit_id_{};  // the open transaction's, from the server
  std::map<std::uint64_t, pending_page> pages_;
  std::map<std::string, std::optional<std::string>, std::less<>> metas_;
  std::size_t pending_bytes_ = 0;
  // Pages this transaction sent ahead (flush_if_large): their versions in
  // its snapshot and as written (wire::no_record: removed).
  struct sent_page {
    std::uint64_t base, version;
  };
  std::map<std::uint64_t, sent_page> sent_ahead_;
  // The commit's write-back has begun (committing): pages go ahead in
  // parts; and a write went with its answer not read yet.
  bool committing_ = false;
  bool write_unanswered_ = false;
  // What the next write says the commit adds (committing; 0 once sent).
  std::uint64_t adds_pages_ = 0;
  // Pages the transaction read from the server, and their versions
  // (wire::no_record: none).
  std::map<std::uint64_t, std::uint64_t> read_versions_;
  // The transaction wrote something (pages, metadata, index entries).
  bool wrote_ = false;
  // Commits refused for a conflict in a row, and the pages the last of them
  // wrote and read: after three, the next begin reserves them (optimistic_transaction.hpp).
  int refused_in_a_row_ = 0;
  std::vector<std::uint64_t> reserve_, reserve_read_;
  std::uint64_t shipped_ = 0;
  std::vector<open_index_entry> indexes_;
  // Cache coherence (pageserver/cache_directory.hpp). The pages the server
  // counts this connection holding, and their versions: one that is still
  // there was changed by no other client (its invalidation would have
  // removed it), and is revalidated with no round trip.
  std::unordered_map<std::uint64_t, std::uint64_t> held_;
  // Invalidations received and not yet taken by the runtime.
  std::vector<invalidation> invalidated_;
  // Every cached page is to be revalidated: a new connection, or the
  // server's directory forgot this client.
  bool drop_all_ = false;
  bool connected_again_ = false;  // for take_new_connection
  // Invalidate messages received on this connection, and how many of them
  // the runtime had taken when it last looked (what a commit reports).
  std::uint64_t seen_ = 0, checked_seen_ = 0;
  std::uint64_t invalidations_ = 0, avoided_ = 0;
  // The runtime revalidates cached pages at their first touch (their
  // versions go with the commit's reads).
  bool precise_ = false;
  // The runtime's answer, for invalidations that crossed a commit.
  cache_check could_have_read_;
  // The newest version each invalidation received during the current
  // call names: the server may push one after noting a page and before
  // answering with it (an older version), or change again a page this
  // client's commit wrote before the commit's answer.
  std::unordered_map<std::uint64_t, std::uint64_t> overtaken_;
  // The read_pages answer being received, while its pages are handed over.
  answer_stream* stream_ = nullptr;
  // Page and frame numbers taken from the server ahead of use
  // (allocate_pages): spare_left_ pages from spare_.page, on frames from
  // spare_.frame. The server never hands them out again, so they stay good
  // across transactions and connections. Each request asks for twice the
  // last, up to max_ask: a process that creates few pages leaves few unused
  // (a hole in the numbers, as an aborted transaction's pages leave).
  page_range spare_{};
  std::uint64_t spare_left_ = 0;
  std::uint64_t next_ask_ = 1;
  static constexpr std::uint64_t max_ask = 64;
  // How long a site of a group may take to answer the hello.
  static constexpr std::chrono::seconds group_hello_wait{2};
};

}  // namespace qs::detail
