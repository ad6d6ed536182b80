// qs/base/pause_point.hpp: named points where a process can be stopped for a
// test. Programs include it as <qs/pause_point.hpp>, the public name; the
// runtime and qs-pageserver share it (common/).
//
// Crash tests kill a process with SIGKILL at a chosen point and reopen the
// database. A pause point is such a point: when the environment variable
// QS_PAUSE_AT names it ("commit.before_store_commit", or "name:N" for its
// N-th pass), the process writes one byte to the descriptor named by
// QS_PAUSE_FD and stops there for good, waiting to be killed. Without
// QS_PAUSE_AT a pause point costs one load and a branch.
//
// The runtime's points: evict.dirty_written (a page the transaction wrote,
// evicted from a full pool, is in the store transaction, which has not
// committed), commit.half_written (half of the written pages are in the store
// transaction), commit.before_store_commit, commit.after_store_commit.
// The page-file layout's (bdb_env.hpp): page_file.committed (the commit is
// in the log, the page file not written yet), page_file.half_applied (half
// of a durable commit's page writes are in the page file, on the thread
// that writes them after the commit returned: background_apply.hpp), page_file.in_place (a
// bulk transaction handed a new page's record over to be written into the
// page file, unlogged: slot_writer.hpp),
// page_file.in_place_synced (the file is synced before such a transaction's
// commit record; fresh_slots.hpp), page_file.checkpoint_synced (a
// checkpoint synced the file and is about to be written to the log: at
// the close, or, every 16 MiB of log, after a durable commit on the thread
// that writes its pages). pages.db's:
// commit.reading_ahead (on the helper that reads a commit's B-tree pages
// ahead of its writes, after each page; the commit goes on, and waits for
// the helper before its store commit).
// qs-pageserver's: server.write.applied (pages a transaction sent ahead of
// its commit are in its Berkeley DB transaction), server.commit.half_applied
// (half of a commit's pages are in its Berkeley DB transaction),
// server.commit.before_commit, server.commit.after_commit (committed, the
// client not told yet).
#pragma once

namespace qs {

void pause_point(const char* name) noexcept;

}  // namespace qs
