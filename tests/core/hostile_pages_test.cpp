// Records whose checksum is right but whose contents are wrong: refused
// with qs::corrupt_page naming the page and what is wrong, never a hang or a
// crash inside the fault handler.
#include <catch2/catch.hpp>

#include "core/page_format.hpp"
#include "support.hpp"
#include "types.hpp"

#include <cstring>
#include <functional>
#include <string>

using namespace qs_test;
using qs::detail::object_header;
using qs::detail::page_header;

namespace {

struct damage {
  const char* name;
  const char* says;
  std::function<void(std::byte* header, std::byte* image)> change;
};

template <class T>
void put(std::byte* at, T v) {
  std::memcpy(at, &v, sizeof v);
}

// A list of 3,000 pairs over several pages, committed; page 3 is one of them.
void build_pair_list(const std::string& path) {
  auto db = qs::database::open(path, small_options());
  qs::transaction tx(db);
  auto& head = db.root<Pair*>("head");
  for (int i = 0; i < 3000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
  tx.commit();
}

// Walks the list in an open transaction: page 3 must be refused with
// qs::corrupt_page naming it and saying `says`.
void expect_page_3_refused(qs::database& db, const char* says) {
  try {
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right) touch(p->key);
    FAIL("the damaged page was read");
  } catch (const qs::corrupt_page& e) {
    CHECK(e.page() == 3);
    CHECK_THAT(e.what(), Catch::Contains("page 3") && Catch::Contains(says));
  }
}

}  // namespace

TEST_CASE("a page with a valid checksum but a damaged structure is refused") {
  constexpr std::size_t first = sizeof(page_header);  // the first object's header
  const damage cases[] = {
      {"an object size that runs past the page", "ends past top",
       [](std::byte*, std::byte* img) { put<std::uint32_t>(img + first + 4, 0xfffffff8u); }},
      {"a top far past the page", "outside the page",
       [](std::byte*, std::byte* img) { put<std::uint32_t>(img + offsetof(page_header, top), 0xfffffff0u); }},
      {"a type index the database never had", "unknown type index 4000000000",
       [](std::byte*, std::byte* img) { put<std::uint32_t>(img + first, 4000000000u); }},
      {"a payload that is not a multiple of 8", "not a multiple of 8",
       [](std::byte*, std::byte* img) { put<std::uint32_t>(img + first + 4, 20u); }},
      {"free bytes the free blocks do not hold", "free-byte count",
       [](std::byte*, std::byte* img) { put<std::uint32_t>(img + offsetof(page_header, free_bytes), 4096u); }},
      {"a damaged page header", "damaged page header", [](std::byte*, std::byte* img) { put<std::uint32_t>(img, 0u); }},
      {"a record of unknown kind", "unknown kind",
       [](std::byte* h, std::byte*) { put<std::uint32_t>(h + offsetof(qs::detail::record_header, kind), 9u); }},
  };
  for (const damage& c : cases) {
    DYNAMIC_SECTION(c.name) {
      test_dir dir;
      build_pair_list(dir.path());
      rewrite_stored_page(dir.path(), 3, c.change);
      auto db = qs::database::open(dir.path(), small_options());
      qs::transaction tx(db);
      expect_page_3_refused(db, c.says);
      tx.abort();
      // The rest of the database is still readable.
      qs::transaction tx2(db);
      CHECK(db.root<Pair*>("head")->key == 2999);
    }
  }
}

TEST_CASE("a page record with a piece missing is refused, naming the page and the piece", "[btree_layout]") {
  env_var layout("QS_PAGE_FILE", "0");  // pieces are pages.db's
  test_dir dir;
  build_pair_list(dir.path());
  delete_stored_piece(dir.path(), 3, 4);
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  expect_page_3_refused(db, "missing piece 4");
}
