// qs_schema_containers: libstdc++'s containers and polymorphic classes
// (multiple and virtual inheritance) inside persistent objects, across runs
// of a position-independent executable.
//
//   qs_schema_containers DIR     first run: builds the objects; every run
//                                prints the same report
#include <qs/qs.hpp>

#include <cstdio>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

template <class T>
using pvector = std::vector<T, qs::allocator<T>>;
using pstring = std::basic_string<char, std::char_traits<char>, qs::allocator<char>>;

struct Named {
  virtual ~Named() = default;
  virtual pstring name() const = 0;
};
struct Weighed {
  virtual ~Weighed() = default;
  virtual int weight() const = 0;
  int grams = 0;
};
// Two polymorphic bases: two vptrs.
struct Parcel : Named, Weighed {
  QS_PERSISTENT(Parcel)
  pstring label;
  pstring name() const override { return "parcel " + label; }
  int weight() const override { return grams + 10; }
};

// A diamond with a virtual base: vptrs and a virtual base offset.
struct Thing {
  virtual ~Thing() = default;
  virtual int id() const { return base_id; }
  int base_id = 0;
};
struct Left : virtual Thing {
  int left = 1;
  virtual int l() const { return left + base_id; }
};
struct Right : virtual Thing {
  int right = 2;
  virtual int r() const { return right * base_id; }
};
struct Both : Left, Right {
  QS_PERSISTENT(Both)
  int id() const override { return 1000 + base_id; }
};

struct Store {
  QS_PERSISTENT(Store)
  std::map<int, pstring, std::less<int>, qs::allocator<std::pair<const int, pstring>>> names;
  std::unordered_map<std::string_view::size_type, Parcel*, std::hash<std::size_t>, std::equal_to<std::size_t>,
                     qs::allocator<std::pair<const std::size_t, Parcel*>>>
      by_number;
  std::list<int, qs::allocator<int>> queue;
  pvector<Named*> named;   // base pointers into the middle of Parcels
  pvector<Thing*> things;  // virtual-base pointers into Boths
};

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    Store*& s = db.root<Store*>("store");
    if (!s) {
      s = new (db) Store;
      for (int i = 0; i < 50; ++i) {
        s->names[i] = "name number " + std::to_string(i) + " (longer than fifteen characters)";
        s->queue.push_back(i * i);
        Parcel* p = new (db) Parcel;
        p->label = std::to_string(i);
        p->grams = i;
        s->by_number[static_cast<std::size_t>(i)] = p;
        s->named.push_back(p);
        Both* b = new (db) Both;
        b->base_id = i;
        s->things.push_back(b);
      }
    }
    long sum = 0;
    for (auto& [k, v] : s->names) sum += k + static_cast<long>(v.size());
    for (int q : s->queue) sum += q;
    for (auto& [k, p] : s->by_number) sum += static_cast<long>(k) * p->weight();
    std::printf("maps, lists: %ld\n", sum);
    std::printf("names: %s, %s\n", s->named.front()->name().c_str(), s->named.back()->name().c_str());
    long things = 0;
    for (Thing* t : s->things) {
      things += t->id();
      auto* b = dynamic_cast<Both*>(t);
      things += b ? b->l() + b->r() : -1000000;
    }
    std::printf("things: %ld\n", things);
    std::printf("map[7]: %s\n", s->names.at(7).c_str());
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
}
