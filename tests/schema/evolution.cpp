// qs_schema_evolution1 / 2 / 3: releases of one program whose types change.
//
// Release 1 stores a graph; release 2 changed its types:
//   Part    grows: `mass` removed, `weight` added, `id` int -> long, `ratio`
//           float -> double, `next` moved to the front;
//   Note    shrinks: `c` removed, `b` long -> int, `sum` added (filled by a
//           converter from the stored b + c); a root is a Note itself;
//   Shape   gains a base (Tagged) and virtual functions;
//   Holder  holds Parts inline, so it changes with Part; it points into
//           the middle of a Part, one past a vector's end, and to the
//           Note root cell;
// and the standard containers of Parts (a std::vector's buffer, a
// std::map's nodes) change with it. Release 3 retargets Part::next to an
// unrelated type, a change qs must refuse; release 4 narrows Part::mass to
// a signed char, which most stored values do not fit: the conversion must
// stop at the first and leave the database as it was. Release 5 is release
// 2 with a member added to Part: it converts release 2's converted database
// again (a type's second layout change).
//
//   qs_schema_evolutionN DIR create   (release 1) stores the graph
//   qs_schema_evolutionN DIR check    opens without evolve and walks the
//                                     whole graph against the values it was
//                                     built with
//   qs_schema_evolutionN DIR evolve   opens with qs::options::evolve, then
//                                     checks
//   qs_schema_evolution2 DIR extend   checks, then adds objects of the new
//                                     layouts (one check afterwards fails:
//                                     the graph is no longer release 1's)
//
// Exit status: 0 checked, 1 a value or pointer is wrong (named on stdout),
// 3 qs refused (its message on stderr).
#include <qs/qs.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifndef QS_SCHEMA_RELEASE
#define QS_SCHEMA_RELEASE 1
#endif
// Releases 2 and 5 have the new layouts; 5 also gave Part a `color`.
#define QS_NEW_LAYOUT (QS_SCHEMA_RELEASE == 2 || QS_SCHEMA_RELEASE == 5)

template <class T>
using pvector = std::vector<T, qs::allocator<T>>;
using pstring = std::basic_string<char, std::char_traits<char>, qs::allocator<char>>;
template <class K, class V>
using pmap = std::map<K, V, std::less<K>, qs::allocator<std::pair<const K, V>>>;

#if QS_SCHEMA_RELEASE == 3
struct Tool {
  QS_PERSISTENT(Tool)
  int id;
};
#endif

#if QS_NEW_LAYOUT
struct Part {
  QS_PERSISTENT(Part)
  Part* next;
  long id;
  double ratio;
  short grade;
  char tag[6];
  double weight;
#if QS_SCHEMA_RELEASE == 5
  int color;
#endif
};
#else
struct Part {
  QS_PERSISTENT(Part)
  int id;
#if QS_SCHEMA_RELEASE == 4
  signed char mass;
#else
  int mass;
#endif
  short grade;
  float ratio;
#if QS_SCHEMA_RELEASE == 3
  Tool* next;
#else
  Part* next;
#endif
  char tag[6];
};
#endif

#if QS_NEW_LAYOUT
struct Note {
  QS_PERSISTENT(Note)
  long a;
  int b;
  Note* self;
  long sum;
};
struct Tagged {
  long tag = 7;
};
struct Shape : Tagged {
  QS_PERSISTENT(Shape)
  virtual ~Shape() = default;
  virtual int corners() const { return sides; }
  int sides = 0;
  Shape* peer = nullptr;
};
#else
struct Note {
  QS_PERSISTENT(Note)
  long a;
  long b;
  long c;
  Note* self;
};
struct Shape {
  QS_PERSISTENT(Shape)
  int sides = 0;
  Shape* peer = nullptr;
};
#endif

struct Holder {
  QS_PERSISTENT(Holder)
  Part* first = nullptr;
  Part* some[4] = {};
  Part pair[2] = {};
  short* grade_of_third = nullptr;
  Part* past_vec = nullptr;
  pvector<Part> vec;
  pmap<int, Part> by_id;
  Shape* shape = nullptr;
  Note* note = nullptr;
  // libstdc++ strings point into themselves (a short one) or to a buffer.
  pstring label_short;
  pstring label_long;
  // A buffer of Parts larger than a page: a large object.
  pvector<Part> big;
  // A pointer to a Shape's first member, which release 2 moves behind a
  // vptr and a base: typed as the member, it follows the member.
  int* sides_of_shape = nullptr;
};

namespace {

constexpr int parts = 300;

[[maybe_unused]] void fill(Part& p, int id) {
  p.id = id;
#if QS_SCHEMA_RELEASE == 1 || QS_SCHEMA_RELEASE == 3
  p.mass = id * 3;
#endif
  p.grade = static_cast<short>(id % 50);
  p.ratio = static_cast<float>(id) / 4.0f;
  std::snprintf(p.tag, sizeof p.tag, "t%d", id % 1000);
}

int failures = 0;
#define EXPECT(cond)                                                              \
  do {                                                                            \
    if (!(cond)) {                                                                \
      if (failures++ < 10) std::printf("wrong: %s (line %d)\n", #cond, __LINE__); \
    }                                                                             \
  } while (0)

[[maybe_unused]] void expect_part(const Part& p, long id) {
  EXPECT(p.id == id);
  EXPECT(p.grade == id % 50);
  EXPECT(p.ratio == static_cast<double>(id) / 4.0);
  char tag[6];
  std::snprintf(tag, sizeof tag, "t%ld", id % 1000);
  EXPECT(std::strcmp(p.tag, tag) == 0);
#if QS_NEW_LAYOUT
  EXPECT(p.weight == 0.0);
#if QS_SCHEMA_RELEASE == 5
  EXPECT(p.color == 0);
#endif
#else
  EXPECT(p.mass == id * 3);
#endif
}

#if QS_SCHEMA_RELEASE == 1
void create(qs::database& db) {
  Holder*& holder = db.root<Holder*>("holder");
  Part*& head = db.root<Part*>("head");
  Note& note = db.root<Note>("note");
  qs::index<int, Part> by_id(db, "parts_by_id", qs::unique);
  holder = new (db) Holder;
  for (int i = 1; i <= parts; ++i) {
    Part* p = new (db) Part{};
    fill(*p, i);
    p->next = holder->first;
    holder->first = p;
    by_id.insert(i, p);
    if (i % 10 == 0 && i <= 40) holder->some[i / 10 - 1] = p;
    if (i == 3) holder->grade_of_third = &p->grade;
  }
  head = holder->first;
  fill(holder->pair[0], 3000);
  fill(holder->pair[1], 3001);
  holder->pair[0].next = &holder->pair[1];
  for (int k = 0; k < 20; ++k) {
    Part p{};
    fill(p, 1000 + k);
    holder->vec.push_back(p);
  }
  holder->past_vec = holder->vec.data() + holder->vec.size();
  for (int k = 0; k < 30; ++k) fill(holder->by_id[k], 2000 + k);
  Shape* a = new (db) Shape;
  Shape* b = new (db) Shape;
  a->sides = 3;
  b->sides = 4;
  a->peer = b;
  b->peer = a;
  holder->shape = a;
  holder->sides_of_shape = &b->sides;
  note.a = 11;
  note.b = 22;
  note.c = 33;
  note.self = &note;
  holder->note = &note;
  holder->big.reserve(600);
  for (int k = 0; k < 600; ++k) {
    Part p{};
    fill(p, 5000 + k);
    p.next = holder->some[k % 4];
    holder->big.push_back(p);
  }
  holder->label_short = "short";
  holder->label_long = "a label longer than fifteen characters";
}
#endif

#if QS_SCHEMA_RELEASE <= 2 || QS_SCHEMA_RELEASE == 5
void check(qs::database& db) {
  Holder* holder = db.root<Holder*>("holder");
  EXPECT(holder != nullptr);
  if (!holder) return;
  std::vector<Part*> by_number(parts + 1);
  long n = 0;
  long id = parts;
  for (Part* p = holder->first; p && n <= parts; p = p->next, --id, ++n) {
    expect_part(*p, id);
    if (id >= 1) by_number[static_cast<std::size_t>(id)] = p;
  }
  EXPECT(n == parts);
  EXPECT(db.root<Part*>("head") == holder->first);
  for (int j = 0; j < 4; ++j) EXPECT(holder->some[j] == by_number[static_cast<std::size_t>(10 * (j + 1))]);
  expect_part(holder->pair[0], 3000);
  expect_part(holder->pair[1], 3001);
  EXPECT(holder->pair[0].next == &holder->pair[1]);
  EXPECT(holder->grade_of_third == &by_number[3]->grade);
  EXPECT(*holder->grade_of_third == 3);
  EXPECT(holder->vec.size() == 20);
  for (std::size_t k = 0; k < holder->vec.size() && k < 20; ++k)
    expect_part(holder->vec[k], 1000 + static_cast<long>(k));
  EXPECT(holder->past_vec == holder->vec.data() + holder->vec.size());
  EXPECT(holder->by_id.size() == 30);
  int k = 0;
  for (auto& [key, p] : holder->by_id) {
    EXPECT(key == k);
    expect_part(p, 2000 + k);
    ++k;
  }
  EXPECT(k == 30);
  qs::index<int, Part> index(db, "parts_by_id", qs::unique);
  for (int i = 1; i <= parts; ++i) EXPECT(index.find(i) == by_number[static_cast<std::size_t>(i)]);
  Shape* a = holder->shape;
  EXPECT(a->sides == 3);
  EXPECT(a->peer->sides == 4);
  EXPECT(a->peer->peer == a);
  EXPECT(holder->sides_of_shape == &a->peer->sides);
#if QS_NEW_LAYOUT
  EXPECT(a->corners() == 3);
  EXPECT(a->peer->corners() == 4);
  EXPECT(a->tag == 0);  // added members are value-initialized
#endif
  EXPECT(holder->big.size() == 600);
  for (std::size_t b = 0; b < holder->big.size() && b < 600; ++b) {
    expect_part(holder->big[b], 5000 + static_cast<long>(b));
    EXPECT(holder->big[b].next == holder->some[b % 4]);
  }
  EXPECT(holder->label_short == "short");
  EXPECT(holder->label_long == "a label longer than fifteen characters");
  Note& note = db.root<Note>("note");
  EXPECT(holder->note == &note);
  EXPECT(note.self == &note);
  EXPECT(note.a == 11);
  EXPECT(note.b == 22);
#if QS_NEW_LAYOUT
  EXPECT(note.sum == 55);
#else
  EXPECT(note.c == 33);
#endif
}
#else
void check(qs::database&) {}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::string mode = argv[2];
  try {
    qs::options opts;
    if (mode == "evolve") {
      opts.evolve = true;
#if QS_NEW_LAYOUT
      opts.converters["Note"] = [](const qs::stored_object& old, void* fresh) {
        static_cast<Note*>(fresh)->sum = old.get<long>("b") + old.get<long>("c");
      };
#endif
    }
    auto db = qs::database::open(argv[1], opts);
    qs::transaction tx(db);
    if (mode == "create") {
#if QS_SCHEMA_RELEASE == 1
      create(db);
#endif
      tx.commit();
      std::printf("created\n");
      return 0;
    }
    check(db);
#if QS_NEW_LAYOUT
    if (mode == "extend") {
      // New objects of the new layouts, beside the converted ones.
      Holder* holder = db.root<Holder*>("holder");
      Shape* s = new (db) Shape;
      s->sides = 5;
      s->peer = holder->shape;
      holder->shape->peer->peer = s;
      Part* p = new (db) Part{};
      fill(*p, 4000);
      p->weight = 1.5;
      holder->vec.push_back(*p);
      holder->past_vec = holder->vec.data() + holder->vec.size();
    }
#endif
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  if (failures) {
    std::printf("%d checks failed\n", failures);
    return 1;
  }
  std::printf("checked\n");
  return 0;
}
