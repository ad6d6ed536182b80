// Named roots.
#include "core/roots.hpp"

#include <qs/error.hpp>

namespace qs::detail {
namespace {

std::string key_of(std::string_view name) { return "r:" + std::string(name); }

}  // namespace

void* roots::cell(std::string_view name_view, const type_descriptor* d, std::size_t size, const std::type_info& t) {
  std::string name(name_view);
  auto cached = cache_.find(name);
  if (cached == cache_.end()) {
    if (auto v = store_.get(key_of(name))) {
      // The cell's location (24 bytes), then its type.
      if (v->size() < 24) throw corrupt_page(0, "the record of root '" + name + "' is damaged");
      cached = cache_.emplace(name, entry{v->substr(0, 24), v->substr(24)}).first;
    }
  }
  if (cached != cache_.end()) {
    if (cached->second.type != t.name())
      throw root_type_mismatch("root '" + name + "' holds a " + demangle(cached->second.type.c_str()) + ", not a " +
                               demangle(t.name()));
    void* cell = refs_.resolve(cached->second.location);
    refs_.root_cell_used(cell, size);
    return cell;
  }
  if (!log_.open()) throw no_transaction("creating the root '" + name + "' needs a transaction");
  void* p = allocator_.allocate(d, size, nullptr);  // zeroed
  std::string location = refs_.location_of(p);
  store_.put(key_of(name), location + t.name());
  cache_[name] = {location, t.name()};
  return p;
}

void roots::adopt(std::string_view name_view, void* cell, const std::string& type) {
  std::string name(name_view);
  if (!log_.open()) throw no_transaction("making the root '" + name + "' needs a transaction");
  std::string location = refs_.location_of(cell);
  store_.put(key_of(name), location + type);
  cache_[name] = {location, type};
}

bool roots::exists(std::string_view name) {
  return cache_.count(std::string(name)) || store_.get(key_of(name)).has_value();
}

void roots::update_records() {
  for (auto& [name, root] : cache_) {
    root.location = refs_.location_of(refs_.resolve(root.location));
    std::string now = root.location + root.type;
    if (store_.get(key_of(name)) != now) store_.put(key_of(name), now);
  }
}

}  // namespace qs::detail
