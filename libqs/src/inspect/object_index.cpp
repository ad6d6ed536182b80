// The objects of a database, by page and offset.
#include "inspect/object_index.hpp"

#include "core/page_heap.hpp"

#include <algorithm>
#include <iterator>

namespace qs::detail {

indexed_page& object_index::add(const stored_page& p) {
  indexed_page& s = pages_[p.page];
  s.kind = p.h.kind;
  s.type = p.h.type;
  s.size = p.h.size;
  s.index = p.h.index;
  s.damaged = !p.problem.empty();
  if (!s.damaged && s.kind == page_kind::small) {
    s.objects = p.objects;
    s.available = heap_available(p.image.data(), page_size_);
  }
  return s;
}

landing object_index::land(std::uint64_t page, std::uint64_t offset) const {
  landing l;
  auto it = pages_.find(page);
  if (it == pages_.end()) {
    l.problem = "leads to page " + std::to_string(page) + ", which has no record";
    return l;
  }
  if (it->second.damaged) {
    l.damaged = true;
    return l;
  }
  if (it->second.kind == page_kind::large_tail) {
    const std::uint64_t head = page - it->second.index;
    offset += std::uint64_t{it->second.index} * page_size_;
    it = pages_.find(head);
    if (it == pages_.end() || it->second.kind != page_kind::large_head) {
      l.problem = "leads to page " + std::to_string(page) + ", a large object's page whose head (page " +
                  std::to_string(head) + ") is missing";
      return l;
    }
    if (it->second.damaged) {
      l.damaged = true;
      return l;
    }
    page = head;
  }
  const indexed_page& s = it->second;
  const std::string where = "leads to page " + std::to_string(page) + " offset " + std::to_string(offset);
  l.page = page;
  if (s.kind == page_kind::large_head) {
    const std::uint64_t start = stored_database::large_payload;
    if (offset < start || offset > start + s.size) {
      l.problem = where + ", outside the large object whose run starts there";
      return l;
    }
    l.offset = stored_database::large_payload;
    l.type = s.type;
    l.size = s.size;
    l.rel = offset - start;
    l.found = true;
    l.large = true;
    return l;
  }
  if (offset >= page_size_) {
    l.problem = where + ", past the end of a small page";
    return l;
  }
  auto o = std::upper_bound(s.objects.begin(), s.objects.end(), offset,
                            [](std::uint64_t off, const stored_object& x) { return off < x.offset; });
  if (o == s.objects.begin() || offset > std::prev(o)->offset + std::uint64_t{std::prev(o)->header.size}) {
    l.problem = where + ", where no object is (one deleted, or space never allocated)";
    return l;
  }
  const stored_object& obj = *std::prev(o);
  l.offset = obj.offset;
  l.type = obj.header.type;
  l.size = obj.header.size;
  l.tag = tag_of(obj.header);
  l.rel = offset - obj.offset;
  l.found = true;
  return l;
}

}  // namespace qs::detail
