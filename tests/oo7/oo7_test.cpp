// Tests of the OO7 benchmark (OO7-SPEC 3.8, 4.4, 4.5), built from this one
// source in every mode of oo7/mode.hpp: against qs in hardware mode, software
// mode and hardware mode with padded objects (a real database in a temporary
// directory), and in memory (OO7_MODE_MEM).
// Catch2's main is tests/support/main.cpp's, compiled once (qs_catch_main).
#include <catch2/catch.hpp>

#include "oo7.hpp"
#include "temp_dir.hpp"
#ifdef OO7_ON_QS
#include "test_options.hpp"
#endif

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace oo7;

namespace {

// An OO7 database of one size: on qs in a temporary directory, or in memory.
struct Fixture {
  qs_test::temp_dir dir{"oo7-test"};
#ifdef OO7_ON_QS
  std::optional<qs::database> handle;
  static qs::options opts(std::uint32_t pool) {
    qs::options o = qs_test::small_options(pool);
    o.reservation_bytes = std::uint64_t{4} << 30;
    o.store_cache_bytes = 32u << 20;
    return o;
  }
#endif
  Db db;
  std::string path() const { return dir.sub("db"); }

  explicit Fixture(const char* size, std::uint32_t pool = 4096) {
    open(pool);
    generate(db, config_named(size), true);
  }
  void open(std::uint32_t pool = 4096) {
#ifdef OO7_ON_QS
    handle.emplace(qs::database::open(path(), opts(pool)));
    db.st.db = &*handle;
#else
    (void)pool;
#endif
  }
  // Closes and reopens the database (qs), attaching again.
  void reopen(std::uint32_t pool = 4096) {
#ifdef OO7_ON_QS
    std::int32_t nc = db.nextCompositeId;
    db.ix.reset();
    db.root = nullptr;
    db.st.db = nullptr;
    handle.reset();
    open(pool);
    txn t(db.st);
    db.attach();
    t.commit();
    db.nextCompositeId = nc;
#else
    (void)pool;
#endif
  }
  long op(const std::string& name) {
    db.quiet = true;
    txn t(db.st);
    long n = run_op(db, name).count;
    t.commit();
    return n;
  }
};

template <class Ix>
long count_int_index(Ix& ix) {
  long n = 0;
  ix.range(INT32_MIN, INT32_MAX, [&](std::int32_t, auto) {
    ++n;
    return true;
  });
  return n;
}
template <class Ix>
long count_string_index(Ix& ix) {
  long n = 0;
  ix.range(std::string(), std::string(64, '\xff'), [&](const std::string&, auto) {
    ++n;
    return true;
  });
  return n;
}

// OO7-SPEC 3.8, on a freshly generated database with M modules.
void check_invariants(Db& db) {
  const Config& c = db.cfg;
  txn t(db.st);
  long modules = 0, complexes = 0, bases = 0, comps = 0, atoms = 0, conns = 0;
  std::set<std::int32_t> ids;
  // Assemblies: tree shape, depth, parent links, private component ranges.
  db.root->allModules.each([&](ref<Module> m) {
    ++modules;
    REQUIRE(find_module(db, m->id) == m);
    REQUIRE(m->man->mod == m);
    REQUIRE(m->man->id == m->id);
    REQUIRE(m->designRoot->superAssembly == nullptr);
    long privSum = 0, sharSum = 0;
    auto visit = [&](auto&& self, ref<Assembly> a, int level) -> void {
      if (a->assmType == Complex) {
        ++complexes;
        REQUIRE(level < c.NumAssmLevels);
        ref<ComplexAssembly> ca = downcast<ComplexAssembly>(a);
        REQUIRE(ca->subAssemblies.size() == c.NumAssmPerAssm);
        ca->subAssemblies.each([&](ref<Assembly> s) {
          REQUIRE(s->superAssembly == ca);
          REQUIRE(ca->subAssemblies.occurrences(s) == 1);
          self(self, s, level + 1);
        });
      } else {
        ++bases;
        REQUIRE(level == c.NumAssmLevels);
        ref<BaseAssembly> ba = downcast<BaseAssembly>(a);
        REQUIRE(db.ix->baseAssemblyIdx.find(ba->id) == ba);
        REQUIRE(ba->componentsPriv.size() == c.NumCompPerAssm);
        REQUIRE(ba->componentsShar.size() == c.NumCompPerAssm);
        privSum += ba->componentsPriv.size();
        sharSum += ba->componentsShar.size();
        std::int32_t prev = 0;
        ba->componentsPriv.each([&](ref<CompositePart> cp) {
          REQUIRE(cp->id > (m->id - 1) * c.NumCompPerModule);
          REQUIRE(cp->id <= m->id * c.NumCompPerModule);
          REQUIRE(cp->id >= prev);  // ascending composite ids
          prev = cp->id;
          REQUIRE(cp->usedInPriv.occurrences(ba) == ba->componentsPriv.occurrences(cp));
        });
        ba->componentsShar.each([&](ref<CompositePart> cp) {
          REQUIRE(cp->usedInShar.occurrences(ba) == ba->componentsShar.occurrences(cp));
        });
      }
    };
    visit(visit, m->designRoot, 1);
    REQUIRE(privSum == c.basesPerModule() * c.NumCompPerAssm);
    REQUIRE(sharSum == c.basesPerModule() * c.NumCompPerAssm);
    REQUIRE(m->allBases.size() == c.basesPerModule());
  });
  // Composite parts, documents, atomic parts, connections.
  db.root->allCompParts.each([&](ref<CompositePart> cp) {
    ++comps;
    REQUIRE(db.ix->compPartIdx.find(cp->id) == cp);
    REQUIRE((cp->id % 10 == 0) == (cp->buildDate >= 2000));
    REQUIRE((cp->buildDate >= 2000 ? cp->buildDate <= 2999 : cp->buildDate <= 999));
    ref<Document> d = cp->documentation;
    REQUIRE(d->part == cp);
    REQUIRE(d->id == cp->id);
    REQUIRE(std::string(d->title) == document_title(cp->id));
    REQUIRE(db.ix->documentIdx.find(d->title) == d);
    REQUIRE(db.ix->documentIdIdx.find(d->id) == d);
    REQUIRE(d->text->len == c.DocumentSize - 1);
    REQUIRE(d->textLen == c.DocumentSize - 1);
    REQUIRE(cp->parts.size() == c.NumAtomicPerComp);
    REQUIRE(cp->rootPart == cp->parts.at(0));
    std::int32_t first = (cp->id - 1) * c.NumAtomicPerComp + 1, k = 0;
    std::set<std::int32_t> mine;
    cp->parts.each([&](ref<AtomicPart> p) {
      ++atoms;
      REQUIRE(p->id == first + k++);
      REQUIRE(p->partOf == cp);
      REQUIRE(db.ix->atomicPartIdx.find(p->id) == p);
      bool dated = false;
      db.ix->buildDateIndex.range(p->buildDate, p->buildDate, [&](std::int32_t, ref<AtomicPart> q) {
        dated = dated || q == p;
        return true;
      });
      REQUIRE(dated);
      REQUIRE(p->x >= 0);
      REQUIRE(p->x < 100000);
      REQUIRE(p->docId >= 1);
      REQUIRE(p->docId <= c.totalCompParts());
      REQUIRE(p->to.size() == c.NumConnPerAtomic);
      REQUIRE(p->from.size() >= 1);
      p->to.each([&](ref<Connection> cn) {
        ++conns;
        REQUIRE(cn->from == p);
        REQUIRE(cn->to->partOf == cp);
        REQUIRE(cn->to->from.occurrences(cn) == 1);
      });
      p->from.each([&](ref<Connection> cn) { REQUIRE(cn->to == p); });
      mine.insert(p->id);
    });
    // Every part is reachable from the root over `to`.
    std::set<std::int32_t> seen;
    auto dfs = [&](auto&& self, ref<AtomicPart> p) -> void {
      if (!seen.insert(p->id).second) return;
      p->to.each([&](ref<Connection> cn) { self(self, cn->to); });
    };
    dfs(dfs, cp->rootPart);
    REQUIRE(seen == mine);
  });
  REQUIRE(modules == c.TotalModules);
  REQUIRE(complexes == c.TotalModules * c.complexPerModule());
  REQUIRE(bases == c.TotalModules * c.basesPerModule());
  REQUIRE(comps == c.totalCompParts());
  REQUIRE(atoms == c.totalAtomicParts());
  REQUIRE(conns == c.totalAtomicParts() * c.NumConnPerAtomic);
  REQUIRE(count_int_index(db.ix->atomicPartIdx) == atoms);
  REQUIRE(count_int_index(db.ix->buildDateIndex) == atoms);
  REQUIRE(count_int_index(db.ix->compPartIdx) == comps);
  REQUIRE(count_int_index(db.ix->documentIdIdx) == comps);
  REQUIRE(count_string_index(db.ix->documentIdx) == comps);
  REQUIRE(count_int_index(db.ix->baseAssemblyIdx) == bases);
  REQUIRE(count_string_index(db.ix->moduleIdx) == modules);
  REQUIRE(db.root->allModules.size() == modules);
  REQUIRE(db.root->allCompParts.size() == comps);
  t.commit();
}

// The read-only results on a fresh tiny database: 4.4's deterministic counts
// and 4.5's glibc reference values.
void check_tiny_reads(Fixture& f) {
  CHECK(f.op("t1") == 135);
  CHECK(f.op("t1ww") == 135);
  CHECK(f.op("t1-") == 54);  // 2 of the 5 parts per composite visit
  CHECK(f.op("t1+") == 135);
  CHECK(f.op("t6") == 27);
  CHECK(f.op("t4") == 108);
  CHECK(f.op("t8") == 27);
  CHECK(f.op("t9") == 0);
  CHECK(f.op("t10") == 135);
  CHECK(f.op("q1") == 10);
  CHECK(f.op("q2") == 2);
  CHECK(f.op("q3") == 7);
  CHECK(f.op("q4") == 28);
  CHECK(f.op("q5") == 3);
  CHECK(f.op("q6") == 6);
  CHECK(f.op("q7") == 50);
  CHECK(f.op("q8") == 50);
  CHECK(f.op("t7") == 5);
  {
    txn t(f.db.st);
    long per_entry = 0;
    CHECK(query_q5(f.db, &per_entry) == 3);
    CHECK(per_entry == 3);
    std::int32_t start = 0;
    CHECK(traverse_t7(f.db, &start) == 5);
    CHECK(start == 34);
    std::vector<std::int32_t> ids;
    query_q1(f.db, &ids);
    CHECK(ids == std::vector<std::int32_t>{34, 37, 28, 16, 44, 36, 37, 43, 50, 22});
    t.commit();
  }
}

#ifdef OO7_ON_QS
// Every atomic part's (x, y), by id: for the tests on a database (below).
std::map<std::int32_t, std::pair<std::int32_t, std::int32_t>> all_xy(Db& db) {
  std::map<std::int32_t, std::pair<std::int32_t, std::int32_t>> xy;
  txn t(db.st);
  db.root->allCompParts.each([&](ref<CompositePart> cp) {
    cp->parts.each([&](ref<AtomicPart> p) { xy[p->id] = {p->x, p->y}; });
  });
  t.commit();
  return xy;
}
#endif

}  // namespace

TEST_CASE("the generated tiny database keeps the invariants of OO7-SPEC 3.8") {
  Fixture f("tiny");
  check_invariants(f.db);
}

TEST_CASE("tiny.m: two modules from a config file in the shipped format") {
  qs_test::temp_dir cfgdir{"oo7-test"};
  std::string file = cfgdir.sub("tiny.m");
  {
    FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f);
    std::fputs(
        "DirName /oo7/tiny.m\nPoolName oo7\nNummAssmPerAssm 3\nNumCompPerAssm 3\nNumCompPerModule 10\n"
        "NumAssmLevels 3\nTotalModules 2\nNumAtomicPerComp 5\nNumConnPerAtomic 3\nDocumentSize 200\n"
        "ManualSize 1000\nMultiSleepTime 0\nCacheSize 1500\n",
        f);
    std::fclose(f);
  }
  Config c = config_named(file);
  REQUIRE(c.TotalModules == 2);
  REQUIRE(c.NumAssmPerAssm == 3);
  Fixture f(file.c_str());
  check_invariants(f.db);
  CHECK(f.op("t1") == 2 * 135);  // once per module
  CHECK(f.op("t10") == 2 * 135);
  CHECK(f.op("t6") == 2 * 27);
  CHECK(f.op("t8") == 2 * 27);
  CHECK(f.op("q7") == 100);
  CHECK(f.op("q8") == 100);
  CHECK(f.op("i") == 50);
  CHECK(f.op("t6") == 2 * 27 + 10);
}

TEST_CASE("tiny: the deterministic counts of 4.4 and the glibc reference values of 4.5") {
  Fixture f("tiny");
  check_tiny_reads(f);
  // Updates: counts, and what they do.
  CHECK(f.op("t5do") == 9);
  CHECK(f.op("t5do") == 0);
  CHECK(f.op("t4") == 108 - 27);  // every visited document lost its first I
  CHECK(f.op("t5undo") == 9);
  CHECK(f.op("t4") == 108);
  CHECK(f.op("t2a") == 27);
  CHECK(f.op("wu") == 27);
  CHECK(f.op("t2b") == 135);
  CHECK(f.op("t2c") == 540);
  CHECK(f.op("t3a") == 27);
  CHECK(f.op("t3b") == 135);
  CHECK(f.op("t3c") == 540);
  CHECK(f.op("t1") == 135);
  CHECK(f.op("q7") == 50);
}

TEST_CASE("tiny: T5 replaces the prefix for real") {
  Fixture f("tiny");
  f.op("t5do");
  txn t(f.db.st);
  ref<Document> d = f.db.ix->documentIdIdx.find(f.db.root->allCompParts.at(0)->id);
  bool used = false;
  f.db.root->allModules.at(0)->allBases.each(
      [&](ref<BaseAssembly> ba) { used = used || ba->componentsPriv.occurrences(d->part) > 0; });
  std::string text(d->text->data, static_cast<std::size_t>(d->text->len));
  if (used) {
    CHECK(text.rfind("This is the documentation for composite part #00000001.\nI am", 0) == 0);
    CHECK(d->text->len == 199 + 3);
  } else {
    CHECK(text.rfind("I am the documentation", 0) == 0);
  }
  t.commit();
}

TEST_CASE("tiny: insert and delete restore the counts") {
  Fixture f("tiny");
  CHECK(f.op("i") == 50);
  CHECK(f.op("t1") == 135 + 50);
  CHECK(f.op("t6") == 27 + 10);
  CHECK(f.op("q7") == 100);
  CHECK(f.op("q8") == 100);
  f.db.nextCompositeId = f.db.cfg.totalCompParts() + 1;  // a new process would start here
  f.reopen();
  CHECK(f.op("d") == 50);
  CHECK(f.op("t1") == 135);
  CHECK(f.op("t6") == 27);
  CHECK(f.op("q7") == 50);
  CHECK(f.op("q8") == 50);
  check_invariants(f.db);
  f.db.nextCompositeId = f.db.cfg.totalCompParts() + 1;
  CHECK(f.op("d") == 0);  // nothing left to delete
}

#ifdef OO7_ON_QS

TEST_CASE("tiny: the reference values hold after the database is reopened") {
  Fixture f("tiny");
  f.reopen();
  check_tiny_reads(f);
  check_invariants(f.db);
}

namespace {
// Runs the oo7-qs program; returns its standard output.
std::string run_oo7(const std::string& args) {
  std::string cmd = std::string(OO7_EXE) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int st = ::pclose(p);
  INFO(cmd << "\n" << out);
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);
  return out;
}
long result_of(const std::string& out) {
  auto at = out.find(" result=");
  REQUIRE(at != std::string::npos);
  return std::atol(out.c_str() + at + 8);
}
}  // namespace

TEST_CASE("tiny: insert in one process, delete in the next (the oo7-qs driver)") {
  qs_test::temp_dir dir{"oo7-test"};
  std::string db = dir.sub("db");
  run_oo7("gen tiny " + db + " --quiet --no-durable --warm-os");
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 t1 one --quiet --no-durable --warm-os")) == 135);
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 i one --quiet --no-durable --warm-os")) == 50);
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 t1 one --quiet --no-durable --warm-os")) == 185);
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 q7 one --quiet --no-durable --warm-os")) == 100);
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 d one --quiet --no-durable --warm-os")) == 50);
  CHECK(result_of(run_oo7("bench tiny " + db + " 3 t1 one --quiet --no-durable --warm-os")) == 135);
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 t6 many --quiet --no-durable --warm-os")) == 27);
  CHECK(result_of(run_oo7("bench tiny " + db + " 1 q8 one --quiet --no-durable --warm-os")) == 50);
  // And the whole database is as generated.
  auto h = qs::database::open(db, Fixture::opts(256));
  Db d;
  d.st.db = &h;
  {
    txn t(d.st);
    d.attach();
    t.commit();
  }
  check_invariants(d);
}

TEST_CASE("small: T2b in one transaction with a buffer pool smaller than the database") {
  Fixture f("small", 4096);
  auto before = all_xy(f.db);
  // How often T2b reaches each composite part: each visit swaps once.
  std::map<std::int32_t, int> visits;
  {
    txn t(f.db.st);
    f.db.root->allModules.at(0)->allBases.each(
        [&](ref<BaseAssembly> ba) { ba->componentsPriv.each([&](ref<CompositePart> cp) { ++visits[cp->id]; }); });
    t.commit();
  }
  const std::uint32_t pool = 96;  // 768 KiB; the database has several hundred pages
  f.reopen(pool);
#ifdef OO7_MODE_SW
  // Software mode keeps every page a transaction uses until it ends: T2b
  // cannot run in this pool. It fails with a clear error, and aborts.
  CHECK_THROWS_WITH(f.op("t2b"), Catch::Contains("the transaction needs more pages than the buffer pool's 96"));
  CHECK_FALSE(f.handle->in_transaction());
  f.reopen();
  CHECK(all_xy(f.db) == before);
  return;
#endif
  std::uint64_t evictions0 = f.handle->stats().dirty_evictions;
  CHECK(f.op("t2b") == 43740);
  CHECK(f.handle->stats().dirty_evictions > evictions0);
  f.reopen(pool);
  auto after = all_xy(f.db);
  REQUIRE(after.size() == 10000);
  long swapped = 0;
  for (auto& [id, xy] : after) {
    std::int32_t cp = (id - 1) / 20 + 1;
    auto want = before.at(id);
    if (visits[cp] % 2) {
      std::swap(want.first, want.second);
      ++swapped;
    }
    REQUIRE(xy == want);
  }
  CHECK(swapped > 0);
}

#endif
