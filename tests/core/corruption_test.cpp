// A page whose stored bytes changed behind qs's back is refused with
// qs::corrupt_page, and nothing else is lost.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <cstdlib>
#include <optional>
#include <string>

using namespace qs_test;

TEST_CASE("a flipped byte in a stored page is detected by its checksum") {
  test_dir dir;
  std::uint64_t victim_page = 0;
  {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < 3000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
    victim_page = 3;  // a page in the middle of the list
  }
  corrupt_stored_page(dir.path(), victim_page, 1000);
  auto db = qs::database::open(dir.path(), small_options());
  qs::transaction tx(db);
  std::uint64_t seen = 0;
  try {
    for (Pair* p = db.root<Pair*>("head"); p; p = p->right) seen += p->key < 3000;
    FAIL("the corrupt page was read");
  } catch (const qs::corrupt_page& e) {
    CHECK(e.page() == victim_page);
    CHECK_THAT(e.what(), Catch::Contains("page 3") && Catch::Contains("checksum"));
  }
  CHECK(seen > 0);
  tx.abort();
  // Another page of the database is still readable, and the failed page is
  // refused every time.
  qs::transaction tx2(db);
  CHECK(db.root<Pair*>("head")->key == 2999);
  CHECK_THROWS_AS(
      [&] {
        for (Pair* p = db.root<Pair*>("head"); p; p = p->right) touch(p->key);
      }(),
      qs::corrupt_page);
}

namespace {

// Sets an environment variable for a scope (the test binary may run with
// QS_PREFETCH and QS_PREFETCH_ORDER set, which override the options), then
// puts back what was there.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* was = std::getenv(name)) was_ = was;
    ::setenv(name, value, 1);
  }
  ~scoped_env() {
    if (was_) ::setenv(name_.c_str(), was_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  std::string name_;
  std::optional<std::string> was_;
};

}  // namespace

TEST_CASE("a prefetched page that fails its checks is left to the fault that touches it") {
  test_dir dir;
  {
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    auto& head = db.root<Pair*>("head");
    for (int i = 0; i < 3000; ++i) head = new (db) Pair{nullptr, static_cast<std::uint64_t>(i), head};
    tx.commit();
  }
  // The list runs from its last page down to its first: page-order
  // prefetch (alone, or with pointers) reads page 3 ahead of the walk.
  // Letting its failure escape from that prefetch stopped the walk hundreds
  // of pairs early; every order is checked.
  corrupt_stored_page(dir.path(), 3, 1000);
  struct outcome {
    std::uint64_t seen = 0, page = 0, prefetched = 0;
  };
  auto walk = [&](const char* pages, const char* order) {
    scoped_env pages_env("QS_PREFETCH", pages), order_env("QS_PREFETCH_ORDER", order);
    auto db = qs::database::open(dir.path(), small_options());
    qs::transaction tx(db);
    outcome r;
    try {
      for (Pair* p = db.root<Pair*>("head"); p; p = p->right) {
        touch(p->key);
        ++r.seen;
      }
    } catch (const qs::corrupt_page& e) {
      r.page = e.page();
    }
    r.prefetched = db.stats().pages_prefetched;
    tx.abort();
    return r;
  };
  const outcome off = walk("0", "page_order");
  REQUIRE(off.page == 3);
  REQUIRE(off.seen > 0);
  for (const char* order : {"page_order", "pointers", "both"}) {
    INFO(std::string("prefetch along ") + order);
    const outcome on = walk("32", order);
    // Refused by the fault that touched it, not by the prefetch that read
    // it earlier: the walk got exactly as far as without prefetch.
    CHECK(on.page == 3);
    CHECK(on.seen == off.seen);
    CHECK(on.prefetched > 0);
  }
}
