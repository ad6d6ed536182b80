// Database generation (OO7-SPEC 3), configurations (2) and the Db handle.
//
// Clustering (the QuickStore study's, OO7-SPEC's "For qs" note): the
// modules, manuals and the whole assembly tree are created first, in one
// run of allocations (Phase A); then every document with its text, in id
// order (its own cluster); then each composite part with its atomic parts,
// connections and bag chunks placed with make_near on the composite part's
// page(s) (Phase B). Documents are created before Phase B only for their
// placement: their creation draws no random numbers, so the order of draws
// is exactly the spec's.
#include "oo7.hpp"

#include <unistd.h>

#include <sys/resource.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace oo7 {

// glibc's random() algorithm with its default 128-byte state (TYPE_3), through
// random_r on a state of our own: Berkeley DB calls rand() (which shares
// random()'s state) when it opens files and begins transactions, and would
// otherwise shift the benchmark's sequence.
namespace {
struct Generator_state {
  random_data data{};
  char state[128] = {};
  Generator_state() { ::initstate_r(1, state, sizeof state, &data); }
};
Generator_state& rng() {
  static Generator_state g;
  return g;
}
}  // namespace

void reseed(unsigned seed) { ::srandom_r(seed, &rng().data); }

long r(long n) {
  std::int32_t v = 0;
  ::random_r(&rng().data, &v);
  return v % n;
}

static const char* const types[10] = {"type000", "type001", "type002", "type003", "type004",
                                      "type005", "type006", "type007", "type008", "type009"};

static void set_type(char (&dst)[TypeSize]) {
  std::memset(dst, 0, TypeSize);
  std::memcpy(dst, types[r(10)], 8);  // "typeNNN" and its NUL
}

std::int32_t Config::basesPerModule() const {
  std::int32_t n = 1;
  for (int i = 1; i < NumAssmLevels; ++i) n *= NumAssmPerAssm;
  return n;
}
std::int32_t Config::complexPerModule() const {
  std::int32_t n = 0, level = 1;
  for (int i = 1; i < NumAssmLevels; ++i, level *= NumAssmPerAssm) n += level;
  return n;
}

Config config_named(const std::string& what) {
  Config c;
  auto set = [&](const char* name, int cpm, int levels, int modules, int n, int doc, int man) {
    std::snprintf(c.name, sizeof c.name, "%s", name);
    c.NumAssmPerAssm = 3;
    c.NumCompPerAssm = 3;
    c.NumCompPerModule = cpm;
    c.NumAssmLevels = levels;
    c.TotalModules = modules;
    c.NumAtomicPerComp = n;
    c.NumConnPerAtomic = 3;
    c.DocumentSize = doc;
    c.ManualSize = man;
  };
  if (what == "tiny") set("tiny", 10, 3, 1, 5, 200, 1000);
  else if (what == "little") set("little", 50, 7, 1, 10, 2000, 100000);
  else if (what == "small") set("small", 500, 7, 1, 20, 2000, 100000);
  else if (what == "medium") set("medium", 500, 7, 1, 200, 20000, 1000000);
  else if (what == "large") set("large", 500, 7, 10, 200, 20000, 1000000);
  else {
    std::ifstream in(what);
    if (!in) throw error("no OO7 size or config file named '" + what + "' (sizes: tiny little small medium large)");
    std::map<std::string, long> v;
    std::string name;
    std::string value;
    while (in >> name >> value) {
      if (name == "NummAssmPerAssm") name = "NumAssmPerAssm";  // the shipped files' spelling
      char* end = nullptr;
      long x = std::strtol(value.c_str(), &end, 10);
      if (end && *end == '\0') v[name] = x;
    }
    auto get = [&](const char* k) -> std::int32_t {
      auto it = v.find(k);
      if (it == v.end()) throw error("config file " + what + ": no " + k);
      return static_cast<std::int32_t>(it->second);
    };
    std::string base = what.substr(what.find_last_of('/') + 1);
    std::snprintf(c.name, sizeof c.name, "%s", base.c_str());
    c.NumAssmPerAssm = get("NumAssmPerAssm");
    c.NumCompPerAssm = get("NumCompPerAssm");
    c.NumCompPerModule = get("NumCompPerModule");
    c.NumAssmLevels = get("NumAssmLevels");
    c.TotalModules = get("TotalModules");
    c.NumAtomicPerComp = get("NumAtomicPerComp");
    c.NumConnPerAtomic = get("NumConnPerAtomic");
    c.DocumentSize = get("DocumentSize");
    c.ManualSize = get("ManualSize");
  }
  if (c.NumAssmPerAssm < 1 || c.NumCompPerAssm < 1 || c.NumCompPerModule < 1 || c.NumAssmLevels < 2 ||
      c.TotalModules < 1 || c.NumAtomicPerComp < 1 || c.NumConnPerAtomic < 1 || c.DocumentSize < 8 || c.ManualSize < 8)
    throw error("OO7 configuration '" + what + "' has a parameter out of range");
  return c;
}

Indexes::Indexes(store& s, const ref<Root>& root, bool bdb)
    : atomicPartIdx(s, root, &Root::atomicPartIdx, "AtomicPartIdx", unique, bdb),
      buildDateIndex(s, root, &Root::buildDateIndex, "BuildDateIndex", duplicates, bdb),
      documentIdx(s, root, &Root::documentIdx, "DocumentIdx", unique, bdb),
      documentIdIdx(s, root, &Root::documentIdIdx, "DocumentIdIdx", unique, bdb),
      compPartIdx(s, root, &Root::compPartIdx, "CompPartIdx", unique, bdb),
      baseAssemblyIdx(s, root, &Root::baseAssemblyIdx, "BaseAssemblyIdx", unique, bdb),
      moduleIdx(s, root, &Root::moduleIdx, "ModuleIdx", unique, bdb) {}

bool bdb_indexes_requested() {
  const char* v = std::getenv("OO7_INDEX");
  if (!v || !*v || std::strcmp(v, "btree") == 0) return false;
  if (std::strcmp(v, "bdb") == 0) return true;
  throw error(std::string("OO7_INDEX=") + v + ": say btree (qs::btree, the default) or bdb (Berkeley DB's B-trees)");
}

std::string module_name(std::int32_t id) {
  char b[32];
  std::snprintf(b, sizeof b, "Module %08d", id);
  return b;
}
std::string document_title(std::int32_t id) {
  char b[TitleSize];
  std::snprintf(b, sizeof b, "Composite Part %08d", id);
  return b;
}

void Db::attach() {
  ref<Root>& cell = root_ref<Root>(st, "oo7");
  if (!cell) throw error("the store holds no OO7 database (no root 'oo7'); generate one first");
  root = cell;
  bool bdb = root->bdbIndexes != 0;
  if (std::getenv("OO7_INDEX") && bdb_indexes_requested() != bdb)
    throw error(std::string("this database was generated with ") + (bdb ? "OO7_INDEX=bdb" : "qs::btree indexes") +
                ", but OO7_INDEX=" + std::getenv("OO7_INDEX") + " asks for the other kind; generate it again");
  bdbIndexes = bdb;
  if (!ix) ix = std::make_unique<Indexes>(st, root, bdb);
  cfg = root->cfg;
  nextCompositeId = cfg.totalCompParts() + 1;
  nextAtomicId = cfg.totalAtomicParts() + 1;
  nextBaseAssemblyId = cfg.TotalModules * cfg.basesPerModule() + 1;
}

// The text of OO7-SPEC 3.7: `sentence` repeated and cut to size-1
// characters, with `slack` more bytes of room.
template <class U>
static ref<Text> make_text(store& s, ref<U> near, const char* sentence, std::int32_t size, std::int32_t slack) {
  std::int32_t len = size - 1;
  ref<Text> t = make_extended<Text>(s, near, static_cast<std::size_t>(len + 1 + slack));
  auto w = write(t);
  w->len = len;
  w->cap = len + 1 + slack;
  std::size_t sl = std::strlen(sentence);
  for (std::int32_t i = 0; i < len; ++i) w->data[i] = sentence[i % sl];
  w->data[len] = '\0';
  return t;
}

ref<Document> create_document(Db& db, std::int32_t id) {
  ref<Document> d = make<Document>(db.st);
  auto w = write(d);
  // Formatted aside: in software mode g++ cannot tell that w is not null.
  char title[TitleSize] = {};
  std::snprintf(title, sizeof title, "Composite Part %08d", id);
  std::memcpy(w->title, title, sizeof title);
  w->id = id;
  char sentence[64];
  std::snprintf(sentence, sizeof sentence, "I am the documentation for composite part #%08d.\n", id);
  w->text = make_text(db.st, d, sentence, db.cfg.DocumentSize, 8);
  w->textLen = w->text->len;
  return d;
}

ref<CompositePart> create_composite(Db& db, ref<Document> doc) {
  const Config& c = db.cfg;
  std::int32_t id = db.nextCompositeId++;
  ref<CompositePart> cp = make<CompositePart>(db.st);
  {
    auto w = write(cp);
    w->id = id;
    set_type(w->type);
    w->buildDate = id % 10 == 0 ? 2000 + static_cast<std::int32_t>(r(1000)) : static_cast<std::int32_t>(r(1000));
    w->documentation = doc;
  }
  {
    auto d = write(doc);
    d->part = cp;
    db.ix->documentIdx.insert(d->title, doc);
    db.ix->documentIdIdx.insert(d->id, doc);
  }
  const std::int32_t N = c.NumAtomicPerComp, K = c.NumConnPerAtomic;
  std::vector<ref<AtomicPart>> parts(static_cast<std::size_t>(N));
  for (std::int32_t i = 0; i < N; ++i) {
    ref<AtomicPart> p = make_near<AtomicPart>(cp);
    auto w = write(p);
    w->id = db.nextAtomicId + i;
    set_type(w->type);
    w->buildDate = 1000 + static_cast<std::int32_t>(r(1000));
    w->x = static_cast<std::int32_t>(r(100000));
    w->y = static_cast<std::int32_t>(r(100000));
    w->docId = 1 + static_cast<std::int32_t>(r(c.totalCompParts()));
    w->partOf = cp;
    db.ix->buildDateIndex.insert(w->buildDate, p);
    db.ix->atomicPartIdx.insert(w->id, p);
    write(cp)->parts.add(p, cp);
    parts[static_cast<std::size_t>(i)] = p;
  }
  write(cp)->rootPart = parts[0];
  for (std::int32_t from = 0; from < N; ++from) {
    for (std::int32_t j = 0; j < K; ++j) {
      std::int32_t to = j == 0 ? (from + 1) % N : static_cast<std::int32_t>(r(N));
      ref<Connection> cn = make_near<Connection>(cp);
      auto w = write(cn);
      set_type(w->type);
      w->length = static_cast<std::int32_t>(r(100000));
      ref<AtomicPart> pf = parts[static_cast<std::size_t>(from)], pt = parts[static_cast<std::size_t>(to)];
      w->from = pf;
      w->to = pt;
      write(pf)->to.add(cn, pf);
      write(pt)->from.add(cn, pt);
    }
  }
  db.nextAtomicId += N;
  return cp;
}

namespace {

class progress {
 public:
  progress(const char* what, long total) : what_(what), total_(total), tty_(::isatty(2) != 0) { show(0); }
  void show(long done) {
    if (!tty_ || total_ <= 0) return;
    int pct = static_cast<int>(done * 100 / total_);
    if (pct == last_ && done != total_) return;
    last_ = pct;
    int bar = pct * 40 / 100;
    std::fprintf(stderr, "\r%-22s [%-40.*s] %3d%% %ld/%ld", what_, bar, "########################################", pct,
                 done, total_);
    if (done == total_) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  const char* what_;
  long total_;
  bool tty_;
  int last_ = -1;
};

struct Generator {
  Generator(Db& database, const Config& config) : db(database), c(config) {}
  Db& db;
  const Config& c;
  std::int32_t nextComplexId = 1;
  std::vector<std::vector<ref<BaseAssembly>>> privateUsers, sharedUsers;  // pushed at the back = the head
  long complexCount = 0, baseCount = 0;
  progress* bar = nullptr;

  ref<BaseAssembly> base(ref<Module> m, ref<ComplexAssembly> parent) {
    ref<BaseAssembly> ba = make<BaseAssembly>(db.st);
    auto w = write(ba);
    w->id = db.nextBaseAssemblyId++;
    set_type(w->type);
    w->buildDate = 1000 + static_cast<std::int32_t>(r(1000));
    w->assmType = Base;
    w->superAssembly = parent;
    w->oModule = m;
    write(m)->allBases.add(ba, m);
    for (int i = 0; i < c.NumCompPerAssm; ++i) {
      long cpId = (m->id - 1) * c.NumCompPerModule + 1 + r(c.NumCompPerModule);
      privateUsers[static_cast<std::size_t>(cpId)].push_back(ba);
    }
    for (int i = 0; i < c.NumCompPerAssm; ++i) {
      long cpId = 1 + r(c.totalCompParts());
      sharedUsers[static_cast<std::size_t>(cpId)].push_back(ba);
    }
    db.ix->baseAssemblyIdx.insert(ba->id, ba);
    ++baseCount;
    if (bar) bar->show(baseCount);
    return ba;
  }

  ref<ComplexAssembly> complex(ref<Module> m, ref<ComplexAssembly> parent, int level) {
    ref<ComplexAssembly> ca = make<ComplexAssembly>(db.st);
    {
      auto w = write(ca);
      w->id = nextComplexId++;
      set_type(w->type);
      w->buildDate = 1000 + static_cast<std::int32_t>(r(1000));
      w->assmType = Complex;
      w->superAssembly = parent;
      w->oModule = m;
    }
    ++complexCount;
    for (int i = 0; i < c.NumAssmPerAssm; ++i) {
      ref<Assembly> child =
          level < c.NumAssmLevels - 1 ? ref<Assembly>(complex(m, ca, level + 1)) : ref<Assembly>(base(m, ca));
      write(ca)->subAssemblies.add(child, ca);
    }
    return ca;
  }

  void module(std::int32_t id) {
    ref<Module> m = make<Module>(db.st);
    {
      auto w = write(m);
      w->id = id;
      set_type(w->type);
      w->buildDate = 1000 + static_cast<std::int32_t>(r(1000));
    }
    ref<Manual> man = make<Manual>(db.st);
    {
      auto w = write(man);
      // Formatted aside, as create_document's title.
      char title[TitleSize] = {};
      std::snprintf(title, sizeof title, "Manual         %08d", id);
      std::memcpy(w->title, title, sizeof title);
      w->id = id;
      w->mod = m;
      char sentence[64];
      std::snprintf(sentence, sizeof sentence, "I am the manual for module #%08d.\n", id);
      w->text = make_text(db.st, man, sentence, c.ManualSize, 8);
      w->textLen = w->text->len;
    }
    write(m)->man = man;
    write(m)->designRoot = complex(m, nullptr, 1);
    write(db.root)->allModules.add(m, db.root);
    db.ix->moduleIdx.insert(module_name(id), m);
  }
};

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// How the objects of each cluster lie on pages (qs mode: real pages).
void report_layout(Db& db) {
  std::set<std::uint64_t> assm, docs, comps, mans, mods;
  long maxPerComp = 0, sumPerComp = 0, ncomp = 0;
  auto add_assm = [&](auto&& self, ref<Assembly> a) -> void {
    assm.insert(page_of(a, db.st));
    if (a->assmType == Complex) {
      ref<ComplexAssembly> ca = downcast<ComplexAssembly>(a);
      ca->subAssemblies.each([&](ref<Assembly> s) { self(self, s); });
    }
  };
  db.root->allModules.each([&](ref<Module> m) {
    mods.insert(page_of(m, db.st));
    mans.insert(page_of(m->man, db.st));
    add_assm(add_assm, m->designRoot);
  });
  db.root->allCompParts.each([&](ref<CompositePart> cp) {
    docs.insert(page_of(cp->documentation, db.st));
    std::set<std::uint64_t> mine{page_of(cp, db.st)};
    cp->parts.each([&](ref<AtomicPart> p) {
      mine.insert(page_of(p, db.st));
      p->to.each([&](ref<Connection> cn) { mine.insert(page_of(cn, db.st)); });
    });
    comps.insert(mine.begin(), mine.end());
    sumPerComp += static_cast<long>(mine.size());
    maxPerComp = std::max<long>(maxPerComp, static_cast<long>(mine.size()));
    ++ncomp;
  });
  std::printf("Layout (pages that objects start on; classic clustering):\n");
  std::printf("  modules and assemblies: %zu pages (assemblies in depth-first creation order)\n",
              assm.size() + mods.size());
  std::printf("  manual objects: %zu pages; manual text: %d bytes each, %s\n", mans.size(), db.cfg.ManualSize,
              db.cfg.ManualSize > 8000 ? "a large object on contiguous pages of its own" : "next to its manual");
  std::printf("  documents: %zu pages, in id order; text of %d bytes each, %s\n", docs.size(), db.cfg.DocumentSize,
              db.cfg.DocumentSize > 8000 ? "a large object on pages of its own right after its document"
                                         : "next to its document");
  std::printf(
      "  composite parts with their atomic parts and connections: %zu pages, %.2f per composite part "
      "(at most %ld)\n",
      comps.size(), ncomp ? static_cast<double>(sumPerComp) / static_cast<double>(ncomp) : 0.0, maxPerComp);
}

}  // namespace

void generate(Db& db, const Config& cfg, bool quiet) {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = cpu_seconds();
  reseed(1);  // the C library's default state, made explicit
  txn tx(db.st);
  ref<Root>& cell = root_ref<Root>(db.st, "oo7");
  if (cell) throw error("the store already holds an OO7 database");
  db.root = make<Root>(db.st);
  bool bdb = bdb_indexes_requested();
  write(db.root)->cfg = cfg;
  write(db.root)->bdbIndexes = bdb;
  cell = db.root;
  db.cfg = cfg;
  db.bdbIndexes = bdb;
  db.ix = std::make_unique<Indexes>(db.st, db.root, bdb);
  db.nextCompositeId = 1;
  db.nextAtomicId = 1;
  db.nextBaseAssemblyId = 1;

  Generator g(db, cfg);
  const std::size_t users = static_cast<std::size_t>(cfg.totalCompParts()) + 11;
  g.privateUsers.resize(users);
  g.sharedUsers.resize(users);

  // Phase A: modules, manuals, assemblies.
  {
    progress bar("assemblies", static_cast<long>(cfg.TotalModules) * cfg.basesPerModule());
    g.bar = &bar;
    for (std::int32_t m = 1; m <= cfg.TotalModules; ++m) g.module(m);
    g.bar = nullptr;
  }
  // The documents' cluster (no draws).
  std::vector<ref<Document>> docs(users);
  {
    progress bar("documents", cfg.totalCompParts());
    for (std::int32_t id = 1; id <= cfg.totalCompParts(); ++id) {
      docs[static_cast<std::size_t>(id)] = create_document(db, id);
      bar.show(id);
    }
  }
  // Phase B: composite parts in id order, each with its own cluster.
  {
    progress bar("composite parts", cfg.totalCompParts());
    for (std::int32_t id = 1; id <= cfg.totalCompParts(); ++id) {
      ref<CompositePart> cp = create_composite(db, docs[static_cast<std::size_t>(id)]);
      auto& shared = g.sharedUsers[static_cast<std::size_t>(id)];
      for (auto it = shared.rbegin(); it != shared.rend(); ++it) {
        ref<BaseAssembly> ba = *it;
        write(cp)->usedInShar.add(ba, cp);
        write(ba)->componentsShar.add(cp, ba);
      }
      auto& priv = g.privateUsers[static_cast<std::size_t>(id)];
      for (auto it = priv.rbegin(); it != priv.rend(); ++it) {
        ref<BaseAssembly> ba = *it;
        write(cp)->usedInPriv.add(ba, cp);
        write(ba)->componentsPriv.add(cp, ba);
      }
      db.ix->compPartIdx.insert(id, cp);
      write(db.root)->allCompParts.add(cp, db.root);
      bar.show(id);
    }
  }
  if (!quiet) report_layout(db);
  db.attach();
  tx.commit();
  auto t1 = std::chrono::steady_clock::now();
  if (!quiet) {
    std::printf("Database %s (%s) generated:\n", cfg.name, mode_name);
    std::printf("  %d atomic parts, %d connections, %d composite parts, %d documents,\n", cfg.totalAtomicParts(),
                cfg.totalAtomicParts() * cfg.NumConnPerAtomic, cfg.totalCompParts(), cfg.totalCompParts());
    std::printf("  %ld complex assemblies, %ld base assemblies, %d modules, %d manuals\n", g.complexCount, g.baseCount,
                cfg.TotalModules, cfg.TotalModules);
    std::printf("  wall time %.3f s, CPU time %.3f s\n", std::chrono::duration<double>(t1 - t0).count(),
                cpu_seconds() - c0);
  }
}

}  // namespace oo7
