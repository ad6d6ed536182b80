// A buffer pool of a million pages under Linux's default vm.max_map_count,
// in the pattern that would cost the most kernel mappings if frames were
// protected page by page: 100,000 resident pages, no two of them neighbours.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "types.hpp"

#include <qs/qs.hpp>

#include <algorithm>
#include <cstdint>

using namespace qs_test;

namespace {

constexpr int slabs = 100000;
constexpr std::uint64_t moved = 1000000;

qs::options million_page_pool() {
  qs::options o;
  o.page_size = 4096;
  o.pool_pages = 1000000;  // 3.8 GiB of pool
  o.prefetch_pages = 0;    // only the pages touched come in
  o.durable = false;
  return o;
}

}  // namespace

TEST_CASE("a pool of a million pages runs under the default vm.max_map_count, whatever is resident", "[scale]") {
  test_dir dir;
  const qs::options o = million_page_pool();
  {
    auto db = qs::database::open(dir.path(), o);
    CHECK(db.pool_pages() == 1000000);
    // Built from the end, so that the list runs up through the frames.
    for (int batch = 0; batch < 10; ++batch) {
      qs::transaction tx(db);
      auto& head = db.root<Slab*>("slabs");
      for (int i = 0; i < slabs / 10; ++i) {
        Slab* s = new (db) Slab;
        s->next = head;
        s->value = static_cast<std::uint64_t>(slabs - 1 - (batch * (slabs / 10) + i));
        head = s;
      }
      tx.commit();
    }
  }
  const long limit = 65530;  // Linux's default: the test must pass under it
  {
    auto db = qs::database::open(dir.path(), o);
    const std::string control = db.stats().frame_control;
    qs::transaction tx(db);
    std::uint64_t wrong = 0, adjacent = 0, most_mappings = 0;
    std::uint64_t k = 0;
    for (Slab* s = db.root<Slab*>("slabs"); s; s = s->next, ++k) {
      wrong += s->value != k;
      s->value += moved;  // a write fault on the slab's first page only
      if (s->next && reinterpret_cast<std::uintptr_t>(s->next) - reinterpret_cast<std::uintptr_t>(s) < 2 * 4096)
        ++adjacent;
      if (k % 10000 == 0) most_mappings = std::max(most_mappings, db.stats().kernel_mappings);
    }
    CHECK(k == slabs);
    CHECK(wrong == 0);
    CHECK(adjacent == 0);  // every resident slab page has a hidden frame on either side
    const qs::statistics st = db.stats();
    INFO("frame control " << control << ", " << st.kernel_mappings << " mappings, " << st.resident_pages
                          << " resident pages");
    CHECK(st.read_faults >= slabs);
    // A write fault each, or writable as it came in (write_predictor).
    CHECK(st.write_faults + st.writable_on_arrival >= slabs);
    CHECK(st.resident_pages >= slabs);
    CHECK(st.resident_pages < slabs + 100);  // the slabs' second pages never came in
    CHECK(st.evictions == 0);
    // Memory follows the resident pages, not the pool's 3.8 GiB.
    CHECK(st.frame_memory_bytes >= st.resident_pages * 4096);
    CHECK(st.frame_memory_bytes <= (st.resident_pages + 64) * 4096);
    most_mappings = std::max(most_mappings, st.kernel_mappings);
    CHECK(most_mappings < limit / 10);
    tx.commit();
    CHECK(db.stats().kernel_mappings < static_cast<std::uint64_t>(limit / 10));
    db.release_cache();  // every page leaves the pool, and its memory goes back
    CHECK(db.stats().resident_pages == 0);
    CHECK(db.stats().frame_memory_bytes == 0);
  }
  {
    auto db = qs::database::open(dir.path(), o);
    qs::transaction tx(db);
    std::uint64_t wrong = 0, k = 0;
    for (const Slab* s = db.root<Slab*>("slabs"); s; s = s->next, ++k) wrong += s->value != k + moved;
    CHECK(k == slabs);
    CHECK(wrong == 0);
  }
}
