// qs-inspect verify.
#include "inspect/verify.hpp"

#include "core/location.hpp"
#include "core/page_heap.hpp"
#include "inspect/btree_nodes.hpp"
#include "inspect/object_index.hpp"

#include <qs/format/keys.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>

namespace qs::detail {
namespace {

struct pointer_word {
  std::uint64_t page;
  std::uint32_t offset;
  const type_layout* layout;
  std::uint32_t in_element;
  pointer_target target;
};

class verifier {
 public:
  verifier(stored_database& db, const std::function<void(const std::string&)>& report) : db_(db), report_(report) {}

  std::uint64_t run(const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
    db_.for_each_page([&](stored_page& p) { take(p); }, progress);
    for (const pointer_word& w : words_) check_word(w);
    check_runs();
    check_free_space();
    check_roots();
    check_indexes();
    return count_;
  }

 private:
  void problem(const std::string& line) {
    ++count_;
    report_(line);
  }
  std::string at(std::uint64_t page, std::uint64_t offset) {
    return "page " + std::to_string(page) + " offset " + std::to_string(offset);
  }

  void take(stored_page& p) {
    indexed_page& s = objects_.add(p);
    if (p.page >= db_.next_page())
      problem("page " + std::to_string(p.page) + ": a record past the page counter (" +
              std::to_string(db_.next_page()) + ")");
    if (s.damaged) {
      problem(p.problem);
      return;
    }
    if (s.kind == page_kind::small) {
#if QS_SOFTWARE_SWIZZLE
      for (const stored_object& o : p.objects)
        if (o.header.tag == 0)
          problem(at(p.page, o.offset) + ": an object of type " + db_.type_name(o.header.type) +
                  " with tag 0 (only freed objects have it)");
#endif
    }
    std::vector<byte_range> dead;
    for (const stored_object& o : p.objects) check_btree_node(p, o, dead);
    std::vector<bool> used(p.runs ? p.runs->size() : 0, false);
    for (const stored_word& w : db_.words(p)) {
      if (w.vptr) continue;  // the writer's vtable address: only a program of its types can say
      if (std::any_of(dead.begin(), dead.end(),
                      [&](const byte_range& r) { return w.offset >= r.offset && w.offset < r.offset + r.length; }))
        continue;
      if (p.runs) {
        std::uint64_t v;
        std::memcpy(&v, p.image.data() + w.offset, sizeof v);
        if (const mapping_entry* e = find_run(*p.runs, v, db_.page_size())) used[e - p.runs->data()] = true;
      }
      if (auto t = db_.follow(p, w.offset)) words_.push_back({p.page, w.offset, w.layout, w.in_element, std::move(*t)});
    }
    // The entries a pointer uses: an entry no pointer uses any more (its
    // object freed, or rewritten without a pointer) is left from before and
    // leads nowhere; page numbers are never used again.
    for (std::size_t i = 0; i < used.size(); ++i)
      if (used[i]) runs_.push_back({p.page, (*p.runs)[i]});
  }

  // qs::btree's nodes (qs/btree.hpp) are known by their type's name and
  // members: a btree_head (count, level) first, then `keys`, and `vals` (a
  // leaf) or `kids` (an inner node). Slots past the count are dead (erase
  // and split leave what was there): their words are not pointers, and
  // `dead` gets them. A leaf's segment fills add up to its count, and
  // numeric keys must not decrease in key order (segment by segment).
  void check_btree_node(const stored_page& p, const stored_object& o, std::vector<byte_range>& dead) {
    const type_layout* l = db_.schema().layout(o.header.type);
    if (!l || o.header.size != l->size) return;
    const std::optional<btree_node_shape>& shape = nodes_.of(*l);
    if (!shape) return;
    std::uint16_t n;
    std::memcpy(&n, p.image.data() + o.offset, 2);
    const std::string who = at(p.page, o.offset) + " (" + l->name + "): ";
    const std::byte* node = p.image.data() + o.offset;
    std::string why;
    auto ranges = shape->dead(node, &why);
    if (!ranges) {
      problem(who + why);
      dead.push_back({o.offset, o.header.size});
      return;
    }
    for (const byte_range& r : *ranges) dead.push_back({o.offset + r.offset, r.length});
    const member_info* keys = shape->keys;
    if (keys->k == member_kind::array &&
        (keys->number == number_kind::sint || keys->number == number_kind::uint ||
         keys->number == number_kind::floating) &&
        (keys->element_size == 4 || keys->element_size == 8)) {
      auto key = [&](std::uint32_t i) -> long double {
        const std::byte* q = node + keys->offset + std::uint64_t{shape->slot(node, i)} * keys->element_size;
        if (keys->number == number_kind::floating) {
          if (keys->element_size == 4) {
            float f;
            std::memcpy(&f, q, 4);
            return f;
          }
          double d;
          std::memcpy(&d, q, 8);
          return d;
        }
        if (keys->element_size == 4) {
          std::uint32_t u;
          std::memcpy(&u, q, 4);
          return keys->number == number_kind::sint ? static_cast<long double>(static_cast<std::int32_t>(u))
                                                   : static_cast<long double>(u);
        }
        std::uint64_t u;
        std::memcpy(&u, q, 8);
        return keys->number == number_kind::sint ? static_cast<long double>(static_cast<std::int64_t>(u))
                                                 : static_cast<long double>(u);
      };
      for (std::uint32_t i = 1; i < n; ++i)
        if (key(i) < key(i - 1)) {
          problem(who + "keys out of order: entry " + std::to_string(i) + " sorts before entry " +
                  std::to_string(i - 1));
          break;
        }
    }
  }

  // Whether byte `rel` of an object of layout l and `size` payload bytes is
  // where a pointer may lead: an element's start, a member's, an array
  // element's, or one past the end.
  static bool allowed(const type_layout* l, std::uint32_t type, std::uint64_t rel, std::uint64_t size) {
    if (rel == size || type == raw_type || !l) return true;
    if (l->size == 0) return rel == 0;
    const std::uint64_t e = rel % l->size;
    if (e == 0) return true;
    for (const member_info& m : l->members) {
      if (e == m.offset) return true;
      if (m.k == member_kind::array && m.element_size && e > m.offset && e <= std::uint64_t{m.offset} + m.size &&
          (e - m.offset) % m.element_size == 0)
        return true;
    }
    return false;
  }

  // What is wrong with a reference to byte `offset` of the run that starts
  // at `page` (its head, or any page of a large run); empty when it leads
  // into a live object where it may (exact: at a payload's start, with the
  // tag when there is one).
  std::string land(std::uint64_t page, std::uint64_t offset, bool exact, std::uint32_t tag) {
    const landing l = objects_.land(page, offset);
    if (l.damaged) return {};  // said already
    if (!l.found) return l.problem;
    const std::string where = "leads to " + at(l.page, l.offset + l.rel);
    const std::string of = db_.type_name(l.type);
    const std::string object = l.large ? " (a large object)" : " (at offset " + std::to_string(l.offset) + ")";
    if (exact && l.rel != 0) return where + ", inside a " + of + object;
#if QS_SOFTWARE_SWIZZLE
    if (exact && l.tag != tag)
      return where + ", a " + of + " whose tag is " + std::to_string(l.tag) + ", not " + std::to_string(tag) +
             " (the object it named was deleted)";
#else
    (void)tag;
#endif
    if (!allowed(db_.schema().layout(l.type), l.type, l.rel, l.size))
      return where + ", byte " + std::to_string(l.rel) + " of a " + of + object + ", where none of its members starts";
    return {};
  }
  const std::map<std::uint64_t, indexed_page>& pages() const { return objects_.pages(); }

  void check_word(const pointer_word& w) {
    const std::string who = at(w.page, w.offset) + " (" + member_name(*w.layout, w.in_element) + "): ";
    if (!w.target.problem.empty()) {
      problem(who + w.target.problem);
      return;
    }
    if (std::string wrong = land(w.target.page, w.target.offset, QS_SOFTWARE_SWIZZLE != 0, w.target.tag);
        !wrong.empty())
      problem(who + wrong);
  }

  void check_runs() {
    const std::uint32_t ps = db_.page_size();
    for (const auto& [page, e] : runs_) {
      const std::string who = "page " + std::to_string(page) + ": its mapping entry for page " +
                              std::to_string(e.page) + " (" + std::to_string(e.pages) + " pages) ";
      auto it = pages().find(e.page);
      if (it == pages().end()) {
        problem(who + "names a page that has no record");
        continue;
      }
      const indexed_page& s = it->second;
      if (s.damaged) continue;
      const std::uint64_t pages = s.kind == page_kind::small ? 1 : large_object_pages(s.size, ps);
      if (s.kind == page_kind::large_tail)
        problem(who + "names page " + std::to_string(s.index) + " of a large object, not its head");
      else if (pages != e.pages) problem(who + "where the run has " + std::to_string(pages) + " pages");
    }
    for (const auto& [page, s] : pages()) {
      if (s.damaged || s.kind != page_kind::large_head) continue;
      const std::uint64_t n = large_object_pages(s.size, ps);
      for (std::uint64_t i = 1; i < n; ++i) {
        auto it = pages().find(page + i);
        const std::string who = "page " + std::to_string(page) + ": its large object (" + db_.type_name(s.type) + ", " +
                                std::to_string(n) + " pages) ";
        if (it == pages().end()) {
          problem(who + "lacks its page " + std::to_string(i) + " (page " + std::to_string(page + i) + ")");
        } else if (!it->second.damaged && (it->second.kind != page_kind::large_tail || it->second.index != i ||
                                           it->second.type != s.type || it->second.size != s.size)) {
          problem(who + "has page " + std::to_string(page + i) + " saying it is something else");
        }
      }
    }
    for (const auto& [page, s] : pages()) {
      if (s.damaged || s.kind != page_kind::large_tail) continue;
      auto it = pages().find(page - s.index);
      if (it == pages().end() || it->second.kind != page_kind::large_head)
        problem("page " + std::to_string(page) + ": page " + std::to_string(s.index) +
                " of a large object whose head (page " + std::to_string(page - s.index) + ") is missing");
    }
  }

  void check_free_space() {
    db_.st().scan("s:", [&](std::string_view key, std::string_view value) {
      if (key.size() != 10) {
        problem("a free-space record with a damaged key");
        return;
      }
      const std::uint64_t page = from_be64(key.substr(2));
      std::uint64_t frame = 0;
      std::uint32_t room = 0;
      const std::string v(value);
      const std::string who = "page " + std::to_string(page) + ": its free-space record ('" + v.substr(0, 40) + "') ";
      if (std::sscanf(v.c_str(), "%" SCNu64 " %" SCNu32, &frame, &room) != 2) {
        problem(who + "is damaged");
        return;
      }
      auto it = pages().find(page);
      if (it == pages().end()) {
        problem(who + "names a page that has no record");
      } else if (it->second.damaged) {
      } else if (it->second.kind != page_kind::small) {
        problem(who + "names a large object's page");
      } else if (room != it->second.available) {
        problem(who + "says " + std::to_string(room) + " bytes are free where the page has " +
                std::to_string(it->second.available));
      }
    });
  }

  void check_location(const std::string& who, std::string_view bytes) {
    if (bytes.size() < 24) {
      problem(who + "holds " + std::to_string(bytes.size()) + " bytes, not a location");
      return;
    }
    location l = decode_location(bytes.substr(0, 24));
    if (std::string wrong = land(l.page, l.offset, true, static_cast<std::uint32_t>(l.last)); !wrong.empty())
      problem(who + wrong);
  }

  void check_roots() {
    db_.st().scan("r:", [&](std::string_view key, std::string_view value) {
      std::string type = value.size() > 24 ? demangle(std::string(value.substr(24)).c_str()) : "?";
      check_location("root " + std::string(key.substr(2)) + " (" + type + "): ", value);
    });
  }

  void check_indexes() {
    for (const stored_database::stored_index& ix : db_.indexes())
      db_.for_each_entry(ix, [&](std::string_view k, std::string_view v) {
        std::string shown;
        for (unsigned char c : k.substr(0, 32)) shown += (c >= 32 && c < 127) ? static_cast<char>(c) : '.';
        check_location("index " + ix.name + " entry '" + shown + "': ", v);
      });
  }

  stored_database& db_;
  const std::function<void(const std::string&)>& report_;
  std::uint64_t count_ = 0;
  object_index objects_{db_.page_size()};
  btree_nodes nodes_;  // in page order: problems come out in it
  std::vector<pointer_word> words_;
  std::vector<std::pair<std::uint64_t, mapping_entry>> runs_;
};

}  // namespace

std::uint64_t verify_database(stored_database& db, const std::function<void(const std::string&)>& report,
                              const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  return verifier(db, report).run(progress);
}

}  // namespace qs::detail
