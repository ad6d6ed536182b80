// shapes: polymorphic persistent objects in a persistent std::vector.
//
//   build/examples/shapes /tmp/shapes.qs     creates a drawing, lists it
//   build/examples/shapes /tmp/shapes.qs     lists the same drawing again
//
// Both runs print the same lines. The program is a position-independent
// executable and address-space randomisation moves its vtables between
// runs; the vtable pointers stored in the objects are rewritten when their
// pages come in, so the virtual calls of the second run dispatch correctly.
// The drawing's vector and title are libstdc++'s own containers, with
// qs::allocator putting their buffers in the database.
#include <qs/qs.hpp>

#include <cstdio>
#include <string>
#include <vector>

struct Shape {
  QS_PERSISTENT(Shape)
  virtual ~Shape() = default;
  virtual const char* kind() const = 0;
  virtual double area() const = 0;
};

struct Circle : Shape {
  QS_PERSISTENT(Circle)
  explicit Circle(double radius) : r(radius) {}
  const char* kind() const override { return "circle"; }
  double area() const override { return 3.14159265358979 * r * r; }
  double r;
};

struct Rectangle : Shape {
  QS_PERSISTENT(Rectangle)
  Rectangle(double width, double height) : w(width), h(height) {}
  const char* kind() const override { return "rectangle"; }
  double area() const override { return w * h; }
  double w, h;
};

struct Square : Rectangle {
  QS_PERSISTENT(Square)
  explicit Square(double side) : Rectangle(side, side) {}
  const char* kind() const override { return "square"; }
};

using pstring = std::basic_string<char, std::char_traits<char>, qs::allocator<char>>;

struct Drawing {
  QS_PERSISTENT(Drawing)
  pstring title;
  std::vector<Shape*, qs::allocator<Shape*>> shapes;
};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATABASE-DIR\n", argv[0]);
    return 2;
  }
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    Drawing*& drawing = db.root<Drawing*>("drawing");
    if (!drawing) {
      drawing = new (db) Drawing;
      drawing->title = "a drawing whose title is too long for the string's own buffer";
      drawing->shapes.push_back(new (db) Circle(1.0));
      drawing->shapes.push_back(new (db) Rectangle(2.0, 3.0));
      drawing->shapes.push_back(new (db) Square(4.0));
      drawing->shapes.push_back(new (db) Circle(0.5));
    }
    std::printf("%s\n", drawing->title.c_str());
    double total = 0;
    for (const Shape* s : drawing->shapes) {
      std::printf("  %-9s area %8.3f\n", s->kind(), s->area());
      total += s->area();
    }
    std::printf("  total area %.3f\n", total);
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "shapes: %s\n", e.what());
    return 1;
  }
}
