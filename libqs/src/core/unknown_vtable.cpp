#include "core/unknown_vtable.hpp"

#include <qs/error.hpp>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <typeinfo>
#include <unordered_map>

namespace qs::detail {

// What typeid names for an object that has an unknown vtable.
struct unknown_object {
  virtual ~unknown_object();
};
unknown_object::~unknown_object() = default;

namespace {

// Words before the address point: virtual base offsets (read as 0, the
// object itself), offset to top (0) and the type_info. After it: virtual
// function entries. A class with more virtual functions than this reads
// past the table, as it would past any vtable of the wrong class.
constexpr std::size_t vbase_words = 32;
constexpr std::size_t function_words = 1024;

struct table {
  std::string name;
  std::array<const void*, vbase_words + 2 + function_words> words{};
  const void* address_point() const { return &words[vbase_words + 2]; }
};

std::mutex tables_mutex;
std::map<std::string, std::unique_ptr<table>> tables;
std::unordered_map<const void*, const table*> by_point;

[[noreturn]] void call_on_unknown(void* self) {
  const void* point = *static_cast<const void* const*>(self);
  std::string name = "(unknown)";
  {
    std::lock_guard<std::mutex> g(tables_mutex);
    auto it = by_point.find(point);
    if (it != by_point.end()) name = it->second->name;
  }
  char where[32];
  std::snprintf(where, sizeof where, "%p", self);
  throw schema_error("a virtual function was called on the object at " + std::string(where) + " of stored class " +
                     name + ", but this program has no vtable for " + name +
                     ": it does not know the class or never constructs one. Link the code that defines " + name +
                     "'s first non-inline virtual function into the program, or read the object as a class the "
                     "program has");
}

}  // namespace

const void* unknown_vtable(const std::string& name) {
  std::lock_guard<std::mutex> g(tables_mutex);
  auto& t = tables[name];
  if (!t) {
    t = std::make_unique<table>();
    t->name = name;
    t->words[vbase_words + 1] = &typeid(unknown_object);
    for (std::size_t i = vbase_words + 2; i < t->words.size(); ++i)
      t->words[i] = reinterpret_cast<const void*>(&call_on_unknown);
    by_point[t->address_point()] = t.get();
  }
  return t->address_point();
}

}  // namespace qs::detail
