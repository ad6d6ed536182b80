// oo7/schema.hpp: the OO7 schema (OO7-SPEC section 1) as C++ classes.
//
// Ordinary classes: in qs mode they are persistent (OO7_PERSISTENT), their
// references are oo7::ref<T> (raw pointers in qs's hardware mode) and their
// collections are oo7::bag. Assembly is a polymorphic base class: the walk
// of T1-T6 and Q6's maxDate dispatch through its vtable, which qs rewrites
// when a page comes in under a program whose vtables moved.
//
// Invariants (what the generator establishes, OO7-SPEC 3.8):
//  * Connection.from / AtomicPart.to and Connection.to / AtomicPart.from are
//    inverse; a connection joins two parts of the same composite part.
//  * CompositePart.usedInPriv/usedInShar and BaseAssembly.componentsPriv/
//    componentsShar are inverse, occurrence for occurrence.
//  * Every text object holds `len` characters and a NUL, and has room for
//    `cap` bytes (T5 grows a document's text by 3).
#pragma once

#include "bag.hpp"
#include "mode.hpp"

#include <cstdint>

namespace oo7 {

struct AtomicPart;
struct CompositePart;
struct BaseAssembly;
struct ComplexAssembly;
struct Module;

constexpr int TypeSize = 10;
constexpr int TitleSize = 40;
enum AssemblyType : std::int32_t { Complex = 0, Base = 1 };

// A variable-length string: this header, then the characters, then a NUL.
// Allocated with make_text (the object extends beyond sizeof(Text)).
struct Text {
  OO7_PERSISTENT(Text)
  std::int32_t len;
  std::int32_t cap;  // bytes available in data, NUL included
  char data[8];
};

// The fields the paper's DesignObj gives Module, Assembly, CompositePart and
// AtomicPart (OO7-SPEC 1.2).
struct DesignObj {
  std::int32_t id = 0;
  char type[TypeSize] = {};
  std::int32_t buildDate = 0;
};

struct Connection {
  OO7_PERSISTENT(Connection)
  char type[TypeSize] = {};
  std::int32_t length = 0;
  ref<AtomicPart> from = nullptr;
  ref<AtomicPart> to = nullptr;
};

struct AtomicPart : DesignObj {
  OO7_PERSISTENT(AtomicPart)
  std::int32_t x = 0, y = 0;
  std::int32_t docId = 0;
#ifdef OO7_EVOLVED
  // A later release of the schema: a member added to AtomicPart, for the
  // schema evolution test and measurement (oo7-qs-evolved).
  double mass = 0;
#endif
  bag<Connection, 3, 6> to;    // outgoing: exactly K (3) in every shipped size
  bag<Connection, 3, 6> from;  // incoming: at least one
  ref<CompositePart> partOf = nullptr;
};

struct Document {
  OO7_PERSISTENT(Document)
  char title[TitleSize] = {};
  std::int32_t id = 0;
  std::int32_t textLen = 0;
  ref<Text> text = nullptr;
  ref<CompositePart> part = nullptr;
};

struct Manual {
  OO7_PERSISTENT(Manual)
  char title[TitleSize] = {};
  std::int32_t id = 0;
  std::int32_t textLen = 0;
  ref<Text> text = nullptr;
  ref<Module> mod = nullptr;
};

struct CompositePart : DesignObj {
  OO7_PERSISTENT(CompositePart)
  ref<Document> documentation = nullptr;
  ref<AtomicPart> rootPart = nullptr;
  bag<AtomicPart, 5, 16> parts;
  bag<BaseAssembly, 4, 8> usedInPriv;
  bag<BaseAssembly, 4, 8> usedInShar;
};

// What the assembly walk of T1-T6 does at each composite part it reaches.
class CompositeAction {
 public:
  virtual long on_composite(ref<CompositePart> cp) = 0;

 protected:
  ~CompositeAction() = default;
};

struct Assembly : DesignObj {
  AssemblyType assmType = Complex;
  ref<ComplexAssembly> superAssembly = nullptr;
  ref<Module> oModule = nullptr;

  virtual ~Assembly() = default;
  // The assembly walk (OO7-SPEC 4.0): the sum of `a` over every private
  // composite part below, in order, duplicates included.
  virtual long walk(CompositeAction& a) const = 0;
  // Q6: the newest build date below; counts (into `out_of_date`) every
  // assembly older than what it is built from.
  virtual std::int32_t maxDate(long& out_of_date) const = 0;
};

struct ComplexAssembly : Assembly {
  OO7_PERSISTENT(ComplexAssembly)
  bag<Assembly, 3, 8> subAssemblies;

  long walk(CompositeAction& a) const override;
  std::int32_t maxDate(long& out_of_date) const override;
};

struct BaseAssembly : Assembly {
  OO7_PERSISTENT(BaseAssembly)
  bag<CompositePart, 3, 8> componentsPriv;
  bag<CompositePart, 3, 8> componentsShar;

  long walk(CompositeAction& a) const override;
  std::int32_t maxDate(long& out_of_date) const override;
};

struct Module : DesignObj {
  OO7_PERSISTENT(Module)
  ref<Manual> man = nullptr;
  ref<ComplexAssembly> designRoot = nullptr;
  bag<BaseAssembly, 1, 64> allBases;
};

// The benchmark parameters (OO7-SPEC 2.1-2.2).
struct Config {
  char name[16] = {};
  std::int32_t NumAssmPerAssm = 0;    // A
  std::int32_t NumCompPerAssm = 0;    // C
  std::int32_t NumCompPerModule = 0;  // CPM
  std::int32_t NumAssmLevels = 0;     // L
  std::int32_t TotalModules = 0;      // M
  std::int32_t NumAtomicPerComp = 0;  // N
  std::int32_t NumConnPerAtomic = 0;  // K
  std::int32_t DocumentSize = 0;
  std::int32_t ManualSize = 0;

  std::int32_t totalCompParts() const { return NumCompPerModule * TotalModules; }
  std::int32_t totalAtomicParts() const { return totalCompParts() * NumAtomicPerComp; }
  std::int32_t basesPerModule() const;
  std::int32_t complexPerModule() const;
};

// The database's named root ("oo7"): the configuration, the extents and the
// seven indexes of OO7-SPEC 1.5 (oo7::index, mode.hpp). The atomic-part
// extent is allCompParts (in id order) with each composite part's `parts`
// bag (in creation order): the same parts in the same order, on the pages of
// the composite clusters.
struct Root {
  OO7_PERSISTENT(Root)
  Config cfg;
  bag<Module, 1, 8> allModules;
  bag<CompositePart, 1, 64> allCompParts;
  std::int32_t bdbIndexes = 0;  // 1: generated with OO7_INDEX=bdb; the trees stay empty
  index_tree<std::int32_t, AtomicPart> atomicPartIdx;
  index_tree<std::int32_t, AtomicPart> buildDateIndex;
  index_tree<std::string, Document> documentIdx;
  index_tree<std::int32_t, Document> documentIdIdx;
  index_tree<std::int32_t, CompositePart> compPartIdx;
  index_tree<std::int32_t, BaseAssembly> baseAssemblyIdx;
  index_tree<std::string, Module> moduleIdx;
};

}  // namespace oo7
