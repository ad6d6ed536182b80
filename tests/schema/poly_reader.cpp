// qs_schema_poly1 / 2: a polymorphic class that release 2 reads but never
// constructs. Release 1 stores a Gadget; release 2 added a member before
// `weight` and only reads it. g++ describes such a class only where its
// vtable is emitted, so without qs_add_schema's -femit-class-debug-always
// release 2 would read the old layout unchecked.
//
//   qs_schema_polyN DIR [evolve]   release 1 stores a Gadget of weight 42
//                                  under root "gadget"; release 2 prints its
//                                  weight (opening with options::evolve
//                                  when asked)
//
// Exit status 3 and the message on stderr when qs refuses something.
#include <qs/qs.hpp>

#include <cstdio>
#include <cstring>

struct Gadget {
  QS_PERSISTENT(Gadget)
  virtual ~Gadget() = default;
  virtual int kind() const { return 1; }
#if QS_SCHEMA_RELEASE == 2
  long serial = 0;
#endif
  int weight = 0;
};

#if QS_SCHEMA_RELEASE == 2
namespace {
// Release 2 has no vtable for Gadget, so qs gives the stored objects its
// raising vtable (unknown_vtable.hpp), and UBSan's vptr check would flag
// every member access as one through an object of another type.
__attribute__((no_sanitize("vptr"))) void print(const Gadget* g) {
  std::printf("weight %d serial %ld\n", g->weight, g->serial);
}
}  // namespace
#endif

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  try {
    qs::options opts;
    opts.evolve = argc > 2 && !std::strcmp(argv[2], "evolve");
    auto db = qs::database::open(argv[1], opts);
    qs::transaction tx(db);
    Gadget*& g = db.root<Gadget*>("gadget");
#if QS_SCHEMA_RELEASE == 1
    g = new (db) Gadget;
    g->weight = 42;
    std::printf("stored\n");
#else
    print(g);
#endif
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
