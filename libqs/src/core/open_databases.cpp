// The list of open databases.
#include "core/open_databases.hpp"

#include "mode/page_access.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace qs::detail {
namespace {

struct entry {
  database_impl* db;
  const page_access* access;
  const std::string* name;
};

std::mutex open_mutex;
std::vector<entry> open_list;
// Changes with every database added or removed, under open_mutex; never 0.
std::atomic<std::uint64_t> open_generation{1};

// The database this thread found last, and the list's generation then: while
// the list has not changed since, it is still open.
struct found {
  std::uint64_t generation = 0;
  database_impl* db = nullptr;
  const page_access* access = nullptr;
};
thread_local found last_found;

}  // namespace

void add_open_database(database_impl* db, const page_access* access, const std::string* name) {
  std::lock_guard<std::mutex> g(open_mutex);
  open_list.push_back({db, access, name});
  open_generation.fetch_add(1, std::memory_order_release);
}

void remove_open_database(database_impl* db) noexcept {
  std::lock_guard<std::mutex> g(open_mutex);
  std::erase_if(open_list, [&](const entry& e) { return e.db == db; });
  open_generation.fetch_add(1, std::memory_order_release);
}

database_impl* database_of(const void* p) noexcept {
  const found& f = last_found;
  if (f.generation == open_generation.load(std::memory_order_acquire) && f.access->contains(p)) return f.db;
  std::lock_guard<std::mutex> g(open_mutex);
  for (const entry& e : open_list)
    if (e.access->contains(p)) {
      last_found = {open_generation.load(std::memory_order_relaxed), e.db, e.access};
      return e.db;
    }
  return nullptr;
}

std::string name_of_database_at(const void* p) {
  std::lock_guard<std::mutex> g(open_mutex);
  for (const entry& e : open_list)
    if (e.access->contains(p)) return *e.name;
  return {};
}

}  // namespace qs::detail
