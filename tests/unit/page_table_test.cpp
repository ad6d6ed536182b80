// The page descriptor's state machine and the page table.
#include <catch2/catch.hpp>

#include "core/page_table.hpp"
#include "process.hpp"

#include <csignal>
#include <vector>

using namespace qs::detail;

namespace {

// Runs f in a child process and says whether it ended with SIGABRT (a
// runtime bug is reported that way).
template <class F>
bool aborts(F f) {
  return qs_test::run_forked([&] { f(); }).status == -SIGABRT;
}

}  // namespace

TEST_CASE("a stored page goes absent, readable, writable, readable, stale, readable, absent") {
  page_desc d(7, 3, 7, 1);
  CHECK(d.state() == page_state::absent);
  CHECK_FALSE(d.resident());
  d.loaded(5);
  CHECK(d.state() == page_state::readable);
  CHECK(d.slot() == 5u);
  d.made_writable(undo_kind::page);
  CHECK(d.undo() == undo_kind::page);
  CHECK(d.whole_page_logged());
  d.made_readable();
  CHECK(d.undo() == undo_kind::none);
  d.made_stale();
  d.revalidated();
  CHECK(d.state() == page_state::readable);
  d.evicted();
  CHECK(d.state() == page_state::absent);
}

TEST_CASE("a created page is unbuilt, built writable, then stored") {
  page_desc d(9, 9, 9, 1);
  d.created();
  CHECK(d.is_new());
  CHECK(d.origin() == page_origin::unbuilt);
  d.built(2);
  CHECK(d.state() == page_state::writable);
  CHECK(d.whole_page_logged());  // a new page is written whole
  d.stored();
  CHECK_FALSE(d.is_new());
  CHECK_FALSE(d.whole_page_logged());  // writable with nothing saved: objects would be
}

TEST_CASE("software mode's writable pages save objects, then may take the whole page") {
  page_desc d(1, 1, 1, 1);
  d.loaded(0);
  d.made_writable(undo_kind::objects);
  CHECK_FALSE(d.whole_page_logged());
  d.took_page_before();
  CHECK(d.undo() == undo_kind::page);
  CHECK(d.whole_page_logged());
}

TEST_CASE("transitions the lifecycle does not have end the process") {
  CHECK(aborts([] {
    page_desc d(1, 1, 1, 1);
    d.made_writable(undo_kind::page);  // absent: never faulted in
  }));
  CHECK(aborts([] {
    page_desc d(1, 1, 1, 1);
    d.loaded(0);
    d.loaded(1);  // resident twice
  }));
  CHECK(aborts([] {
    page_desc d(1, 1, 1, 1);
    d.loaded(0);
    d.made_writable(undo_kind::page);
    d.made_stale();  // a page written in the open transaction cannot go stale
  }));
  CHECK(aborts([] {
    page_desc d(1, 1, 1, 1);
    d.created();
    d.loaded(0);  // an unbuilt page has no record to load
  }));
  CHECK(aborts([] {
    page_desc d(1, 1, 1, 1);
    d.evicted();
  }));
  CHECK_FALSE(aborts([] {
    page_desc d(1, 1, 1, 1);
    d.loaded(0);
    d.evicted();
  }));
}

TEST_CASE("the page table finds pages by number and by frame, and runs by their head") {
  page_table t;
  page_desc* head = t.add(10, 100, 10, 3);
  page_desc* second = t.add(11, 101, 10, 3);
  t.add(12, 102, 10, 3);
  CHECK(t.by_page(11) == second);
  CHECK(t.by_frame(100) == head);
  CHECK(t.run_head(second) == head);
  CHECK(t.run_head(head) == head);
  t.erase(second);
  CHECK(t.by_page(11) == nullptr);
  CHECK(t.by_frame(101) == nullptr);
  int n = 0;
  t.for_each([&](page_desc*) { ++n; });
  CHECK(n == 2);
}

TEST_CASE("the sparse index finds what was set near, far and across chunks, and nothing else") {
  sparse_index<std::uint64_t> ix;
  // Numbers in the table of chunks (the first ones, one far into it), past
  // it (a hash map's), and at the edges of a chunk.
  const std::vector<std::uint64_t> keys = {0,
                                           1,
                                           511,
                                           512,
                                           1000,
                                           1u << 20,
                                           (1u << 30) - 1,
                                           std::uint64_t{1} << 30,
                                           std::uint64_t{1} << 40,
                                           ~std::uint64_t{0}};
  for (std::uint64_t k : keys) ix.set(k, k + 7);
  for (std::uint64_t k : keys) CHECK(ix.find(k) == k + 7);
  for (std::uint64_t k : {2ull, 513ull, 1001ull, (1ull << 20) + 1, (1ull << 30) + 1, (1ull << 40) + 512, 12345678ull})
    CHECK(ix.find(k) == 0);
  // Alternating between chunks finds each (the last chunk is remembered).
  for (int i = 0; i < 3; ++i)
    for (std::uint64_t k : keys) CHECK(ix.find(k) == k + 7);
  ix.set(1000, 0);
  CHECK(ix.find(1000) == 0);
  CHECK(ix.find(512) == 519);
  ix.clear();
  for (std::uint64_t k : keys) CHECK(ix.find(k) == 0);
  ix.set(5, 9);
  CHECK(ix.find(5) == 9);
}
