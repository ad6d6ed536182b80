// A database's records, read and checked for inspection.
#include "inspect/stored_database.hpp"

#include "core/page_check.hpp"
#include "core/page_heap.hpp"
#include "mode/page_access.hpp"
#include "os/machine.hpp"
#include "store/bdb_store.hpp"
#include "store/remote_store.hpp"

#include <qs/format/keys.hpp>
#include <qs/inspect.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace qs::detail {
namespace {

// A catalog number, checked to lie in [lo, hi].
std::uint64_t number(store& s, const char* key, std::uint64_t lo, std::uint64_t hi) {
  auto v = s.get(key);
  if (!v) throw corrupt_page(0, "database " + s.name() + " has no '" + key + "' record");
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc() || end != v->data() + v->size() || n < lo || n > hi)
    throw corrupt_page(0, "database " + s.name() + " has a damaged '" + key + "' record ('" + v->substr(0, 40) + "')");
  return n;
}

std::optional<std::uint64_t> parse_number(std::string_view t, int base) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string hex_bytes(const std::byte* p, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[static_cast<unsigned>(p[i]) >> 4];
    s[2 * i + 1] = digits[static_cast<unsigned>(p[i]) & 15];
  }
  return s;
}

std::vector<stored_database::stored_index> stored_database::indexes() {
  std::vector<stored_index> out;
  for (const std::string& name : store_->index_names()) {
    // The store refuses to open an index as what it was not made.
    try {
      out.push_back({name, false, store_->open_index(name, false)});
    } catch (const invalid_argument&) {
      out.push_back({name, true, store_->open_index(name, true)});
    }
  }
  return out;
}

void stored_database::for_each_entry(const stored_index& ix,
                                     const std::function<void(std::string_view, std::string_view)>& f) {
  store_->index_scan(ix.number, "", std::string(4096, '\xff'), [&](std::string_view k, std::string_view v) {
    f(k, v);
    return true;
  });
}

stored_database::stored_database(const std::string& path, const options& opts) {
  if (is_remote_url(path)) {
    store_ = connect_remote_store(path, remote_options{opts.server_secret, opts.reconnect_budget_ms, true});
    remote_ = true;
  } else {
    // Looking must not create a database where there is none.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw invalid_argument("database " + path + ": no such directory");
    if (::stat((path + "/meta.db").c_str(), &st) != 0)
      throw invalid_argument("database " + path + ": not a qs database (the directory has no meta.db)");
    try {
      store_ = std::make_unique<bdb_store>(
          path, bdb_options{8192, opts.store_cache_bytes ? opts.store_cache_bytes : default_store_cache_bytes()});
    } catch (const database_in_use& e) {
      throw database_in_use(std::string(e.what()) +
                            ". An embedded database is inspected while no program has it open; a live one is "
                            "backed up by its own program (qs::database::backup), or served by qs-pageserver and "
                            "inspected and backed up through it");
    }
  }
  store_->begin();  // a page server's snapshot; an embedded store reads what is committed
  auto f = store_->get("format");
  if (!f) throw invalid_argument("database " + name() + ": not a qs database (no format record)");
  format_ = *f;
  if (format_ != page_access::format_name) {
    if (format_ == format_hardware || format_ == format_software) {
      std::string mode = format_ == format_hardware ? "hardware" : "software";
      throw other_mode("database " + name() + " was made in " + mode + " mode; this inspector reads " +
                           page_access::mode_name + " mode's databases",
                       mode);
    }
    throw error("database " + name() + " has format '" + format_ + "'; this qs reads format '" +
                page_access::format_name + "' only");
  }
  page_size_ = static_cast<std::uint32_t>(number(*store_, "page_size", 4096, 65536));
  if (page_size_ & (page_size_ - 1))
    throw corrupt_page(
        0, "database " + name() + ": its page size, " + std::to_string(page_size_) + ", is not a power of two");
  store_->set_page_size(page_size_);
  std::uint64_t base = number(*store_, "base", 0, std::uint64_t{1} << 47);
  reservation_ = number(*store_, "reservation", std::uint64_t{page_size_} * 16, std::uint64_t{1} << 46);
  home_ = home_region::of(base, reservation_, page_size_);
  if (store_->get("next_page")) next_page_ = number(*store_, "next_page", 1, std::uint64_t{1} << 40);
  if (store_->get("next_frame")) next_frame_ = number(*store_, "next_frame", 0, std::uint64_t{1} << 40);
  schema_ = std::make_unique<schema_registry>(*store_);
  schema_->set_evolving(true);  // the program's own types, if any, are not checked against the database's
  schema_->load();
}

stored_database::~stored_database() {
  try {
    if (store_ && store_->in_transaction()) store_->abort();
  } catch (const error&) {
  }
}

std::string stored_database::type_name(std::uint32_t type) const {
  if (type == free_type) return "free block";
  if (const type_layout* l = schema_->layout(type)) {
    if (type == pointer_type) return "pointer cell";
    if (type == raw_type) return "raw bytes";
    return l->name;
  }
  return "type index " + std::to_string(type);
}

bool stored_database::read(std::uint64_t n, stored_page& p) {
  p = stored_page{};
  p.page = n;
  p.image.assign(page_size_, std::byte{0});
  try {
    if (!store_->read_page(n, p.h, p.image.data(), p.mapping_bytes)) return false;
  } catch (const corrupt_page& e) {
    p.problem = e.what();
    return true;
  }
  check(p);
  return true;
}

void stored_database::check(stored_page& p) {
  const std::string at = "page " + std::to_string(p.page) + ": ";
  if (p.h.magic != record_magic) {
    p.problem = at + "a damaged record header";
    return;
  }
  if (std::uint32_t sum = record_checksum(p.h, p.image.data(), page_size_); sum != p.h.checksum) {
    p.problem = at + "checksum " + hex(sum) + " where the record says " + hex(p.h.checksum);
    return;
  }
  std::string wrong = check_page(p.h, p.image.data(), page_size_, [&](std::uint32_t type, bool& has_words) {
    // As the runtime checks a page it takes in (page_words::type_size).
    const type_layout* l = schema_->layout(type);
    if (!l) return std::uint32_t{0};
    has_words = !l->pointers.empty() || !l->vptrs.empty();
    return l->size;
  });
  if (!wrong.empty()) {
    p.problem = at + "holds " + wrong;
    return;
  }
  if (p.h.mapping_entries != 0) {
    p.runs = decode_mapping(p.mapping_bytes, page_size_);
    if (!p.runs || p.runs->size() != p.h.mapping_entries) {
      p.problem = at + "its mapping object " +
                  (p.mapping_bytes.empty() ? std::string("is missing")
                                           : "is damaged (" + std::to_string(p.mapping_bytes.size()) + " bytes for " +
                                                 std::to_string(p.h.mapping_entries) + " entries)");
      p.runs.reset();
      return;
    }
  } else if (!p.mapping_bytes.empty()) {
    p.problem = at + "a mapping object of " + std::to_string(p.mapping_bytes.size()) +
                " bytes where the record says it has none";
    return;
  }
  if (p.h.kind == page_kind::small)
    heap_for_each(p.image.data(), page_size_, [&](std::uint32_t payload, const object_header& oh) {
      p.objects.push_back({payload, oh});
    });
}

void stored_database::for_each_page(const std::function<void(stored_page&)>& f,
                                    const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  const std::uint64_t last = next_page_ > 1 ? next_page_ - 1 : 0;
  constexpr std::uint64_t batch = 256;
  std::vector<stored_page> got(batch);
  for (std::uint64_t first = 1; first <= last; first += batch) {
    const std::uint64_t end = std::min(last, first + batch - 1);
    std::vector<bool> seen(end - first + 1, false);
    for (auto& p : got) p.image.assign(page_size_, std::byte{0});
    bool ranged = store_->read_range(
        first, end, [&](std::uint64_t page) { return got[page - first].image.data(); },
        [&](std::uint64_t page, const record_header& h, std::string mapping_object) {
          stored_page& p = got[page - first];
          p.page = page;
          p.h = h;
          p.mapping_bytes = std::move(mapping_object);
          p.runs.reset();
          p.problem.clear();
          p.objects.clear();
          check(p);
          seen[page - first] = true;
        });
    for (std::uint64_t page = first; page <= end; ++page) {
      stored_page& p = got[page - first];
      // Pages the bulk pass left out (no record, or one it would not take
      // whole) are read alone, which says which.
      if ((!ranged || !seen[page - first]) && !read(page, p)) continue;
      f(p);
    }
    if (progress) progress(end, last);
  }
}

const std::vector<std::uint32_t>& stored_database::reference_offsets(const type_layout& l) {
  auto [it, fresh] = references_.try_emplace(&l);
  if (!fresh) return it->second;
#if QS_SOFTWARE_SWIZZLE
  auto ends = [](const std::string& path, std::string_view tail) {
    return path.size() > tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  const auto& ms = l.members;
  for (std::size_t i = 0; i + 2 < ms.size(); ++i) {
    if (!ends(ms[i].path, "page_") || ms[i].size != 8) continue;
    const std::string prefix = ms[i].path.substr(0, ms[i].path.size() - 5);
    if (ms[i + 1].path == prefix + "offset_" && ms[i + 1].offset == ms[i].offset + 8 &&
        ms[i + 2].path == prefix + "tag_" && ms[i + 2].offset == ms[i].offset + 12)
      it->second.push_back(ms[i].offset);
  }
#else
  it->second = l.pointers;
#endif
  std::sort(it->second.begin(), it->second.end());
  return it->second;
}

std::vector<stored_word> stored_database::words(const stored_page& p) {
  std::vector<stored_word> out;
  if (!p.problem.empty()) return out;
  // Words of elements of an object whose byte x is at page offset x + shift,
  // for object bytes in [lo, hi).
  auto visit = [&](const type_layout& l, std::uint64_t elems, std::uint64_t lo, std::uint64_t hi, std::int64_t shift) {
    const std::vector<std::uint32_t>& refs = reference_offsets(l);
    if ((refs.empty() && l.vptrs.empty()) || l.size == 0) return;
    std::uint64_t first = lo / l.size, last = std::min<std::uint64_t>(elems, (hi + l.size - 1) / l.size);
    for (std::uint64_t e = first; e < last; ++e) {
      std::uint64_t at = e * l.size;
      for (std::uint32_t off : refs)
        if (at + off >= lo && at + off + pointer_word_bytes <= hi)
          out.push_back({static_cast<std::uint32_t>(at + off + shift), false, &l, off});
      for (std::uint32_t off : l.vptrs)
        if (at + off >= lo && at + off + 8 <= hi)
          out.push_back({static_cast<std::uint32_t>(at + off + shift), true, &l, off});
    }
  };
  if (p.h.kind == page_kind::small) {
    for (const stored_object& o : p.objects)
      if (const type_layout* l = schema_->layout(o.header.type))
        visit(*l, o.header.size / std::max<std::uint32_t>(l->size, 1), 0, o.header.size, o.offset);
    return out;
  }
  const type_layout* l = schema_->layout(p.h.type);
  if (!l) return out;
  std::uint64_t page_begin = std::uint64_t{p.h.index} * page_size_;
  std::uint64_t lo = page_begin > large_payload ? page_begin - large_payload : 0;
  std::uint64_t hi = std::min<std::uint64_t>(p.h.size, page_begin + page_size_ - large_payload);
  if (lo < hi)
    visit(*l, p.h.size / std::max<std::uint32_t>(l->size, 1), lo, hi,
          static_cast<std::int64_t>(large_payload) - static_cast<std::int64_t>(page_begin));
  return out;
}

std::optional<pointer_target> stored_database::follow(const stored_page& p, std::uint32_t offset) const {
  pointer_target t;
#if QS_SOFTWARE_SWIZZLE
  std::uint64_t page;
  std::uint32_t off, tag;
  std::memcpy(&page, p.image.data() + offset, 8);
  std::memcpy(&off, p.image.data() + offset + 8, 4);
  std::memcpy(&tag, p.image.data() + offset + 12, 4);
  if (off == 0) return std::nullopt;
  t.page = page;
  t.offset = off;
  t.tag = tag;
#else
  std::uint64_t v;
  std::memcpy(&v, p.image.data() + offset, 8);
  if (v == 0) return std::nullopt;
  if (p.runs) {
    if (const mapping_entry* e = find_run(*p.runs, v, page_size_)) {
      t.page = e->page;
      t.offset = v - e->address;
      return t;
    }
  }
  if (std::uint64_t page = home_.page_of(v)) {
    t.page = page;
    t.offset = (v - home_.base) % page_size_;
    return t;
  }
  t.problem = "points to " + hex(v) + ", outside the database's frames and its mapping object";
#endif
  return t;
}

std::optional<std::pair<std::uint64_t, std::uint32_t>> stored_database::parse_address(std::string_view text) const {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    auto v = parse_number(text.substr(2), 16);
    if (!v) return std::nullopt;
    std::uint64_t page = home_.page_of(*v);
    if (!page) return std::nullopt;
    return std::pair{page, static_cast<std::uint32_t>((*v - home_.base) % page_size_)};
  }
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto page = parse_number(text.substr(0, colon), 10), off = parse_number(text.substr(colon + 1), 10);
  if (!page || !off || *off >= page_size_) return std::nullopt;
  return std::pair{*page, static_cast<std::uint32_t>(*off)};
}

std::uint64_t stored_database::home_address(std::uint64_t page, std::uint64_t offset) const {
  auto f = home_.frame_of_page(page);
  return f ? home_.base + *f * page_size_ + offset : 0;
}

}  // namespace qs::detail
