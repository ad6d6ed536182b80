// store_record.hpp: a page record with its mapping object, over the store
// interface of store.hpp.
#pragma once

#include "keys.hpp"
#include "store.hpp"

#include <string>

namespace qs::detail {

inline bool read_record(store& s, std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) {
  if (!s.read_page(page, h, image)) return false;
  mapping.clear();
  if (h.mapping_entries)
    if (auto m = s.get(mapping_key(page))) mapping = std::move(*m);
  return true;
}

inline store::page_read read_record_if_changed(store& s, std::uint64_t page, std::uint64_t version,
                                               record_header& h, std::byte* image, std::string& mapping) {
  store::page_read r = s.read_page_if_changed(page, version, h, image);
  if (r != store::page_read::read) return r;
  mapping.clear();
  if (h.mapping_entries)
    if (auto m = s.get(mapping_key(page))) mapping = std::move(*m);
  return r;
}

inline void write_mapping(store& s, std::uint64_t page, const std::string* mapping) {
  if (!mapping) return;
  if (mapping->empty()) s.del(mapping_key(page));
  else s.put(mapping_key(page), *mapping);
}

inline void put_record(store& s, std::uint64_t page, const record_header& h, const std::byte* image,
                       const std::string* mapping) {
  write_mapping(s, page, mapping);
  s.put_page(page, h, image);
}

inline void patch_record(store& s, std::uint64_t page, const record_header& h, const std::byte* image,
                         std::span<const byte_range> ranges, const std::string* mapping) {
  write_mapping(s, page, mapping);
  s.patch_page(page, h, image, ranges);
}

inline void delete_record(store& s, std::uint64_t page) {
  s.delete_page(page);
  s.del(mapping_key(page));
}

}  // namespace qs::detail
