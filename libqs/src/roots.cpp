// Named roots: persistent cells found by name, the entry points of a
// database's object graph.
#include "database_impl.hpp"

#include <cxxabi.h>

#include <cinttypes>
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
      void* cell = decode_location(std::string_view(*v).substr(0, 24));
      cached = roots_.emplace(name, std::pair(cell, v->substr(24))).first;
    }
  }
  if (cached != roots_.end()) {
    if (cached->second.second != t.name())
      throw root_type_mismatch("database " + this->name() + ": root '" + name + "' holds a " +
                               demangle(cached->second.second) + ", not a " + demangle(t.name()));
    return cached->second.first;
  }
  std::string key = "r:" + name;
  require_transaction(("creating the root '" + name + "'").c_str());
  void* p = allocate_locked(d, size, nullptr);  // zeroed
  store_->put(key, encode_location(p) + t.name());
  roots_[name] = {p, t.name()};
  return p;
}

void database_impl::update_roots() {
  for (auto& [name, cell] : roots_) {
    std::string now = encode_location(cell.first) + cell.second;
    if (store_->get("r:" + name) != now) store_->put("r:" + name, now);
  }
}

bool database_impl::has_root(std::string_view name) {
  lock_scope g(*this);
  return roots_.count(std::string(name)) || store_->get("r:" + std::string(name)).has_value();
}

}  // namespace qs::detail
