// inspect/object_index.hpp: every object of a database by page and offset,
// gathered page by page, and where a reference lands among them: what
// verify checks pointers against and dump numbers objects by.
//
// A reference names a byte: `offset` from the start of the run that begins
// at `page` (a small page, or a large object's run; a page of a large run
// may be named too, and the byte is then found from its head).
//
// Invariants: pages are kept in page order, each page's objects by offset;
// a page whose record has a problem is kept as damaged, with no objects.
//
// Thread-safety: one thread at a time.
#pragma once

#include "inspect/stored_database.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qs::detail {

struct indexed_page {
  page_kind kind = page_kind::small;
  std::uint32_t type = 0, size = 0, index = 0;  // large objects' pages
  std::vector<stored_object> objects;           // small pages, by offset
  std::uint32_t available = 0;                  // small pages: bytes free
  bool damaged = false;                         // its record has a problem
};

// Where a reference landed.
struct landing {
  // The object: its head page and its payload's offset there (large
  // objects: stored_database::large_payload), type, size and tag.
  std::uint64_t page = 0;
  std::uint32_t offset = 0;
  std::uint32_t type = 0, tag = 0;
  std::uint64_t size = 0;
  std::uint64_t rel = 0;  // the byte named, from the payload's start (at most size)
  bool found = false;
  bool large = false;    // a large object's
  bool damaged = false;  // it lands on a page whose record has a problem: nothing is known
  std::string problem;   // when not found: where it leads, and why that is no object
};

class object_index {
 public:
  explicit object_index(std::uint32_t page_size) : page_size_(page_size) {}

  // Takes a page read by stored_database::read or for_each_page.
  indexed_page& add(const stored_page& p);
  const std::map<std::uint64_t, indexed_page>& pages() const { return pages_; }
  // Where a reference to byte `offset` of the run at `page` lands.
  landing land(std::uint64_t page, std::uint64_t offset) const;

 private:
  std::uint32_t page_size_;
  std::map<std::uint64_t, indexed_page> pages_;
};

}  // namespace qs::detail
