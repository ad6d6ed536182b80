// qs/wire/messages.hpp: the messages of the qs-pageserver protocol, one type per
// request and per response, and their parsers and encoders (the one
// definition both sides compile).
//
// Protocol version 12. A connection starts with the client's hello (magic,
// version, and for TCP the shared secret); then the client sends one request
// at a time and the server answers each with one response. Between
// responses, and unasked, the server may also send `invalidate` messages
// (cache coherence: pageserver/cache_directory.hpp):
//
//   hello         magic, version, secret, read_replica -> hello_ok | error: auth,
//                                                         not_master (a replica, to a
//                                                         client that may write)
//   begin         pages to reserve: to write, to read  -> begun: the commit id, a replica's
//                                                         lag | error: conflict
//                 (a client whose transactions keep being refused reserves
//                 the pages the last one wrote and read: locked before the
//                 snapshot is taken, until the commit)
//   write         page ops, meta ops (in the txn),     -> ok (a conflict they meet is
//                 pages the commit adds (its first        answered at the commit) | error
//                 part only: the server may write a
//                 large one in a bulk transaction)
//   commit        durable, serializable, page ops,     -> ok | error: conflict,
//                 meta ops, pages read and their          store, ... (txn ended) |
//                 versions, invalidations received        error: crossed (txn open)
//                 (a page op puts, patches or removes a record, and keeps,
//                 sets or removes the page's mapping object with it; it
//                 carries the version of the record the transaction's
//                 snapshot had, which the commit checks)
//   abort                                              -> ok
//   outcome       commit id (outside a txn)            -> verdict: committed |
//                                                         aborted | pending | expired
//   read_page     page, [known version]                -> page: absent | unchanged |
//                                                         record and mapping object
//   read_pages    pages (prefetch: up to max_batch)    -> records: those that have
//                                                         one, in the order asked,
//                                                         each with its mapping
//                                                         object, in parts (records
//                                                         ... more, then the last);
//                                                         the server may stop
//                                                         early (its budget)
//   get           key                                  -> value: [value]
//   scan          prefix                               -> entries
//   allocate      n                                    -> pages: first page, first frame
//   open_index    name, unique                         -> index: its number
//   index_insert  index, key, value                    -> flag: inserted | error: conflict
//   index_erase   index, key, value prefix             -> flag: erased | error: conflict
//   index_scan    index, lo, hi, [after key, value], limit  -> entries (+ more)
//   log_position                                       -> position
//   ping          payload, reply bytes                 -> pong (that many bytes): a bare round trip
//   backup        name (outside a txn)                 -> ok once the server made a hot backup
//                                                         of the database into NAME under its
//                                                         --backup-dir | error: invalid (no
//                                                         --backup-dir, a bad name, a directory
//                                                         not empty), store
//   any request                                        -> error: code, text
//   (nothing, the server closing the connection)       -> error: closed, why
//   (unasked, between responses)                       -> invalidate: pages another
//                                                         client's commit changed,
//                                                         each with its new version;
//                                                         or all: revalidate every one
//
// A commit whose answer never arrived (the connection dropped) is asked
// about on a new connection with `outcome`, by the commit id that `begin`
// gave its transaction (pageserver/commit_outcomes.hpp).
//
// Each message type lists its fields once, in `fields(message, walk)`, with
// their limits (codec.hpp): the encoder and the parser both follow it, so
// the two cannot disagree. Every field is bounds-checked by the parser:
// lengths, counts, enumerations, ranges, offsets into page records, and
// trailing bytes; a violation throws wire::malformed_message naming the
// message and the field. A body longer than max_message never gets to a
// parser (the framing refuses it).
//
// A parsed message's byte strings view the body it was parsed from; an
// encoded one's view whatever the sender points them at.
//
// Thread-safety: messages are values; parse and encode share no state.
#pragma once

#include <qs/wire/codec.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace qs::wire {

constexpr std::uint32_t magic = 0x50575351;  // "QSWP"
constexpr std::uint32_t version = 12;
// The largest message body either side accepts.
constexpr std::uint32_t max_message = 64u << 20;
// The largest page record (64 KiB page and a 48-byte header, with room).
constexpr std::uint32_t max_record = 65536 + 64;
// The largest mapping object: one 24-byte entry per pointer word of a page.
constexpr std::uint32_t max_mapping = 65536 / 8 * 24;
// The largest metadata key, value or index key, secret and index name.
constexpr std::uint32_t max_key = 64u << 10;
constexpr std::uint32_t max_value = 1u << 20;
constexpr std::uint32_t max_secret = 1024;
constexpr std::uint32_t max_index_name = 256;
// The longest name of a backup (a directory under the server's --backup-dir).
constexpr std::uint32_t max_backup_name = 255;
// The most pages one read_pages asks for, the bytes of records its answer
// holds before the server stops adding to it, and the bytes of records
// after which the server sends what it has read as a part of the answer.
constexpr std::uint32_t max_batch = 256;
constexpr std::uint32_t batch_bytes = 4u << 20;
constexpr std::uint32_t part_bytes = 32u << 10;
// The most pages one allocate asks for.
constexpr std::uint64_t max_allocation = std::uint64_t{1} << 32;
// A page op's base_version when the commit is not to check it.
constexpr std::uint64_t unchecked_version = ~std::uint64_t{0};
// The version of a page that has no record (a record's own version may be
// 0: pages stored before they were first written).
constexpr std::uint64_t no_record = ~std::uint64_t{0} - 1;

// The first byte of every body: which message it is.
enum class msg : std::uint8_t {
  hello = 1,
  begin,
  write,
  commit,
  abort,
  read_page,
  get,
  scan,
  allocate,
  open_index,
  index_insert,
  index_erase,
  index_scan,
  log_position,
  ping,
  outcome,
  read_pages,
  backup,
  // responses
  ok = 64,
  error,
  hello_ok,
  page,
  value,
  entries,
  pages,
  index,
  position,
  flag,
  pong,
  begun,
  verdict,
  records,
  invalidate,
};
const char* name_of(msg m);

// Error codes in an error response. `closed`: the server closes the
// connection after this response (a limit of the server's was reached; the
// text names it), and may send it unasked, before closing, in place of the
// answer to a request still to come.
// `conflict`: the commit found what the transaction read or wrote changed
// since its snapshot; the client retries the transaction.
// `not_master` (to a hello): the server is a replica of a replication
// group, not its master; a client that names several sites tries the next.
// `unacknowledged` (to a commit only): the commit stands on the master, but
// the replicas did not acknowledge it in time (qs::commit_unknown).
// `crossed` (to a commit only): invalidations pushed to the client had not
// reached it when it sent the commit; they come before this answer. The
// transaction is still open, its commit undone: the client checks them and
// sends the commit again, or aborts.
enum class error_code : std::uint32_t {
  store = 1,
  conflict = 2,
  protocol = 3,
  auth = 4,
  invalid = 5,
  corrupt = 6,
  closed = 7,
  crossed = 8,
  not_master = 9,
  unacknowledged = 10
};

// --- parts of messages ---

// Bytes [offset, offset + data.size()) of a page record (header included).
struct part {
  std::uint32_t offset = 0;
  std::string_view data;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("offset", m.offset, 0, max_record - 1);
    w.bytes("data", m.data, max_record, 1);
    w.check(std::uint64_t{m.offset} + m.data.size() <= max_record, "data", "a patch outside the page record");
  }
};

enum class page_op_kind : std::uint8_t { put = 1, patch = 2, remove = 3 };
// What a put or patch does to the page's mapping object (removing a page
// removes its mapping object too).
enum class mapping_change : std::uint8_t { keep = 0, set = 1, remove = 2 };
// A write of one page record.
struct page_op {
  page_op_kind kind = page_op_kind::put;
  std::uint64_t page = 0;
  std::string_view record;                           // put: the whole record
  std::vector<part> parts;                           // patch: at least one
  mapping_change mapping_op = mapping_change::keep;  // put, patch
  std::string_view mapping;                          // set: the new mapping object
  // The version of the record in the transaction's snapshot (no_record: it
  // had none, a new page); unchecked_version: not checked.
  std::uint64_t base_version = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.enumeration("kind", m.kind, page_op_kind::put, page_op_kind::remove);
    w.u64("page", m.page);
    w.u64("base_version", m.base_version);
    if (m.kind == page_op_kind::put) w.bytes("record", m.record, max_record, 1);
    if (m.kind == page_op_kind::patch) {
      w.list("parts", m.parts, 8, [&](auto& p) { part::fields(p, w); });
      w.check(!m.parts.empty(), "parts", "a page patch with no parts");
    }
    if (m.kind != page_op_kind::remove) {
      w.enumeration("mapping_op", m.mapping_op, mapping_change::keep, mapping_change::remove);
      if (m.mapping_op == mapping_change::set) w.bytes("mapping", m.mapping, max_mapping, 1);
    }
  }
};

enum class meta_op_kind : std::uint8_t { put = 1, remove = 2 };
// A write of one metadata record.
struct meta_op {
  meta_op_kind kind = meta_op_kind::put;
  std::string_view key;
  std::string_view value;  // put
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.enumeration("kind", m.kind, meta_op_kind::put, meta_op_kind::remove);
    w.bytes("key", m.key, max_key, 1);
    if (m.kind == meta_op_kind::put) w.bytes("value", m.value, max_value);
  }
};

template <class M, class W>
void page_and_meta_ops(M& m, W& w) {
  w.list("pages", m.pages, 9, [&](auto& op) { page_op::fields(op, w); });
  w.list("metas", m.metas, 6, [&](auto& op) { meta_op::fields(op, w); });
}

// The identity of a transaction's commit, given by the server at begin:
// the server's clock when the transaction began (nanoseconds since the
// epoch) and a random number. Any pair of values is well-formed.
struct commit_id {
  std::uint64_t time = 0;
  std::uint64_t nonce = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u64("id.time", m.time);
    w.u64("id.nonce", m.nonce);
  }
  friend bool operator==(const commit_id&, const commit_id&) = default;
};

// An index entry, or a metadata record.
using entry = std::pair<std::string_view, std::string_view>;

// --- requests ---

struct hello_request {
  static constexpr msg tag = msg::hello;
  std::uint32_t magic = 0;
  std::uint32_t version = 0;
  std::string_view secret;
  // The client only reads (options::read_replica): a replica of a
  // replication group serves it too.
  bool read_replica = false;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("magic", m.magic);
    w.u32("version", m.version);
    w.bytes("secret", m.secret, max_secret);
    w.flag("read_replica", m.read_replica);
  }
};

// The most pages one begin reserves.
constexpr std::uint32_t max_reserved = 1024;

struct begin_request {
  static constexpr msg tag = msg::begin;
  // Pages the transaction will write, and pages it will only read, locked
  // (exclusive, shared) before its snapshot is taken (see
  // pageserver/optimistic_transaction.hpp): at most max_reserved in all.
  std::vector<std::uint64_t> reserve;
  std::vector<std::uint64_t> reserve_read;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.list("reserve", m.reserve, 8, [&](auto& p) { w.u64("page", p); });
    w.list("reserve_read", m.reserve_read, 8, [&](auto& p) { w.u64("page", p); });
    w.check(m.reserve.size() + m.reserve_read.size() <= max_reserved, "reserve",
            "more pages to reserve (reserve and reserve_read) than a begin may");
  }
};

// Writes of the open transaction, sent ahead of its commit. `adds_pages`:
// in the first part of a commit's write-back, how many pages the commit
// adds (pages that had no record), when its commits are durable; otherwise
// 0. Advice: the server may write a commit that adds many pages in a
// Berkeley DB bulk transaction.
struct write_request {
  static constexpr msg tag = msg::write;
  std::vector<page_op> pages;
  std::vector<meta_op> metas;
  std::uint64_t adds_pages = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    page_and_meta_ops(m, w);
    w.u64("adds_pages", m.adds_pages);
  }
};

// A page the transaction read, and the version its snapshot had (no_record:
// none).
struct page_version {
  std::uint64_t page = 0;
  std::uint64_t version = 0;
};

// The transaction's last writes, and its end. Serializable: the pages in
// `reads` (and the metadata records the transaction read on the server) must
// still have the versions the transaction read, as must every page and
// record it writes; otherwise only those it writes.
// `invalidations_seen`: how many invalidate messages the client had
// received on this connection when it sent the commit; the server refuses
// the commit when it has sent more (they name cached pages the transaction
// may have read without saying so). unchecked_version: not checked.
struct commit_request {
  static constexpr msg tag = msg::commit;
  bool durable = true;
  bool serializable = true;
  std::vector<page_op> pages;
  std::vector<meta_op> metas;
  std::vector<page_version> reads;
  std::uint64_t invalidations_seen = unchecked_version;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.flag("durable", m.durable);
    w.flag("serializable", m.serializable);
    page_and_meta_ops(m, w);
    w.list("reads", m.reads, 16, [&](auto& r) {
      w.u64("page", r.page);
      w.u64("version", r.version);
    });
    w.u64("invalidations_seen", m.invalidations_seen);
  }
};

struct abort_request {
  static constexpr msg tag = msg::abort;
  template <class M, class W>
  static void fields(M&, W&) {}
};

struct read_page_request {
  static constexpr msg tag = msg::read_page;
  std::uint64_t page = 0;
  // Revalidation: the version of the record the client holds; the server
  // answers "unchanged" when it is still the stored one.
  std::optional<std::uint64_t> known_version;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u64("page", m.page);
    w.optional("known_version", m.known_version, [&](auto& v) { w.u64("known_version", v); });
  }
};

// Prefetch: the records of several pages in one round trip, read as
// read_page reads them (the open transaction's snapshot, and what it sent
// ahead). Distinct pages, at most max_batch.
struct read_pages_request {
  static constexpr msg tag = msg::read_pages;
  std::vector<std::uint64_t> pages;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.list("pages", m.pages, 8, [&](auto& p) { w.u64("page", p); });
    w.check(!m.pages.empty() && m.pages.size() <= max_batch, "pages", "read_pages asks for 1 to max_batch pages");
  }
};

struct get_request {
  static constexpr msg tag = msg::get;
  std::string_view key;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.bytes("key", m.key, max_key);
  }
};

struct scan_request {
  static constexpr msg tag = msg::scan;
  std::string_view prefix;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.bytes("prefix", m.prefix, max_key);
  }
};

struct allocate_request {
  static constexpr msg tag = msg::allocate;
  std::uint64_t n = 1;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u64("n", m.n, 1, max_allocation);
  }
};

struct open_index_request {
  static constexpr msg tag = msg::open_index;
  std::string_view name;
  bool unique = false;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.bytes("name", m.name, max_index_name);
    w.flag("unique", m.unique);
  }
};

struct index_insert_request {
  static constexpr msg tag = msg::index_insert;
  std::uint32_t index = 0;
  std::string_view key;
  std::string_view value;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("index", m.index);
    w.bytes("key", m.key, max_key);
    w.bytes("value", m.value, max_value);
  }
};

// Removes one entry of key whose value begins with value_prefix.
struct index_erase_request {
  static constexpr msg tag = msg::index_erase;
  std::uint32_t index = 0;
  std::string_view key;
  std::string_view value_prefix;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("index", m.index);
    w.bytes("key", m.key, max_key);
    w.bytes("value_prefix", m.value_prefix, max_value);
  }
};

// Entries with lo <= key <= hi, in (key, value) order, starting after
// `after` when given (where the last batch ended); at most `limit` (0: the
// server's default).
struct index_scan_request {
  static constexpr msg tag = msg::index_scan;
  std::uint32_t index = 0;
  std::string_view lo;
  std::string_view hi;
  std::optional<entry> after;
  std::uint32_t limit = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("index", m.index);
    w.bytes("lo", m.lo, max_key);
    w.bytes("hi", m.hi, max_key);
    w.optional("after", m.after, [&](auto& e) {
      w.bytes("after.key", e.first, max_key);
      w.bytes("after.value", e.second, max_value);
    });
    w.u32("limit", m.limit);
  }
};

struct log_position_request {
  static constexpr msg tag = msg::log_position;
  template <class M, class W>
  static void fields(M&, W&) {}
};

// A bare round trip: `payload` out, reply_bytes back.
struct ping_request {
  static constexpr msg tag = msg::ping;
  std::string_view payload;
  std::uint32_t reply_bytes = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.bytes("payload", m.payload, max_message);
    w.u32("reply_bytes", m.reply_bytes, 0, max_record);
  }
};

// What became of the commit of the transaction `begin` gave this id (asked
// outside a transaction, after a connection dropped during a commit).
struct outcome_request {
  static constexpr msg tag = msg::outcome;
  commit_id id;
  template <class M, class W>
  static void fields(M& m, W& w) {
    commit_id::fields(m.id, w);
  }
};

// A hot backup of the database, made by the server into directory `name`
// under its --backup-dir (outside a transaction).
struct backup_request {
  static constexpr msg tag = msg::backup;
  std::string_view name;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.bytes("name", m.name, max_backup_name, 1);
  }
};

using request = std::variant<hello_request, begin_request, write_request, commit_request, abort_request,
                             read_page_request, get_request, scan_request, allocate_request, open_index_request,
                             index_insert_request, index_erase_request, index_scan_request, log_position_request,
                             ping_request, outcome_request, read_pages_request, backup_request>;

// --- responses ---

struct ok_response {
  static constexpr msg tag = msg::ok;
  template <class M, class W>
  static void fields(M&, W&) {}
};

struct error_response {
  static constexpr msg tag = msg::error;
  error_code code = error_code::store;
  std::string_view text;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.enumeration("code", m.code, error_code::store, error_code::unacknowledged);
    w.bytes("text", m.text, max_value);
  }
};

struct hello_ok_response {
  static constexpr msg tag = msg::hello_ok;
  std::uint32_t version = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("version", m.version);
  }
};

enum class page_status : std::uint8_t { absent = 0, unchanged = 1, record = 2 };
struct page_response {
  static constexpr msg tag = msg::page;
  page_status status = page_status::absent;
  std::string_view record;   // record: header and image
  std::string_view mapping;  // record: the page's mapping object, empty when it has none
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.enumeration("status", m.status, page_status::absent, page_status::record);
    if (m.status == page_status::record) {
      w.bytes("record", m.record, max_record, 1);
      w.bytes("mapping", m.mapping, max_mapping);
    }
  }
};

struct value_response {
  static constexpr msg tag = msg::value;
  std::optional<std::string_view> value;  // absent: no such key
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.optional("value", m.value, [&](auto& v) { w.bytes("value", v, max_value); });
  }
};

struct entries_response {
  static constexpr msg tag = msg::entries;
  bool more = false;  // index_scan: the limit cut the batch short
  std::vector<entry> entries;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.flag("more", m.more);
    w.list("entries", m.entries, 8, [&](auto& e) {
      w.bytes("key", e.first, max_key);
      w.bytes("value", e.second, max_value);
    });
  }
};

// Pages allocated: n pages from `page` on n frames from `frame`.
struct pages_response {
  static constexpr msg tag = msg::pages;
  std::uint64_t page = 0;
  std::uint64_t frame = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u64("page", m.page);
    w.u64("frame", m.frame);
  }
};

// The number of an open index.
struct index_response {
  static constexpr msg tag = msg::index;
  std::uint32_t index = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u32("index", m.index);
  }
};

// The end of the server's log, in bytes.
struct position_response {
  static constexpr msg tag = msg::position;
  std::uint64_t position = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.u64("position", m.position);
  }
};

// index_insert: inserted (false: a unique index has the key);
// index_erase: erased (false: no such entry).
struct flag_response {
  static constexpr msg tag = msg::flag;
  bool value = false;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.flag("value", m.value);
  }
};

struct pong_response {
  static constexpr msg tag = msg::pong;
  std::string_view payload;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.bytes("payload", m.payload, max_record);
  }
};

// A transaction began; its commit will be known by this id.
struct begun_response {
  static constexpr msg tag = msg::begun;
  commit_id id;
  // From a replica: how old, by its clock, the newest commit it has
  // applied was when the transaction began, in milliseconds; 0 from the
  // master.
  std::uint64_t replica_lag_ms = 0;
  template <class M, class W>
  static void fields(M& m, W& w) {
    commit_id::fields(m.id, w);
    w.u64("replica_lag_ms", m.replica_lag_ms);
  }
};

// What became of a commit:
//  committed  the transaction committed;
//  aborted    it ended without committing, and never will commit;
//  pending    it has not ended yet (the server is still working on it): ask again;
//  expired    the server no longer remembers: it may have committed or not.
enum class commit_outcome : std::uint8_t { committed = 1, aborted = 2, pending = 3, expired = 4 };
struct verdict_response {
  static constexpr msg tag = msg::verdict;
  commit_outcome outcome = commit_outcome::expired;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.enumeration("outcome", m.outcome, commit_outcome::committed, commit_outcome::expired);
  }
};

// The answer to read_pages: a record for some of the pages asked, in the
// order they were asked, each once; a page left out has no record, or did
// not fit in the answer (the client reads it when it needs it). The answer
// comes in parts, each a records message: all but the last say `more`, so
// that the client takes in the pages of one part while the server reads
// the next. Together they hold at most max_batch records.
struct page_record {
  std::uint64_t page = 0;
  std::string_view record;   // header and image
  std::string_view mapping;  // empty when the page has none
};
struct records_response {
  static constexpr msg tag = msg::records;
  std::vector<page_record> records;
  bool more = false;  // another part of the same answer follows
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.list("records", m.records, 16, [&](auto& r) {
      w.u64("page", r.page);
      w.bytes("record", r.record, max_record, 1);
      w.bytes("mapping", r.mapping, max_mapping);
    });
    w.check(m.records.size() <= max_batch, "records", "more records than read_pages asks for");
    w.flag("more", m.more);
  }
};

// Unasked: pages this client read whose records another client's commit
// changed, each with the version the commit gave it (no_record: removed). A
// cached copy of an older version is stale. `all`: the server no longer
// knows which pages this client holds; every cached page is to be
// revalidated. The server sends each page once, until the client reads it
// again.
struct invalidation {
  std::uint64_t page = 0;
  std::uint64_t version = 0;
};
struct invalidate_response {
  static constexpr msg tag = msg::invalidate;
  bool all = false;
  std::vector<invalidation> pages;
  template <class M, class W>
  static void fields(M& m, W& w) {
    w.flag("all", m.all);
    w.list("pages", m.pages, 16, [&](auto& p) {
      w.u64("page", p.page);
      w.u64("version", p.version);
    });
  }
};

using response = std::variant<ok_response, error_response, hello_ok_response, page_response, value_response,
                              entries_response, pages_response, index_response, position_response, flag_response,
                              pong_response, begun_response, verdict_response, records_response, invalidate_response>;

// Parsing throws malformed_message (a protocol_error) for any body that is
// not exactly one well-formed message of the direction's types.
request parse_request(std::span<const std::byte> body);
response parse_response(std::span<const std::byte> body);
void encode(const request& r, writer& w);
void encode(const response& r, writer& w);

msg tag_of(const request& r);
msg tag_of(const response& r);

}  // namespace qs::wire
