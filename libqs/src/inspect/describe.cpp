// qs-inspect's stat, roots, schema, page and object.
#include "inspect/describe.hpp"

#include "core/location.hpp"
#include "core/page_heap.hpp"

#include <qs/error.hpp>
#include <qs/format/keys.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

namespace qs::detail {
namespace {

std::string mode_of(const std::string& format) {
  return format.find("software") != std::string::npos ? "software" : "hardware";
}

// The indexes of layouts schema evolution replaced ("h:" + name + "@" + index).
std::set<std::uint32_t> earlier_layouts(store& s) {
  std::set<std::uint32_t> out;
  s.scan("h:", [&](std::string_view key, std::string_view) {
    auto at = key.rfind('@');
    if (at != std::string_view::npos)
      out.insert(static_cast<std::uint32_t>(std::strtoul(std::string(key.substr(at + 1)).c_str(), nullptr, 10)));
  });
  return out;
}

// A member's value in `bytes` (the element it belongs to starts at `elem`).
std::string value_of(const member_info& m, const std::byte* elem, std::size_t avail) {
  if (std::uint64_t{m.offset} + m.size > avail) return "(past the object's end)";
  const std::byte* p = elem + m.offset;
  auto number = [](number_kind k, const std::byte* q, std::uint32_t size) -> std::string {
    if (k == number_kind::floating && (size == 4 || size == 8)) {
      char b[48];
      if (size == 4) {
        float f;
        std::memcpy(&f, q, 4);
        std::snprintf(b, sizeof b, "%.9g", f);
      } else {
        double d;
        std::memcpy(&d, q, 8);
        std::snprintf(b, sizeof b, "%.17g", d);
      }
      return b;
    }
    if ((k == number_kind::sint || k == number_kind::uint || k == number_kind::boolean) &&
        (size == 1 || size == 2 || size == 4 || size == 8)) {
      std::uint64_t u = 0;
      std::memcpy(&u, q, size);
      if (k == number_kind::boolean) return u ? "true" : "false";
      if (k == number_kind::sint && size < 8 && (u >> (size * 8 - 1)) & 1) u |= ~std::uint64_t{0} << (size * 8);
      return k == number_kind::sint ? std::to_string(static_cast<std::int64_t>(u)) : std::to_string(u);
    }
    return hex_bytes(q, std::min<std::uint32_t>(size, 32)) + (size > 32 ? "..." : "");
  };
  switch (m.k) {
    case member_kind::vptr:
    case member_kind::pointer: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return v ? hex(v) : "null";
    }
    case member_kind::number: return number(m.number, p, m.size);
    case member_kind::bits: {
      std::uint64_t v = 0;
      for (std::uint32_t i = 0; i < m.bit_count; ++i) {
        std::uint32_t bit = m.first_bit + i;
        if (bit / 8 >= avail) break;
        v |= std::uint64_t{(static_cast<unsigned>(elem[bit / 8]) >> (bit % 8)) & 1u} << i;
      }
      return std::to_string(v);
    }
    case member_kind::array: {
      std::string s = "[";
      const std::uint32_t n = std::min<std::uint32_t>(m.count, 8);
      for (std::uint32_t i = 0; i < n && m.element_size; ++i) {
        if (i) s += ", ";
        const std::byte* q = p + std::uint64_t{i} * m.element_size;
        if (m.number != number_kind::none) {
          s += number(m.number, q, m.element_size);
        } else if (m.element_size == 8) {
          std::uint64_t v;
          std::memcpy(&v, q, 8);
          s += v ? hex(v) : "null";
        } else {
          s += number(number_kind::none, q, m.element_size);
        }
      }
      if (m.count > n) s += ", ... " + std::to_string(m.count - n) + " more";
      return s + "]";
    }
    case member_kind::opaque: return number(number_kind::none, p, m.size);
  }
  return "?";
}

std::string target_text(const pointer_target& t) {
  if (!t.problem.empty()) return t.problem;
  std::string s = "page " + std::to_string(t.page) + " offset " + std::to_string(t.offset);
  if (QS_SOFTWARE_SWIZZLE) s += " tag " + std::to_string(t.tag);
  return s;
}

}  // namespace

void describe_stat(stored_database& db, std::ostream& out,
                   const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  struct by_type {
    std::uint64_t objects = 0, bytes = 0;
  };
  std::map<std::string, by_type> types;
  std::uint64_t records = 0, small = 0, large_objects = 0, large_pages = 0, damaged = 0, objects = 0, payload = 0,
                free_blocks = 0, tails = 0, mapped = 0;
  const std::uint32_t ps = db.page_size();
  db.for_each_page(
      [&](stored_page& p) {
        ++records;
        if (!p.problem.empty()) {
          ++damaged;
          return;
        }
        if (p.runs) ++mapped;
        if (p.h.kind == page_kind::small) {
          ++small;
          page_header ph;
          std::memcpy(&ph, p.image.data(), sizeof ph);
          free_blocks += ph.free_bytes;
          tails += ps - ph.top;
          for (const stored_object& o : p.objects) {
            by_type& t = types[db.type_name(o.header.type)];
            ++t.objects;
            t.bytes += o.header.size;
            ++objects;
            payload += o.header.size;
          }
          return;
        }
        ++large_pages;
        if (p.h.kind == page_kind::large_head) {
          ++large_objects;
          by_type& t = types[db.type_name(p.h.type)];
          ++t.objects;
          t.bytes += p.h.size;
          ++objects;
          payload += p.h.size;
        }
      },
      progress);
  const home_region& home = db.home();
  out << "database      " << db.name() << "\n";
  out << "format        " << db.format() << " (" << mode_of(db.format()) << " mode)\n";
  out << "page size     " << ps << "\n";
  out << "reservation   " << (db.reservation() >> 20) << " MiB at " << hex(home.base) << "; pages 1 to " << home.frames
      << " have home frames\n";
  out << "counters      next page " << db.next_page() << ", next frame " << db.next_frame() << "\n";
  out << "pages         " << records << " records: " << small << " small-object pages, " << large_pages << " pages of "
      << large_objects << " large objects";
  if (damaged) out << ", " << damaged << " damaged (qs-inspect verify names them)";
  out << "; " << mapped << " with a mapping object\n";
  out << "objects       " << objects << ", " << payload << " payload bytes\n";
  out << "free          " << free_blocks << " bytes in free blocks, " << tails
      << " never allocated at the ends of small pages\n";
  std::uint64_t root_count = 0, free_records = 0;
  db.st().scan("r:", [&](std::string_view, std::string_view) { ++root_count; });
  db.st().scan("s:", [&](std::string_view, std::string_view) { ++free_records; });
  out << "free list     " << free_records << " pages with room\n";
  out << "roots         " << root_count << "\n";
  auto indexes = db.indexes();
  out << "indexes       " << indexes.size() << "\n";
  for (const auto& ix : indexes) {
    std::uint64_t entries = 0;
    db.for_each_entry(ix, [&](std::string_view, std::string_view) { ++entries; });
    out << "  " << ix.name << " (" << (ix.unique ? "unique" : "duplicate keys") << "): " << entries << " entries\n";
  }
  if (db.remote()) {
    out << "log           (kept by the page server)\n";
  } else {
    std::uint64_t files = 0, bytes = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(db.name(), ec))
      if (e.path().filename().string().rfind("log.", 0) == 0) {
        ++files;
        bytes += e.file_size(ec);
      }
    out << "log           " << bytes << " bytes in " << files << " files\n";
  }
  std::set<std::uint32_t> earlier = earlier_layouts(db.st());
  std::uint64_t current = 0;
  for (std::uint32_t i = first_stored_type; i < db.schema().index_limit(); ++i)
    if (db.schema().layout(i) && !earlier.count(i)) ++current;
  out << "schema        " << current << " types, " << earlier.size() << " earlier layouts (qs-inspect schema)\n";
  out << "by type       objects     payload bytes  type\n";
  std::vector<std::pair<std::string, by_type>> sorted(types.begin(), types.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  });
  for (const auto& [name, t] : sorted) {
    char line[64];
    std::snprintf(line, sizeof line, "  %20llu %16llu  ", static_cast<unsigned long long>(t.objects),
                  static_cast<unsigned long long>(t.bytes));
    out << line << name << "\n";
  }
}

void describe_roots(stored_database& db, std::ostream& out) {
  db.st().scan("r:", [&](std::string_view key, std::string_view value) {
    out << key.substr(2) << "  ";
    if (value.size() < 24) {
      out << "(a damaged record of " << value.size() << " bytes)\n";
      return;
    }
    location l = decode_location(value.substr(0, 24));
    out << demangle(std::string(value.substr(24)).c_str()) << "  page " << l.page << " offset " << l.offset;
    if (std::uint64_t a = db.home_address(l.page, l.offset); a && mode_of(db.format()) == "hardware")
      out << " (" << hex(a) << ")";
    out << "\n";
  });
}

void describe_schema(stored_database& db, std::ostream& out) {
  std::set<std::uint32_t> earlier = earlier_layouts(db.st());
  for (std::uint32_t i = first_stored_type; i < db.schema().index_limit(); ++i) {
    const type_layout* l = db.schema().layout(i);
    if (!l) continue;
    out << (earlier.count(i) ? "earlier layout " : "type ") << i << " " << l->name << "  size " << l->size << " align "
        << l->align << ", " << l->pointers.size() << " pointers, " << l->vptrs.size() << " vptrs\n";
    for (const member_info& m : l->members) out << "  " << member_line(to_stored(m)) << "\n";
  }
}

void describe_page(stored_database& db, std::uint64_t n, std::ostream& out) {
  stored_page p;
  if (!db.read(n, p))
    throw invalid_argument("database " + db.name() + ": page " + std::to_string(n) + " has no record");
  const char* kinds[] = {"?", "small-object page", "large object's head", "large object's page"};
  const auto k = static_cast<std::uint32_t>(p.h.kind);
  out << "page " << n << ": " << (k <= 3 ? kinds[k] : "?") << ", frame " << p.h.frame
      << (db.home().frame_of_page(n) == p.h.frame ? " (home)" : "") << ", version " << p.h.version << ", "
      << p.h.mapping_entries << " mapping entries\n";
  if (p.h.kind != page_kind::small)
    out << "  object: " << db.type_name(p.h.type) << ", " << p.h.size << " bytes; this is its page " << p.h.index
        << "\n";
  if (!p.problem.empty()) {
    out << "  problem: " << p.problem << "\n";
    return;
  }
  if (p.h.kind == page_kind::small) {
    page_header ph;
    std::memcpy(&ph, p.image.data(), sizeof ph);
    out << "  top " << ph.top << ", " << ph.free_bytes << " bytes in free blocks, "
        << heap_available(p.image.data(), db.page_size()) << " free in all\n";
    out << "  objects (" << p.objects.size() << "):\n";
    for (const stored_object& o : p.objects) {
      const type_layout* l = db.schema().layout(o.header.type);
      out << "    offset " << o.offset << "  " << db.type_name(o.header.type) << ", " << o.header.size << " bytes";
      if (l && l->size && o.header.size / l->size > 1) out << " (" << o.header.size / l->size << " elements)";
#if QS_SOFTWARE_SWIZZLE
      out << ", tag " << o.header.tag;
#endif
      out << "\n";
    }
  }
  auto words = db.words(p);
  out << "  pointer words (" << words.size() << "):\n";
  for (const stored_word& w : words) {
    out << "    offset " << w.offset << "  " << member_name(*w.layout, w.in_element);
    if (w.vptr) {
      std::uint64_t v;
      std::memcpy(&v, p.image.data() + w.offset, 8);
      out << "  vptr " << hex(v) << "\n";
      continue;
    }
    auto t = db.follow(p, w.offset);
    out << "  " << (t ? target_text(*t) : std::string("null")) << "\n";
  }
  if (p.runs) {
    out << "  mapping object:\n";
    for (const mapping_entry& e : *p.runs)
      out << "    " << hex(e.address) << "  page " << e.page << ", " << e.pages << " pages\n";
  }
}

void describe_object(stored_database& db, std::string_view address, std::ostream& out) {
  auto where = db.parse_address(address);
  if (!where)
    throw invalid_argument("'" + std::string(address) +
                           "' is not an address in the database's home frames (0x...) nor PAGE:OFFSET");
  const std::uint64_t page = where->first;
  const std::uint32_t offset = where->second;
  stored_page p;
  if (!db.read(page, p))
    throw invalid_argument("database " + db.name() + ": page " + std::to_string(page) + " has no record");
  if (!p.problem.empty()) throw invalid_argument(p.problem);
  std::uint32_t type = 0;
  std::uint64_t size = 0;
  std::vector<std::byte> bytes;
  if (p.h.kind == page_kind::small) {
    auto o =
        std::find_if(p.objects.begin(), p.objects.end(), [&](const stored_object& x) { return x.offset == offset; });
    if (o == p.objects.end())
      throw invalid_argument("database " + db.name() + ": no object starts at page " + std::to_string(page) +
                             " offset " + std::to_string(offset) + " (qs-inspect page " + std::to_string(page) +
                             " lists its objects)");
    type = o->header.type;
    size = o->header.size;
    bytes.assign(p.image.begin() + o->offset, p.image.begin() + o->offset + o->header.size);
  } else {
    if (p.h.kind != page_kind::large_head || offset != stored_database::large_payload)
      throw invalid_argument("database " + db.name() + ": page " + std::to_string(page) +
                             " is a large object's; its object starts at offset " +
                             std::to_string(stored_database::large_payload) + " of its first page, page " +
                             std::to_string(page - p.h.index));
    type = p.h.type;
    size = p.h.size;
    const std::uint64_t shown = std::min<std::uint64_t>(size, std::uint64_t{1} << 20);
    bytes.assign(p.image.begin() + offset, p.image.end());
    for (std::uint64_t next = page + 1; bytes.size() < shown; ++next) {
      stored_page q;
      if (!db.read(next, q) || !q.problem.empty()) break;
      bytes.insert(bytes.end(), q.image.begin(), q.image.end());
    }
    bytes.resize(std::min<std::uint64_t>(bytes.size(), shown));
  }
  const type_layout* l = db.schema().layout(type);
  out << "object at page " << page << " offset " << offset;
  if (std::uint64_t a = db.home_address(page, offset); a && mode_of(db.format()) == "hardware")
    out << " (" << hex(a) << ")";
  out << ": " << db.type_name(type) << ", " << size << " bytes\n";
  if (!l || l->size == 0 || l->members.empty()) return;
  const std::uint64_t elems = size / l->size;
  const std::uint64_t shown = std::min<std::uint64_t>(elems, 64);
  for (std::uint64_t e = 0; e < shown; ++e) {
    const std::uint64_t at = e * l->size;
    if (at >= bytes.size()) break;
    const std::string prefix = elems > 1 ? "  [" + std::to_string(e) + "]." : "  ";
    for (const member_info& m : l->members) {
      // A pointer cell's one member is a pointer, whatever its record says.
      member_info shown_as = m;
      if (type == pointer_type && m.size == 8) shown_as.k = member_kind::pointer;
      out << prefix << m.path << " = " << value_of(shown_as, bytes.data() + at, bytes.size() - at);
      if (shown_as.k == member_kind::pointer && at + m.offset + 8 <= bytes.size() && !QS_SOFTWARE_SWIZZLE) {
        // Where it leads, read as the page's own pointer words are.
        std::uint64_t in_page =
            (p.h.kind == page_kind::small ? offset : stored_database::large_payload) + at + m.offset;
        if (in_page + 8 <= db.page_size())
          if (auto t = db.follow(p, static_cast<std::uint32_t>(in_page))) out << "  -> " << target_text(*t);
      }
      out << "  (" << m.spelled << ")\n";
    }
  }
  if (elems > shown) out << "  ... " << elems - shown << " more elements\n";
}

}  // namespace qs::detail
