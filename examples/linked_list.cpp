// linked_list: a list that grows by one node per run.
//
//   build/examples/linked_list /tmp/list.qs     prints "1"
//   build/examples/linked_list /tmp/list.qs     prints "2 1"
//   build/examples/linked_list /tmp/list.qs     prints "3 2 1", and so on
//
// Node is an ordinary struct with a raw `next` pointer; QS_PERSISTENT gives
// it `new (db) Node`. The pointers are stored as they are in memory: the
// next run finds the same objects at the same addresses, and the first
// touch of each page brings it in from the database.
#include <qs/qs.hpp>

#include <cstdio>

struct Node {
  QS_PERSISTENT(Node)
  long value;
  Node* next;
};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE-DIR\n", argv[0]);
    return 2;
  }
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    Node*& head = db.root<Node*>("head");
    head = new (db) Node{head ? head->value + 1 : 1, head};
    for (Node* n = head; n; n = n->next) std::printf("%ld%s", n->value, n->next ? " " : "\n");
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "linked_list: %s\n", e.what());
    return 1;
  }
}
