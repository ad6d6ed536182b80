// Whole records written in place into fresh slots of the page file (see
// fresh_slots.hpp).
#include <qs/bdb/fresh_slots.hpp>

#include <cstring>

namespace qs::detail {

fresh_slots::fresh_slots(page_file& file) : file_(file), committed_end_(file.slots()), writer_(file) {}

void fresh_slots::begin(DbTxn* t) {
  std::lock_guard<std::mutex> g(mutex_);
  txns_.emplace(t, 0);
}

bool fresh_slots::write(DbTxn* t, std::uint64_t page, const void* rec, std::uint32_t len, int& error,
                        std::uint64_t& failed_page) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = txns_.find(t);
  if (it == txns_.end() || paused_ || page < floor() || len != file_.slot_bytes()) {
    written_end_ = std::max(written_end_, page + 1);
    return false;
  }
  error = writer_.write(page, rec, len, failed_page);
  it->second = std::max(it->second, page + 1);
  return true;
}

int fresh_slots::settle(std::uint64_t& failed_page) { return writer_.settle(failed_page); }

void fresh_slots::logged(std::uint64_t page) {
  std::lock_guard<std::mutex> g(mutex_);
  written_end_ = std::max(written_end_, page + 1);
}

bool fresh_slots::wrote(DbTxn* t) const {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = txns_.find(t);
  return it != txns_.end() && it->second != 0;
}

void fresh_slots::committed(DbTxn* t) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = txns_.find(t);
  if (it == txns_.end()) return;
  written_end_ = std::max(written_end_, it->second);
  txns_.erase(it);
}

void fresh_slots::forget(DbTxn* t) {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = txns_.find(t);
  if (it == txns_.end()) return;
  if (it->second != 0) {
    maybe_left_ = true;
    // A failed write is the environment's to report (it broke on it, or
    // does at its next write in place); here only its end matters.
    std::uint64_t failed_page = 0;
    (void)writer_.settle(failed_page);
  }
  txns_.erase(it);
}

int fresh_slots::past_committed(std::uint64_t first) {
  std::lock_guard<std::mutex> g(mutex_);
  committed_end_ = first;
  if (!maybe_left_) return 0;
  for (const auto& [t, end] : txns_)
    if (end != 0) return 0;                 // its records are in place: cleared after it ends, if it aborts
  static constexpr std::uint32_t none = 0;  // a record's first four bytes, zero: no record
  bool wrote = false;
  for (std::uint64_t page = first, end = file_.slots(); page < end; ++page) {
    std::uint32_t head = 0;
    file_.read(page, &head, sizeof head);
    if (head == none) continue;
    if (int e = file_.write(page, 0, &none, sizeof none)) return e;
    wrote = true;
  }
  if (wrote)
    if (int e = file_.sync()) return e;
  maybe_left_ = false;
  return 0;
}

void fresh_slots::pause(bool on) {
  std::lock_guard<std::mutex> g(mutex_);
  paused_ = on;
  // The copy must find what was handed over before (a failed write broke
  // the environment, or does at its transaction's commit).
  std::uint64_t failed_page = 0;
  if (on) (void)writer_.settle(failed_page);
}

}  // namespace qs::detail
