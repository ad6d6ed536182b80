// evolution/schema_evolution.hpp: converting a database's objects to the program's
// changed types, when it opens with options::evolve (qs/evolve.hpp).
//
// The pass runs as a program would, in one transaction, touching objects
// through their frames: faults bring pages in, and the commit logs what
// changed. In order:
//   1. plan every changed type (evolution_plan.hpp); a change that cannot be
//      made is refused here, before anything is written;
//   2. give each changed type a new index with the program's layout (the
//      old layout stays as history);
//   3. walk every page; copy each object of a changed type into a new
//      object, near it, in the new layout;
//   4. free the old objects;
//   5. walk every page again, rewriting every pointer word that points into
//      a moved object, to the same member of its new place;
//   6. rewrite the roots and qs::index entries that locate moved objects;
//   7. commit.
// Until 7 nothing is durable, so a crash leaves the old database; after it,
// the new one. Pause points (qs/pause_point.hpp): evolve.converted (after
// 4), evolve.rewritten (after 6).
//
// Invariants:
//  * no pointer word is rewritten twice: step 5 runs once over every page,
//    after every object has its new place;
//  * no new object takes an old one's place before step 5 (the old ones are
//    freed after all are copied), so an old address names one object.
//
// Thread-safety: runs inside database::open, before the handle is returned.
#pragma once

#include "api/database_impl.hpp"
#include "evolution/evolution_plan.hpp"

#include <vector>

#include <qs/database.hpp>

namespace qs::detail {

// The plan of every changed type, checked: what evolve_database would do.
// Throws qs::schema_mismatch for a change it cannot make. Writes nothing.
std::vector<type_change> plan_evolution(database_impl& db, const options& opts);

// Converts the types the registry found changed; nothing when none did.
// Throws qs::schema_mismatch for a change it cannot make, and what the
// transaction throws; the database is then as it was.
void evolve_database(database_impl& db, const options& opts);

}  // namespace qs::detail
