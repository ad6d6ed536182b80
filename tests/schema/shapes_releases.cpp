// qs_schema_shapes1 / 2: two releases of a drawing program. Release 1
// stores a Circle under root "shape"; release 2 has no Circle class (it
// only knows Shape) and calls a virtual function of the stored object.
//
//   qs_schema_shapesN DIR     release 1 stores; release 2 calls area() and
//                             prints it, or the error qs raises
//
// Exit status 3 and the message on stderr when qs refuses something.
#include <qs/qs.hpp>

#include <cstdio>
#include <typeinfo>

struct Shape {
  QS_PERSISTENT(Shape)
  virtual ~Shape();
  virtual double area() const = 0;
};
Shape::~Shape() = default;

#if QS_SCHEMA_RELEASE == 1
struct Circle : Shape {
  QS_PERSISTENT(Circle)
  explicit Circle(double radius) : r(radius) {}
  double area() const override { return 3.0 * r * r; }
  double r;
};
#endif

#if QS_SCHEMA_RELEASE == 2
namespace {
// Release 2 has no vtable for Circle, so qs gives the stored object its
// raising vtable (unknown_vtable.hpp), and UBSan's vptr check would flag the
// call as one through an object of another type before qs could raise.
__attribute__((no_sanitize("vptr"))) double area(const Shape* s) { return s->area(); }
}  // namespace
#endif

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    auto db = qs::database::open(argv[1]);
    qs::transaction tx(db);
    Shape*& shape = db.root<Shape*>("shape");
#if QS_SCHEMA_RELEASE == 1
    shape = new (db) Circle(2);
    std::printf("area %g\n", shape->area());
#else
    std::printf("area %g\n", area(shape));
#endif
    tx.commit();
  } catch (const qs::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
