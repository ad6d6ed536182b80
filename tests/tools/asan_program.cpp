// asan_program: a program that uses qs, compiled with AddressSanitizer and
// UndefinedBehaviorSanitizer as docs/tools.md ("Sanitizers, gdb and valgrind")
// tells a user to; the qs runtime it links is the build's own. It shows that
// qs's page faults and AddressSanitizer's SIGSEGV handling live together, with
// no ASAN_OPTIONS:
//
//   asan_program DIR           the first run stores a list of 3000 nodes
//                              (nine pages) and prints "stored 3000"; the
//                              next ones fault every page in, increment each
//                              node (write faults) and, after the commit,
//                              write once more: that must raise
//                              qs::no_transaction out of qs's handler. They
//                              print "sum S, refused after the commit".
//   asan_program DIR wild      opens the database (qs's handler is installed)
//                              and reads an address that is no persistent
//                              memory: qs hands the fault to the handler
//                              installed before its own, AddressSanitizer's,
//                              which reports "SEGV on unknown address".
//   asan_program DIR overflow  reads past a heap array: AddressSanitizer
//                              reports a heap-buffer-overflow.
//
// At exit LeakSanitizer checks the whole process, qs's runtime included.
#include <qs/qs.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

struct Node {
  QS_PERSISTENT(Node)
  long value;
  Node* next;
};

namespace {

constexpr long nodes = 3000;  // 72 KB of objects (with their headers): nine 8 KiB pages

int list(const char* dir) {
  auto db = qs::database::open(dir);
  Node* head = nullptr;
  long sum = 0;
  {
    qs::transaction tx(db);
    Node*& root = db.root<Node*>("head");
    if (!root) {
      for (long i = nodes; i >= 1; --i) root = new (db) Node{i, root};
      std::printf("stored %ld\n", nodes);
      tx.commit();
      return 0;
    }
    for (Node* n = root; n; n = n->next) sum += ++n->value;
    head = root;
    tx.commit();
  }
  try {
    head->value = 0;  // write-protected since the commit: faults, and needs a transaction
    std::printf("sum %ld, not refused after the commit\n", sum);
    return 1;
  } catch (const qs::no_transaction&) {
    std::printf("sum %ld, refused after the commit\n", sum);
  }
  return 0;
}

// The bad address and index are read through volatile, so that the compiler
// cannot see them (and refuse to build what it knows is wrong).
volatile std::uintptr_t wild_address = 0x10;
volatile std::size_t past_the_end = 5;

int wild(const char* dir) {
  auto db = qs::database::open(dir);
  auto* p = reinterpret_cast<volatile long*>(wild_address);
  return static_cast<int>(*p);
}

int overflow() {
  auto a = std::make_unique<long[]>(4);
  volatile long* v = a.get();
  return static_cast<int>(v[past_the_end]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s DATABASE-DIR [wild|overflow]\n", argv[0]);
    return 2;
  }
  std::string what = argc == 3 ? argv[2] : "list";
  try {
    if (what == "list") return list(argv[1]);
    if (what == "wild") return wild(argv[1]);
    if (what == "overflow") return overflow();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "asan_program: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "asan_program: unknown mode %s\n", argv[2]);
  return 2;
}
