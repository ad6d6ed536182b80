// qs-inspect dump.
#include "inspect/dump.hpp"

#include "core/location.hpp"
#include "inspect/btree_nodes.hpp"
#include "inspect/object_index.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <set>

namespace qs::detail {
namespace {

using json = nlohmann::ordered_json;

struct dumped_object {
  std::uint64_t page;
  std::uint32_t offset;  // of the payload in its (head) page
  std::uint32_t type;
  std::string bytes;  // the payload
  // Its references: the word's offset in the payload, and where it leads.
  std::vector<std::pair<std::uint64_t, pointer_target>> words;
  std::int64_t id = -1;
};

// A reference resolved: an object (its index in `objects`) and the byte in
// it, or the pointer's value when it leads to no object.
struct resolved {
  std::int64_t object = -1;
  std::uint64_t rel = 0;
  std::uint64_t value = 0;
};

class dumper {
 public:
  explicit dumper(stored_database& db) : db_(db), index_(db.page_size()) {}

  std::uint64_t run(std::ostream& out, const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
    db_.for_each_page([&](stored_page& p) { take(p); }, progress);
    resolve();
    number();
    write(out);
    return objects_.size();
  }

 private:
  void take(const stored_page& p) {
    index_.add(p);
    if (!p.problem.empty()) return;  // qs-inspect verify says what is wrong; nothing of it is dumped
    if (p.h.kind == page_kind::small) {
      for (const stored_object& o : p.objects) {
        by_place_[{p.page, o.offset}] = objects_.size();
        objects_.push_back({p.page,
                            o.offset,
                            o.header.type,
                            std::string(reinterpret_cast<const char*>(p.image.data()) + o.offset, o.header.size),
                            {},
                            -1});
      }
    } else {
      // A large object's pages come in order: its head starts it, each
      // tail adds its bytes.
      const std::uint64_t head = p.page - p.h.index;
      const std::uint64_t begin = std::uint64_t{p.h.index} * db_.page_size();
      if (p.h.kind == page_kind::large_head) {
        by_place_[{head, stored_database::large_payload}] = objects_.size();
        objects_.push_back({head, stored_database::large_payload, p.h.type, {}, {}, -1});
      }
      auto it = by_place_.find({head, stored_database::large_payload});
      if (it == by_place_.end()) return;
      std::string& bytes = objects_[it->second].bytes;
      const std::uint64_t from = begin > stored_database::large_payload ? begin - stored_database::large_payload : 0;
      const std::uint64_t to =
          std::min<std::uint64_t>(p.h.size, begin + db_.page_size() - stored_database::large_payload);
      if (bytes.size() != from || from >= to) return;  // a page missing before it: left incomplete
      const std::uint64_t in_page = from + stored_database::large_payload - begin;
      bytes.append(reinterpret_cast<const char*>(p.image.data()) + in_page, to - from);
    }
    // The dead slots of qs::btree nodes hold what erase and split left:
    // written as null, not as pointers to objects that may be gone.
    std::vector<byte_range> dead;
    for (const stored_object& o : p.objects)
      if (const type_layout* l = db_.schema().layout(o.header.type); l && o.header.size == l->size)
        if (const auto& shape = nodes_.of(*l)) {
          if (auto ranges = shape->dead(p.image.data() + o.offset))
            for (const byte_range& r : *ranges) dead.push_back({o.offset + r.offset, r.length});
        }
    for (const stored_word& w : db_.words(p)) {
      if (w.vptr || std::any_of(dead.begin(), dead.end(), [&](const byte_range& r) {
            return w.offset >= r.offset && w.offset < r.offset + r.length;
          }))
        continue;
      auto t = db_.follow(p, w.offset);
      if (p.h.kind == page_kind::small) {
        auto o = std::upper_bound(p.objects.begin(), p.objects.end(), w.offset,
                                  [](std::uint32_t off, const stored_object& x) { return off < x.offset; });
        if (o == p.objects.begin()) continue;
        --o;
        objects_[by_place_.at({p.page, o->offset})].words.push_back({w.offset - o->offset, t ? *t : pointer_target{}});
      } else {
        const std::uint64_t head = p.page - p.h.index;
        auto it = by_place_.find({head, stored_database::large_payload});
        if (it == by_place_.end()) continue;
        objects_[it->second].words.push_back(
            {std::uint64_t{p.h.index} * db_.page_size() + w.offset - stored_database::large_payload,
             t ? *t : pointer_target{}});
      }
    }
  }

  resolved resolve_target(const pointer_target& t, std::uint64_t value) const {
    resolved r;
    r.value = value;
    if (t.page == 0) return r;
    landing l = index_.land(t.page, t.offset);
    if (!l.found) return r;
    if (QS_SOFTWARE_SWIZZLE && (l.rel != 0 || l.tag != t.tag)) return r;
    auto it = by_place_.find({l.page, l.offset});
    if (it == by_place_.end()) return r;
    r.object = static_cast<std::int64_t>(it->second);
    r.rel = l.rel;
    return r;
  }

  void resolve() {
    for (dumped_object& o : objects_) {
      auto& out = resolved_[&o - objects_.data()];
      for (auto& [at, t] : o.words) {
        std::uint64_t v = 0;
        if (at + 8 <= o.bytes.size()) std::memcpy(&v, o.bytes.data() + at, 8);
        if (t.page == 0 && t.problem.empty()) continue;  // null
        out.emplace(at, resolve_target(t, v));
      }
    }
  }

  // Numbers the objects: the roots', then the index entries', then what
  // they lead to, breadth first; then the rest in page order.
  void number() {
    std::deque<std::size_t> queue;
    auto reach = [&](std::int64_t i) {
      if (i >= 0 && objects_[static_cast<std::size_t>(i)].id < 0) {
        objects_[static_cast<std::size_t>(i)].id = next_id_++;
        queue.push_back(static_cast<std::size_t>(i));
      }
    };
    auto walk = [&] {
      while (!queue.empty()) {
        std::size_t i = queue.front();
        queue.pop_front();
        for (const auto& [at, r] : resolved_[i]) reach(r.object);
      }
    };
    db_.st().scan("r:", [&](std::string_view key, std::string_view value) {
      if (value.size() < 24) return;
      location l = decode_location(value.substr(0, 24));
      resolved r = resolve_target({l.page, l.offset, static_cast<std::uint32_t>(l.last), {}}, 0);
      roots_.push_back({std::string(key.substr(2)), std::string(value.substr(24)), r.object});
      reach(r.object);
      walk();
    });
    for (const stored_database::stored_index& ix : db_.indexes())
      db_.for_each_entry(ix, [&](std::string_view k, std::string_view v) {
        std::int64_t object = -1;
        if (v.size() >= 24) {
          location l = decode_location(v.substr(0, 24));
          object = resolve_target({l.page, l.offset, static_cast<std::uint32_t>(l.last), {}}, 0).object;
        }
        entries_.push_back({ix.name, ix.unique, std::string(k), object});
      });
    for (const auto& e : entries_) {
      reach(e.object);
      walk();
    }
    for (std::size_t i = 0; i < objects_.size(); ++i) {
      reach(static_cast<std::int64_t>(i));
      walk();
    }
  }

  json reference(std::size_t object, std::uint64_t at) const {
    auto it = resolved_.find(object);
    if (it == resolved_.end()) return nullptr;
    auto r = it->second.find(at);
    if (r == it->second.end()) return nullptr;
    if (r->second.object < 0) {
      return json{{"dangling", hex(r->second.value)}};
    }
    json j{{"id", objects_[static_cast<std::size_t>(r->second.object)].id}};
    if (r->second.rel) j["at"] = r->second.rel;
    return j;
  }

  static json number(number_kind k, const std::byte* q, std::uint32_t size) {
    if (k == number_kind::floating && (size == 4 || size == 8)) {
      double d;
      if (size == 4) {
        float f;
        std::memcpy(&f, q, 4);
        d = f;
      } else {
        std::memcpy(&d, q, 8);
      }
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
      return d;
    }
    if ((k == number_kind::sint || k == number_kind::uint || k == number_kind::boolean) &&
        (size == 1 || size == 2 || size == 4 || size == 8)) {
      std::uint64_t u = 0;
      std::memcpy(&u, q, size);
      if (k == number_kind::boolean) return u != 0;
      if (k == number_kind::sint) {
        if (size < 8 && (u >> (size * 8 - 1)) & 1) u |= ~std::uint64_t{0} << (size * 8);
        return static_cast<std::int64_t>(u);
      }
      return u;
    }
    return hex_bytes(q, size);
  }

  // The members of element `e` of object i (layout l), by name.
  json members(std::size_t i, const type_layout& l, std::uint64_t e) {
    const std::string& bytes = objects_[i].bytes;
    const std::uint64_t base = e * l.size;
    const auto* elem = reinterpret_cast<const std::byte*>(bytes.data()) + base;
    const std::vector<std::uint32_t>& refs = db_.reference_offsets(l);
    auto is_ref = [&](std::uint32_t off) { return std::binary_search(refs.begin(), refs.end(), off); };
    json out = json::object();
    std::set<std::string> skip;
    for (const member_info& m : l.members) {
      if (m.k == member_kind::vptr || skip.count(m.path)) continue;
      if (base + m.offset + m.size > bytes.size()) continue;
      if (QS_SOFTWARE_SWIZZLE && is_ref(m.offset) && m.path.size() > 5 &&
          m.path.compare(m.path.size() - 5, 5, "page_") == 0) {
        std::string name = m.path.substr(0, m.path.size() - 5);
        skip.insert(name + "offset_");
        skip.insert(name + "tag_");
        if (!name.empty() && name.back() == '.') name.pop_back();
        out[name] = reference(i, base + m.offset);
        continue;
      }
      if (!QS_SOFTWARE_SWIZZLE && m.size == 8 && is_ref(m.offset) && m.k != member_kind::array) {
        out[m.path] = reference(i, base + m.offset);
        continue;
      }
      switch (m.k) {
        case member_kind::number: out[m.path] = number(m.number, elem + m.offset, m.size); break;
        case member_kind::bits: {
          std::uint64_t v = 0;
          for (std::uint32_t b = 0; b < m.bit_count; ++b) {
            const std::uint32_t bit = m.first_bit + b;
            v |= std::uint64_t{(static_cast<unsigned>(elem[bit / 8]) >> (bit % 8)) & 1u} << b;
          }
          out[m.path] = v;
          break;
        }
        case member_kind::array: {
          if (!QS_SOFTWARE_SWIZZLE && m.element_size == 8 && is_ref(m.offset)) {
            json a = json::array();
            for (std::uint32_t k = 0; k < m.count; ++k) a.push_back(reference(i, base + m.offset + 8ull * k));
            out[m.path] = a;
          } else if (m.number != number_kind::none && m.element_size) {
            json a = json::array();
            for (std::uint32_t k = 0; k < m.count; ++k)
              a.push_back(number(m.number, elem + m.offset + std::uint64_t{k} * m.element_size, m.element_size));
            out[m.path] = a;
          } else {
            out[m.path] = hex_bytes(elem + m.offset, m.size);
          }
          break;
        }
        default: out[m.path] = hex_bytes(elem + m.offset, m.size); break;
      }
    }
    return out;
  }

  void write(std::ostream& out) {
    std::vector<std::size_t> order(objects_.size());
    for (std::size_t i = 0; i < objects_.size(); ++i) order[static_cast<std::size_t>(objects_[i].id)] = i;
    out << json{{"qs_dump", 1}, {"format", db_.format()}, {"page_size", db_.page_size()}, {"objects", objects_.size()}}
               .dump()
        << "\n";
    // The types objects have, by name.
    std::map<std::string, std::uint32_t> types;
    for (const dumped_object& o : objects_)
      if (o.type >= first_stored_type) {
        auto [it, fresh] = types.emplace(db_.type_name(o.type), o.type);
        if (!fresh && it->second != o.type)
          throw error("database " + db_.name() + ": objects of type " + it->first + " have two layouts (type indexes " +
                      std::to_string(it->second) + " and " + std::to_string(o.type) +
                      "), which a dump cannot tell apart: open the database with the program and "
                      "qs::options::evolve first");
      }
    for (const auto& [name, index] : types) {
      const type_layout* l = db_.schema().layout(index);
      if (!l) continue;
      json members = json::array();
      for (const member_info& m : l->members) members.push_back(encode_member(to_stored(m)));
      out << json{{"type", name},      {"size", l->size},   {"align", l->align}, {"pointers", l->pointers},
                  {"vptrs", l->vptrs}, {"members", members}}
                 .dump()
          << "\n";
    }
    for (std::size_t i : order) {
      const dumped_object& o = objects_[i];
      const type_layout* l = db_.schema().layout(o.type);
      json line{{"id", o.id}};
      if (o.type == pointer_type) {
        line["type"] = "qs::pointer";
        json a = json::array();
        for (std::uint64_t at = 0; at + 8 <= o.bytes.size(); at += 8) a.push_back(reference(i, at));
        line["pointers"] = a;
      } else if (o.type == raw_type || !l || l->size == 0) {
        line["type"] = o.type == raw_type ? "qs::raw" : db_.type_name(o.type);
        line["bytes"] = hex_bytes(reinterpret_cast<const std::byte*>(o.bytes.data()), o.bytes.size());
      } else {
        line["type"] = l->name;
        const std::uint64_t elems = o.bytes.size() / l->size;
        if (elems == 1) {
          line["members"] = members(i, *l, 0);
        } else {
          json a = json::array();
          for (std::uint64_t e = 0; e < elems; ++e) a.push_back(members(i, *l, e));
          line["elements"] = a;
        }
      }
      out << line.dump() << "\n";
    }
    for (const auto& r : roots_) {
      json line{{"root", r.name}, {"type", r.type}};
      line["id"] = r.object >= 0 ? json(objects_[static_cast<std::size_t>(r.object)].id) : json(nullptr);
      out << line.dump() << "\n";
    }
    for (const auto& e : entries_) {
      json line{{"index", e.name},
                {"unique", e.unique},
                {"key", hex_bytes(reinterpret_cast<const std::byte*>(e.key.data()), e.key.size())}};
      line["id"] = e.object >= 0 ? json(objects_[static_cast<std::size_t>(e.object)].id) : json(nullptr);
      out << line.dump() << "\n";
    }
  }

  struct root {
    std::string name, type;
    std::int64_t object;
  };
  struct entry {
    std::string name;
    bool unique;
    std::string key;
    std::int64_t object;
  };

  stored_database& db_;
  object_index index_;
  btree_nodes nodes_;
  std::vector<dumped_object> objects_;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::size_t> by_place_;
  std::map<std::size_t, std::map<std::uint64_t, resolved>> resolved_;
  std::vector<root> roots_;
  std::vector<entry> entries_;
  std::int64_t next_id_ = 0;
};

}  // namespace

std::uint64_t dump_database(stored_database& db, std::ostream& out,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  return dumper(db).run(out, progress);
}

}  // namespace qs::detail
