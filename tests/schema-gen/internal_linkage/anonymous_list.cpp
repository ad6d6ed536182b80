// examples/linked_list.cpp with its Node in an anonymous namespace: a type
// schema-gen must refuse. Optimised, g++ folds the read of Node's file-local
// descriptor slot to null and drops the slot, so before schema-gen refused
// such types this built silently and failed at run time with "has no
// schema".
#include <qs/qs.hpp>

#include <cstdio>

namespace {

struct Node {
  QS_PERSISTENT(Node)
  long value;
  Node* next;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto db = qs::database::open(argv[1]);
  qs::transaction tx(db);
  Node*& head = db.root<Node*>("head");
  head = new (db) Node{head ? head->value + 1 : 1, head};
  for (Node* n = head; n; n = n->next) std::printf("%ld%s", n->value, n->next ? " " : "\n");
  tx.commit();
}
