// Metadata records whose values are wrong: refused at open with
// qs::corrupt_page naming the record, never a crash.
#include <catch2/catch.hpp>

#include "mode/page_access.hpp"
#include "support.hpp"
#include "types.hpp"

#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

using namespace qs_test;

namespace {

// A small database with one stored type, closed.
void make(const std::string& dir) {
  auto db = qs::database::open(dir, small_options());
  qs::transaction tx(db);
  db.root<Pair*>("head") = new (db) Pair{nullptr, 1, nullptr};
  tx.commit();
}

void refused(const std::string& dir, const std::string& says) {
  try {
    auto db = qs::database::open(dir, small_options());
    qs::transaction tx(db);
    touch(db.root<Pair*>("head")->key);
    FAIL("the damaged database opened");
  } catch (const qs::corrupt_page& e) {
    CHECK_THAT(e.what(), Catch::Contains(says));
  }
}

std::string type_record(const std::string& index, const std::string& size, const std::string& pointers) {
  return "qs-type 1\nindex " + index + "\nsize " + size + "\nalign 8\npointers " + pointers + "\nvptrs \nmembers\n";
}

}  // namespace

TEST_CASE("damaged metadata records are refused at open, naming the record") {
  test_dir dir;
  make(dir.path());
  SECTION("a type index that would wrap the type table") {
    put_stored_record(dir.path(), "t:Pair", type_record("4294967295", "24", "0 16"));
    refused(dir.path(), "type index 4294967295");
  }
  SECTION("a type of size 0") {
    put_stored_record(dir.path(), "t:Pair", type_record("16", "0", ""));
    refused(dir.path(), "a size of 0 bytes");
  }
  SECTION("a pointer outside its type") {
    put_stored_record(dir.path(), "t:Pair", type_record("16", "24", "0 4096"));
    refused(dir.path(), "offset 4096");
  }
  SECTION("a type index that is not a number") {
    put_stored_record(dir.path(), "t:Pair", type_record("sixteen", "24", "0 16"));
    refused(dir.path(), "index is not a 32-bit number");
  }
  SECTION("two types with one index") {
    put_stored_record(dir.path(), "t:Other", type_record("16", "8", ""));
    refused(dir.path(), "both claim type index 16");
  }
  SECTION("a page size of 0") {
    put_stored_record(dir.path(), "page_size", "0");
    refused(dir.path(), "'page_size' holds '0'");
  }
  SECTION("a page size that is not a number") {
    put_stored_record(dir.path(), "page_size", "8k");
    refused(dir.path(), "'page_size' holds '8k'");
  }
  SECTION("a page size that is not a power of two") {
    put_stored_record(dir.path(), "page_size", "12288");
    refused(dir.path(), "not a power of two");
  }
}

TEST_CASE("a schema record of the older text form is converted as it is read; an unknown form is refused") {
  test_dir dir;
  make(dir.path());  // qs_test::Pair, type index 16, stored as typed member records
  auto text_record = [](const std::string& key_type) {
    return "qs-type 1\nindex 16\nsize 24\nalign 8\npointers 0 16\nvptrs \nmembers\n0 8 left qs_test::Pair*\n8 8 key " +
           key_type + "\n16 8 right qs_test::Pair*\n";
  };
  SECTION("the same layout as text: the database opens, reads and grows") {
    put_stored_record(dir.path(), "t:qs_test::Pair", text_record("unsigned long"));
    {
      auto db = qs::database::open(dir.path(), small_options());
      qs::transaction tx(db);
      Pair*& head = db.root<Pair*>("head");
      CHECK(head->key == 1);
      head = new (db) Pair{nullptr, 2, head};
      tx.commit();
    }
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    Pair* head = db.root<Pair*>("head");
    CHECK(head->key == 2);
    CHECK(head->right->key == 1);
  }
  SECTION("a layout that differs, as text: the mismatch names the member") {
    put_stored_record(dir.path(), "t:qs_test::Pair", text_record("long"));
    CHECK_THROWS_WITH(qs::database::open(dir.path(), small_options()),
                      Catch::Contains("schema mismatch") && Catch::Contains("stored '8 8 key long'"));
  }
  SECTION("a member record that is not one: refused, naming the type and the record") {
    put_stored_record(dir.path(), "t:qs_test::Pair",
                      "qs-type 2\nindex 16\nsize 24\nalign 8\npointers 0 16\nvptrs \nmembers 1\n"
                      "pointer none 0 4 1 4 0 0\tleft\tqs_test::Pair*\tqs_test::Pair");
    refused(dir.path(), "the schema record of type qs_test::Pair is damaged: a member record 'pointer none 0 4");
  }
  SECTION("a form this qs does not know: refused, naming it and the forms it reads") {
    put_stored_record(dir.path(), "t:qs_test::Pair", "qs-type 9\nindex 16\nsize 24\nalign 8\n");
    refused(dir.path(), "format 'qs-type 9'; this qs reads format 'qs-type 2' (and converts format 'qs-type 1'");
  }
}

TEST_CASE("a metadata byte changed on disk is refused by its checksum, not used") {
  test_dir dir;
  make(dir.path());
  // The format record's value, "qs 4" or the software mode's, changed in
  // place to another plausible format: without a checksum the catalog would
  // believe it.
  std::string file = dir.path() + "/meta.db";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string format = qs::detail::page_access::format_name;
  auto at = bytes.find(format);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(format, at + 1) == std::string::npos);
  {
    std::fstream out(file, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(at + format.size() - 1));
    out.put('9');
  }
  try {
    auto db = qs::database::open(dir.path(), small_options());
    FAIL("the damaged database opened");
  } catch (const qs::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("checksum"));
  }
}

TEST_CASE("a garbage store file is one clear qs::error, with Berkeley DB's messages in it, not on stderr") {
  test_dir dir;
  std::string db = dir.sub("db");
  std::filesystem::create_directories(db);
  { std::ofstream(db + "/qs.lock"); }
  {
    std::ofstream out(db + "/pages.db", std::ios::binary);
    std::uint32_t x = 12345;
    for (int i = 0; i < 25000; ++i) {
      x = x * 1103515245u + 12345u;
      out.write(reinterpret_cast<const char*>(&x), sizeof x);
    }
  }
  std::string err = dir.sub("stderr");
  int saved = ::dup(2);
  int fd = ::open(err.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  ::dup2(fd, 2);
  std::string what;
  try {
    auto d = qs::database::open(db, small_options());
  } catch (const qs::error& e) {
    what = e.what();
  }
  ::dup2(saved, 2);
  ::close(fd);
  ::close(saved);
  CHECK_THAT(what, Catch::Contains("pages.db") && Catch::Contains("Berkeley DB said"));
  CHECK(read_file(err).empty());
}

TEST_CASE("a database of the previous format is refused with a message that names both formats") {
  test_dir dir;
  make(dir.path());
  const std::string previous = std::string(qs::detail::page_access::format_name) == qs::detail::format_hardware
                                   ? qs::detail::format_previous_hardware
                                   : qs::detail::format_previous_software;
  put_stored_record(dir.path(), "format", previous);
  try {
    auto db = qs::database::open(dir.path(), small_options());
    FAIL("a database of format '" + previous + "' opened");
  } catch (const qs::error& e) {
    CHECK_THAT(e.what(), Catch::Contains("format '" + previous + "'"));
    CHECK_THAT(e.what(), Catch::Contains("format '" + std::string(qs::detail::page_access::format_name) + "'"));
  }
}
