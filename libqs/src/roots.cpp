// Named roots: persistent cells found by name, the entry points of a
// database's object graph.
#include "database_impl.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <cstdio>
#include <cstdlib>

namespace qs::detail {
namespace {

std::string demangle(const std::string& n) {
  int status = 0;
  char* d = abi::__cxa_demangle(n.c_str(), nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : n;
  std::free(d);
  return s;
}

}  // namespace

void* database_impl::root_cell(std::string_view name_, const type_descriptor* d, std::size_t size,
                               const std::type_info& t) {
  lock_scope g(*this);
  std::string name(name_);
  auto cached = roots_.find(name);
  if (cached == roots_.end()) {
    if (auto v = store_->get("r:" + name)) {
      // The cell's location (24 bytes, see encode_location), then its type.
      if (v->size() < 24)
        throw corrupt_page(0, "database " + this->name() + ": the record of root '" + name + "' is damaged");
      std::string location = v->substr(0, 24);
      void* cell = software_swizzling ? nullptr : decode_location(location);
      cached = roots_.emplace(name, root_entry{location, v->substr(24), cell}).first;
    }
  }
  if (cached != roots_.end()) {
    if (cached->second.type != t.name())
      throw root_type_mismatch("database " + this->name() + ": root '" + name + "' holds a " +
                               demangle(cached->second.type) + ", not a " + demangle(t.name()));
    if constexpr (software_swizzling) {
      // The cell's page may have left the pool since (in a transaction it
      // stays until the end); its bytes now are what commit compares with.
      void* cell = decode_location(cached->second.location);
      if (txn_open_ && std::none_of(root_reads_.begin(), root_reads_.end(),
                                    [&](const root_read& r) { return r.cell == cell; }))
        root_reads_.push_back({cell, std::string(static_cast<const char*>(cell), size)});
      return cell;
    }
    return cached->second.cell;
  }
  std::string key = "r:" + name;
  require_transaction(("creating the root '" + name + "'").c_str());
  void* p = allocate_locked(d, size, nullptr);  // zeroed
  std::string location = encode_location(p);
  store_->put(key, location + t.name());
  roots_[name] = {location, t.name(), p};
  return p;
}

void database_impl::update_roots() {
  // Hardware mode, after relocation: the cells' runs may have moved.
  for (auto& [name, root] : roots_) {
    root.location = encode_location(root.cell);
    std::string now = root.location + root.type;
    if (store_->get("r:" + name) != now) store_->put("r:" + name, now);
  }
}

void database_impl::announce_changed_roots() {
  for (const root_read& r : root_reads_) {
    std::size_t n = r.before.size();
    if (std::memcmp(r.cell, r.before.data(), n) == 0) continue;
    // The before-image is taken from the cell: put the old bytes back for it.
    std::string now(static_cast<const char*>(r.cell), n);
    std::memcpy(r.cell, r.before.data(), n);
    std::uint64_t page;
    std::uint32_t offset, tag;
    identify_locked(r.cell, page, offset, tag);
    try {
      announce_write(table_.by_page(page), offset);
    } catch (...) {
      std::memcpy(r.cell, now.data(), n);
      throw;
    }
    std::memcpy(r.cell, now.data(), n);
  }
  root_reads_.clear();
}

void database_impl::restore_roots() {
  for (const root_read& r : root_reads_) std::memcpy(r.cell, r.before.data(), r.before.size());
  root_reads_.clear();
}

bool database_impl::has_root(std::string_view name) {
  lock_scope g(*this);
  return roots_.count(std::string(name)) || store_->get("r:" + std::string(name)).has_value();
}

}  // namespace qs::detail
