// The list of open databases.
#include "core/open_databases.hpp"

#include "mode/page_access.hpp"

#include <algorithm>
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

}  // namespace

void add_open_database(database_impl* db, const page_access* access, const std::string* name) {
  std::lock_guard<std::mutex> g(open_mutex);
  open_list.push_back({db, access, name});
}

void remove_open_database(database_impl* db) noexcept {
  std::lock_guard<std::mutex> g(open_mutex);
  std::erase_if(open_list, [&](const entry& e) { return e.db == db; });
}

database_impl* database_of(const void* p) noexcept {
  std::lock_guard<std::mutex> g(open_mutex);
  for (const entry& e : open_list)
    if (e.access->contains(p)) return e.db;
  return nullptr;
}

std::string name_of_database_at(const void* p) {
  std::lock_guard<std::mutex> g(open_mutex);
  for (const entry& e : open_list)
    if (e.access->contains(p)) return *e.name;
  return {};
}

}  // namespace qs::detail
