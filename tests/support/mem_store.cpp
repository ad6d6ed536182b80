// A store in memory, with the embedded store's semantics (mem_store.hpp).
#include "mem_store.hpp"

#include <qs/error.hpp>

#include <cctype>
#include <cstring>

namespace qs_test {

using qs::detail::byte_range;
using qs::detail::record_header;

mem_store::mem_store(mem_store_options o) : name_(std::move(o.name)), page_size_(o.page_size), shared_(o.shared) {}

std::string mem_store::where(std::uint64_t page) const { return "store " + name_ + ": page " + std::to_string(page); }

void mem_store::begin() {
  if (before_) throw qs::store_error("store " + name_ + ": store transaction already open");
  before_ = now_;
}

void mem_store::commit(bool) {
  if (!before_) throw qs::store_error("store " + name_ + ": commit with no transaction open");
  before_.reset();
}

void mem_store::abort() {
  if (!before_) return;
  now_ = std::move(*before_);
  before_.reset();
}

bool mem_store::read_page(std::uint64_t page, record_header& h, std::byte* image, std::string& mapping) {
  auto it = now_.pages.find(page);
  if (it == now_.pages.end()) return false;
  const record& r = it->second;
  if (r.image.size() != page_size_)
    throw qs::corrupt_page(page, where(page) + " record has " + std::to_string(sizeof h + r.image.size()) +
                                     " bytes, expected " + std::to_string(sizeof h + page_size_));
  h = r.header;
  std::memcpy(image, r.image.data(), page_size_);
  // As every store: the mapping object only when the header says there is one.
  if (h.mapping_entries != 0) mapping = r.mapping;
  else mapping.clear();
  return true;
}

qs::detail::store::page_read mem_store::read_page_if_changed(std::uint64_t page, std::uint64_t version,
                                                             record_header& h, std::byte* image, std::string& mapping) {
  auto it = now_.pages.find(page);
  if (it == now_.pages.end()) return page_read::absent;
  if (it->second.header.version == version) return page_read::unchanged;
  return read_page(page, h, image, mapping) ? page_read::read : page_read::absent;
}

void mem_store::set_mapping(record& r, const std::string* mapping) {
  if (!mapping) return;
  r.mapping = *mapping;
  logged_ += mapping->size();
}

void mem_store::put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                         const std::string* mapping) {
  record& r = now_.pages[page];
  r.header = h;
  r.image.assign(image, image + page_size_);
  logged_ += sizeof h + page_size_;
  set_mapping(r, mapping);
}

void mem_store::patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                           std::span<const byte_range> ranges, const std::string* mapping) {
  auto it = now_.pages.find(page);
  if (it == now_.pages.end()) throw qs::store_error(where(page) + ": a patch of a page that has no record");
  record& r = it->second;
  for (const byte_range& b : ranges)
    if (std::uint64_t{b.offset} + b.length > r.image.size())
      throw qs::invalid_argument(where(page) + ": a patch of bytes [" + std::to_string(b.offset) + ", " +
                                 std::to_string(std::uint64_t{b.offset} + b.length) + ") of a " +
                                 std::to_string(r.image.size()) + "-byte image");
  r.header = h;
  logged_ += sizeof h;
  for (const byte_range& b : ranges) {
    std::memcpy(r.image.data() + b.offset, image + b.offset, b.length);
    logged_ += b.length;
  }
  set_mapping(r, mapping);
}

void mem_store::delete_page(std::uint64_t page) {
  now_.pages.erase(page);  // and its mapping object
  logged_ += sizeof page;
}

qs::detail::store::page_range mem_store::allocate_pages(std::uint64_t n) {
  if (!before_) throw qs::store_error("store " + name_ + ": pages are allocated inside a transaction");
  if (n == 0) throw qs::invalid_argument("store " + name_ + ": an allocation of no pages");
  auto counter = [&](const char* key, std::uint64_t first) {
    auto it = now_.meta.find(key);
    return it == now_.meta.end() ? first : std::stoull(it->second);
  };
  page_range r{counter("next_page", 1), counter("next_frame", 0)};
  put("next_page", std::to_string(r.page + n));
  put("next_frame", std::to_string(r.frame + n));
  return r;
}

std::optional<std::string> mem_store::stored_mapping(std::uint64_t page) const {
  auto it = now_.pages.find(page);
  if (it == now_.pages.end() || it->second.mapping.empty()) return std::nullopt;
  return it->second.mapping;
}

std::optional<std::string> mem_store::get(std::string_view key) {
  auto it = now_.meta.find(key);
  if (it == now_.meta.end()) return std::nullopt;
  return it->second;
}

void mem_store::put(std::string_view key, std::string_view value) {
  now_.meta.insert_or_assign(std::string(key), std::string(value));
  logged_ += key.size() + value.size();
}

void mem_store::del(std::string_view key) {
  if (auto it = now_.meta.find(key); it != now_.meta.end()) now_.meta.erase(it);
  logged_ += key.size();
}

void mem_store::scan(std::string_view prefix, const std::function<void(std::string_view, std::string_view)>& f) {
  // Collected first: f may write to the store.
  std::vector<std::pair<std::string, std::string>> found;
  for (auto it = now_.meta.lower_bound(prefix); it != now_.meta.end() && it->first.starts_with(prefix); ++it)
    found.emplace_back(it->first, it->second);
  for (auto& [k, v] : found) f(k, v);
}

const mem_store::index_def& mem_store::index_at(std::uint32_t index) const {
  if (index >= index_defs_.size())
    throw qs::invalid_argument("store " + name_ + ": no index number " + std::to_string(index) + " is open");
  return index_defs_[index];
}

std::uint32_t mem_store::open_index(const std::string& name, bool unique) {
  for (std::uint32_t i = 0; i < index_defs_.size(); ++i)
    if (index_defs_[i].name == name) {
      if (index_defs_[i].unique != unique)
        throw qs::invalid_argument("store " + name_ + ": index " + name + " was opened " +
                                   (index_defs_[i].unique ? "unique" : "non-unique") + " before");
      return i;
    }
  if (name.empty() || name.size() > 200)
    throw qs::invalid_argument("store " + name_ + ": an index name has 1 to 200 characters");
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      throw qs::invalid_argument("store " + name_ + ": index name '" + name +
                                 "' may hold letters, digits, _ and - only");
  index_defs_.push_back({name, unique});
  return static_cast<std::uint32_t>(index_defs_.size() - 1);
}

bool mem_store::index_insert(std::uint32_t index, std::string_view key, std::string_view value) {
  const index_def& d = index_at(index);
  index_entries& e = now_.indexes[index];
  auto first = e.lower_bound(entry_view(key, {}));
  if (d.unique && first != e.end() && first->first == key) return false;
  e.emplace(std::string(key), std::string(value));  // an exact duplicate is kept once
  logged_ += key.size() + value.size();
  return true;
}

bool mem_store::index_erase(std::uint32_t index, std::string_view key, std::string_view value_prefix) {
  const index_def& d = index_at(index);
  index_entries& e = now_.indexes[index];
  // A unique index's one entry of the key; in another, the key's first entry
  // whose value is not below the prefix. Either is erased if its value
  // begins with the prefix.
  auto it = e.lower_bound(entry_view(key, d.unique ? std::string_view() : value_prefix));
  if (it == e.end() || it->first != key || !it->second.starts_with(value_prefix)) return false;
  e.erase(it);
  logged_ += key.size() + value_prefix.size();
  return true;
}

void mem_store::index_scan(std::uint32_t index, std::string_view lo, std::string_view hi,
                           const std::function<bool(std::string_view, std::string_view)>& f) {
  index_at(index);
  std::vector<std::pair<std::string, std::string>> found;  // f may write to the store
  if (auto e = now_.indexes.find(index); e != now_.indexes.end())
    for (auto it = e->second.lower_bound(entry_view(lo, {})); it != e->second.end() && it->first <= hi; ++it)
      found.push_back(*it);
  for (auto& [k, v] : found)
    if (!f(k, v)) break;
}

}  // namespace qs_test
