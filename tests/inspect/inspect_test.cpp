// qs-inspect on databases built here: a polymorphic drawing with standard
// containers, a qs::btree_map and a large object; OO7 tiny; a relocated
// database; a software-mode one; and databases with planted faults, each of
// which verify must find and name.
#include <catch2/catch.hpp>

#include "backup_load.hpp"
#include "core/location.hpp"
#include "inspect/stored_database.hpp"
#include "support.hpp"

#include <qs/format/keys.hpp>
#include <qs/format/mapping.hpp>
#include <qs/inspect.hpp>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace qs_test;

namespace inspect_types {

template <class T>
using pvector = std::vector<T, qs::allocator<T>>;
using pstring = std::basic_string<char, std::char_traits<char>, qs::allocator<char>>;

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
  std::int64_t id = 0;
};
struct Circle : Shape {
  QS_PERSISTENT(Circle)
  double r = 1.5;
  double area() const override { return 3.14159 * r * r; }
};
struct Square : Shape {
  QS_PERSISTENT(Square)
  double side = 2;
  double area() const override { return side * side; }
};
// Three pages: a pointer to it always has a mapping entry.
struct Big {
  QS_PERSISTENT(Big)
  std::uint64_t words[2500];
  Big* self;
};
struct Drawing {
  QS_PERSISTENT(Drawing)
  pstring title;
  pvector<Shape*> shapes;
  Big* big = nullptr;
  std::int64_t count = 0;
};
struct Cell {
  QS_PERSISTENT(Cell)
  Cell* left;
  std::uint64_t key;
  Cell* right;
};

}  // namespace inspect_types

using namespace inspect_types;

namespace {

// The drawing (root "drawing"), an index of its shapes (root "by_id", a
// qs::btree_map) and a list of 2,000 cells (root "cells").
void build(const std::string& path, const qs::options& o = small_options()) {
  auto db = qs::database::open(path, o);
  qs::transaction tx(db);
  Drawing*& d = db.root<Drawing*>("drawing");
  d = new (db) Drawing;
  d->title = "a drawing whose title is longer than a short string";
  auto& by_id = db.root<qs::btree_map<int, Shape*>>("by_id");
  for (int i = 0; i < 1500; ++i) {
    Shape* s = i % 2 ? static_cast<Shape*>(new (db) Circle) : static_cast<Shape*>(new (db) Square);
    s->id = i;
    d->shapes.push_back(s);
    by_id[i] = s;
  }
  d->count = 1500;
  d->big = new (db) Big;
  d->big->self = d->big;
  Cell*& head = db.root<Cell*>("cells");
  for (std::uint64_t i = 0; i < 2000; ++i) head = new (db) Cell{nullptr, i, head};
  tx.commit();
}

struct run_result {
  int status;
  std::string out, err;
};

run_result inspect(const std::vector<std::string>& args, const std::string& program = QS_INSPECT) {
  temp_dir files;
  spawn_options o;
  o.out_path = files.path() + "/out";
  o.err_path = files.path() + "/err";
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  process p = spawn(argv, o);
  int st = p.wait();
  return {st, p.out(), p.err()};
}

std::string hex_of(const void* p) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%" PRIxPTR, reinterpret_cast<std::uintptr_t>(p));
  return hex;
}

// The page and offset of a persistent address (hex_of, taken while the
// database was open at its preferred base), read with the database closed.
std::pair<std::uint64_t, std::uint32_t> locate(const std::string& path, const std::string& hex) {
  qs::detail::stored_database db(path, small_options());
  auto w = db.parse_address(hex);
  REQUIRE(w);
  return *w;
}

std::string at(std::pair<std::uint64_t, std::uint32_t> w) {
  return "page " + std::to_string(w.first) + " offset " + std::to_string(w.second);
}

std::string root_line(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + "  ", 0) == 0) return line;
  return "";
}

}  // namespace

TEST_CASE("qs-inspect describes a polymorphic database with containers and a B-tree") {
  test_dir dir;
  build(dir.path());

  run_result stat = inspect({dir.path(), "stat"});
  REQUIRE(stat.status == 0);
  CHECK_THAT(stat.out, Catch::Contains("qs 5 (hardware mode)") && Catch::Contains("page size     8192") &&
                           Catch::Contains("inspect_types::Circle") && Catch::Contains("inspect_types::Square") &&
                           Catch::Contains("qs::detail::btree_leaf<int, inspect_types::Shape*") &&
                           Catch::Contains("roots         3") && Catch::Contains("inspect_types::Big"));
  // 750 circles of 24 bytes each.
  CHECK_THAT(stat.out, Catch::Matches("(.|\n)* 750 +18000  inspect_types::Circle\n(.|\n)*"));

  run_result roots = inspect({dir.path(), "roots"});
  REQUIRE(roots.status == 0);
  const std::string drawing = root_line(roots.out, "drawing");
  CHECK_THAT(drawing, Catch::Contains("inspect_types::Drawing*"));
  CHECK_THAT(roots.out, Catch::Contains("by_id  qs::detail::basic_btree<int, inspect_types::Shape*") &&
                            Catch::Contains("cells  inspect_types::Cell*"));

  run_result schema = inspect({dir.path(), "schema"});
  REQUIRE(schema.status == 0);
  CHECK_THAT(schema.out, Catch::Contains("inspect_types::Circle  size 24") && Catch::Contains("r double") &&
                             Catch::Contains("Shape::id long") && Catch::Contains("vptr"));

  // The drawing, reached from its root's cell.
  std::uint64_t page = 0;
  unsigned offset = 0;
  REQUIRE(std::sscanf(drawing.c_str() + drawing.find("page "), "page %" SCNu64 " offset %u", &page, &offset) == 2);
  run_result cell = inspect({dir.path(), "object", std::to_string(page) + ":" + std::to_string(offset)});
  REQUIRE(cell.status == 0);
  CHECK_THAT(cell.out, Catch::Contains("pointer cell, 8 bytes") && Catch::Contains("-> page "));
  std::string to = cell.out.substr(cell.out.find("-> page ") + 3);
  REQUIRE(std::sscanf(to.c_str(), "page %" SCNu64 " offset %u", &page, &offset) == 2);
  run_result obj = inspect({dir.path(), "object", std::to_string(page) + ":" + std::to_string(offset)});
  REQUIRE(obj.status == 0);
  CHECK_THAT(obj.out, Catch::Contains("inspect_types::Drawing, ") && Catch::Contains("count = 1500") &&
                          Catch::Contains("big = 0x"));
  // The same object by its address.
  std::string address = obj.out.substr(obj.out.find("(0x") + 1);
  address = address.substr(0, address.find(')'));
  run_result by_address = inspect({dir.path(), "object", address});
  CHECK(by_address.out == obj.out);

  run_result pg = inspect({dir.path(), "page", std::to_string(page)});
  REQUIRE(pg.status == 0);
  CHECK_THAT(pg.out, Catch::Contains("page " + std::to_string(page) + ": small-object page") &&
                         Catch::Contains("offset " + std::to_string(offset) + "  inspect_types::Drawing") &&
                         Catch::Contains("inspect_types::Drawing::big") && Catch::Contains("mapping object:"));

  run_result verify = inspect({dir.path(), "verify"});
  CHECK(verify.status == 0);
  CHECK(verify.out.empty());
  CHECK_THAT(verify.err, Catch::Contains("0 problems found"));
}

#ifdef QS_OO7
TEST_CASE("qs-inspect on OO7 tiny") {
  test_dir dir;
  temp_dir files;
  spawn_options o;
  o.out_path = files.path() + "/gen";
  REQUIRE(spawn({QS_OO7, "--quiet", "gen", "tiny", dir.path()}, o).wait() == 0);
  run_result stat = inspect({dir.path(), "stat"});
  REQUIRE(stat.status == 0);
  CHECK_THAT(stat.out, Catch::Contains("oo7::AtomicPart") && Catch::Contains("oo7::Connection"));
  CHECK(inspect({dir.path(), "roots"}).status == 0);
  CHECK_THAT(inspect({dir.path(), "schema"}).out, Catch::Contains("oo7::CompositePart"));
  CHECK(inspect({dir.path(), "page", "1"}).status == 0);
  run_result verify = inspect({dir.path(), "verify"});
  CHECK(verify.status == 0);
  CHECK(verify.out.empty());
}
#endif

TEST_CASE("qs-inspect verify passes a relocated database, whose pages have mapping objects") {
  test_dir dir;
  qs::options o = small_options();
  o.force_relocation_percent = 100;
  o.relocation_policy = qs::relocation::one_time;
  build(dir.path(), o);
  {
    // Every page read and written back where it went.
    auto db = qs::database::open(dir.path(), o);
    qs::transaction tx(db);
    long sum = 0;
    for (Cell* c = db.root<Cell*>("cells"); c; c = c->right) sum += static_cast<long>(c->key);
    for (Shape* s : db.root<Drawing*>("drawing")->shapes) sum += s->id;
    CHECK(sum == 1999L * 2000 / 2 + 1499L * 1500 / 2);
    tx.commit();
  }
  run_result stat = inspect({dir.path(), "stat"});
  std::uint64_t mapped = 0;
  REQUIRE(std::sscanf(stat.out.c_str() + stat.out.find("; ", stat.out.find("pages  ")) + 2, "%" SCNu64, &mapped) == 1);
  CHECK(mapped > 2);  // built at home, the database has 2 (the pointers to its large objects)
  run_result verify = inspect({dir.path(), "verify"});
  CHECK(verify.status == 0);
  CHECK(verify.out.empty());
}

TEST_CASE("qs-inspect reads a software-mode database with the software build") {
  test_dir dir;
  REQUIRE(spawn({QS_CRASH_WORKER_SOFTWARE, dir.path(), "grow", "3", "200"}).wait() == 0);
  run_result stat = inspect({dir.path(), "stat"});
  REQUIRE(stat.status == 0);
  CHECK_THAT(stat.out, Catch::Contains("(software mode)"));
  run_result verify = inspect({dir.path(), "verify"});
  CHECK(verify.status == 0);
  CHECK(verify.out.empty());
}

TEST_CASE("qs-inspect refuses what it cannot read with a message and status 3, a bad command line with 2") {
  test_dir dir;
  run_result none = inspect({dir.path() + "/absent", "stat"});
  CHECK(none.status == 3);
  CHECK_THAT(none.err, Catch::Contains("no such directory"));
  run_result empty = inspect({dir.path(), "stat"});
  CHECK(empty.status == 3);
  CHECK_THAT(empty.err, Catch::Contains("not a qs database"));
  build(dir.path());
  run_result page = inspect({dir.path(), "page", "999999"});
  CHECK(page.status == 3);
  CHECK_THAT(page.err, Catch::Contains("page 999999 has no record"));
  run_result object = inspect({dir.path(), "object", "1:3"});
  CHECK(object.status == 3);
  CHECK_THAT(object.err, Catch::Contains("no object starts at page 1 offset 3"));
  CHECK(inspect({dir.path(), "object", "nonsense"}).status == 3);
  {
    auto open = qs::database::open(dir.path(), small_options());  // a live program owns it
    run_result live = inspect({dir.path(), "backup", dir.sub("copy")});
    CHECK(live.status == 3);
    CHECK_THAT(live.err, Catch::Contains("open in another process") && Catch::Contains("qs::database::backup"));
  }
  CHECK(inspect({dir.path()}).status == 2);
  CHECK(inspect({dir.path(), "page", "x"}).status == 2);
}

TEST_CASE("qs-inspect verify finds each planted fault and names it") {
  test_dir dir;
  build(dir.path());
  const std::string path = dir.path();
  std::vector<std::string> expect;  // each a part of one line of verify's

  SECTION("a dangling pointer to a deleted object") {
    std::string word, target;
    {
      auto db = qs::database::open(path, small_options());
      qs::transaction tx(db);
      Cell* h = db.root<Cell*>("cells")->right->right;
      word = hex_of(&h->right);
      target = hex_of(h->right);
      delete h->right;  // h->right still points to it: the program's bug, which qs does not see
      tx.commit();
    }
    expect = {at(locate(path, word)) + " (inspect_types::Cell::right): leads to " + at(locate(path, target)) +
              ", where no object is"};
  }
  SECTION("a pointer into the middle of an object, where no member starts") {
    std::string word, target;
    {
      auto db = qs::database::open(path, small_options());
      qs::transaction tx(db);
      Cell* h = db.root<Cell*>("cells")->right;
      word = hex_of(&h->right);
      h->right = reinterpret_cast<Cell*>(reinterpret_cast<char*>(h->right) + 4);
      target = hex_of(h->right);
      tx.commit();
    }
    auto t = locate(path, target);
    expect = {at(locate(path, word)) + " (inspect_types::Cell::right): leads to " + at(t) +
              ", byte 4 of a inspect_types::Cell (at offset " + std::to_string(t.second - 4) +
              "), where none of its members starts"};
  }
  SECTION("a broken free list") {
    std::string cell;
    {
      auto db = qs::database::open(path, small_options());
      qs::transaction tx(db);
      cell = hex_of(db.root<Cell*>("cells"));
    }
    const std::uint64_t page = locate(path, cell).first;
    put_stored_record(path, qs::detail::space_key(page), "0 7777");
    expect = {"page " + std::to_string(page) + ": its free-space record ('0 7777') says 7777 bytes are free"};
  }
  SECTION("a bad mapping object") {
    std::string drawing, big;
    {
      auto db = qs::database::open(path, small_options());
      qs::transaction tx(db);
      drawing = hex_of(db.root<Drawing*>("drawing"));
      big = hex_of(db.root<Drawing*>("drawing")->big);
    }
    const std::uint64_t page = locate(path, drawing).first, head = locate(path, big).first;
    bool changed = false;
    rewrite_stored_mapping(path, page, [&](std::string& bytes) {
      auto m = qs::detail::decode_mapping(bytes, 8192);
      REQUIRE(m);
      for (auto& e : *m)
        if (e.page == head && e.pages == 3) {
          e.pages = 2;
          changed = true;
        }
      bytes = qs::detail::encode_mapping(*m, 8192);
    });
    REQUIRE(changed);
    expect = {"page " + std::to_string(page) + ": its mapping entry for page " + std::to_string(head) +
              " (2 pages) where the run has 3 pages"};
  }
  SECTION("a B-tree node out of order") {
    std::uint64_t page = 0;
    std::uint32_t offset = 0, keys = 0;
    {
      qs::detail::stored_database s(path, small_options());
      s.for_each_page(
          [&](qs::detail::stored_page& p) {
            for (const auto& o : p.objects) {
              const auto* l = s.schema().layout(o.header.type);
              if (page || !l || l->name.rfind("qs::detail::btree_leaf<int,", 0) != 0) continue;
              page = p.page;
              offset = o.offset;
              for (const auto& m : l->members)
                if (m.path == "keys") keys = m.offset;
            }
          },
          {});
    }
    REQUIRE(page);
    REQUIRE(keys);
    rewrite_stored_page(path, page, [&](std::byte*, std::byte* image) {
      std::int32_t k[2];
      std::memcpy(k, image + offset + keys, sizeof k);
      std::swap(k[0], k[1]);
      std::memcpy(image + offset + keys, k, sizeof k);
    });
    expect = {"page " + std::to_string(page) + " offset " + std::to_string(offset) +
                  " (qs::detail::btree_leaf<int, inspect_types::Shape*",
              "keys out of order: entry 1 sorts before entry 0"};
  }
  SECTION("a root pointing at a freed object") {
    std::string freed;
    {
      auto db = qs::database::open(path, small_options());
      Cell* c = nullptr;
      {
        qs::transaction tx(db);
        c = new (db) Cell{nullptr, 7, nullptr};
        freed = hex_of(c);
        tx.commit();
      }
      qs::transaction tx(db);
      delete c;
      tx.commit();
    }
    auto w = locate(path, freed);
    put_stored_record(path, "r:lost", qs::detail::encode_location({w.first, w.second, 1, 0}) + typeid(Cell*).name());
    expect = {"root lost (inspect_types::Cell*): leads to " + at(w) + ", where no object is"};
  }

  run_result verify = inspect({path, "verify"});
  CHECK(verify.status == 1);
  CHECK_THAT(verify.err, Catch::Contains("problem"));
  std::istringstream lines(verify.out);
  bool found = false;
  for (std::string line; std::getline(lines, line);) {
    bool all = true;
    for (const std::string& part : expect) all = all && line.find(part) != std::string::npos;
    found = found || all;
  }
  INFO(verify.out);
  CHECK(found);
}

TEST_CASE("a backup taken while another thread commits holds a committed prefix and verifies") {
  test_dir dir;
  const std::string source = dir.sub("db"), copy = dir.sub("copy");
  std::pair<std::uint64_t, std::uint64_t> span;
  {
    auto db = qs::database::open(source, small_options());
    span = commit_during<Cell>(db, [&] { db.backup(copy); });
  }
  INFO("backup between commits " << span.first << " and " << span.second);
  CHECK(span.second > span.first);  // the writer went on meanwhile
  check_verifies(copy);
  auto db = qs::database::open(copy, small_options());
  const std::int64_t n = committed_prefix<Cell>(db);
  CHECK(n >= static_cast<std::int64_t>(span.first));
  CHECK(n <= static_cast<std::int64_t>(span.second) + 1);  // the commit under way as it ended may be in it
}

TEST_CASE(
    "a backup of a database laid out with a page file, taken while another thread commits, holds a committed "
    "prefix and verifies") {
  test_dir dir;
  const std::string source = dir.sub("db"), copy = dir.sub("copy");
  qs::options o = small_options();
  o.page_file = true;
  std::pair<std::uint64_t, std::uint64_t> span;
  {
    auto db = qs::database::open(source, o);
    span = commit_during<Cell>(db, [&] { db.backup(copy); });
  }
  INFO("backup between commits " << span.first << " and " << span.second);
  CHECK(span.second > span.first);
  REQUIRE(std::filesystem::exists(copy + "/pages.qs"));
  check_verifies(copy);
  auto db = qs::database::open(copy, small_options());
  const std::int64_t n = committed_prefix<Cell>(db);
  CHECK(n >= static_cast<std::int64_t>(span.first));
  CHECK(n <= static_cast<std::int64_t>(span.second) + 1);
}

TEST_CASE("qs-inspect backup copies a database into a new directory, and refuses one that is not empty") {
  test_dir dir;
  build(dir.sub("db"));
  run_result made = inspect({dir.sub("db"), "backup", dir.sub("copy")});
  REQUIRE(made.status == 0);
  CHECK_THAT(made.out, Catch::Contains("backed up"));
  CHECK(inspect({dir.sub("copy"), "verify"}).status == 0);
  run_result again = inspect({dir.sub("db"), "backup", dir.sub("copy")});
  CHECK(again.status == 3);
  CHECK_THAT(again.err, Catch::Contains("is not empty"));
  auto db = qs::database::open(dir.sub("copy"), small_options());
  qs::transaction tx(db);
  CHECK(db.root<Drawing*>("drawing")->count == 1500);
}

namespace {

// dump, load into a new database, dump again: the same text.
std::string round_trip(const std::string& source, const std::string& loaded, const std::string& files) {
  run_result first = inspect({source, "dump"});
  REQUIRE(first.status == 0);
  {
    std::ofstream out(files + "/first.jsonl");
    out << first.out;
  }
  run_result load = inspect({loaded, "load", files + "/first.jsonl"});
  INFO(load.err);
  REQUIRE(load.status == 0);
  CHECK(inspect({loaded, "verify"}).status == 0);
  run_result second = inspect({loaded, "dump"});
  REQUIRE(second.status == 0);
  CHECK(second.out == first.out);
  return first.out;
}

}  // namespace

TEST_CASE("qs-inspect dump, load, dump again gives the same text, and the loaded database works") {
  test_dir dir;
  build(dir.sub("db"));
  const std::string text = round_trip(dir.sub("db"), dir.sub("loaded"), dir.path());
  // One object a line, members by name, pointers as object numbers.
  CHECK_THAT(text, Catch::StartsWith("{\"qs_dump\":1,\"format\":\"qs 5\",\"page_size\":8192,"));
  CHECK_THAT(text, Catch::Contains("\"type\":\"inspect_types::Circle\",\"members\":{\"Shape::id\":") &&
                       Catch::Contains("\"r\":1.5") && Catch::Contains("{\"root\":\"drawing\",\"type\":\"P"));
  // The program's view of the loaded database: values, pointers, virtual
  // calls (the vtable pointers are the program's own), the B-tree.
  auto db = qs::database::open(dir.sub("loaded"), small_options());
  qs::transaction tx(db);
  Drawing* d = db.root<Drawing*>("drawing");
  REQUIRE(d);
  CHECK(d->count == 1500);
  CHECK(d->title == "a drawing whose title is longer than a short string");
  REQUIRE(d->shapes.size() == 1500);
  double area = 0;
  for (Shape* s : d->shapes) area += s->area();
  CHECK(area == Approx(750 * 4.0 + 750 * 3.14159 * 1.5 * 1.5));
  CHECK(d->big->self == d->big);
  auto& by_id = db.root<qs::btree_map<int, Shape*>>("by_id");
  CHECK(by_id.size() == 1500);
  CHECK(by_id.at(777) == d->shapes[777]);
  std::uint64_t cells = 0;
  for (Cell* c = db.root<Cell*>("cells"); c; c = c->right) cells += c->key + 1;
  CHECK(cells == 2000 * 2001 / 2);
}

TEST_CASE("qs-inspect dump and load: a relocated database, another page size, a software-mode database") {
  test_dir dir;
  SECTION("relocated") {
    qs::options o = small_options();
    o.force_relocation_percent = 100;
    o.relocation_policy = qs::relocation::one_time;
    build(dir.sub("db"), o);
    round_trip(dir.sub("db"), dir.sub("loaded"), dir.path());
  }
  SECTION("into pages of 16 KiB") {
    build(dir.sub("db"));
    run_result first = inspect({dir.sub("db"), "dump"});
    {
      std::ofstream out(dir.path() + "/d.jsonl");
      out << first.out;
    }
    REQUIRE(inspect({dir.sub("big"), "load", "--page-size", "16384", dir.path() + "/d.jsonl"}).status == 0);
    CHECK_THAT(inspect({dir.sub("big"), "stat"}).out, Catch::Contains("page size     16384"));
    CHECK(inspect({dir.sub("big"), "verify"}).status == 0);
    const std::string again = inspect({dir.sub("big"), "dump"}).out;
    CHECK(again.substr(again.find('\n')) == first.out.substr(first.out.find('\n')));  // all but the header
  }
  SECTION("software mode") {
    REQUIRE(spawn({QS_CRASH_WORKER_SOFTWARE, dir.sub("db"), "grow", "3", "200"}).wait() == 0);
    CHECK_THAT(round_trip(dir.sub("db"), dir.sub("loaded"), dir.path()), Catch::Contains("qs 5 software"));
  }
#ifdef QS_OO7
  SECTION("OO7 tiny") {
    temp_dir files;
    spawn_options so;
    so.out_path = files.path() + "/gen";
    REQUIRE(spawn({QS_OO7, "--quiet", "gen", "tiny", dir.sub("db")}, so).wait() == 0);
    round_trip(dir.sub("db"), dir.sub("loaded"), dir.path());
  }
#endif
}

TEST_CASE("qs-inspect load refuses a damaged dump naming its line, and commits nothing") {
  test_dir dir;
  build(dir.sub("db"));
  std::string text = inspect({dir.sub("db"), "dump"}).out;
  // The fifth line loses its end.
  std::size_t at = 0;
  for (int i = 0; i < 4; ++i) at = text.find('\n', at) + 1;
  text.erase(text.find('\n', at) - 10, 10);
  {
    std::ofstream out(dir.path() + "/bad.jsonl");
    out << text;
  }
  run_result load = inspect({dir.sub("loaded"), "load", dir.path() + "/bad.jsonl"});
  CHECK(load.status == 3);
  CHECK_THAT(load.err, Catch::Contains("dump, line 5: not JSON"));
  // Pointers the dump's own objects cannot hold.
  const std::string head = "{\"qs_dump\":1,\"format\":\"qs 5\",\"page_size\":8192,\"objects\":1}\n";
  std::istringstream missing(head + "{\"id\":0,\"type\":\"qs::pointer\",\"pointers\":[{\"id\":7}]}\n");
  CHECK_THROWS_WITH(qs::load_dump(missing, dir.sub("missing")),
                    Catch::Contains("line 2: a pointer to object 7, which the dump lacks"));
  {
    std::ostringstream stat;
    qs::inspector(dir.sub("missing")).stat(stat);
    CHECK_THAT(stat.str(), Catch::Contains("objects       0,"));  // the transaction was aborted
  }
  std::istringstream past(head + "{\"id\":0,\"type\":\"qs::pointer\",\"pointers\":[{\"id\":0,\"at\":9}]}\n");
  CHECK_THROWS_WITH(qs::load_dump(past, dir.sub("past")),
                    Catch::Contains("line 2: a pointer to byte 9 of object 0, which has 8"));
  std::istringstream other("{\"qs_dump\":1,\"format\":\"qs 5 software\",\"page_size\":8192,\"objects\":0}\n");
  CHECK_THROWS_AS(qs::load_dump(other, dir.sub("never")), qs::other_mode);
}
