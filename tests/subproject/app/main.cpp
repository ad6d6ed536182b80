// shapes: the program of the test subproject, built by a project of its own
// that adds qs with add_subdirectory (see CMakeLists.txt beside this file).
//
//   shapes DIR     run 1 prints "circle", run 2 "square circle", run 3
//                  "circle square circle", and so on
//
// Each run adds one shape at the head of a persistent list and prints the
// kinds in the list, newest first. The kinds come from virtual calls on
// objects stored by earlier runs: their vtable pointers are rewritten when
// their pages come in, which needs the schema qs_add_schema generated in the
// project's own directory.
#include <qs/qs.hpp>

#include <cstdio>

struct Shape {
  QS_PERSISTENT(Shape)
  explicit Shape(Shape* next_shape) : next(next_shape) {}
  virtual ~Shape() = default;
  virtual const char* kind() const = 0;
  Shape* next;
};

struct Circle : Shape {
  QS_PERSISTENT(Circle)
  using Shape::Shape;
  const char* kind() const override { return "circle"; }
};

struct Square : Shape {
  QS_PERSISTENT(Square)
  using Shape::Shape;
  const char* kind() const override { return "square"; }
};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE-DIR\n", argv[0]);
    return 2;
  }
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    Shape*& head = db.root<Shape*>("shapes");
    int count = 0;
    for (const Shape* s = head; s != nullptr; s = s->next) ++count;
    if (count % 2 == 0) {
      head = new (db) Circle(head);
    } else {
      head = new (db) Square(head);
    }
    const char* separator = "";
    for (const Shape* s = head; s != nullptr; s = s->next) {
      std::printf("%s%s", separator, s->kind());
      separator = " ";
    }
    std::printf("\n");
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "shapes: %s\n", e.what());
    return 1;
  }
}
