// The runtime's corners: sizes it cannot store, transactions of two
// databases in one thread, threads with a database each.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <atomic>
#include <barrier>
#include <memory>
#include <string>
#include <thread>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace qs_test;

TEST_CASE("an allocation of 4 GiB or more is refused, naming the type and size") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  std::vector<char, qs::allocator<char>> keep(qs::allocator<char>{});
  keep.push_back('x');
  std::size_t huge = (std::size_t{1} << 32) + 16;
  try {
    qs::allocator<char>().allocate(huge);
    FAIL("a 4 GiB allocation returned");
  } catch (const qs::error& e) {
    std::string what = e.what();
    CHECK(what.find("4294967312") != std::string::npos);
  }
  try {
    qs::allocator<Blob>().allocate(20000);  // 6.4 GB of a persistent type
    FAIL("a 6.4 GB allocation returned");
  } catch (const qs::error& e) {
    CHECK(std::string(e.what()).find("Blob") != std::string::npos);
  }
  CHECK_THROWS_AS(qs::allocator<long>().allocate(std::size_t{1} << 62), qs::error);  // n * 8 overflows
  CHECK(keep[0] == 'x');                                                             // the heap is as it was
  decltype(keep)().swap(keep);
  tx.commit();
}

TEST_CASE("two databases in one thread: transactions end in any order, and the allocator follows the open one") {
  test_dir dir;
  auto db1 = qs::database::open(dir.sub("one"), small_options());
  auto db2 = qs::database::open(dir.sub("two"), small_options());
  auto t1 = std::make_unique<qs::transaction>(db1);
  auto t2 = std::make_unique<qs::transaction>(db2);
  CHECK(qs::transaction::current() == t2.get());
  t1->commit();  // the outer one ends first
  t1.reset();
  CHECK(qs::transaction::current() == t2.get());
  long* a = qs::allocator<long>().allocate(1000);
  CHECK(db2.contains(a));
  for (long i = 0; i < 1000; ++i) a[i] = i;
  db2.root<long*>("array") = a;
  t2->commit();
  CHECK(qs::transaction::current() == nullptr);
  t2.reset();
  qs::transaction t3(db2);
  CHECK(db2.root<long*>("array")[999] == 999);
}

TEST_CASE("threads with a database each allocate in their own", "[tsan]") {
  test_dir dir;
  std::atomic<int> wrong{0};
  std::barrier both(2);
  auto work = [&](std::string path, long base) {
    auto db = qs::database::open(path, small_options());
    for (int round = 0; round < 20; ++round) {
      qs::transaction tx(db);
      both.arrive_and_wait();  // both threads are inside a transaction
      long* a = qs::allocator<long>().allocate(200);
      for (long i = 0; i < 200; ++i) a[i] = base + i;
      if (!db.contains(a) || qs::transaction::current() != &tx) ++wrong;
      db.root<long*>("array" + std::to_string(round)) = a;
      both.arrive_and_wait();
      tx.commit();
    }
    qs::transaction tx(db);
    for (int round = 0; round < 20; ++round)
      if (db.root<long*>("array" + std::to_string(round))[199] != base + 199) ++wrong;
    tx.commit();
  };
  std::thread a(work, dir.sub("a"), 0), b(work, dir.sub("b"), 1000000);
  a.join();
  b.join();
  CHECK(wrong == 0);
}

TEST_CASE("a child made by fork() cannot use its parent's database, and the parent's pages are untouched") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options(64));
  {
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < 20000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
  }
  qs::transaction tx(db);
  Pair* head = db.root<Pair*>("head");
  CHECK(head->key == 19999);  // resident in the parent
  qs_test::forked r = qs_test::run_forked([&] {
    int code = 0;
    try {
      touch(head->key);  // its page was resident in the parent
      code |= 1;
    } catch (const qs::error& e) {
      if (!std::string(e.what()).starts_with("database " + db.path() + " was opened by the parent")) code |= 2;
    }
    try {
      qs::transaction child_tx(db);  // would page the list into the shared pool
      for (Pair* p = db.root<Pair*>("head"); p; p = p->right) touch(p->key);
      code |= 4;
    } catch (const qs::error&) {
    }
    ::_exit(code);
  });
  CHECK(r.status == 0);
  std::uint64_t expect = 19999, n = 0;
  for (Pair* p = head; p; p = p->right, ++n) REQUIRE(p->key == expect--);
  CHECK(n == 20000);
  head->key = 7;
  tx.commit();
}

TEST_CASE("a child made by fork() can let go of its copy of a database whose new pages had a helper thread") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options(256));
  {
    qs::transaction tx(db);  // new pages: their frames' memory comes from a helper thread
    auto& head = db.root<Slab*>("slabs");
    for (int i = 0; i < 40; ++i) head = new (db) Slab{head, static_cast<std::uint64_t>(i), {}};
    tx.commit();
  }
  qs_test::forked r = qs_test::run_forked([&] {
    ::alarm(30);  // a wait for the parent's thread would never end
    { qs::database gone = std::move(db); }
    ::_exit(0);
  });
  CHECK(r.status == 0);
  qs::transaction tx(db);
  int n = 0;
  for (Slab* s = db.root<Slab*>("slabs"); s; s = s->next) n += s->value == static_cast<std::uint64_t>(39 - n);
  CHECK(n == 40);
}

TEST_CASE("system calls on persistent memory fail with EFAULT until qs::prefault brings it in") {
  test_dir dir;
  const std::size_t n = 24000;  // a large object: three pages
  {
    auto db = qs::database::open(dir.sub("db"), small_options());
    qs::transaction tx(db);
    char* text = qs::allocator<char>().allocate(n);
    for (std::size_t i = 0; i < n; ++i) text[i] = static_cast<char>('a' + i % 26);
    db.root<char*>("text") = text;
    tx.commit();
  }
  std::string file = dir.sub("file");
  int fd = ::open(file.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  {
    qs::options o = small_options();
    o.prefetch_pages = 0;  // or the text's pages come with the root's, along its pointer
    auto db = qs::database::open(dir.sub("db"), o);
    qs::transaction tx(db);
    char* text = db.root<char*>("text");  // its pages are not resident
    errno = 0;
    CHECK(::write(fd, text, n) == -1);
    CHECK(errno == EFAULT);
    qs::prefault(text, n, qs::for_read);
    CHECK(::write(fd, text, n) == static_cast<ssize_t>(n));
    // Resident now, but read-only: the kernel cannot fill it.
    std::string zs(n, 'z');
    CHECK(::pwrite(fd, zs.data(), n, 0) == static_cast<ssize_t>(n));
    errno = 0;
    CHECK(::pread(fd, text, n, 0) == -1);
    CHECK(errno == EFAULT);
    qs::prefault(text, n, qs::for_write);
    CHECK(::pread(fd, text, n, 0) == static_cast<ssize_t>(n));
    tx.commit();
  }
  ::close(fd);
  auto db = qs::database::open(dir.sub("db"), small_options());
  qs::transaction tx(db);
  char* text = db.root<char*>("text");
  CHECK(std::string(text, n) == std::string(n, 'z'));  // what read() wrote was committed
}

TEST_CASE("a directory that holds something else is not turned into a database") {
  test_dir dir;
  std::string mine = dir.sub("mine");
  std::filesystem::create_directories(mine);
  { std::ofstream(mine + "/notes.txt") << "the user's"; }
  try {
    qs::database::open(mine, small_options());
    FAIL("a database was created beside the user's files");
  } catch (const qs::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("not empty and holds no qs database"));
  }
  CHECK(std::filesystem::directory_iterator(mine) != std::filesystem::directory_iterator());
  CHECK_FALSE(std::filesystem::exists(mine + "/meta.db"));
  CHECK_THROWS_AS(qs::database::open(mine + "/notes.txt", small_options()), qs::error);
  // Empty or absent directories are fine, and so is an existing database.
  std::filesystem::create_directories(dir.sub("empty"));
  { auto db = qs::database::open(dir.sub("empty"), small_options()); }
  { auto db = qs::database::open(dir.sub("empty"), small_options()); }
  { auto db = qs::database::open(dir.sub("absent"), small_options()); }
}

TEST_CASE("a large object created and deleted in a transaction that aborts leaves nothing behind") {
  test_dir dir;
  auto db = qs::database::open(dir.path(), small_options());
  {
    qs::transaction tx(db);
    db.root<Blob*>("kept") = nullptr;
    tx.commit();
  }
  {
    qs::transaction tx(db);
    Blob* b = new (db) Blob;  // 40 pages, numbered by this transaction
    b->words[0] = 1;
    delete b;
    tx.abort();  // the page numbers are handed out again
  }
  {
    qs::transaction tx(db);
    Blob* b = new (db) Blob;  // the same page numbers
    for (std::uint64_t i = 0; i < 40000; i += 1000) b->words[i] = i;
    b->self = b;
    db.root<Blob*>("kept") = b;
    tx.commit();
  }
  db.release_cache();
  qs::transaction tx(db);
  Blob* b = db.root<Blob*>("kept");
  CHECK(b->self == b);
  for (std::uint64_t i = 0; i < 40000; i += 1000) REQUIRE(b->words[i] == i);
}
