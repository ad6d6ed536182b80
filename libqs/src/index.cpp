// Indexes: qs::index's calls into the store, under the runtime's lock.
#include "database_impl.hpp"

#include <qs/index.hpp>

#include <cstring>

namespace qs::detail {
namespace {

// qs::index hands the runtime a reference as its bytes: an address
// (hardware mode) or an object identifier (software mode, qs/ref.hpp).
const void* pointer_in(std::string_view value) {
  const void* p = nullptr;
  if (value.size() == sizeof p) std::memcpy(&p, value.data(), sizeof p);
  return p;
}

struct identifier {
  std::uint64_t page;
  std::uint32_t offset, tag;
};

identifier identifier_in(std::string_view value) {
  identifier id{};
  if (value.size() == sizeof id) std::memcpy(&id, value.data(), sizeof id);
  return id;
}

}  // namespace

std::uint32_t database_impl::open_index(const std::string& name, bool unique) {
  lock_scope g(*this);
  return store_->open_index(name, unique);
}

void database_impl::index_insert(std::uint32_t ix, const std::string& name, std::string_view key,
                                 std::string_view value) {
  lock_scope g(*this);
  require_transaction(("updating index " + name).c_str());
  if (!store_->index_insert(ix, key, location_of_ref(value)))
    throw duplicate_key("database " + this->name() + ": the unique index " + name + " already has that key");
}

bool database_impl::index_erase(std::uint32_t ix, std::string_view key, std::string_view value) {
  lock_scope g(*this);
  require_transaction("updating an index");
  // The entry's value begins with its page, offset and run length; the run's
  // address that follows is a hint that relocation may have made stale.
  return store_->index_erase(ix, key, location_of_ref(value).substr(0, 16));
}

std::vector<index_entry> database_impl::index_scan(std::uint32_t ix, std::string_view lo, std::string_view hi,
                                                   std::size_t limit) {
  lock_scope g(*this);
  std::vector<index_entry> out;
  store_->index_scan(ix, lo, hi, [&](std::string_view k, std::string_view v) {
    out.push_back({std::string(k), std::string(v)});
    return limit == 0 || out.size() < limit;
  });
  for (index_entry& e : out) {
    if constexpr (software_swizzling) {
      // The identifier only: the object is fetched when followed.
      identifier id{};
      decode_identity(e.value, id.page, id.offset, id.tag);
      e.value.assign(reinterpret_cast<const char*>(&id), sizeof id);
    } else {
      void* p = decode_location(e.value);
      e.value.assign(reinterpret_cast<const char*>(&p), sizeof p);
    }
  }
  return out;
}

std::string database_impl::location_of_ref(std::string_view value) {
  if constexpr (software_swizzling) {
    identifier id = identifier_in(value);
    return encode_identity(id.page, id.offset, id.tag);
  }
  return encode_location(pointer_in(value));
}

std::uint32_t index_open(database& db, const std::string& name, bool unique) {
  return impl_of(db).open_index(name, unique);
}
void index_insert(database& db, std::uint32_t ix, const std::string& name, std::string_view key,
                  std::string_view value) {
  impl_of(db).index_insert(ix, name, key, value);
}
bool index_erase(database& db, std::uint32_t ix, std::string_view key, std::string_view value) {
  return impl_of(db).index_erase(ix, key, value);
}
std::vector<index_entry> index_scan(database& db, std::uint32_t ix, std::string_view lo, std::string_view hi,
                                    std::size_t limit) {
  return impl_of(db).index_scan(ix, lo, hi, limit);
}

}  // namespace qs::detail
