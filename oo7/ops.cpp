// The OO7 operations (OO7-SPEC 4): traversals, queries, structural
// modifications, and the dispatch by name that the driver and tests use.
#include "oo7.hpp"

#include <sys/time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_set>
#include <utility>

namespace oo7 {

namespace {

// DoNothing (OO7-SPEC 4.0): a call the compiler cannot drop; with a work
// amount (T1WW), it also calls gettimeofday that many times.
[[gnu::noinline]] void do_nothing(std::int32_t id, int work) {
  if (id < 0) std::printf("DoNothing: negative id %d\n", id);
  for (int i = 0; i < work; ++i) {
    timeval tv;
    ::gettimeofday(&tv, nullptr);
  }
}
[[gnu::noinline]] void join_do_nothing(std::int32_t a, std::int32_t b) {
  if (a < 0 || b < 0) std::printf("JoinDoNothing: negative id %d %d\n", a, b);
}

// The transient visited set of one composite visit: ids in an open-addressed
// table, emptied in O(1) by bumping a generation.
class IdSet {
 public:
  void reset(std::size_t expect) {
    std::size_t want = 16;
    while (want < 2 * expect) want <<= 1;
    if (slots_.size() < want) {
      slots_.assign(want, {0, 0});
      gen_ = 0;
    }
    ++gen_;
    count_ = 0;
  }
  bool empty() const { return count_ == 0; }
  bool contains(std::int32_t id) const {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(id) & mask;; i = (i + 1) & mask) {
      if (slots_[i].second != gen_) return false;
      if (slots_[i].first == id) return true;
    }
  }
  void insert(std::int32_t id) {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(id) & mask;; i = (i + 1) & mask) {
      if (slots_[i].second != gen_) {
        slots_[i] = {id, gen_};
        ++count_;
        if (2 * count_ > slots_.size()) grow();
        return;
      }
      if (slots_[i].first == id) return;
    }
  }

 private:
  static std::size_t hash(std::int32_t id) { return static_cast<std::uint32_t>(id) * 2654435761u; }
  void grow() {
    std::vector<std::pair<std::int32_t, std::uint32_t>> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, {0, 0});
    std::uint32_t g = gen_;
    count_ = 0;
    for (auto& s : old)
      if (s.second == g) insert(s.first);
  }
  std::vector<std::pair<std::int32_t, std::uint32_t>> slots_;
  std::uint32_t gen_ = 0;
  std::size_t count_ = 0;
};

// The atomic-part DFS of OO7-SPEC 4.0. act(part, is_root) returns the count
// for the part; the action comes before the part is marked.
template <class Act>
long dfs(IdSet& seen, ref<AtomicPart> p, Act& act) {
  long n = act(p, seen.empty());
  seen.insert(p->id);
  p->to.each([&](ref<Connection> c) {
    ref<AtomicPart> t = c->to;
    if (!seen.contains(t->id)) n += dfs(seen, t, act);
  });
  return n;
}
// The same walk, abandoned as soon as stop() holds (T1-).
template <class Act, class Stop>
long dfs(IdSet& seen, ref<AtomicPart> p, Act& act, const Stop& stop) {
  long n = act(p, seen.empty());
  seen.insert(p->id);
  p->to.any([&](ref<Connection> c) {
    if (stop()) return true;
    ref<AtomicPart> t = c->to;
    if (!seen.contains(t->id)) n += dfs(seen, t, act, stop);
    return false;
  });
  return n;
}

template <class F>
struct Action final : CompositeAction {
  explicit Action(F fn) : f(std::move(fn)) {}
  long on_composite(ref<CompositePart> cp) override { return f(cp); }
  F f;
};
template <class F>
long walk(ref<Module> m, F f) {
  Action<F> a(std::move(f));
  return m->designRoot->walk(a);
}

void swap_xy(ref<AtomicPart> p) {
  auto w = write(p);
  std::swap(w->x, w->y);
}

void toggle_date(Db& db, ref<AtomicPart> p) {
  std::int32_t d = p->buildDate;
  db.ix->buildDateIndex.erase(d, p);
  d = (d % 2 != 0) ? d + 1 : d - 1;
  write(p)->buildDate = d;
  db.ix->buildDateIndex.insert(d, p);
}

long count_I(ref<Text> t) {
  std::int32_t len = t->len;
  long n = 0;
  for (std::int32_t i = 0; i < len; ++i) n += t->data[i] == 'I';
  return n;
}

// Replaces a leading `from` with `to` (OO7-SPEC 6, item 4: a real prefix
// replacement); whether the text started with `from`.
bool replace_prefix(ref<Text> t, const char* from, const char* to) {
  std::int32_t lf = static_cast<std::int32_t>(std::strlen(from)), lt = static_cast<std::int32_t>(std::strlen(to));
  std::int32_t len = t->len;
  if (len < lf || std::memcmp(t->data, from, static_cast<std::size_t>(lf)) != 0) return false;
  if (len - lf + lt + 1 > t->cap) throw error("text too small for the replacement");
  auto w = write(t);
  if (!w) throw error("a null text");  // (software mode's write of a null ref is null)
  std::memmove(w->data + lt, w->data + lf, static_cast<std::size_t>(len - lf + 1));
  std::memcpy(w->data, to, static_cast<std::size_t>(lt));
  w->len = len - lf + lt;
  return true;
}

}  // namespace

long ComplexAssembly::walk(CompositeAction& a) const {
  long n = 0;
  subAssemblies.each([&](ref<Assembly> s) { n += s->walk(a); });
  return n;
}
long BaseAssembly::walk(CompositeAction& a) const {
  long n = 0;
  componentsPriv.each([&](ref<CompositePart> cp) { n += a.on_composite(cp); });
  return n;
}
std::int32_t ComplexAssembly::maxDate(long& out_of_date) const {
  std::int32_t m = -1;
  subAssemblies.each([&](ref<Assembly> s) { m = std::max(m, s->maxDate(out_of_date)); });
  if (m > buildDate) {
    do_nothing(id, 0);
    ++out_of_date;
  }
  return m;
}
std::int32_t BaseAssembly::maxDate(long& out_of_date) const {
  std::int32_t m = -1;
  componentsPriv.each([&](ref<CompositePart> cp) { m = std::max(m, cp->buildDate); });
  if (m > buildDate) {
    do_nothing(id, 0);
    ++out_of_date;
  }
  return m;
}

ref<Module> find_module(Db& db, std::int32_t id) {
  ref<Module> m = db.ix->moduleIdx.find(module_name(id));
  if (!m) throw error("module " + module_name(id) + " is not in ModuleIdx");
  return m;
}

long traverse_t1(Db& db, ref<Module> m, int variant) {
  IdSet seen;
  const int work = db.workAmount;
  const std::int32_t half = std::max(1, db.cfg.NumAtomicPerComp / 2);
  return walk(m, [&](ref<CompositePart> cp) {
    seen.reset(static_cast<std::size_t>(db.cfg.NumAtomicPerComp));
    long visited = 0;
    if (variant > 0) {  // T1+: the document and every connection too
      ref<Document> d = cp->documentation;
      do_nothing(d->id, 0);
      do_nothing(d->text->len, 0);
    }
    auto act = [&](ref<AtomicPart> p, bool) -> long {
      do_nothing(p->id, work);
      if (variant > 0) p->to.each([&](ref<Connection> c) { do_nothing(c->length, 0); });
      ++visited;
      return 1;
    };
    if (variant < 0) return dfs(seen, cp->rootPart, act, [&] { return visited >= half; });  // T1-: half the parts
    return dfs(seen, cp->rootPart, act);
  });
}

// The update traversals T2 and T3: T1's walk, applying `update` to the root
// part of each composite part (variant a), to every part once (b), or to
// every part four times (c). Returns the number of updates.
template <class Update>
long update_traversal(Db& db, ref<Module> m, char which, Update update) {
  IdSet seen;
  return walk(m, [&](ref<CompositePart> cp) {
    seen.reset(static_cast<std::size_t>(db.cfg.NumAtomicPerComp));
    auto act = [&](ref<AtomicPart> p, bool is_root) -> long {
      if (which == 'a' && !is_root) return 0;
      int times = which == 'c' ? 4 : 1;
      for (int i = 0; i < times; ++i) update(p);
      return times;
    };
    return dfs(seen, cp->rootPart, act);
  });
}

long traverse_t2(Db& db, ref<Module> m, char which) {
  return update_traversal(db, m, which, [](ref<AtomicPart> p) { swap_xy(p); });
}

long traverse_t3(Db& db, ref<Module> m, char which) {
  return update_traversal(db, m, which, [&](ref<AtomicPart> p) { toggle_date(db, p); });
}

long traverse_t4(Db&, ref<Module> m) {
  return walk(m, [&](ref<CompositePart> cp) { return count_I(cp->documentation->text); });
}

long traverse_t5(Db&, ref<Module> m, bool undo) {
  return walk(m, [&](ref<CompositePart> cp) -> long {
    ref<Document> d = cp->documentation;
    bool done = undo ? replace_prefix(d->text, "This is", "I am") : replace_prefix(d->text, "I am", "This is");
    if (!done) return 0;
    write(d)->textLen = d->text->len;
    return 1;
  });
}

long traverse_t6(Db&, ref<Module> m) {
  return walk(m, [&](ref<CompositePart> cp) -> long {
    do_nothing(cp->rootPart->id, 0);
    return 1;
  });
}

long traverse_t7(Db& db, std::int32_t* start_id) {
  reseed(1);
  std::int32_t id = 1 + static_cast<std::int32_t>(r(db.cfg.totalAtomicParts()));
  if (start_id) *start_id = id;
  ref<AtomicPart> p = db.ix->atomicPartIdx.find(id);
  if (!p) throw error("T7: atomic part " + std::to_string(id) + " is not in AtomicPartIdx");
  ref<CompositePart> cp = p->partOf;
  std::unordered_set<std::int32_t> bases, complexes;
  long n = 0;
  cp->usedInPriv.each([&](ref<BaseAssembly> ba) {
    if (!bases.insert(ba->id).second) return;
    do_nothing(ba->id, 0);
    ++n;
    for (ref<ComplexAssembly> ca = ba->superAssembly; ca && complexes.insert(ca->id).second; ca = ca->superAssembly) {
      do_nothing(ca->id, 0);
      ++n;
    }
  });
  return n;
}

long traverse_t8(Db&, ref<Module> m) { return count_I(m->man->text); }

long traverse_t9(Db&, ref<Module> m) {
  ref<Text> t = m->man->text;
  std::int32_t len = t->len;
  return len > 0 && t->data[0] == t->data[len - 1] ? 1 : 0;
}

long query_q1(Db& db, std::vector<std::int32_t>* ids) {
  reseed(1);
  long n = 0;
  for (int i = 0; i < 10; ++i) {
    std::int32_t id = 1 + static_cast<std::int32_t>(r(db.cfg.totalAtomicParts()));
    if (ids) ids->push_back(id);
    ref<AtomicPart> p = db.ix->atomicPartIdx.find(id);
    if (!p) throw error("Q1: atomic part " + std::to_string(id) + " is not in AtomicPartIdx");
    do_nothing(p->id, 0);
    ++n;
  }
  return n;
}

long query_q2q3(Db& db, int percent) {
  const std::int32_t lo = 1000, hi = 1999;
  std::int32_t low = hi - (percent * (hi - lo)) / 100;
  long n = 0;
  db.ix->buildDateIndex.range(low, hi, [&](std::int32_t, ref<AtomicPart> p) {
    if (p->buildDate >= low) {
      do_nothing(p->id, 0);
      ++n;
    }
    return true;
  });
  return n;
}

long query_q4(Db& db) {
  reseed(1);
  long n = 0;
  for (int i = 0; i < 10; ++i) {
    std::int32_t cid = 1 + static_cast<std::int32_t>(r(db.cfg.totalCompParts()));
    ref<Document> d = db.ix->documentIdx.find(document_title(cid));
    if (!d) throw error("Q4: document '" + document_title(cid) + "' is not in DocumentIdx");
    d->part->usedInPriv.each([&](ref<BaseAssembly> ba) {
      do_nothing(ba->id, 0);
      ++n;
    });
  }
  return n;
}

long query_q5(Db& db, long* per_entry) {
  long distinct = 0, entries = 0;
  db.root->allModules.each([&](ref<Module> m) {
    m->allBases.each([&](ref<BaseAssembly> ba) {
      std::int32_t date = ba->buildDate;
      long mine = 0;
      ba->componentsPriv.each([&](ref<CompositePart> cp) {
        if (cp->buildDate > date) {
          do_nothing(ba->id, 0);
          ++mine;
        }
      });
      entries += mine;
      distinct += mine > 0;
    });
  });
  if (per_entry) *per_entry = entries;
  return distinct;
}

long query_q6(Db& db) {
  long n = 0;
  db.root->allModules.each([&](ref<Module> m) { m->designRoot->maxDate(n); });
  return n;
}

long query_q7(Db& db) {
  long n = 0;
  db.root->allCompParts.each([&](ref<CompositePart> cp) {
    cp->parts.each([&](ref<AtomicPart> p) {
      do_nothing(p->id, 0);
      ++n;
    });
  });
  return n;
}

long query_q8(Db& db) {
  long n = 0;
  db.root->allCompParts.each([&](ref<CompositePart> cp) {
    cp->parts.each([&](ref<AtomicPart> p) {
      ref<Document> d = db.ix->documentIdIdx.find(p->docId);
      if (d) {
        join_do_nothing(p->id, d->id);
        ++n;
      }
    });
  });
  return n;
}

long op_insert(Db& db) {
  const std::int32_t bases = db.cfg.TotalModules * db.cfg.basesPerModule();
  long atoms = 0;
  for (int i = 0; i < 10; ++i) {
    ref<Document> doc = create_document(db, db.nextCompositeId);
    ref<CompositePart> cp = create_composite(db, doc);
    db.ix->compPartIdx.insert(cp->id, cp);
    write(db.root)->allCompParts.add(cp, db.root);
    atoms += cp->parts.size();
    std::int32_t bid = 1 + static_cast<std::int32_t>(r(bases));
    ref<BaseAssembly> ba = db.ix->baseAssemblyIdx.find(bid);
    if (!ba) throw error("Insert: base assembly " + std::to_string(bid) + " is not in BaseAssemblyIdx");
    write(cp)->usedInPriv.add(ba, cp);
    write(ba)->componentsPriv.add(cp, ba);
  }
  return atoms;
}

long op_delete(Db& db) {
  long atoms = 0;
  for (int i = 0; i < 10; ++i) {
    std::int32_t id = db.nextCompositeId++;
    ref<CompositePart> cp = db.ix->compPartIdx.find(id);
    if (!cp) {
      if (!db.quiet) std::printf("Delete: composite part %d not found (run the insert operation first)\n", id);
      continue;
    }
    db.ix->compPartIdx.erase(id, cp);
    write(db.root)->allCompParts.remove(cp);
    ref<Document> doc = cp->documentation;
    db.ix->documentIdx.erase(doc->title, doc);
    db.ix->documentIdIdx.erase(doc->id, doc);
    destroy_extended(doc->text);
    destroy(doc);
    cp->usedInPriv.each([&](ref<BaseAssembly> ba) { write(ba)->componentsPriv.remove(cp); });
    cp->usedInShar.each([&](ref<BaseAssembly> ba) { write(ba)->componentsShar.remove(cp); });
    // Connections join parts of this composite part only: each is in exactly
    // one part's `to` bag.
    cp->parts.each([&](ref<AtomicPart> p) {
      db.ix->atomicPartIdx.erase(p->id, p);
      db.ix->buildDateIndex.erase(p->buildDate, p);
      p->to.each([&](ref<Connection> c) { destroy(c); });
    });
    cp->parts.each([&](ref<AtomicPart> p) {
      auto w = write(p);
      w->to.clear();
      w->from.clear();
      destroy(p);
      ++atoms;
    });
    auto w = write(cp);
    w->parts.clear();
    w->usedInPriv.clear();
    w->usedInShar.clear();
    destroy(cp);
  }
  return atoms;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = {
      "t1", "t1-", "t1+", "t1ww", "t2a", "t2b", "t2c", "t3a", "t3b", "t3c", "t4", "t5do", "t5undo", "t6", "t7",
      "t8", "t9",  "t10", "wu",   "q1",  "q2",  "q3",  "q4",  "q5",  "q6",  "q7", "q8",   "i",      "d"};
  return names;
}

bool op_is_module_scoped(const std::string& op) { return op[0] == 't' ? (op != "t7" && op != "t10") : op == "wu"; }

static long run_on_module(Db& db, const std::string& op, ref<Module> m) {
  if (op == "t1" || op == "t1ww") return traverse_t1(db, m, 0);
  if (op == "t1-") return traverse_t1(db, m, -1);
  if (op == "t1+") return traverse_t1(db, m, 1);
  if (op.size() == 3 && op.rfind("t2", 0) == 0) return traverse_t2(db, m, op[2]);
  if (op.size() == 3 && op.rfind("t3", 0) == 0) return traverse_t3(db, m, op[2]);
  if (op == "t4") return traverse_t4(db, m);
  if (op == "t5do") return traverse_t5(db, m, false);
  if (op == "t5undo") return traverse_t5(db, m, true);
  if (op == "t6") return traverse_t6(db, m);
  if (op == "t8") return traverse_t8(db, m);
  if (op == "t9") return traverse_t9(db, m);
  if (op == "wu") {
    traverse_t1(db, m, 0);
    return traverse_t2(db, m, 'a');
  }
  throw error("unknown operation '" + op + "'");
}

OpResult run_op(Db& db, const std::string& op) {
  if (std::find(op_names().begin(), op_names().end(), op) == op_names().end())
    throw error("unknown operation '" + op + "'");
  OpResult res;
  reseed(1);
  const int saved_work = db.workAmount;
  if (op != "t1ww") db.workAmount = 0;
  struct restore {
    Db& db;
    int w;
    ~restore() { db.workAmount = w; }
  } restore_work{db, saved_work};
  if (op_is_module_scoped(op)) {
    for (std::int32_t id = 1; id <= db.cfg.TotalModules; ++id) {
      ref<Module> m = find_module(db, id);
      if (!db.quiet) std::printf("Traversing module %s\n", module_name(id).c_str());
      long n = run_on_module(db, op, m);
      if (!db.quiet) std::printf("Visited=%ld\n", n);
      res.count += n;
    }
  } else if (op == "t7") res.count = traverse_t7(db);
  else if (op == "t10") {
    for (std::int32_t id = 1; id <= db.cfg.TotalModules; ++id) res.count += traverse_t1(db, find_module(db, id), 0);
    res.extra = db.cfg.TotalModules;
  } else if (op == "q1") res.count = query_q1(db);
  else if (op == "q2") res.count = query_q2q3(db, 1);
  else if (op == "q3") res.count = query_q2q3(db, 10);
  else if (op == "q4") res.count = query_q4(db);
  else if (op == "q5") res.count = query_q5(db, &res.extra);
  else if (op == "q6") res.count = query_q6(db);
  else if (op == "q7") res.count = query_q7(db);
  else if (op == "q8") res.count = query_q8(db);
  else if (op == "i") res.count = op_insert(db);
  else if (op == "d") res.count = op_delete(db);

  char b[160];
  long c = res.count;
  if (op == "t1" || op == "t1-" || op == "t1+")
    std::snprintf(b, sizeof b, "Traversal 1%s DFS visited %ld atomic parts.", op.c_str() + 2, c);
  else if (op == "t1ww") std::snprintf(b, sizeof b, "Traversal 1WW DFS visited %ld atomic parts.", c);
  else if (op.rfind("t2", 0) == 0)
    std::snprintf(b, sizeof b, "Traversal 2%c swapped %ld pairs of (X,Y) coordinates.", std::toupper(op[2]), c);
  else if (op.rfind("t3", 0) == 0)
    std::snprintf(b, sizeof b, "Traversal 3%c toggled %ld dates.", std::toupper(op[2]), c);
  else if (op == "t4") std::snprintf(b, sizeof b, "Traversal 4: %ld instances of the character found", c);
  else if (op == "t5do") std::snprintf(b, sizeof b, "Traversal 5(DO): %ld string replacements performed", c);
  else if (op == "t5undo") std::snprintf(b, sizeof b, "Traversal 5(UNDO): %ld string replacements performed", c);
  else if (op == "t6") std::snprintf(b, sizeof b, "Traversal 6: visited %ld atomic part roots.", c);
  else if (op == "t7") std::snprintf(b, sizeof b, "Traversal 7: found %ld assemblies using random atomic part.", c);
  else if (op == "t8") std::snprintf(b, sizeof b, "Traversal 8: found %ld occurrences of character in manual.", c);
  else if (op == "t9") std::snprintf(b, sizeof b, "Traversal 9: match was %ld.", c);
  else if (op == "t10")
    std::snprintf(b, sizeof b, "Traversal 10 visited %ld atomic parts in %ld modules.", c, res.extra);
  else if (op == "wu") std::snprintf(b, sizeof b, "Warm update swapped %ld pairs of (X,Y) coordinates.", c);
  else if (op == "q1") std::snprintf(b, sizeof b, "Query one retrieved %ld atomic parts.", c);
  else if (op == "q2") std::snprintf(b, sizeof b, "Query two retrieved %ld qualifying atomic parts.", c);
  else if (op == "q3") std::snprintf(b, sizeof b, "Query three retrieved %ld qualifying atomic parts.", c);
  else if (op == "q4") std::snprintf(b, sizeof b, "Query four retrieved %ld (document, base assembly) pairs.", c);
  else if (op == "q5")
    std::snprintf(b, sizeof b,
                  "Query five retrieved %ld out-of-date base assemblies (%ld entries, as the port counts).", c,
                  res.extra);
  else if (op == "q6") std::snprintf(b, sizeof b, "Query six retrieved %ld out-of-date assemblies.", c);
  else if (op == "q7") std::snprintf(b, sizeof b, "Query seven iterated through %ld atomic parts.", c);
  else if (op == "q8") std::snprintf(b, sizeof b, "Query eight found %ld atomic part/document matches.", c);
  else if (op == "i") std::snprintf(b, sizeof b, "Inserted 10 composite parts (a total of %ld atomic parts.)", c);
  else if (op == "d") std::snprintf(b, sizeof b, "Deleted 10 composite parts (a total of %ld atomic parts.)", c);
  res.line = b;
  return res;
}

}  // namespace oo7
