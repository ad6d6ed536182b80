// oo7/oo7.hpp: an OO7 database as the benchmark code sees it, and the
// operations on it.
//
// An oo7::Db bundles the store, the root object and the seven indexes of
// OO7-SPEC 1.5 (opened by name in qs mode, kept in memory in mem mode), plus
// the per-process state of the driver (the next ids of 4.3, the work amount
// of T1WW). generate() builds a database (section 3); run_op() runs one
// operation (section 4) once, over every module where the operation is
// module-scoped.
//
// Invariants:
//  * Every call that touches persistent objects runs inside a transaction
//    on db.st (an oo7::txn); generate() and the tests open their own.
//  * All random draws go through oo7::r(), which is glibc random() % n, in
//    the order of OO7-SPEC 3.3-3.4, so the reference values of 4.5 hold.
#pragma once

#include "mode.hpp"
#include "schema.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oo7 {

// One draw of the benchmark's generator (glibc random(), on a state of its
// own), reduced modulo n; and srandom() for it.
long r(long n);
void reseed(unsigned seed);
// The configuration of a named size (tiny, little, small, medium, large), or
// of a config file in the format of OO7-SPEC 2.1.
Config config_named(const std::string& name_or_file);

// The indexes of the database whose root is `root` (a Db's member, which
// must outlive them); Berkeley DB's when `bdb`.
struct Indexes {
  Indexes(store& s, const ref<Root>& root, bool bdb);
  index<std::int32_t, AtomicPart> atomicPartIdx;
  index<std::int32_t, AtomicPart> buildDateIndex;
  index<std::string, Document> documentIdx;
  index<std::int32_t, Document> documentIdIdx;
  index<std::int32_t, CompositePart> compPartIdx;
  index<std::int32_t, BaseAssembly> baseAssemblyIdx;
  index<std::string, Module> moduleIdx;
};

struct Db {
  store st;
  ref<Root> root = nullptr;
  std::unique_ptr<Indexes> ix;
  Config cfg;
  // Driver state (OO7-SPEC 4.3), not persistent.
  std::int32_t nextCompositeId = 0, nextAtomicId = 0, nextBaseAssemblyId = 0;
  int workAmount = 0;       // gettimeofday calls per DoNothing in T1WW
  bool bdbIndexes = false;  // the indexes are Berkeley DB's (OO7_INDEX=bdb), not qs::btree
  bool quiet = false;       // no per-module lines

  // Opens the indexes and finds the root; in a transaction. Sets cfg and the
  // next ids. Throws oo7::error when the store holds no OO7 database.
  void attach();
};

std::string module_name(std::int32_t id);
std::string document_title(std::int32_t id);

// Builds the database described by cfg (OO7-SPEC 3) in db.st, in one
// transaction, and leaves db attached. Prints the totals and the layout to
// stdout unless quiet; a progress bar on stderr when it is a terminal.
void generate(Db& db, const Config& cfg, bool quiet = false);

// Creates one composite part with id db.nextCompositeId++ and everything it
// owns (OO7-SPEC 3.4 steps 1-7 and 10); the caller links users.
ref<CompositePart> create_composite(Db& db, ref<Document> doc);
ref<Document> create_document(Db& db, std::int32_t id);

// The operations of OO7-SPEC 4, by their driver names.
const std::vector<std::string>& op_names();
bool op_is_module_scoped(const std::string& op);

struct OpResult {
  long count = 0;
  long extra = 0;  // Q5: the port's per-entry count; T10: modules visited
  std::string line;
};
// Runs `op` once (OO7-SPEC 5.3 step 5): reseeds with 1 and runs on every
// module (module-scoped ops) or once (database-wide ops). In a transaction.
OpResult run_op(Db& db, const std::string& op);

// The single operations, on one module where it applies.
long traverse_t1(Db& db, ref<Module> m, int variant = 0);  // 0: T1, -1: T1-, +1: T1+
long traverse_t2(Db& db, ref<Module> m, char which);       // 'a', 'b', 'c'
long traverse_t3(Db& db, ref<Module> m, char which);
long traverse_t4(Db& db, ref<Module> m);
long traverse_t5(Db& db, ref<Module> m, bool undo);
long traverse_t6(Db& db, ref<Module> m);
long traverse_t7(Db& db, std::int32_t* start_id = nullptr);
long traverse_t8(Db& db, ref<Module> m);
long traverse_t9(Db& db, ref<Module> m);
long query_q1(Db& db, std::vector<std::int32_t>* ids = nullptr);
long query_q2q3(Db& db, int percent);
long query_q4(Db& db);
long query_q5(Db& db, long* per_entry = nullptr);
long query_q6(Db& db);
long query_q7(Db& db);
long query_q8(Db& db);
long op_insert(Db& db);
long op_delete(Db& db);

ref<Module> find_module(Db& db, std::int32_t id);

}  // namespace oo7
