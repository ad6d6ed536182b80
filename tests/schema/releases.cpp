// qs_schema_release1 / 2 / 3: releases of one program. Release 1 stores a
// list of Parts; release 2 changed Part (dropped `mass`, added two members)
// and only reads the list: it never allocates a Part. Release 3 kept Part
// as release 1 had it and only reads the list too. Reading, kept by value
// in a qs::btree_map, changes in release 2 as Part does.
//
//   qs_schema_releaseN DIR     release 1 stores 20000 Parts under root
//                              "parts"; releases 2 and 3 count them
//   qs_schema_releaseN DIR evolve [RESERVATION_BYTES]
//                              the same, opened with qs::options::evolve
//                              (and that reservation)
//   qs_schema_releaseN DIR tree
//                              stores 100 Readings in a qs::btree_map under
//                              root "readings"
//
// Exit status 3 and the message on stderr when qs refuses something.
#include <qs/btree.hpp>
#include <qs/qs.hpp>

#include <cstdio>
#include <string>

struct Part {
  QS_PERSISTENT(Part)
  int id;
#if QS_SCHEMA_RELEASE != 2
  int mass;
#else
  long cost;
  double weight;
#endif
  Part* next;
};

struct Reading {
  int id;
#if QS_SCHEMA_RELEASE != 2
  int mass;
#else
  long cost;
#endif
};

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) return 2;
  const std::string mode = argc > 2 ? argv[2] : "";
  try {
    qs::options opts;
    if (mode == "evolve") {
      opts.evolve = true;
      if (argc > 3) opts.reservation_bytes = std::stoull(argv[3]);
    }
    auto db = qs::database::open(argv[1], opts);
    qs::transaction tx(db);
    if (mode == "tree") {
      auto& readings = db.root<qs::btree_map<int, Reading>>("readings");
      for (int i = 1; i <= 100; ++i) readings.insert({i, Reading{i, i % 97}});
      std::printf("stored 100 readings\n");
      tx.commit();
      return 0;
    }
    Part*& head = db.root<Part*>("parts");
#if QS_SCHEMA_RELEASE == 1
    for (int i = 1; i <= 20000; ++i) {
      Part* p = new (db) Part{};
      p->id = i;
      p->mass = i % 97;
      p->next = head;
      head = p;
    }
    std::printf("stored 20000 parts\n");
#else
    long n = 0;
    for (Part* p = head; p && n <= 20000; p = p->next) ++n;
    std::printf("the list has %ld parts\n", n);
#endif
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
