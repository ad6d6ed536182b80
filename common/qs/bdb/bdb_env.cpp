// The Berkeley DB environment shared by the transactions of one database
// directory (see bdb_env.hpp).
#include <qs/bdb/bdb_env.hpp>

#include <qs/bdb/allocation_slack.hpp>

#include <qs/base/error.hpp>
#include <qs/base/pause_point.hpp>
#include <qs/format/page_record.hpp>

#include <db_cxx.h>

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace qs::detail {
namespace {

// A page's record is stored in pieces of piece_bytes (the last one may be
// shorter), keyed by the page's 8 bytes and the piece's number: Berkeley DB
// replaces a whole item for every partial put, comparing it byte by byte
// with the old one, so a small change to a page costs a piece, not a page.
constexpr std::uint32_t piece_bytes = 1024;
constexpr unsigned max_pieces = 100;                 // 'm' (the mapping object's key) sorts after
constexpr std::uint32_t bdb_page_bytes = 16 * 1024;  // pages.db's B-tree pages

struct piece_key {
  unsigned char bytes[9];
  piece_key(std::uint64_t page, unsigned piece) {
    for (int i = 7; i >= 0; --i, page >>= 8) bytes[i] = static_cast<unsigned char>(page);
    bytes[8] = static_cast<unsigned char>(piece);
  }
};

// Sorts right after the page's record pieces.
struct mapping_key {
  unsigned char bytes[9];
  explicit mapping_key(std::uint64_t page) {
    for (int i = 7; i >= 0; --i, page >>= 8) bytes[i] = static_cast<unsigned char>(page);
    bytes[8] = 'm';
  }
};

Dbt dbt(std::string_view s) { return Dbt(const_cast<char*>(s.data()), static_cast<std::uint32_t>(s.size())); }

// Present while the environment's files are consistent without recovery:
// written after a clean close, removed before the first write of the next
// open.
constexpr const char* closed_cleanly_file = "closed-cleanly";

// Closes a cursor when the scope that opened it ends.
struct cursor_closer {
  Dbc* c;
  ~cursor_closer() {
    if (c) c->close();
  }
};

// What recovery (and a backup's recovery) does with a qs page write
// (page_log.hpp) whose LSN is *lsn: gives back the record's previous LSN in
// its transaction (Berkeley DB walks a transaction backwards through what
// each record's handler gives back), and, for a committed transaction's
// record (forward roll, a replica's apply), writes it to `file`. Returns 0
// or an error code, with what went wrong in `said`.
int replay_page_write(page_file* file, Dbt* record, DbLsn* lsn, int op, std::string& said) {
  const std::string where = "log record " + std::to_string(lsn->file) + "/" + std::to_string(lsn->offset);
  if (record->get_size() < 8 + sizeof(DB_LSN)) {
    said = where + ": a qs page write of " + std::to_string(record->get_size()) + " bytes";
    return EINVAL;
  }
  const DB_LSN here = *lsn;
  std::memcpy(static_cast<DB_LSN*>(lsn), static_cast<const char*>(record->get_data()) + 8, sizeof(DB_LSN));
  // A walk back that would not go back is a damaged chain.
  const bool first = lsn->file == 0 && lsn->offset == 0;
  if (!first && (lsn->file > here.file || (lsn->file == here.file && lsn->offset >= here.offset))) {
    said = where + ": a qs page write whose transaction's previous record is not before it";
    return EINVAL;
  }
  // Committed transactions, forward; nothing of an uncommitted one reached
  // the file, so undoing needs nothing.
  if (op != DB_TXN_FORWARD_ROLL && op != DB_TXN_APPLY) return 0;
  if (!file) {
    said = where + ": a qs page write, and the database has no page file";
    return EINVAL;
  }
  std::string why;
  int rc = page_log::redo(*file, record->get_data(), record->get_size(), why);
  if (rc == EINVAL && !why.empty()) said = where + " (a qs page write): " + why;
  else if (rc != 0) said = where + ": writing it to " + file->path() + " failed: " + std::strerror(rc);
  return rc;
}

// Makes a file's creation or removal in `dir` durable.
bool sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// How far past the end of each data file its blocks are reserved (see
// reserve_room), and how close the end may come before more is reserved.
constexpr std::uint64_t room_ahead = std::uint64_t{4} << 20;

// " (Berkeley DB said: ...)" for the messages Berkeley DB gave, or "".
std::string berkeley_db_said(const std::string& messages) {
  return messages.empty() ? "" : " (Berkeley DB said: " + messages + ")";
}

// Whether a message of Berkeley DB's says that a write to its files failed.
bool says_write_failed(std::string_view msg) {
  for (const char* s : {"No space left on device", "Disk quota exceeded", "Input/output error", "Read-only file system",
                        "write failed", "unable to flush", "failed to flush"})
    if (msg.find(s) != std::string_view::npos) return true;
  return false;
}

// ", the file system holding DIR has N KiB free" when it has less than
// `below` bytes free (what the message of a failed write adds), else "".
std::string free_space_note(const std::string& dir, std::uint64_t below = std::uint64_t{64} << 20) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0 || (st.f_flag & ST_RDONLY)) return "";
  const std::uint64_t free = std::uint64_t{st.f_bavail} * st.f_frsize;
  if (free >= below) return "";
  return "; the file system holding " + dir + " has " + std::to_string(free >> 10) + " KiB free";
}

}  // namespace

void bdb_env::collect(const DbEnv* env, const char*, const char* msg) {
  auto* self = static_cast<bdb_env*>(const_cast<DbEnv*>(env)->get_app_private());
  if (!self || !msg) return;
  if (says_write_failed(msg)) self->write_failed_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> g(self->messages_mutex_);
  for (auto& [text, times] : self->messages_)
    if (text == msg) {
      ++times;
      return;
    }
  if (self->messages_.size() == 8) self->messages_.erase(self->messages_.begin());
  self->messages_.emplace_back(msg, 1);
}

std::string bdb_env::take_messages() const {
  std::lock_guard<std::mutex> g(messages_mutex_);
  std::string s;
  for (const auto& [text, times] : messages_)
    s += (s.empty() ? "" : "; ") + text + (times > 1 ? " (" + std::to_string(times) + " times)" : "");
  messages_.clear();
  return s;
}

void bdb_env::check(int rc, const std::string& what) const {
  if (rc == 0) return;
  std::string msg = "database " + dir_ + ": " + what + ": " + db_strerror(rc);
  std::string said = take_messages();
  msg += berkeley_db_said(said);
  if (rc == ENOMEM && said.find("Lock table is out of") != std::string::npos)
    msg += "; one transaction may hold " + std::to_string(max_locks_) +
           " Berkeley DB locks (about two and a half a page written): commit in smaller transactions";
  if (rc == DB_LOCK_NOTGRANTED && !timeouts_.empty()) msg += " (" + timeouts_ + ")";
  if (is_write_fault(rc)) fail_writes(msg);
  if (rc == DB_LOCK_DEADLOCK) throw deadlock_victim(msg);
  if (rc == DB_LOCK_NOTGRANTED) throw conflict(msg);
  if (rc == DB_REP_HANDLE_DEAD || rc == DB_REP_LOCKOUT) {
    handles_dead_.store(true, std::memory_order_release);
    throw connection_lost(msg + " (replication is rolling this replica's databases back, or initialising them)");
  }
  throw store_error(msg);
}

bool bdb_env::is_write_fault(int rc) const {
  if (!wrote_.load(std::memory_order_acquire)) return false;  // read-only handles write nothing
  return rc == ENOSPC || rc == EDQUOT || rc == EIO || rc == EROFS || rc == DB_RUNRECOVERY ||
         write_failed_.load(std::memory_order_acquire);
}

void bdb_env::break_for_writes(const std::string& message) const {
  {
    std::lock_guard<std::mutex> g(broken_mutex_);
    if (broken_.load(std::memory_order_relaxed) != not_broken) return;
    broken_message_ = message;
    broken_.store(write_fault, std::memory_order_release);
  }
  // From here on Berkeley DB refuses every call, its close included: a log
  // tail the disk did not take is never followed by a page that needs it.
  if (env_) env_->set_flags(DB_PANIC_ENVIRONMENT, 1);
}

std::string bdb_env::after_failed_write(const std::string& message) const {
  return message + free_space_note(dir_) +
         ". Every transaction whose commit returned is in the log; this handle writes nothing more and refuses every "
         "call: close the database, make room, and open it again (recovery restores what was committed)";
}

void bdb_env::fail_writes(const std::string& message) const {
  const std::string full = after_failed_write(message);
  break_for_writes(full);
  throw write_failed(full);
}

void bdb_env::reserve_room(Db& db, std::uint64_t& room) {
  std::lock_guard<std::mutex> g(room_mutex_);
  db_pgno_t last = 0;
  std::uint32_t page_bytes = 0;
  if (db.get_mpf()->get_last_pgno(&last) != 0 || db.get_pagesize(&page_bytes) != 0) return;
  const std::uint64_t end = (std::uint64_t{last} + 1) * page_bytes;
  if (end + room_ahead / 2 <= room) return;
  int fd = -1;
  if (db.fd(&fd) != 0 || fd < 0) return;
  // The first time, the whole file: a page Berkeley DB left unwritten below
  // the end is a hole that a later write must fill.
  const std::uint64_t from = room == 0 ? 0 : room, to = end + room_ahead;
  if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from), static_cast<off_t>(to - from)) == 0) {
    room = to;
    return;
  }
  const int e = errno;
  if (e == EOPNOTSUPP || e == ENOSYS) {  // a file system that cannot reserve: writes are not reserved
    room = ~std::uint64_t{0};
    return;
  }
  fail_writes("database " + dir_ + ": cannot reserve room for its files to grow: " + std::strerror(e));
}

void bdb_env::reserve_log() {
  DB_LOG_STAT* st = nullptr;
  if (env_->log_stat(&st, 0) != 0) return;
  const std::uint32_t file = st->st_cur_file;
  std::free(st);
  std::lock_guard<std::mutex> g(room_mutex_);
  if (file == log_room_file_) return;
  char name[32];
  std::snprintf(name, sizeof name, "/log.%010u", file);
  const int fd = ::open((dir_ + name).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  const int rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, log_file_max_);
  const int e = errno;
  ::close(fd);
  if (rc == 0 || e == EOPNOTSUPP || e == ENOSYS) {
    log_room_file_ = file;
    return;
  }
  fail_writes("database " + dir_ + ": cannot reserve room for its log: " + std::strerror(e));
}

void bdb_env::refuse_if_broken() const {
  if (broken_.load(std::memory_order_acquire) == not_broken && write_failed_.load(std::memory_order_acquire) &&
      wrote_.load(std::memory_order_acquire)) {
    std::string said = take_messages();
    break_for_writes(after_failed_write("database " + dir_ + ": a write to its files failed" + berkeley_db_said(said)));
  }
  switch (broken_.load(std::memory_order_acquire)) {
    case not_broken: return;
    case write_fault: throw write_failed(broken_message_);
    default: throw store_error(broken_message_);
  }
}

bdb_env::bdb_env(const std::string& dir, std::uint64_t cache_bytes, bool multiversion, std::uint32_t max_locks,
                 bool map_files, const replication_options* repl, std::uint32_t page_file_slot)
    : dir_(dir), cache_bytes_(cache_bytes), multiversion_(multiversion), max_locks_(max_locks), map_files_(map_files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw store_error("database " + dir + ": cannot create the directory: " + ec.message());
  // The layout: a page file when there is one, or when the environment is
  // new and asks for one (made before anything else, so that it is there
  // whenever a log record needs it).
  page_file_ = page_file::open(dir);
  if (!page_file_ && page_file_slot && !std::filesystem::exists(dir + "/pages.db", ec) &&
      !std::filesystem::exists(dir + "/meta.db", ec)) {
    // A record's head is its record_header; page_file_slot - head is the
    // page size.
    constexpr auto head = static_cast<std::uint32_t>(sizeof(record_header));
    page_file_ = page_file::create(dir, head, page_file_slot > head ? page_file_slot - head : 0);
    if (!sync_directory(dir))
      throw store_error("database " + dir + ": cannot sync the directory after creating " + page_file::file_name +
                        ": " + std::strerror(errno));
  }
  if (page_file_) {
    if (multiversion || repl)
      throw invalid_argument("database " + dir + " keeps its pages in " + page_file::file_name +
                             " (the layout an embedded store gives a new database, qs::options::page_file): " +
                             (repl ? "a replication group" : "qs-pageserver") +
                             " serves only databases whose pages are in pages.db; to move it there, with no "
                             "program holding it: qs-inspect " +
                             dir + " dump > FILE, then QS_PAGE_FILE=0 qs-inspect NEWDIR load FILE, and serve NEWDIR");
    page_log_ = std::make_unique<page_log>(*page_file_);
    fresh_ = std::make_unique<fresh_slots>(*page_file_);
  }
  if (repl) {
    // A site of a group: its databases open when it is master. Berkeley
    // DB's elections can write past their tally (allocation_slack.hpp).
    install_allocation_slack();
    repl_ = std::make_unique<replication>(*repl);
    bool fresh = true;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().filename().string().starts_with("log.")) fresh = false;
    wrote_.store(true, std::memory_order_relaxed);
    try {
      open_environment(true);
      repl_->start(*env_, fresh, std::chrono::minutes(1));
    } catch (...) {
      close_handles();
      throw;
    }
    return;
  }
  // Recovery (which writes) only when the last close was not clean.
  const bool closed_cleanly = std::filesystem::exists(marker_path(), ec);
  // Until something is written, a cleanly closed environment is read without
  // transactions or a log: a transactional environment logs its own opening
  // (and that record would reach the log file at close).
  wrote_.store(!closed_cleanly, std::memory_order_relaxed);
  try {
    open_environment(!closed_cleanly);
    open_data_files();
  } catch (const store_error& e) {
    close_handles();
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY) && !closed_cleanly)
      throw store_error(std::string(e.what()) +
                        "; the database was not closed cleanly and its recovery writes, but it is on read-only "
                        "media: open it once where it can be written");
    // Recovery writes: on a full disk it fails with whatever Berkeley DB met
    // first ("run database recovery", "file size not a multiple of the
    // pagesize"). Say what is wrong.
    const std::string full = free_space_note(dir, std::uint64_t{32} << 20);
    if (!full.empty())
      throw write_failed(std::string(e.what()) + full +
                         ": opening it needs room to write (recovery replays its log); make room and open it again. "
                         "Nothing committed is lost");
    throw;
  } catch (...) {
    close_handles();
    throw;
  }
}

void bdb_env::open_environment(bool recover) {
  const bool transactional = wrote_.load(std::memory_order_relaxed);
  std::unique_ptr<DbEnv> prepared;
  if (transactional && !recover) prepared = take_prepared();
  if (prepared) {
    env_ = std::move(prepared);
    prepared_taken_.fetch_add(1, std::memory_order_relaxed);
  } else {
    std::uint32_t flags = 0;
    env_ = configured_environment(transactional, recover, flags);
    if (page_file_) page_file_->sync_each_write(recover);
    const int opened = env_->open(dir_.c_str(), flags, 0600);
    if (page_file_) page_file_->sync_each_write(false);
    check(opened, "open environment");
  }
  if (transactional) {
    // A replicated site keeps its log files until replication::archive
    // removes them: removing them at once would make every replica that
    // falls behind start again from nothing.
    if (!repl_) check(env_->log_set_config(DB_LOG_AUTO_REMOVE, 1), "log_set_config");
    check(env_->get_lg_max(&log_file_max_), "get_lg_max");
    if (page_file_) checkpointed_at_ = log_position();
  }
}

std::unique_ptr<DbEnv> bdb_env::configured_environment(bool transactional, bool recover, std::uint32_t& flags) {
  auto env = std::make_unique<DbEnv>(DB_CXX_NO_EXCEPTIONS);
  env->set_app_private(this);
  env->set_errcall(&bdb_env::collect);
  // Reads alone go through a small cache (setting a cache up costs about
  // 45 us per MiB, paid again when the first write reopens the environment).
  const std::uint64_t cache = transactional ? cache_bytes_ : std::min<std::uint64_t>(cache_bytes_, 16u << 20);
  check(env->set_cachesize(static_cast<std::uint32_t>(cache >> 30),
                           static_cast<std::uint32_t>(cache & ((1u << 30) - 1)), 1),
        "set_cachesize");
  flags = DB_CREATE | DB_INIT_MPOOL | DB_THREAD | DB_PRIVATE;
  if (repl_) {
    repl_->configure(*env, &bdb_env::on_event, &bdb_env::on_message);
    flags |= DB_INIT_REP;
  }
  if (transactional) {
    check(env->set_lk_max_locks(max_locks_), "set_lk_max_locks");
    check(env->set_lk_max_objects(max_locks_), "set_lk_max_objects");
    check(env->set_lk_max_lockers(20000), "set_lk_max_lockers");
    // The lock tables start small and grow up to those limits: setting them
    // up whole costs milliseconds at every open.
    check(env->set_memory_init(DB_MEM_LOCK, 2000), "set_memory_init");
    check(env->set_memory_init(DB_MEM_LOCKOBJECT, 2000), "set_memory_init");
    check(env->set_memory_init(DB_MEM_LOCKER, 200), "set_memory_init");
    check(env->set_lk_tablesize(4096), "set_lk_tablesize");
    // Log files of 8 MiB: recovery zero-fills the rest of the current one,
    // so a small database does not carry a large log.
    check(env->set_lg_bsize(2u << 20), "set_lg_bsize");
    check(env->set_lg_max(8u << 20), "set_lg_max");
    check(env->set_lk_detect(DB_LOCK_DEFAULT), "set_lk_detect");
    // A replica's internal init opens the files it receives, which an
    // environment's DB_MULTIVERSION refuses: a replicated site opens each
    // database multiversion instead (open_flags).
    if (multiversion_ && !repl_) check(env->set_flags(DB_MULTIVERSION, 1), "set_flags DB_MULTIVERSION");
    flags |= DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | (recover ? DB_RECOVER : 0);
  } else if (map_files_) {
    // Read-only files under 4 GiB are mapped (the header): Berkeley DB maps
    // a file smaller than this size, and computes a mapped page's offset in
    // 32 bits.
    check(env->set_mp_mmapsize(max_mapped_file_bytes), "set_mp_mmapsize");
  } else {
    check(env->set_flags(DB_NOMMAP, 1), "set_flags DB_NOMMAP");
  }
  if (page_file_) {
    // Recovery replays page writes into the file; Berkeley DB checkpoints
    // when it is done, with no hook before: each write is synced.
    check(env->set_app_dispatch([](DbEnv* e, Dbt* record, DbLsn* lsn, db_recops op) {
      return dispatch(e, record, lsn, static_cast<int>(op));
    }),
          "set_app_dispatch");
  }
  return env;
}

void bdb_env::prepare_to_write() {
  if (repl_ || wrote_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard<std::mutex> g(prepared_mutex_);
    if (prepared_ || prepare_started_) return;
    prepare_started_ = true;
  }
  // Opening reads the log's last file to find its end, and sets the cache
  // and the lock tables up: all of it reads, and nothing reaches the files
  // until a transaction writes (about_to_write removes the mark first).
  std::unique_ptr<DbEnv> env;
  try {
    std::uint32_t flags = 0;
    env = configured_environment(true, false, flags);
    if (env->open(dir_.c_str(), flags, 0600) != 0) env.reset();
  } catch (const std::exception&) {
    env.reset();
  }
  // about_to_write() opens its own, and says why it cannot.
  if (!env) take_messages();
  std::lock_guard<std::mutex> g(prepared_mutex_);
  prepared_ = std::move(env);
}

std::unique_ptr<DbEnv> bdb_env::take_prepared() {
  std::lock_guard<std::mutex> g(prepared_mutex_);
  prepare_started_ = false;
  return std::move(prepared_);
}

void bdb_env::close_handles() {
  applier_.reset();
  {
    std::lock_guard<std::mutex> g(index_mutex_);
    for (auto& i : indexes_)
      if (i->db) {
        i->db->close(0);
        i->db.reset();
      }
  }
  close_data_files();
  if (env_) env_->close(0);
  env_.reset();
}

int bdb_env::open_db(std::unique_ptr<Db>& db, const char* file, std::uint32_t db_flags, std::uint32_t page_size,
                     DbTxn* t) {
  db = std::make_unique<Db>(env_.get(), DB_CXX_NO_EXCEPTIONS);
  if (db_flags) check(db->set_flags(db_flags), std::string("set_flags of ") + file);
  if (page_size) check(db->set_pagesize(page_size), std::string("set_pagesize of ") + file);
  // A replica's handles read in transactions (their locks keep what one
  // reads consistent with the master's transactions being applied).
  const bool replica = replica_reads_.load(std::memory_order_acquire);
  bool writable = wrote_.load(std::memory_order_relaxed) && !replica;
  int rc = writable ? db->open(t, file, nullptr, DB_BTREE,
                               DB_CREATE | DB_THREAD | (t ? 0 : DB_AUTO_COMMIT) | open_flags(), 0600)
                    : db->open(nullptr, file, nullptr, DB_BTREE,
                               DB_RDONLY | DB_THREAD | (replica ? DB_AUTO_COMMIT : 0) | open_flags(), 0600);
  if (rc != 0) {
    db->close(0);
    db.reset();
  }
  return rc;
}

void bdb_env::open_data_files() {
  // 16 KiB B-tree pages keep a record's 1 KiB pieces on-page (items up to
  // 4 KiB are), where a partial put is logged as its changed bytes; a bulk
  // read needs a buffer of a B-tree page at least.
  check(open_db(pages_, "pages.db", 0, bdb_page_bytes, nullptr), "open pages.db");
  if (wrote_.load(std::memory_order_relaxed) && !page_file_ && !repl_) {
    // warm_records' own handle: its dirty reads and cursors do not queue
    // on pages_'s.
    warm_db_ = std::make_unique<Db>(env_.get(), DB_CXX_NO_EXCEPTIONS);
    if (warm_db_->open(nullptr, "pages.db", nullptr, DB_BTREE,
                       DB_RDONLY | DB_THREAD | DB_READ_UNCOMMITTED | DB_AUTO_COMMIT, 0600) != 0) {
      warm_db_->close(0);
      warm_db_.reset();  // the commit goes without warming
    }
  }
  // Metadata and indexes have no checksums of their own (page records do):
  // Berkeley DB checks theirs on every B-tree page it reads.
  check(open_db(meta_, "meta.db", DB_CHKSUM, 0, nullptr), "open meta.db");
  if (repl_) open_gate();
}

void bdb_env::open_gate() {
  const bool replica = replica_reads();
  gate_ = std::make_unique<Db>(env_.get(), DB_CXX_NO_EXCEPTIONS);
  // Queue databases are not multiversion (open_flags is not added).
  int rc = gate_->set_re_len(sizeof(std::uint64_t));
  if (rc == 0)
    rc = gate_->open(nullptr, "gate.db", nullptr, DB_QUEUE,
                     (replica ? DB_RDONLY : DB_CREATE) | DB_THREAD | DB_AUTO_COMMIT, 0600);
  if (rc != 0) {
    gate_->close(0);
    gate_.reset();
    check(rc, replica ? "open gate.db (made by the master; not here yet)" : "open gate.db");
  }
  if (replica) return;
  DbTxn* t = begin();
  try {
    for (std::uint32_t lane = 1; lane <= replica_gate_lanes; ++lane) {
      rc = read_lane(t, lane);
      if (rc == DB_NOTFOUND || rc == DB_KEYEMPTY) rc = write_lane(t, lane);
      check(rc, "make gate.db's lanes");
    }
  } catch (...) {
    abort(t);
    throw;
  }
  commit(t, true);
}

int bdb_env::read_lane(DbTxn* t, std::uint32_t lane) {
  db_recno_t recno = lane;
  Dbt key(&recno, sizeof recno);
  std::uint64_t v = 0;
  Dbt data(&v, sizeof v);
  data.set_ulen(sizeof v);
  data.set_flags(DB_DBT_USERMEM);
  return gate_->get(t, &key, &data, 0);
}

int bdb_env::write_lane(DbTxn* t, std::uint32_t lane) {
  db_recno_t recno = lane;
  Dbt key(&recno, sizeof recno);
  std::uint64_t v = 0;
  Dbt data(&v, sizeof v);
  return gate_->put(t, &key, &data, 0);
}

void bdb_env::hold_replica_gate(DbTxn* t) {
  if (!gate_)
    throw store_error("database " + dir_ + ": gate.db is not open (a replica's read-only transactions need it)");
  for (std::uint32_t lane = 1; lane <= replica_gate_lanes; ++lane) {
    int rc = read_lane(t, lane);
    if (rc == DB_NOTFOUND || rc == DB_KEYEMPTY)
      throw store_error("database " + dir_ + ": gate.db has no lane " + std::to_string(lane) +
                        " (the master makes them all when it opens the database)");
    check(rc, "read gate.db");
  }
}

void bdb_env::wrote_in(DbTxn* t) {
  if (!t || !gate_ || replica_reads()) return;
  std::lock_guard<std::mutex> g(gate_mutex_);
  if (std::find(written_.begin(), written_.end(), t) == written_.end()) written_.push_back(t);
}

bool bdb_env::take_written(DbTxn* t) {
  if (!repl_) return false;
  std::lock_guard<std::mutex> g(gate_mutex_);
  auto it = std::find(written_.begin(), written_.end(), t);
  if (it == written_.end()) return false;
  written_.erase(it);
  return true;
}

bdb_env::~bdb_env() {
  take_prepared().reset();  // unused: what its close writes is its transaction ids' record
  applier_.reset();         // what a durable commit left to write, written
  if (!env_) return;        // reopening for writing failed; the handles are closed
  if (broken_.load(std::memory_order_acquire) != not_broken) {
    // A write failed: nothing more may reach the files (Berkeley DB, told
    // to panic, writes nothing); no mark, so the next open recovers.
    for (auto& i : indexes_)
      if (i->db) i->db->close(DB_NOSYNC);
    if (gate_) gate_->close(DB_NOSYNC);
    if (warm_db_) warm_db_->close(DB_NOSYNC);
    if (meta_) meta_->close(DB_NOSYNC);
    if (pages_) pages_->close(DB_NOSYNC);
    env_->close(0);
    return;
  }
  const bool wrote = wrote_.load(std::memory_order_acquire);
  int rc = 0;
  for (auto& i : indexes_) rc |= i->db->close(0);
  if (gate_) rc |= gate_->close(0);
  if (warm_db_) rc |= warm_db_->close(0);
  if (meta_) rc |= meta_->close(0);
  if (pages_) rc |= pages_->close(0);
  // Without writes since the open, nothing changed: the files stay as they
  // were, the mark included. A replica's checkpoints follow its master's.
  if (wrote && (!repl_ || repl_->role() == replication::role_kind::master)) rc |= checkpoint(0);
  rc |= env_->close(0);
  // A replicated site recovers at every open: no mark.
  if (rc == 0 && wrote && !repl_) {
    // Every page is in the data files and the log is flushed: the next open
    // needs no recovery.
    const std::string marker = marker_path();
    int fd = ::open(marker.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
      bool ok = ::fsync(fd) == 0;
      ::close(fd);
      if (!ok || !sync_directory(dir_)) ::unlink(marker.c_str());
    }
  }
}

std::string bdb_env::marker_path() const { return dir_ + "/" + closed_cleanly_file; }

namespace {

// Berkeley DB's backup hands each file's bytes to these (set_backup_callbacks):
// qs writes them, counting them for the backup's progress.
struct backup_file {
  int fd;
  std::string path;
};

int backup_open(DbEnv*, const char* name, const char* target, void** handle) {
  std::string path = std::string(target) + "/" + name;
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  *handle = new backup_file{fd, std::move(path)};
  return 0;
}

int backup_close(DbEnv*, const char*, void* handle) {
  auto* f = static_cast<backup_file*>(handle);
  int rc = ::fsync(f->fd) == 0 ? 0 : errno;
  if (::close(f->fd) != 0 && rc == 0) rc = errno;
  delete f;
  return rc;
}

}  // namespace

int bdb_env::backup_write(DbEnv* env, std::uint32_t gigabytes, std::uint32_t bytes, std::uint32_t size,
                          std::uint8_t* buf, void* handle) {
  auto* f = static_cast<backup_file*>(handle);
  auto offset = static_cast<off_t>((std::uint64_t{gigabytes} << 30) + bytes);
  for (std::uint32_t done = 0; done < size;) {
    ssize_t n = ::pwrite(f->fd, buf + done, size - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::uint32_t>(n);
  }
  auto* self = static_cast<bdb_env*>(env->get_app_private());
  if (self && self->copying_) {
    self->copying_->done += size;
    if (*self->copying_->progress)
      (*self->copying_->progress)(std::min(self->copying_->done, self->copying_->total), self->copying_->total);
  }
  return 0;
}

void bdb_env::backup(const std::string& target, const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  about_to_write();
  std::error_code ec;
  if (std::filesystem::exists(target, ec) && !std::filesystem::is_empty(target, ec))
    throw invalid_argument("database " + dir_ + ": the backup's directory " + target +
                           " is not empty (a backup goes into a new directory)");
  std::lock_guard<std::mutex> one(backup_mutex_);  // the copy's callbacks are the environment's
  std::filesystem::create_directories(target, ec);
  if (ec)
    throw store_error("database " + dir_ + ": cannot create the backup's directory " + target + ": " + ec.message());
  // What there is to copy: the data files and the log, as they are now.
  backup_progress counting{&progress, 0, 0};
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec))
    if (e.is_regular_file(ec)) counting.total += e.file_size(ec);
  copying_ = &counting;
  // Bulk transactions log their new pages meanwhile (fresh_slots.hpp): a
  // record written in place once the file is copied would be in neither
  // the copy nor its log.
  if (fresh_) fresh_->pause(true);
  // The copy's recovery needs every log file from the first data file
  // copied on: none is removed until the copy is made. Every commit that
  // returned is in a log file (commits that do not flush leave theirs in
  // the log buffer), so the copy has it.
  int rc = env_->set_backup_callbacks(backup_open, backup_write, backup_close);
  if (rc == 0) rc = env_->log_set_config(DB_LOG_AUTO_REMOVE, 0);
  if (rc == 0) rc = env_->log_flush(nullptr);
  // The page file first: it holds at least what the last checkpoint needs,
  // and the log files kept from now on hold every page write after that,
  // which the copy's recovery writes again (a slot copied while a commit
  // wrote it included).
  if (rc == 0 && page_file_) rc = copy_page_file(target);
  if (rc == 0) rc = env_->backup(target.c_str(), DB_CREATE);
  copying_ = nullptr;
  if (fresh_) fresh_->pause(false);
  check(env_->log_set_config(DB_LOG_AUTO_REMOVE, 1), "log_set_config");
  check(rc, "back up into " + target);
  // The data files were read while commits went on: replaying every log
  // record copied leaves the state of the last commit copied.
  {
    DbEnv copy(DB_CXX_NO_EXCEPTIONS);
    // The copy's page file takes the page writes its recovery replays, each
    // synced (Berkeley DB checkpoints when recovery ends).
    struct replaying {
      std::unique_ptr<page_file> file;
      std::string said;
    } into;
    int r = 0;
    if (page_file_) {
      into.file = page_file::open(target);
      if (!into.file) throw store_error("database " + dir_ + ": the backup in " + target + " has no page file");
      into.file->sync_each_write(true);
      copy.set_app_private(&into);
      r = copy.set_app_dispatch([](DbEnv* e, Dbt* record, DbLsn* lsn, db_recops op) {
        auto* to = static_cast<replaying*>(e->get_app_private());
        return replay_page_write(to->file.get(), record, lsn, static_cast<int>(op), to->said);
      });
    }
    if (r == 0)
      r = copy.open(
          target.c_str(),
          DB_CREATE | DB_INIT_MPOOL | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_PRIVATE | DB_RECOVER_FATAL, 0600);
    if (r == 0) r = copy.log_set_config(DB_LOG_AUTO_REMOVE, 1);  // the checkpoint drops the logs it no longer needs
    if (r == 0) r = copy.txn_checkpoint(0, 0, DB_FORCE);
    int c = copy.close(0);
    if (r == 0) r = c;
    if (r == 0 && into.file) r = into.file->sync();
    if (r != 0)
      throw store_error("database " + dir_ + ": recovering the backup in " + target + " failed: " + DbEnv::strerror(r) +
                        (into.said.empty() ? "" : " (" + into.said + ")"));
  }
  // What makes the directory a database; then consistent files and a
  // flushed log: what a clean close leaves.
  const std::string lock = target + "/" + database_lock_file;
  int fd = ::open(lock.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) throw store_error("database " + dir_ + ": cannot create " + lock + ": " + std::strerror(errno));
  ::close(fd);
  const std::string marker = target + "/" + closed_cleanly_file;
  fd = ::open(marker.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok || !sync_directory(target))
    throw store_error("database " + dir_ + ": cannot mark the backup in " + target +
                      " as closed cleanly: " + std::strerror(errno));
}

void bdb_env::about_to_write() {
  if (wrote_.load(std::memory_order_acquire)) {
    refuse_if_broken();
    return;
  }
  std::lock_guard<std::mutex> g(writing_mutex_);
  if (wrote_.load(std::memory_order_relaxed)) return;
  refuse_if_broken();
  // From now on a crash needs recovery: the mark goes before anything of
  // this open can reach the files.
  const std::string marker = marker_path();
  if (::unlink(marker.c_str()) != 0 && errno != ENOENT) {
    const int e = errno;
    throw store_error("database " + dir_ + ": cannot remove " + marker + ": " + std::strerror(e) +
                      (e == EROFS || e == EACCES
                           ? " (the database is on read-only media, or this user may not write its directory: it "
                             "can be read, not written)"
                           : ""));
  }
  if (!sync_directory(dir_))
    throw store_error("database " + dir_ + ": cannot sync the directory: " + std::strerror(errno));
  // The read-only environment gives way to a transactional one (no recovery:
  // the files are consistent).
  close_handles();
  pages_room_ = meta_room_ = 0;
  wrote_.store(true, std::memory_order_release);
  try {
    open_environment(false);
    open_data_files();
    std::lock_guard<std::mutex> gi(index_mutex_);
    for (auto& ix : indexes_) {
      ix->room = 0;
      check(open_db(ix->db, ("index." + ix->name + ".db").c_str(), DB_CHKSUM | (ix->unique ? 0 : DB_DUP | DB_DUPSORT),
                    0, nullptr),
            "open index " + ix->name);
    }
  } catch (const std::exception& e) {
    // Nothing was written; every later call says why it cannot go on.
    close_handles();
    wrote_.store(false, std::memory_order_release);
    {
      std::lock_guard<std::mutex> gb(broken_mutex_);
      broken_message_ = "database " + dir_ + ": the environment could not be reopened for writing (" + e.what() +
                        "); close the database and open it again";
      broken_.store(reopen_failed, std::memory_order_release);
    }
    throw;
  }
}

DbTxn* bdb_env::reading(DbTxn* t, std::uint32_t& flags) const {
  refuse_if_broken();
  if (wrote_.load(std::memory_order_acquire)) return t;
  flags &= ~static_cast<std::uint32_t>(DB_READ_COMMITTED | DB_READ_UNCOMMITTED | DB_RMW);
  return nullptr;
}

DbTxn* bdb_env::begin(txn_kind kind) {
  refuse_if_broken();
  DbTxn* t = nullptr;
  // In the page-file layout a bulk transaction writes its new pages' records
  // in place (fresh_slots.hpp). Berkeley DB's own databases take its writes
  // as a plain transaction's: never DB_TXN_BULK, whose transactions, killed,
  // left pages.db environments that Berkeley DB 5.3's recovery crashed on
  // (the torture under load; docs/performance.md).
  const bool in_place = kind == txn_kind::bulk && fresh_;
  const std::uint32_t flags = kind == txn_kind::snapshot ? DB_TXN_SNAPSHOT : 0;
  check(env_->txn_begin(nullptr, &t, flags), "begin transaction");
  if (in_place) fresh_->begin(t);
  return t;
}

void bdb_env::commit(DbTxn* t, bool durable) {
  // The last durable commit's page writes reach the file first: one
  // commit's at most are in flight (background_apply.hpp).
  if (applier_) applier_->wait();
  const bool gated = take_written(t);
  try {
    refuse_if_broken();
    reserve_log();
  } catch (...) {
    forget_writes(t);
    t->abort();
    throw;
  }
  if (fresh_ && fresh_->wrote(t)) {
    // The records it wrote in place must be on the disk before its commit
    // record can be. A failed write or sync breaks the environment: the
    // file may have lost writes of earlier commits too, which only recovery
    // makes again.
    std::uint64_t failed = 0;
    if (int e = fresh_->settle(failed)) {
      forget_writes(t);
      t->abort();
      fail_in_place(e, failed);
    }
    if (int e = page_file_->sync()) {
      forget_writes(t);
      t->abort();
      fail_writes("database " + dir_ + ": syncing " + page_file_->path() + " before a commit failed (" +
                  std::strerror(e) + "); the transaction did not commit");
    }
    pause_point("page_file.in_place_synced");
  }
  if (gated) {
    // Its gate lane, its last lock (hold_replica_gate).
    try {
      check(write_lane(t, 1 + t->id() % replica_gate_lanes), "write gate.db");
    } catch (...) {
      t->abort();
      throw;
    }
  }
  if (repl_) replication::clear_unacknowledged();
  const int committed = t->commit(durable ? DB_TXN_SYNC : DB_TXN_WRITE_NOSYNC);
  // Whether or not it did, its slots written in place are no longer fresh.
  if (fresh_) fresh_->committed(t);
  if (committed != 0 && page_log_) page_log_->forget(t);
  check(committed, "commit");
  const bool unacknowledged = repl_ && replication::took_unacknowledged();
  if (write_failed_.load(std::memory_order_acquire)) {
    // Berkeley DB said a write failed while the commit was written, and
    // returned 0 all the same: its commit record may be on no disk.
    if (page_log_) page_log_->forget(t);
    std::string said = take_messages();
    fail_writes("database " + dir_ + ": a write failed while the commit was written" + berkeley_db_said(said) +
                "; the transaction may or may not have committed (look after reopening)");
  }
  bool checkpoint_later = false;
  if (page_log_ && page_log_->wrote(t)) {
    // The commit is in the log: its page writes go to the page file. One
    // that fails leaves them to recovery (the environment breaks, so that
    // no checkpoint passes them).
    pause_point("page_file.committed");
    if (!durable) {
      // The log may not be on the disk: the file must not get ahead of it
      // (an operating-system crash must not leave the file holding a
      // transaction the log lost). The writes wait, laid over every read,
      // until the log is flushed for another reason, or they grow large.
      page_log_->defer(t);
      if (page_log_->deferred_bytes() >= deferred_max_bytes) apply_deferred("a commit");
    } else {
      // The durable commit flushed the log: its writes join those deferred
      // before it, and a thread of their own writes them all to the file,
      // in commit order, while the program goes on; reads lay them over
      // the file meanwhile.
      page_log_->defer(t);
      if (!applier_)
        applier_ = std::make_unique<background_apply>([this] { apply_in_background(); },
                                                      [this] { checkpoint_after_commit(); });
      applier_->kick();
      checkpoint_later = true;
    }
  }
  // Bounds recovery time and lets old log files be removed; after a
  // durable commit's page writes, the applier makes it, once they are in
  // the file (it syncs the file: not on the commit's way).
  if (!checkpoint_later) checkpoint_after_commit();
  if (unacknowledged) {
    const replication_options& o = repl_->options();
    throw commit_unknown("database " + dir_ + ": the commit stands on the master (" + o.local.text() +
                         ") but the replicas did not acknowledge it within " + std::to_string(o.ack_timeout.count()) +
                         " ms as --repl-ack " + ack_policy_name(o.ack) +
                         " asks: it is lost if this master fails before they receive it");
  }
}

void bdb_env::on_event(DbEnv* env, std::uint32_t which, void* info) {
  auto* self = static_cast<bdb_env*>(env->get_app_private());
  if (self && self->repl_) self->repl_->event(which, info);
}

void bdb_env::on_message(DbEnv* env, DbChannel*, Dbt* messages, std::uint32_t n, std::uint32_t) {
  auto* self = static_cast<bdb_env*>(env->get_app_private());
  if (self && self->repl_) self->repl_->message(messages, n);
}

int bdb_env::lock_object(DbTxn* t, std::string_view object, int mode, std::uint32_t flags) {
  std::string padded(object);
  const std::size_t pad = (4 - (padded.size() + 1) % 4) % 4;
  padded.append(pad, '\0');
  padded.push_back(static_cast<char>(pad));
  Dbt obj = dbt(padded);
  DbLock lock;
  return env_->lock_get(t->id(), flags, &obj, static_cast<db_lockmode_t>(mode), &lock);
}

std::uint32_t bdb_env::open_flags() const {
  // A replica's handles are not multiversion: Berkeley DB 5.3 takes no
  // snapshot on a replication client, and its reads there lock.
  return multiversion_ && repl_ && !replica_reads() ? DB_MULTIVERSION : 0;
}

void bdb_env::open_as_master() {
  std::lock_guard<std::mutex> g(writing_mutex_);
  const bool was_replica = replica_reads_.load(std::memory_order_acquire);
  if (pages_ && meta_ && !was_replica) return;
  close_data_files(was_replica);  // a replica's handles are read-only
  replica_reads_.store(false, std::memory_order_release);
  try {
    open_data_files();
  } catch (...) {
    close_data_files();  // opened again at the next call (another thread's lock, say)
    throw;
  }
}

void bdb_env::open_as_replica() {
  std::lock_guard<std::mutex> g(writing_mutex_);
  close_data_files(true);
  replica_reads_.store(true, std::memory_order_release);
  handles_dead_.store(false, std::memory_order_release);
  open_data_files();
}

void bdb_env::close_data_files(bool and_indexes) {
  if (and_indexes) {
    std::lock_guard<std::mutex> gi(index_mutex_);
    for (auto& i : indexes_)
      if (i->db) i->db->close(0);
    indexes_.clear();
  }
  if (gate_) gate_->close(0);
  if (warm_db_) warm_db_->close(0);
  warm_db_.reset();
  if (meta_) meta_->close(0);
  if (pages_) pages_->close(0);
  gate_.reset();
  meta_.reset();
  pages_.reset();
}

void bdb_env::abort(DbTxn* t) {
  take_written(t);
  forget_writes(t);
  if (broken_.load(std::memory_order_acquire) != not_broken) {
    t->abort();  // Berkeley DB refuses it, and frees the handle
    return;
  }
  check(t->abort(), "abort");
}

void bdb_env::forget_writes(DbTxn* t) {
  if (page_log_) page_log_->forget(t);
  if (fresh_) fresh_->forget(t);
}

std::uint32_t bdb_env::read_record(DbTxn* t, std::uint64_t page, void* buf, std::uint32_t cap, std::uint32_t flags,
                                   bool part) {
  if (page_file_) {
    // As pages.db's reads (reading()): a failed write may have left the
    // file behind the log, and the writes that were to follow dropped.
    refuse_if_broken();
    const std::uint32_t slot = page_file_->slot_bytes();
    if (!part && cap < slot)
      throw corrupt_page(page, "database " + dir_ + ": page " + std::to_string(page) + " record has more than the " +
                                   std::to_string(cap) + " bytes expected");
    return read_slot(t, page, buf, std::min(cap, slot));
  }
  const std::string what = "read page " + std::to_string(page);
  DbTxn* rt = reading(t, flags);
  const std::uint32_t get_flags = flags & DB_RMW;
  Dbc* cursor = nullptr;
  check(pages_->cursor(rt, &cursor, flags & ~static_cast<std::uint32_t>(DB_RMW)), "open cursor");
  cursor_closer close_it{cursor};
  piece_key first(page, 0);
  unsigned char kbuf[16];
  std::memcpy(kbuf, first.bytes, sizeof first.bytes);
  Dbt key(kbuf, sizeof first.bytes);
  key.set_ulen(sizeof kbuf);
  key.set_flags(DB_DBT_USERMEM);
  // At most one byte more than a piece, whatever the item: the item after
  // the last piece is the page's mapping object (or the next page's first
  // piece), of any size, and only its key says it is not this record's.
  unsigned char piece[piece_bytes + 1];
  Dbt data(piece, sizeof piece);
  data.set_ulen(sizeof piece);
  data.set_flags(DB_DBT_USERMEM | DB_DBT_PARTIAL);
  data.set_doff(0);
  data.set_dlen(sizeof piece);
  auto damaged = [&](const std::string& how) {
    return corrupt_page(page, "database " + dir_ + ": page " + std::to_string(page) + " record " + how);
  };
  std::uint32_t size = 0;
  unsigned next = 0;
  for (std::uint32_t op = DB_SET_RANGE;; op = DB_NEXT) {
    int rc = cursor->get(&key, &data, op | get_flags);
    if (rc == DB_NOTFOUND) break;
    if (rc == DB_BUFFER_SMALL) throw damaged("has a piece of " + std::to_string(data.get_size()) + " bytes");
    check(rc, what);
    if (key.get_size() != 9 || std::memcmp(kbuf, first.bytes, 8) != 0 || kbuf[8] >= max_pieces) break;
    if (data.get_size() > piece_bytes)
      throw damaged("has a piece of more than " + std::to_string(piece_bytes) + " bytes (piece " +
                    std::to_string(kbuf[8]) + ")");
    if (kbuf[8] != next || (next > 0 && size % piece_bytes != 0))
      throw damaged("is missing piece " + std::to_string(next));
    std::uint32_t n = data.get_size();
    if (size + n > cap) {
      if (part) {
        std::memcpy(static_cast<char*>(buf) + size, piece, cap - size);
        return cap;
      }
      throw damaged("has more than the " + std::to_string(cap) + " bytes expected");
    }
    std::memcpy(static_cast<char*>(buf) + size, piece, n);
    size += n;
    ++next;
    if (part && size == cap) break;
  }
  return size;
}

void bdb_env::put_record(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len) {
  if (page_file_) {
    if (len != page_file_->slot_bytes())
      throw invalid_argument("database " + dir_ + ": a record of " + std::to_string(len) + " bytes for page " +
                             std::to_string(page) + "; the page file's slots hold " +
                             std::to_string(page_file_->slot_bytes()));
    const page_log::piece whole{0, len, rec};
    write_slot(t, page, {&whole, 1});
    return;
  }
  about_to_write();
  wrote_in(t);
  reserve_room(*pages_, pages_room_);
  if (len > max_pieces * piece_bytes)
    throw invalid_argument("database " + dir_ + ": a record of " + std::to_string(len) + " bytes is too long");
  for (std::uint32_t at = 0, k = 0; at < len; at += piece_bytes, ++k) {
    piece_key pk(page, k);
    Dbt key(pk.bytes, sizeof pk.bytes);
    Dbt data(const_cast<char*>(static_cast<const char*>(rec) + at), std::min(piece_bytes, len - at));
    check(pages_->put(t, &key, &data, t ? 0 : DB_AUTO_COMMIT), "write page " + std::to_string(page));
  }
}

void bdb_env::warm_records(const std::vector<std::uint64_t>& pages, const std::atomic<std::size_t>& passed,
                           const std::atomic<bool>& stop) {
  if (!warm_db_ || !transactional()) return;
  // Dirty reads in transactions that wait for no lock: a B-tree page the
  // writer holds is in the cache already, and is skipped.
  DbTxn* t = nullptr;
  Dbc* cursor = nullptr;
  auto end = [&] {
    if (cursor) cursor->close();
    if (t) t->abort();
    cursor = nullptr;
    t = nullptr;
  };
  for (std::size_t i = 0; i < pages.size() && !stop.load(std::memory_order_relaxed); ++i) {
    // Pages the writer has started on are in the cache; the next one is
    // skipped too, since the writer reaches it about as soon (six
    // alternating pairs of the 1% update: its commit 137-157 ms skipping
    // it, 140-155 reading it).
    i = std::max(i, passed.load(std::memory_order_relaxed) + 1);
    if (i >= pages.size()) break;
    if (!t) {
      if (env_->txn_begin(nullptr, &t, DB_TXN_NOWAIT | DB_READ_UNCOMMITTED) != 0) t = nullptr;
      if (!t || warm_db_->cursor(t, &cursor, DB_READ_UNCOMMITTED) != 0) return end();
    }
    // The record's first piece, and what follows its last (the next key
    // past the record's pieces): the one or two leaves it lies on.
    piece_key first(pages[i], 0), after(pages[i], max_pieces - 1);
    for (piece_key* k : {&first, &after}) {
      Dbt key(k->bytes, sizeof k->bytes);
      key.set_ulen(sizeof k->bytes);
      key.set_flags(DB_DBT_USERMEM);
      Dbt data;
      data.set_flags(DB_DBT_PARTIAL);  // positions without copying
      const int rc = cursor->get(&key, &data, k == &first ? DB_SET : DB_SET_RANGE);
      if (rc == DB_LOCK_DEADLOCK || rc == DB_LOCK_NOTGRANTED) {
        end();  // a transaction refused a lock is aborted
        break;
      }
      if (rc != 0 && rc != DB_NOTFOUND) return end();
    }
    pause_point("commit.reading_ahead");
  }
  end();
}

void bdb_env::put_record_pieces(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len,
                                const std::vector<byte_span>& changed) {
  if (page_file_) {
    // The changed ranges themselves: a slot is written in place.
    if (len != page_file_->slot_bytes())
      throw invalid_argument("database " + dir_ + ": a record of " + std::to_string(len) + " bytes for page " +
                             std::to_string(page) + "; the page file's slots hold " +
                             std::to_string(page_file_->slot_bytes()));
    std::vector<page_log::piece> pieces;
    pieces.reserve(changed.size());
    for (const byte_span& c : changed) {
      if (c.length == 0 || c.offset >= len) continue;
      const std::uint32_t n = std::min(c.length, len - c.offset);
      pieces.push_back({c.offset, n, static_cast<const char*>(rec) + c.offset});
    }
    write_slot(t, page, pieces);
    return;
  }
  about_to_write();
  wrote_in(t);
  reserve_room(*pages_, pages_room_);
  if (len > max_pieces * piece_bytes)
    throw invalid_argument("database " + dir_ + ": a record of " + std::to_string(len) + " bytes is too long");
  // Per piece: the changed bytes, their number, and the span from the first
  // to the last. Berkeley DB logs a put as the span of what changed in the
  // item, plus about 100 bytes of its own.
  constexpr std::uint32_t put_overhead = 100;
  struct piece_changes {
    std::uint32_t first = ~0u, end = 0, bytes = 0, ranges = 0;
  };
  piece_changes pieces[max_pieces];
  for (const byte_span& c : changed) {
    if (c.length == 0 || c.offset >= len) continue;
    const std::uint32_t end = std::min(len, c.offset + c.length);
    for (std::uint32_t at = c.offset; at < end;) {
      const std::uint32_t k = at / piece_bytes, stop = std::min(end, (k + 1) * piece_bytes);
      piece_changes& p = pieces[k];
      p.first = std::min(p.first, at);
      p.end = std::max(p.end, stop);
      p.bytes += stop - at;
      ++p.ranges;
      at = stop;
    }
  }
  const auto* bytes = static_cast<const char*>(rec);
  // One cursor walks the touched pieces in order: a step to the next piece
  // instead of a search from the root for each.
  std::uint32_t puts = 0;
  for (const piece_changes& p : pieces) puts += p.ranges ? 1 : 0;
  Dbc* cursor = nullptr;
  if (t && puts > 1) check(pages_->cursor(t, &cursor, 0), "open cursor");
  cursor_closer close_it{cursor};
  std::uint32_t at_piece = ~0u;  // where the cursor is
  auto put = [&](Dbt& key, Dbt& data, std::uint32_t k) {
    if (!cursor) {
      check(pages_->put(t, &key, &data, t ? 0 : DB_AUTO_COMMIT), "write page " + std::to_string(page));
      return;
    }
    if (at_piece != k) {
      Dbt none;
      none.set_flags(DB_DBT_PARTIAL);  // positions without copying the piece
      none.set_doff(0);
      none.set_dlen(0);
      unsigned char kbuf[16];
      Dbt found(kbuf, sizeof kbuf);
      found.set_ulen(sizeof kbuf);
      found.set_flags(DB_DBT_USERMEM);
      int rc = DB_NOTFOUND;
      if (at_piece + 1 == k) {
        rc = cursor->get(&found, &none, DB_NEXT | DB_RMW);
        if (rc == 0 && (found.get_size() != key.get_size() || std::memcmp(kbuf, key.get_data(), 9) != 0))
          rc = DB_NOTFOUND;
      }
      if (rc != 0) rc = cursor->get(&key, &none, DB_SET | DB_RMW);
      if (rc == DB_NOTFOUND) {
        // A piece the record did not have: written by key.
        at_piece = ~0u;
        check(pages_->put(t, &key, &data, 0), "write page " + std::to_string(page));
        return;
      }
      check(rc, "write page " + std::to_string(page));
      at_piece = k;
    }
    check(cursor->put(&key, &data, DB_CURRENT), "write page " + std::to_string(page));
  };
  for (std::uint32_t k = 0; k * piece_bytes < len; ++k) {
    const piece_changes& p = pieces[k];
    if (p.ranges == 0) continue;
    piece_key pk(page, k);
    Dbt key(pk.bytes, sizeof pk.bytes);
    if (p.ranges == 1 || p.end - p.first <= p.bytes + put_overhead * (p.ranges - 1)) {
      // One put of the piece, whole: one item replaced.
      Dbt data(const_cast<char*>(bytes + k * piece_bytes), std::min(piece_bytes, len - k * piece_bytes));
      put(key, data, k);
      continue;
    }
    // Changes far apart in the piece: a partial put each.
    for (const byte_span& c : changed) {
      const std::uint32_t from = std::max(c.offset, k * piece_bytes);
      const std::uint32_t to = std::min({c.offset + c.length, (k + 1) * piece_bytes, len});
      if (c.length == 0 || from >= to) continue;
      Dbt data(const_cast<char*>(bytes + from), to - from);
      data.set_flags(DB_DBT_PARTIAL);
      data.set_doff(from - k * piece_bytes);
      data.set_dlen(to - from);
      put(key, data, k);
    }
  }
}

void bdb_env::put_record_part(DbTxn* t, std::uint64_t page, std::uint32_t offset, const void* p, std::uint32_t len) {
  if (page_file_) {
    if (std::uint64_t{offset} + len > page_file_->slot_bytes())
      throw invalid_argument("database " + dir_ + ": a write of " + std::to_string(len) + " bytes at " +
                             std::to_string(offset) + " of page " + std::to_string(page) + " lies past its slot's " +
                             std::to_string(page_file_->slot_bytes()));
    const page_log::piece part{offset, len, p};
    write_slot(t, page, {&part, 1});
    return;
  }
  about_to_write();
  wrote_in(t);
  reserve_room(*pages_, pages_room_);
  const auto* bytes = static_cast<const char*>(p);
  for (std::uint32_t at = offset, end = offset + len; at < end;) {
    const std::uint32_t k = at / piece_bytes;
    const std::uint32_t in_piece = std::min(end, (k + 1) * piece_bytes) - at;
    piece_key pk(page, k);
    Dbt key(pk.bytes, sizeof pk.bytes);
    Dbt data(const_cast<char*>(bytes + (at - offset)), in_piece);
    data.set_flags(DB_DBT_PARTIAL);
    data.set_doff(at - k * piece_bytes);
    data.set_dlen(in_piece);
    check(pages_->put(t, &key, &data, t ? 0 : DB_AUTO_COMMIT), "write page " + std::to_string(page));
    at += in_piece;
  }
}

void bdb_env::delete_record(DbTxn* t, std::uint64_t page) {
  if (page_file_) {
    // A slot whose magic number is zero holds no record.
    static constexpr std::uint32_t none = 0;
    const page_log::piece gone{0, sizeof none, &none};
    write_slot(t, page, {&gone, 1});
    put_mapping(t, page, {});
    return;
  }
  about_to_write();
  reserve_room(*pages_, pages_room_);
  for (unsigned k = 0; k < max_pieces; ++k) {
    piece_key pk(page, k);
    Dbt key(pk.bytes, sizeof pk.bytes);
    int rc = pages_->del(t, &key, t ? 0 : DB_AUTO_COMMIT);
    if (rc == DB_NOTFOUND) break;
    check(rc, "delete page " + std::to_string(page));
  }
  put_mapping(t, page, {});
}

std::optional<std::string> bdb_env::read_mapping(DbTxn* t, std::uint64_t page, std::uint32_t flags) {
  mapping_key mk(page);
  Dbt key(mk.bytes, sizeof mk.bytes);
  Dbt data;
  data.set_flags(DB_DBT_MALLOC);
  DbTxn* rt = reading(t, flags);
  int rc = pages_->get(rt, &key, &data, flags);
  if (rc == DB_NOTFOUND) return std::nullopt;
  check(rc, "read the mapping object of page " + std::to_string(page));
  std::string v(static_cast<const char*>(data.get_data()), data.get_size());
  std::free(data.get_data());
  return v;
}

void bdb_env::read_range_into(DbTxn* t, std::uint64_t first, std::uint64_t last,
                              const std::function<record_place(std::uint64_t)>& place,
                              const std::function<bool(std::uint64_t, bool, const void*, std::uint32_t)>& f,
                              std::uint32_t bulk_bytes) {
  if (page_file_) {
    refuse_if_broken();  // as read_record
    settle_in_place();
    // Slot by slot, each straight into its place; the mapping object,
    // when the record has one, from pages.db.
    const std::uint32_t slot = page_file_->slot_bytes();
    const bool own = t && page_log_->wrote(t);
    std::vector<std::byte> record;
    // Pages past the file's slots have no record (a transaction's own new
    // pages have their slots: reserved before their writes were logged).
    const std::uint64_t slots = page_file_->slots();
    if (first >= slots) return;
    last = std::min(last, slots - 1);
    for (std::uint64_t page = first;; ++page) {
      record_place p = place(page);
      if (p.head && p.head_bytes >= sizeof(record_header) && std::uint64_t{p.head_bytes} + p.rest_bytes >= slot) {
        // Through a buffer where the transaction's own writes or deferred
        // ones are laid over the file's slot.
        if (own || page_log_->deferred(page)) {
          if (record.empty()) record.resize(slot);
          if (read_slot(t, page, record.data(), slot) != 0) {
            std::memcpy(p.head, record.data(), p.head_bytes);
            std::memcpy(p.rest, record.data() + p.head_bytes, slot - p.head_bytes);
          } else {
            std::memset(p.head, 0, sizeof(record_header));
          }
        } else {
          page_file_->read_into(page, p.head, p.head_bytes, p.rest, slot - p.head_bytes);
        }
        record_header h;
        std::memcpy(&h, p.head, sizeof h);
        if (h.magic != 0) {
          if (!f(page, false, nullptr, slot)) return;
          if (h.mapping_entries != 0)
            if (auto m = read_mapping(t, page))
              if (!f(page, true, m->data(), static_cast<std::uint32_t>(m->size()))) return;
        }
      }
      if (page == last) break;
    }
    return;
  }
  std::uint32_t flags = 0;
  DbTxn* rt = reading(t, flags);
  Dbc* cursor = nullptr;
  check(pages_->cursor(rt, &cursor, flags), "open cursor");
  cursor_closer close_it{cursor};
  // Berkeley DB fills the buffer with as many pairs as fit, from the leaf
  // the cursor is on and the next ones.
  bulk_bytes = std::max<std::uint32_t>(bulk_bytes / 1024 * 1024, bdb_page_bytes);
  thread_local std::vector<std::uint64_t> bulk;
  if (bulk.size() * 8 < bulk_bytes) bulk.resize(bulk_bytes / 8);
  unsigned char kbuf[16];
  piece_key pk(first, 0);
  std::memcpy(kbuf, pk.bytes, sizeof pk.bytes);
  Dbt key(kbuf, sizeof pk.bytes);
  key.set_ulen(sizeof kbuf);
  key.set_flags(DB_DBT_USERMEM);
  Dbt data;
  data.set_data(bulk.data());
  data.set_ulen(bulk_bytes);
  data.set_flags(DB_DBT_USERMEM);
  // The record being put together from its pieces, where place() said.
  std::uint64_t assembling_page = ~std::uint64_t{0};
  record_place at;
  std::uint32_t size = 0;
  unsigned pieces = 0;
  bool whole = false;
  auto finish = [&]() -> bool {
    bool go_on = true;
    if (whole && size > 0) go_on = f(assembling_page, false, nullptr, size);
    size = 0;
    pieces = 0;
    whole = false;
    return go_on;
  };
  // Piece bytes [size, size + n) to their place; false when they do not fit.
  auto put = [&](const unsigned char* p, std::uint32_t n) {
    if (std::uint64_t{size} + n > std::uint64_t{at.head_bytes} + at.rest_bytes) return false;
    if (size < at.head_bytes) {
      const std::uint32_t h = std::min(n, at.head_bytes - size);
      std::memcpy(static_cast<unsigned char*>(at.head) + size, p, h);
      p += h;
      n -= h;
      size += h;
    }
    if (n) {
      std::memcpy(static_cast<unsigned char*>(at.rest) + (size - at.head_bytes), p, n);
      size += n;
    }
    return true;
  };
  for (std::uint32_t op = DB_SET_RANGE;; op = DB_NEXT) {
    int rc = cursor->get(&key, &data, op | DB_MULTIPLE_KEY);
    if (rc == DB_NOTFOUND) {
      finish();
      return;
    }
    check(rc, "read pages " + std::to_string(first) + " to " + std::to_string(last));
    DbMultipleKeyDataIterator it(data);
    Dbt k, d;
    while (it.next(k, d)) {
      if (k.get_size() != 9) continue;  // not a page's key
      const auto* kb = static_cast<const unsigned char*>(k.get_data());
      std::uint64_t page = 0;
      for (int i = 0; i < 8; ++i) page = page << 8 | kb[i];
      if (page > last) {
        finish();
        return;
      }
      if (page < first) continue;
      if (page != assembling_page) {
        if (!finish()) return;
        assembling_page = page;
        at = place(page);
        whole = at.head != nullptr;
      }
      if (kb[8] < max_pieces) {
        // The record's pieces, in order; a record with a piece missing is
        // left out (a fault on the page says what is wrong).
        if (kb[8] != pieces || (pieces > 0 && size % piece_bytes != 0)) whole = false;
        if (whole) whole = put(static_cast<const unsigned char*>(d.get_data()), d.get_size());
        ++pieces;
      } else if (kb[8] == 'm') {
        if (!finish()) return;
        if (!f(page, true, d.get_data(), d.get_size())) return;
      }
    }
  }
}

void bdb_env::put_mapping(DbTxn* t, std::uint64_t page, std::string_view mapping) {
  about_to_write();
  wrote_in(t);
  reserve_room(*pages_, pages_room_);
  mapping_key mk(page);
  Dbt key(mk.bytes, sizeof mk.bytes);
  if (mapping.empty()) {
    int rc = pages_->del(t, &key, t ? 0 : DB_AUTO_COMMIT);
    if (rc != DB_NOTFOUND) check(rc, "delete the mapping object of page " + std::to_string(page));
    return;
  }
  Dbt data = dbt(mapping);
  check(pages_->put(t, &key, &data, t ? 0 : DB_AUTO_COMMIT),
        "write the mapping object of page " + std::to_string(page));
}

std::optional<std::string> bdb_env::get(DbTxn* t, std::string_view k, std::uint32_t flags) {
  Dbt key = dbt(k);
  Dbt data;
  data.set_flags(DB_DBT_MALLOC);
  DbTxn* rt = reading(t, flags);
  int rc = meta_->get(rt, &key, &data, flags);
  if (rc == DB_NOTFOUND) return std::nullopt;
  check(rc, "read metadata");
  std::string v(static_cast<const char*>(data.get_data()), data.get_size());
  std::free(data.get_data());
  return v;
}

void bdb_env::put(DbTxn* t, std::string_view k, std::string_view v) {
  about_to_write();
  wrote_in(t);
  reserve_room(*meta_, meta_room_);
  Dbt key = dbt(k), data = dbt(v);
  check(meta_->put(t, &key, &data, t ? 0 : DB_AUTO_COMMIT), "write metadata");
}

void bdb_env::del(DbTxn* t, std::string_view k) {
  about_to_write();
  wrote_in(t);
  reserve_room(*meta_, meta_room_);
  Dbt key = dbt(k);
  int rc = meta_->del(t, &key, t ? 0 : DB_AUTO_COMMIT);
  if (rc == DB_NOTFOUND) return;
  check(rc, "delete metadata");
}

void bdb_env::scan(DbTxn* t, std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f,
                   std::uint32_t flags, const std::function<void(std::size_t)>& admit) {
  Dbc* cursor = nullptr;
  DbTxn* rt = reading(t, flags);
  check(meta_->cursor(rt, &cursor, flags), "open cursor");
  Dbt key, data;
  key.set_flags(DB_DBT_REALLOC);
  data.set_flags(DB_DBT_REALLOC);
  key.set_data(std::malloc(prefix.size() ? prefix.size() : 1));
  // An empty view's data() may be null, which memcpy must not be given
  // even for no bytes.
  if (!prefix.empty()) std::memcpy(key.get_data(), prefix.data(), prefix.size());
  key.set_size(static_cast<std::uint32_t>(prefix.size()));
  auto release = [&] {
    std::free(key.get_data());
    std::free(data.get_data());
    cursor->close();
  };
  int rc = cursor->get(&key, &data, DB_SET_RANGE);
  std::vector<std::pair<std::string, std::string>> found;
  try {
    while (rc == 0) {
      std::string_view k(static_cast<const char*>(key.get_data()), key.get_size());
      if (k.substr(0, prefix.size()) != prefix) break;
      if (admit) admit(k.size() + data.get_size());
      found.emplace_back(std::string(k), std::string(static_cast<const char*>(data.get_data()), data.get_size()));
      rc = cursor->get(&key, &data, DB_NEXT);
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  if (rc != 0 && rc != DB_NOTFOUND) check(rc, "scan metadata");
  for (auto& [k, v] : found) f(k, v);
}

bdb_env::index_db& bdb_env::index_at(std::uint32_t i) {
  std::lock_guard<std::mutex> g(index_mutex_);
  if (i >= indexes_.size())
    throw invalid_argument("database " + dir_ + ": no index number " + std::to_string(i) + " is open");
  return *indexes_[i];
}

std::uint32_t bdb_env::open_index(DbTxn* t, const std::string& name, bool unique) {
  if (name.empty() || name.size() > 200)
    throw invalid_argument("database " + dir_ + ": an index name has 1 to 200 characters");
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      throw invalid_argument("database " + dir_ + ": index name '" + name + "' may hold letters, digits, _ and - only");
  std::string file = "index." + name + ".db";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(dir_) / file, ec)) about_to_write();  // creates it
  std::lock_guard<std::mutex> g(index_mutex_);
  for (std::uint32_t i = 0; i < indexes_.size(); ++i)
    if (indexes_[i]->name == name) {
      if (indexes_[i]->unique != unique)
        throw invalid_argument("database " + dir_ + ": index " + name + " was opened " +
                               (indexes_[i]->unique ? "unique" : "non-unique") + " before");
      return i;
    }
  // An index created inside a transaction exists only if it commits; opened
  // outside, it is created in a transaction of its own.
  std::unique_ptr<Db> db;
  std::uint32_t flags = 0;
  int rc = open_db(db, file.c_str(), DB_CHKSUM | (unique ? 0 : DB_DUP | DB_DUPSORT), 0, reading(t, flags));
  if (rc == EINVAL)
    throw invalid_argument("database " + dir_ + ": index " + name + " exists " + (unique ? "with" : "without") +
                           " duplicate keys");
  check(rc, "open index " + name);
  indexes_.push_back(std::make_unique<index_db>(index_db{name, unique, std::move(db), 0}));
  return static_cast<std::uint32_t>(indexes_.size() - 1);
}

bool bdb_env::index_insert(DbTxn* t, std::uint32_t index, std::string_view k, std::string_view v) {
  about_to_write();
  auto& ix = index_at(index);
  reserve_room(*ix.db, ix.room);
  Dbt key = dbt(k), data = dbt(v);
  int rc = ix.db->put(t, &key, &data, (ix.unique ? DB_NOOVERWRITE : DB_NODUPDATA) | (t ? 0 : DB_AUTO_COMMIT));
  if (rc == DB_KEYEXIST) return !ix.unique;  // a non-unique index already had this exact entry
  check(rc, "insert into index " + ix.name);
  return true;
}

bool bdb_env::index_erase(DbTxn* t, std::uint32_t index, std::string_view k, std::string_view v) {
  about_to_write();
  auto& ix = index_at(index);
  reserve_room(*ix.db, ix.room);
  Dbc* cursor = nullptr;
  check(ix.db->cursor(t, &cursor, 0), "open cursor");
  // The entry whose value begins with v: with sorted duplicates, the first
  // value >= v; in a unique index, the key's only value.
  Dbt key = dbt(k), data;
  data.set_flags(DB_DBT_REALLOC);
  data.set_data(std::malloc(v.size() ? v.size() : 1));
  if (!v.empty()) std::memcpy(data.get_data(), v.data(), v.size());  // (as in scan)
  data.set_size(static_cast<std::uint32_t>(v.size()));
  int rc = cursor->get(&key, &data, ix.unique ? DB_SET : DB_GET_BOTH_RANGE);
  if (rc == 0) {
    std::string_view found(static_cast<const char*>(data.get_data()), data.get_size());
    rc = found.substr(0, v.size()) == v ? cursor->del(0) : DB_NOTFOUND;
  }
  std::free(data.get_data());
  cursor->close();
  if (rc == DB_NOTFOUND) return false;
  check(rc, "erase from index " + ix.name);
  return true;
}

void bdb_env::index_scan(DbTxn* t, std::uint32_t index, std::string_view lo, std::string_view hi,
                         const std::function<bool(std::string_view, std::string_view)>& f) {
  auto& ix = index_at(index);
  Dbc* cursor = nullptr;
  std::uint32_t flags = 0;
  DbTxn* rt = reading(t, flags);
  check(ix.db->cursor(rt, &cursor, flags), "open cursor");
  Dbt key, data;
  key.set_flags(DB_DBT_REALLOC);
  data.set_flags(DB_DBT_REALLOC);
  key.set_data(std::malloc(lo.size() ? lo.size() : 1));
  if (!lo.empty()) std::memcpy(key.get_data(), lo.data(), lo.size());  // (as in scan)
  key.set_size(static_cast<std::uint32_t>(lo.size()));
  auto release = [&] {
    std::free(key.get_data());
    std::free(data.get_data());
    cursor->close();
  };
  std::vector<std::pair<std::string, std::string>> found;
  std::size_t found_bytes = 0;
  int rc = cursor->get(&key, &data, DB_SET_RANGE);
  // Entries are collected first, then handed out: f may use the store. A
  // batch holds at most 4096 entries and about 1 MiB; f may throw.
  try {
    while (rc == 0) {
      std::string_view k(static_cast<const char*>(key.get_data()), key.get_size());
      if (k > hi) break;
      found.emplace_back(std::string(k), std::string(static_cast<const char*>(data.get_data()), data.get_size()));
      found_bytes += k.size() + data.get_size();
      if (found.size() >= 4096 || found_bytes >= (1u << 20)) {
        bool more = true;
        for (auto& [a, b] : found)
          if (!(more = f(a, b))) break;
        found.clear();
        found_bytes = 0;
        if (!more) {
          rc = DB_NOTFOUND;
          break;
        }
      }
      rc = cursor->get(&key, &data, DB_NEXT);
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  if (rc != 0 && rc != DB_NOTFOUND) check(rc, "scan index " + ix.name);
  for (auto& [a, b] : found)
    if (!f(a, b)) break;
}

void bdb_env::set_timeouts(std::uint32_t lock_us, std::uint32_t txn_us, const std::string& how_to_change) {
  check(env_->set_timeout(lock_us, DB_SET_LOCK_TIMEOUT), "set the lock timeout");
  check(env_->set_timeout(txn_us, DB_SET_TXN_TIMEOUT), "set the transaction timeout");
  // A timed-out request inside a Berkeley DB call says DB_LOCK_NOTGRANTED
  // rather than DB_LOCK_DEADLOCK: the error can say which it was.
  check(env_->set_flags(DB_TIME_NOTGRANTED, 1), "set_flags DB_TIME_NOTGRANTED");
  auto seconds = [](std::uint32_t us) {
    if (us == 0) return std::string("none");
    std::string s = std::to_string(us / 1000000);
    if (us % 1000000) {
      std::string frac = std::to_string(1000000 + us % 1000000).substr(1);
      while (frac.back() == '0') frac.pop_back();
      s += "." + frac;
    }
    return s + " s";
  };
  timeouts_ = "the request outlived the lock timeout (" + seconds(lock_us) + ") or the transaction timeout (" +
              seconds(txn_us) + ")" + (how_to_change.empty() ? "" : ": " + how_to_change);
}

int bdb_env::expire_waiters() {
  int rejected = 0;
  check(env_->lock_detect(0, DB_LOCK_EXPIRE, &rejected), "expire lock requests");
  return rejected;
}

std::uint64_t bdb_env::log_position() {
  // Asked after a commit too: once a failed write broke the environment
  // (a commit's checkpoint may), the last position read stands.
  if (broken_.load(std::memory_order_acquire) != not_broken) return last_log_position_.load();
  DB_LOG_STAT* st = nullptr;
  check(env_->log_stat(&st, 0), "log_stat");
  std::uint64_t pos = std::uint64_t{st->st_cur_file} * log_file_max_ + st->st_cur_offset;
  std::free(st);
  last_log_position_.store(pos);
  return pos;
}

std::uint64_t bdb_env::log_flushes() {
  if (broken_.load(std::memory_order_acquire) != not_broken) return 0;
  DB_LOG_STAT* st = nullptr;
  check(env_->log_stat(&st, 0), "log_stat");
  std::uint64_t n = st->st_scount;
  std::free(st);
  return n;
}

void bdb_env::write_slot(DbTxn* t, std::uint64_t page, std::span<const page_log::piece> pieces) {
  about_to_write();
  if (!t) {
    DbTxn* own = begin();
    try {
      write_slot(own, page, pieces);
    } catch (...) {
      abort(own);
      throw;
    }
    commit(own, true);
    return;
  }
  {
    std::lock_guard<std::mutex> g(room_mutex_);
    if (int e = page_file_->reserve(page + 1)) {
      // Past what a file may hold: nothing was written, the transaction
      // cannot go on. Anything else (a full disk) breaks the environment,
      // as a failed write does.
      if (e == EFBIG)
        throw store_error("database " + dir_ + ": page " + std::to_string(page) + " lies past what " +
                          page_file_->path() + " can hold (slots of " + std::to_string(page_file_->slot_bytes()) +
                          " bytes; the file system's largest file, or 2^62 bytes): a page number that large comes "
                          "from a damaged page counter (next_page)");
      fail_writes("database " + dir_ + ": cannot reserve room in " + page_file_->path() + " for page " +
                  std::to_string(page) + ": " + std::strerror(e));
    }
  }
  if (pieces.size() == 1 && pieces[0].offset == 0) {
    int e = 0;
    std::uint64_t failed = 0;
    if (fresh_->write(t, page, pieces[0].bytes, pieces[0].length, e, failed)) {
      if (e != 0) fail_in_place(e, failed);
      pause_point("page_file.in_place");
      return;
    }
  } else {
    fresh_->logged(page);
  }
  check(page_log_->write(*env_, t, page, pieces), "log a write of page " + std::to_string(page));
}

void bdb_env::committed_pages_end(std::uint64_t first) {
  if (!fresh_) return;
  if (int e = fresh_->past_committed(first))
    fail_writes("database " + dir_ + ": cannot clear what an uncommitted transaction left in " + page_file_->path() +
                " past page " + std::to_string(first) + ": " + std::strerror(e));
}

void bdb_env::apply_deferred(const char* before, const char* flushed_point, const char* halfway_point) {
  if (!page_log_ || page_log_->deferred_bytes() == 0) return;
  int flushed = 0;
  const int e = page_log_->apply_committed(
      [&] {
        const int rc = env_->log_flush(nullptr);
        if (rc == 0 && flushed_point) pause_point(flushed_point);
        return rc;
      },
      flushed, halfway_point);
  if (flushed != 0)
    fail_writes("database " + dir_ + ": flushing the log before " + before + " failed: " + db_strerror(flushed) +
                "; the transactions committed without durability since the last flush may or may not be there "
                "(look after reopening)");
  if (e != 0)
    fail_writes("database " + dir_ + ": writing committed transactions to " + page_file_->path() + " before " + before +
                " failed: " + std::strerror(e) + "; reopening the database writes them from the log");
}

void bdb_env::apply_in_background() noexcept {
  if (broken_.load(std::memory_order_acquire) != not_broken) return;
  // The log is on the disk up to the commit that kicked this (and no
  // commit comes until this ends: commit waits); the flush is for the
  // commits before it that did not flush.
  try {
    apply_deferred("the next commit", nullptr, "page_file.half_applied");
  } catch (...) {
    // fail_writes broke the environment; should its message have failed
    // to be made, it breaks here.
    break_for_writes("database " + dir_ + ": writing committed transactions to the page file failed");
  }
}

void bdb_env::checkpoint_after_commit() noexcept {
  // The commit is in the log already: a checkpoint that fails breaks the
  // environment for the calls after this one.
  if (broken_.load(std::memory_order_acquire) != not_broken) return;
  try {
    const int rc = checkpoint(16 * 1024);
    if (rc != 0 && is_write_fault(rc)) {
      std::string said = take_messages();
      break_for_writes(after_failed_write("database " + dir_ + ": checkpoint after a commit: " + db_strerror(rc) +
                                          berkeley_db_said(said)));
    }
  } catch (...) {
    break_for_writes("database " + dir_ + ": a checkpoint after a commit failed");
  }
}

void bdb_env::fail_in_place(int error, std::uint64_t page) const {
  fail_writes("database " + dir_ + ": cannot write page " + std::to_string(page) + " into " + page_file_->path() +
              ": " + std::strerror(error));
}

void bdb_env::settle_in_place() const {
  if (!fresh_ || !fresh_->unsettled()) return;
  std::uint64_t failed = 0;
  if (int e = fresh_->settle(failed)) fail_in_place(e, failed);
}

bool bdb_env::image_in_file(DbTxn* t, std::uint64_t page, file_image& where) const {
  if (!page_file_ || (t && page_log_->wrote(t, page))) return false;
  // A durable commit's writes on their way to the file are there in a
  // moment: waited for, the file holds the page again (a page it wrote is
  // often written again, its before-image the file's).
  if (page_log_->deferred(page) && applier_) applier_->wait_applied();
  if (page_log_->deferred(page)) return false;
  settle_in_place();
  where.fd = page_file_->fd();
  return page_file_->image_at(page, where.offset, where.bytes);
}

std::uint32_t bdb_env::read_slot(DbTxn* t, std::uint64_t page, void* buf, std::uint32_t cap) {
  settle_in_place();
  // Deferred writes written to the file meanwhile: read it again.
  for (std::uint64_t seen = page_log_->applications();; seen = page_log_->applications()) {
    page_file_->read(page, buf, cap);
    page_log_->overlay(t, page, buf, cap);
    if (page_log_->applications() == seen) break;
  }
  std::uint32_t magic = 0;
  std::memcpy(&magic, buf, std::min<std::uint32_t>(cap, sizeof magic));
  return magic == 0 ? 0 : cap;
}

int bdb_env::checkpoint(std::uint32_t kbytes) {
  if (!page_file_) return env_->txn_checkpoint(kbytes, 0, 0);
  // The applier's, after a durable commit, and the close's or a
  // non-durable commit's: one at a time.
  std::lock_guard<std::mutex> g(checkpoint_mutex_);
  // Recovery starts at the last checkpoint: every page write logged before
  // it must be on the disk first.
  std::uint64_t at = checkpointed_at_;
  try {
    at = log_position();
  } catch (const error&) {
    // Asked at close too, which must not throw: the checkpoint says what is wrong.
  }
  if (kbytes != 0 && at - checkpointed_at_ < std::uint64_t{kbytes} << 10) return 0;
  try {
    apply_deferred("a checkpoint");
  } catch (const error&) {
    return EIO;  // the environment is broken: no checkpoint passes the writes
  }
  if (int e = page_file_->sync()) {
    break_for_writes(after_failed_write("database " + dir_ + ": syncing " + page_file_->path() +
                                        " before a checkpoint: " + std::strerror(e)));
    return e;
  }
  pause_point("page_file.checkpoint_synced");
  int rc = env_->txn_checkpoint(0, 0, 0);
  if (rc == 0) checkpointed_at_ = at;
  return rc;
}

int bdb_env::dispatch(DbEnv* env, Dbt* record, DbLsn* lsn, int op) {
  auto* self = static_cast<bdb_env*>(env->get_app_private());
  std::string said;
  int rc = replay_page_write(self ? self->page_file_.get() : nullptr, record, lsn, op, said);
  if (!said.empty()) collect(env, nullptr, said.c_str());
  return rc;
}

int bdb_env::copy_page_file(const std::string& target) {
  void* handle = nullptr;
  if (int rc = backup_open(env_.get(), page_file::file_name, target.c_str(), &handle)) return rc;
  std::vector<char> buf(std::size_t{1} << 20);
  const int from = ::open(page_file_->path().c_str(), O_RDONLY | O_CLOEXEC);
  int rc = from < 0 ? errno : 0;
  for (std::uint64_t at = 0; rc == 0;) {
    ssize_t n = ::pread(from, buf.data(), buf.size(), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) rc = errno;
    if (n <= 0) break;
    rc = backup_write(env_.get(), static_cast<std::uint32_t>(at >> 30),
                      static_cast<std::uint32_t>(at & ((1u << 30) - 1)), static_cast<std::uint32_t>(n),
                      reinterpret_cast<std::uint8_t*>(buf.data()), handle);
    at += static_cast<std::uint64_t>(n);
  }
  if (from >= 0) ::close(from);
  const int closed = backup_close(env_.get(), page_file::file_name, handle);
  return rc != 0 ? rc : closed;
}

}  // namespace qs::detail

#if defined(__SANITIZE_THREAD__)
// Built with ThreadSanitizer (QS_SANITIZE=thread): Berkeley DB takes its own
// mutexes (pthread read-write locks in its region) in orders ThreadSanitizer
// reports as possible deadlocks, all of them inside libdb and none involving
// a lock of qs's; its locking is its own business. Weak: a program's own
// suppressions replace these (TSAN_OPTIONS=suppressions=FILE adds to them).
extern "C" const char* __tsan_default_suppressions();
extern "C" __attribute__((weak, visibility("default"))) const char* __tsan_default_suppressions() {
  return "deadlock:libdb_cxx\n";
}
#endif
