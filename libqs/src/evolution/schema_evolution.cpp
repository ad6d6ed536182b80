// Schema evolution: the pass over the database.
#include "evolution/schema_evolution.hpp"

#include "evolution/evolution_access.hpp"
#include "evolution/evolution_plan.hpp"
#include "util/stopwatch.hpp"

#include <qs/pause_point.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace qs::detail {
namespace {

// 1234567 -> "1,234,567".
std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

struct moved_object {
  std::uintptr_t old_address;
  std::uint64_t old_bytes;
  std::uintptr_t new_address;
  std::uint64_t new_bytes;
  const type_change* change;
};

// Where pointers into moved objects go.
class forwarding {
 public:
  void add(const moved_object& m) { moves_.push_back(m); }
  void seal() {
    std::sort(moves_.begin(), moves_.end(),
              [](const moved_object& a, const moved_object& b) { return a.old_address < b.old_address; });
  }
  std::size_t size() const { return moves_.size(); }
  const std::vector<moved_object>& moves() const { return moves_; }

  // The new value of a pointer; `p` itself when it points into no moved
  // object. One past a moved object's end maps to one past its new end.
  std::uintptr_t forward(std::uintptr_t p, std::string_view pointee = {}) const {
    auto it = std::upper_bound(moves_.begin(), moves_.end(), p,
                               [](std::uintptr_t v, const moved_object& m) { return v < m.old_address; });
    if (it == moves_.begin()) return p;
    const moved_object& m = *std::prev(it);
    std::uint64_t off = p - m.old_address;
    if (off > m.old_bytes) return p;
    if (off == m.old_bytes) return m.new_address + m.new_bytes;
    const type_change& c = *m.change;
    std::uint64_t element = off / c.old_size;
    auto in = static_cast<std::uint32_t>(off % c.old_size);
    // The start of an element is the element, unless the pointer is typed
    // as the member that starts there (an int* to a first member `int id`).
    if (in == 0) {
      auto member = member_typed(c, 0, pointee);
      return m.new_address + element * c.program->size + (member ? *member : 0);
    }
    auto to = map_offset(c, in, pointee);
    if (!to)
      throw schema_error("schema evolution: a pointer points " + std::to_string(in) + " bytes into a stored " + c.name +
                         ", into a member the program dropped or changed; nothing was converted");
    return m.new_address + element * c.program->size + *to;
  }

 private:
  std::vector<moved_object> moves_;
};

}  // namespace

namespace {

// The top-level template arguments of the template whose name ends at
// `open` (the '<') in `type`, trimmed.
std::vector<std::string> template_arguments(const std::string& type, std::size_t open) {
  std::vector<std::string> args;
  std::string arg;
  int depth = 0;
  for (std::size_t i = open + 1; i < type.size(); ++i) {
    char c = type[i];
    if (c == '<' || c == '(') ++depth;
    if ((c == '>' || c == ')') && depth-- == 0) break;
    if (c == ',' && depth == 0) {
      args.push_back(arg);
      arg.clear();
      continue;
    }
    if (!(c == ' ' && arg.empty())) arg += c;
  }
  args.push_back(arg);
  for (std::string& a : args)
    while (!a.empty() && a.back() == ' ') a.pop_back();
  return args;
}

// What a qs::btree_map (set, multimap, multiset) holds, in the program's
// terms, for a type that is one or part of one: "int, Part" for
// "qs::detail::basic_btree<int, Part, std::less<int>, ...>", its nodes
// ("qs::detail::btree_leaf<int, Part, ..., 507>", btree_inner and
// btree_meta); "" for any other type.
std::string btree_arguments(const std::string& type) {
  for (const char* name :
       {"qs::detail::basic_btree<", "qs::detail::btree_meta<", "qs::detail::btree_leaf<", "qs::detail::btree_inner<"}) {
    if (type.rfind(name, 0) != 0) continue;
    std::vector<std::string> args = template_arguments(type, std::strlen(name) - 1);
    if (std::strcmp(name, "qs::detail::btree_meta<") == 0) return btree_arguments(args[0]);  // its leaf
    if (std::strcmp(name, "qs::detail::btree_inner<") == 0) return args[0];                  // keys only
    return args.size() >= 2 ? args[0] + ", " + args[1] : args[0];
  }
  return "";
}

}  // namespace

std::vector<type_change> plan_evolution(database_impl& db, const options& opts) {
  evolution_access ev(db);
  std::vector<schema_registry::pending_change> pending = ev.pending_changes();
  std::vector<type_change> changes;
  if (pending.empty()) return changes;
  if (std::string why = ev.refused(); !why.empty())
    throw schema_mismatch("database " + db.name() + " stores type " + pending.front().program->name +
                          " with a layout that differs from the program's, and cannot be converted here: " + why);
  changes.reserve(pending.size());
  auto related = [&](const std::string& from, const std::string& to) {
    return lists_base(from, ev.members_of(to)) || lists_base(to, ev.members_of(from));
  };
  for (const auto& p : pending) {
    auto conv = opts.converters.find(p.program->name);
    const std::string btree = btree_arguments(p.program->name);
    if (!btree.empty())
      // A B-tree's nodes hold its keys and values by value, sorted and
      // counted in its own layout: they are not converted member by member.
      throw schema_mismatch("schema evolution of database " + db.name() + ": a qs::btree_map (or set, multimap, " +
                            "multiset) holds <" + btree +
                            "> by value, and that layout changed; qs does not convert B-tree nodes, and a "
                            "converter cannot: with the old release, copy the entries out (or into a tree of "
                            "pointers, qs::btree_map<K, V*>, whose values evolve like any object), then convert; "
                            "nothing was converted (stored type " +
                            p.program->name + ")");
    changes.push_back(plan_change(db.name(), ev.stored_layout(p.index), p.index, p.program,
                                  conv == opts.converters.end() ? nullptr : &conv->second, related));
  }
  return changes;
}

void evolve_database(database_impl& db, const options& opts) {
  auto t0 = std::chrono::steady_clock::now();
  // 1. Every plan first: a refusal writes nothing.
  std::vector<type_change> changes = plan_evolution(db, opts);
  if (changes.empty()) return;
  evolution_access ev(db);
  std::vector<schema_registry::pending_change> pending = ev.pending_changes();
  const std::string& name = db.name();
  for (const type_change& c : changes)
    std::fprintf(stderr, "qs: database %s: converting %s: %s\n", name.c_str(), c.name.c_str(), c.summary.c_str());

  std::map<std::uint32_t, const type_change*> by_old_index;
  for (const type_change& c : changes) by_old_index[c.old_index] = &c;
  std::vector<std::uint64_t> per_type(changes.size()), elements(changes.size());

  db.begin();
  try {
    // 2. New indexes for the program's layouts.
    for (const auto& p : pending) ev.adopt_type(p);

    // 3. Copy every object of a changed type into its new layout.
    const std::uint64_t limit = ev.page_limit();
    const std::vector<std::uint64_t> stored = ev.stored_pages(0, limit);
    forwarding fw;
    std::vector<evolution_access::object_span> objects;
    std::vector<std::byte> old_bytes, new_bytes;
    for (std::uint64_t page : stored) {
      if (!ev.objects_on_page(page, objects)) continue;
      for (const auto& o : objects) {
        auto it = by_old_index.find(o.type);
        if (it == by_old_index.end()) continue;
        const type_change& c = *it->second;
        if (o.bytes % c.old_size)
          throw corrupt_page(page, "database " + name + ": page " + std::to_string(page) + " holds a " + c.name +
                                       " of " + std::to_string(o.bytes) + " bytes, not a multiple of its " +
                                       std::to_string(c.old_size));
        std::uint64_t count = o.bytes / c.old_size;
        old_bytes.assign(o.address, o.address + o.bytes);  // read through the frame
        new_bytes.assign(count * c.program->size, std::byte{0});
        for (std::uint64_t e = 0; e < count; ++e) {
          std::byte* fresh = new_bytes.data() + e * c.program->size;
          convert_element(c, old_bytes.data() + e * c.old_size, fresh);
          for (std::uint32_t v = 0; v < c.program->vptr_count; ++v) {
            // Without the vtable here (qs-evolve converts for another
            // program), 0: every page-in sets a vptr from the program's
            // descriptor.
            const vptr_entry& ve = c.program->vptrs[v];
            auto point = ve.vtable
                             ? reinterpret_cast<std::uintptr_t>(static_cast<const char*>(ve.vtable) + ve.address_point)
                             : std::uintptr_t{0};
            std::memcpy(fresh + ve.offset, &point, sizeof point);
          }
        }
        void* now = db.allocate(c.program, new_bytes.size(), o.address);
        std::memcpy(now, new_bytes.data(), new_bytes.size());  // written through the frame
        fw.add({reinterpret_cast<std::uintptr_t>(o.address), o.bytes, reinterpret_cast<std::uintptr_t>(now),
                new_bytes.size(), &c});
        ++per_type[static_cast<std::size_t>(&c - changes.data())];
        elements[static_cast<std::size_t>(&c - changes.data())] += count;
      }
    }
    // 4. The old objects go, once every one has its new place.
    for (const moved_object& m : fw.moves()) db.deallocate(reinterpret_cast<void*>(m.old_address));
    fw.seal();
    pause_point("evolve.converted");
    const double copy_s = static_cast<double>(ns_since(t0)) / 1e9;

    // 5. Every pointer word, once.
    // The stored pages, then those this transaction made (numbered from the
    // counter on).
    std::vector<std::uint64_t> all = stored;
    for (std::uint64_t page = limit, now = ev.page_limit(); page < now; ++page) all.push_back(page);
    std::vector<evolution_access::pointer_word> words;
    std::uint64_t rewritten = 0, examined = 0;
    for (std::uint64_t page : all) {
      if (!ev.pointer_words_on_page(page, words)) continue;
      for (const auto& w : words) {
        std::uintptr_t v;
        std::memcpy(&v, w.address, sizeof v);
        ++examined;
        if (!v) continue;
        std::uintptr_t now = fw.forward(v, w.pointee);
        if (now == v) continue;
        std::memcpy(w.address, &now, sizeof now);
        ++rewritten;
      }
    }
    // 6. References kept outside pages.
    auto forward = [&](void* p) { return reinterpret_cast<void*>(fw.forward(reinterpret_cast<std::uintptr_t>(p))); };
    std::uint64_t roots = ev.move_roots(forward);
    std::uint64_t entries = ev.move_index_entries(forward);
    pause_point("evolve.rewritten");
    const double rewrite_s = static_cast<double>(ns_since(t0)) / 1e9 - copy_s;

    // 7.
    db.commit();
    double seconds = static_cast<double>(ns_since(t0)) / 1e9;
    const double commit_s = seconds - copy_s - rewrite_s;
    for (std::size_t i = 0; i < changes.size(); ++i)
      std::fprintf(stderr, "qs: database %s: %s: %s objects converted (%s elements)\n", name.c_str(),
                   changes[i].name.c_str(), grouped(per_type[i]).c_str(), grouped(elements[i]).c_str());
    std::fprintf(stderr,
                 "qs: database %s: evolved in %.2f s: %s objects moved, %s pointers rewritten (of %s examined), %s "
                 "roots and %s index entries updated; %.0f objects/s, %.0f pointer words examined/s "
                 "(planning and copying %.2f s, "
                 "pointers %.2f s, commit %.2f s)\n",
                 name.c_str(), seconds, grouped(fw.size()).c_str(), grouped(rewritten).c_str(),
                 grouped(examined).c_str(), grouped(roots).c_str(), grouped(entries).c_str(),
                 seconds > 0 ? static_cast<double>(fw.size()) / seconds : 0.0,
                 seconds > 0 ? static_cast<double>(examined) / seconds : 0.0, copy_s, rewrite_s, commit_s);
  } catch (const store_error& e) {
    db.abort();
    if (std::string(e.what()).find("Lock table is out of") == std::string::npos) throw;
    throw store_error(std::string(e.what()) +
                      " (schema evolution converts the whole database in one transaction, whose lock table holds "
                      "about 25 GiB of changed pages; the database is as it was)");
  } catch (...) {
    db.abort();
    throw;
  }
}

}  // namespace qs::detail
