// qs_schema_v1 / qs_schema_v2: one program built with two layouts of Part,
// for the schema tests. v2 inserts a member before `next`.
//
//   qs_schema_vN DIR create      stores a list of three Parts
//   qs_schema_vN DIR read        prints the list
//   qs_schema_vN DIR transient   stores a pointer to a stack variable
//   qs_schema_vN DIR transient_element
//                                stores one in a persistent std::vector
//
// Exit status 3 and the message on stderr when qs refuses something.
#include <qs/qs.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

struct Part {
  QS_PERSISTENT(Part)
  int id;
#if QS_SCHEMA_LAYOUT == 2
  double weight;
#endif
  Part* next;
};

struct Shelf {
  QS_PERSISTENT(Shelf)
  long label;
  std::vector<Part*, qs::allocator<Part*>> parts;
};

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    Part*& head = db.root<Part*>("parts");
    if (!std::strcmp(argv[2], "create")) {
      for (int i = 1; i <= 3; ++i) {
        Part* p = new (db) Part{};
        p->id = i;
        p->next = head;
        head = p;
      }
    } else if (!std::strcmp(argv[2], "read")) {
      for (Part* p = head; p; p = p->next) std::printf("%d\n", p->id);
    } else if (!std::strcmp(argv[2], "transient")) {
      Part on_stack{};
      head->next = &on_stack;
    } else if (!std::strcmp(argv[2], "transient_element")) {
      Shelf*& shelf = db.root<Shelf*>("shelf");
      shelf = new (db) Shelf{};
      Part on_stack{};
      shelf->parts.push_back(head);
      shelf->parts.push_back(head->next);
      shelf->parts.push_back(&on_stack);
    }
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
