// The transaction log: its lists, saved objects, and the one reset.
#include <catch2/catch.hpp>

#include "core/transaction_log.hpp"

#include <cstring>
#include <vector>

using namespace qs::detail;

TEST_CASE("written pages leave the list in any order, in constant time") {
  transaction_log log;
  page_desc a(1, 1, 1, 1), b(2, 2, 2, 1), c(3, 3, 3, 1);
  log.add_written(&a);
  log.add_written(&b);
  log.add_written(&c);
  log.add_written(&b);  // once only
  CHECK(log.written().size() == 3);
  log.remove_written(&a);
  CHECK(log.written() == std::vector<page_desc*>{&c, &b});
  log.remove_written(&a);  // not there: nothing happens
  log.remove_written(&b);
  CHECK(log.written() == std::vector<page_desc*>{&c});
  log.add_written(&a);
  CHECK(log.written() == std::vector<page_desc*>{&c, &a});
}

TEST_CASE("saved objects go back into a page image, once") {
  transaction_log log;
  page_desc d(1, 1, 1, 1);
  std::vector<std::byte> page(4096, std::byte{1});
  std::memset(page.data() + 64, 2, 16);
  std::memset(page.data() + 32, 3, 8);
  log.save(&d, page.data(), 64, 16, 4096);
  log.save(&d, page.data(), 32, 8, 4096);
  CHECK(log.is_saved(&d, 64));
  CHECK(log.is_saved(&d, 32));
  CHECK_FALSE(log.is_saved(&d, 40));
  const auto& saved = log.saved(&d);
  REQUIRE(saved.size() == 2);
  CHECK(saved[0].offset == 32);  // sorted by offset
  std::memset(page.data() + 32, 9, 48);
  log.put_back_saved(&d, page.data());
  CHECK(page[32] == std::byte{3});
  CHECK(page[40] == std::byte{9});  // not saved: as written
  CHECK(page[64] == std::byte{2});
  CHECK(page[79] == std::byte{2});
  CHECK_FALSE(log.is_saved(&d, 64));
  CHECK(log.saved(&d).empty());
}

TEST_CASE("forget takes a page off every list, and reset forgets everything") {
  transaction_log log;
  page_desc a(1, 1, 1, 1), b(2, 2, 2, 1);
  log.opened();
  for (page_desc* d : {&a, &b}) {
    log.add_written(d);
    log.add_logged(d);
    log.add_suspect(d);
    log.add_relocated(d);
    log.pin(d);
  }
  log.add_created(&b);
  log.forget(&a);
  CHECK(log.written() == std::vector<page_desc*>{&b});
  CHECK_FALSE(log.is_logged(&a));
  CHECK(log.suspects() == std::vector<page_desc*>{&b});
  CHECK(log.relocated() == std::vector<page_desc*>{&b});
  CHECK_FALSE(a.pinned());
  CHECK(b.pinned());
  CHECK(log.relocate_pending(&b));
  log.reset();
  CHECK_FALSE(log.open());
  CHECK(log.written().empty());
  CHECK(log.created().empty());
  CHECK_FALSE(log.is_logged(&b));
  CHECK(log.suspects().empty());
  CHECK(log.relocated().empty());
  CHECK_FALSE(b.pinned());
  CHECK_FALSE(log.relocate_pending(&b));
}
