// The runtime's components wired over the in-memory store, as a database
// wires them (runtime.hpp) but without its coordinator: the pager, the
// relocator, the allocator, roots and indexes, each driven directly.
#include <catch2/catch.hpp>

#include "api/catalog.hpp"
#include "api/runtime.hpp"
#include "api/transaction_engine.hpp"
#include "core/buffer_pool.hpp"
#include "core/indexes.hpp"
#include "core/object_allocator.hpp"
#include "core/page_table.hpp"
#include "core/page_words.hpp"
#include "core/pager.hpp"
#include "core/pointer_check.hpp"
#include "core/relocator.hpp"
#include "core/roots.hpp"
#include "core/schema_registry.hpp"
#include "core/transaction_log.hpp"
#include "mem_store.hpp"
#include "mode/page_access.hpp"
#include "mode/references.hpp"

#include <qs/error.hpp>

#include <cstring>
#include <memory>
#include <span>
#include <utility>

using namespace qs::detail;

namespace {

constexpr std::uint32_t page_size = 8192;

// What a database wires (runtime.hpp), over a mem_store: one "process" of
// a database, whose transactions the runtime's own engine begins, commits
// and aborts.
struct rig : runtime {
  explicit rig(qs_test::mem_store& s, std::uint32_t pool_pages = 16, std::uintptr_t base = 0x7e0000000000,
               const qs::options& o = {})
      : rig(s, pool_pages,
            new frame_space(base, std::uint64_t{4096} * ::page_size, ::page_size, false, page_access::control()), o) {}
  // Home frames from where the reservation landed (the same place each
  // time: the rigs of a test come one after another).
  rig(qs_test::mem_store& s, std::uint32_t pool_pages, frame_space* frames, const qs::options& o)
      : runtime(s, std::unique_ptr<frame_space>(frames), ::page_size, pool_pages, o,
                home_region::of(reinterpret_cast<std::uintptr_t>(frames->base()), std::uint64_t{4096} * ::page_size,
                                ::page_size)),
        store(s),
        engine(*this, true) {
    allocator.load();
  }
  void begin() { engine.begin(nullptr); }
  void commit() { engine.commit(); }
  void abort() { engine.abort(); }
  std::byte* image_of(const void* p) {
    page_desc* d = access.page_of(p);
    return pages.image(d) + (static_cast<const std::byte*>(p) - access.address(d));
  }

  qs_test::mem_store& store;
  transaction_engine engine;
};

qs_test::mem_store_options store_options() {
  qs_test::mem_store_options o;
  o.page_size = page_size;
  return o;
}

}  // namespace

TEST_CASE("pager: a page written back is diffed, read back checked, and evicted dirty when the pool is full") {
  qs_test::mem_store store(store_options());
  std::uint64_t page;
  {
    rig r(store);
    r.begin();
    void* p = r.allocator.allocate(raw_descriptor(), 4000, nullptr);
    std::memset(r.image_of(p), 7, 4000);
    page = r.access.page_of(p)->page;
    r.commit();
    CHECK(store.has_page(page));
    CHECK(r.stats.diff_bytes == page_size);  // a new page is written whole
  }
  rig r(store);  // a fresh "process": nothing resident
  r.begin();
  page_desc* d = r.relocate.ensure_run(page, 1);
  r.pages.page_in(d);
  CHECK(d->state() == page_state::readable);
  CHECK(r.pages.image(d)[sizeof(page_header) + 64] == std::byte{7});
  r.pages.make_writable(d);
  r.pages.image(d)[sizeof(page_header) + 100] = std::byte{9};
  std::uint64_t before = r.stats.diff_bytes;
  r.commit();
  CHECK(r.stats.diff_bytes - before == 8);  // only the word that changed

  // Forty new pages through a pool of sixteen: the dirty ones are written
  // before their slots are reused, and all come back whole.
  r.begin();
  std::vector<void*> objects;
  for (int i = 0; i < 40; ++i) {
    void* p = r.allocator.allocate(raw_descriptor(), 6000, nullptr);
    std::memset(r.image_of(p), i + 1, 6000);
    objects.push_back(p);
  }
  CHECK(r.stats.dirty_evictions > 0);
  r.commit();
  r.pages.evict_all_clean();
  r.begin();
  for (int i = 0; i < 40; ++i) {
    page_desc* o = r.access.page_of(objects[i]);
    r.pages.make_current(o);
    REQUIRE(r.image_of(objects[i])[5999] == std::byte(i + 1));
  }
  store.abort();
}

TEST_CASE("pager: a record whose checksum fails is refused, and its slot given back") {
  qs_test::mem_store store(store_options());
  std::uint64_t page;
  {
    rig r(store);
    r.begin();
    void* p = r.allocator.allocate(raw_descriptor(), 64, nullptr);
    page = r.access.page_of(p)->page;
    r.commit();
  }
  {
    // Damage the stored image behind the pager's back.
    record_header h;
    std::vector<std::byte> img(page_size);
    std::string m;
    REQUIRE(store.read_page(page, h, img.data(), m));
    img[200] ^= std::byte{1};
    store.begin();
    store.put_page(page, h, img.data(), nullptr);
    store.commit(true);
  }
  rig r(store);
  r.begin();
  page_desc* d = r.relocate.ensure_run(page, 1);
  CHECK_THROWS_AS(r.pages.page_in(d), qs::corrupt_page);
  CHECK(d->state() == page_state::absent);
  std::uint32_t slot;
  int free_slots = 0;
  while (r.pool.take_free(d, slot)) ++free_slots;
  CHECK(free_slots == 16);
  store.abort();
}

TEST_CASE(
    "relocator: a pointer to a page at home needs no entry; a page whose target cannot be at home points to its new "
    "frames") {
  qs_test::mem_store store(store_options());
  std::uint64_t a_page, b_page;
  std::uint64_t b_frame;
  {
    rig r(store);
    r.begin();
    // Two objects of one pointer each, on two pages: a points to b.
    void* a = r.allocator.allocate(pointer_descriptor(), 8, nullptr);
    void* filler = r.allocator.allocate(raw_descriptor(), 8152, nullptr);  // fills a's page
    (void)filler;
    void* b = r.allocator.allocate(pointer_descriptor(), 8, nullptr);
    std::memcpy(r.image_of(a), &b, sizeof b);
    a_page = r.access.page_of(a)->page;
    b_page = r.access.page_of(b)->page;
    b_frame = r.access.page_of(b)->frame;
    REQUIRE(a_page != b_page);
    CHECK(b_frame + 1 == b_page);  // at home
    r.commit();
    CHECK_FALSE(store.stored_mapping(a_page).has_value());
  }
  // Every page away from home in this process (the test harness's forced
  // relocation).
  qs::options o;
  o.force_relocation_percent = 100;
  rig r(store, 16, 0x7e0000000000, o);
  r.begin();
  page_desc* a = r.relocate.ensure_run(a_page, 1);
  r.pages.page_in(a);
  page_desc* b = r.table.by_page(b_page);
  REQUIRE(b != nullptr);  // given frames when a came in
  CHECK(b->frame != b_frame);
  std::byte* obj = r.pages.image(a) + sizeof(page_header) + sizeof(object_header);
  void* now;
  std::memcpy(&now, obj, sizeof now);
  CHECK(r.access.page_of(now) == b);
  CHECK(r.stats.pointers_relocated == 1);
  CHECK(a->rewritten());  // written whole if it is written
  store.abort();
}

namespace {

// One process fills a page with 60 objects and frees every other one in a
// later transaction: the page is listed with room. Returns it.
std::uint64_t page_with_freed_space(qs_test::mem_store& store) {
  std::vector<void*> objects;
  rig r(store);
  r.begin();
  for (int i = 0; i < 60; ++i) objects.push_back(r.allocator.allocate(raw_descriptor(), 120, nullptr));
  std::uint64_t page = r.access.page_of(objects[0])->page;
  r.commit();
  r.begin();
  for (int i = 0; i < 60; i += 2) r.allocator.deallocate(objects[i]);
  r.commit();
  return page;
}

}  // namespace

TEST_CASE("allocator: freed space is listed at commit and reused by the next process") {
  qs_test::mem_store store(store_options());
  const std::uint64_t page = page_with_freed_space(store);
  rig r(store);
  r.begin();
  void* p = r.allocator.allocate(raw_descriptor(), 120, nullptr);
  CHECK(r.access.page_of(p)->page == page);  // the freed space, not a new page
  std::uint64_t pages_before = store.page_count();
  r.commit();
  CHECK(store.page_count() == pages_before);
}

TEST_CASE("allocator: on a shared store, an abort sends the next small object to a page no other client is given") {
  // Every client of a page server is offered the same listed page first;
  // after a conflict over it, the retry goes to a page of its own.
  qs_test::mem_store_options o = store_options();
  o.shared = true;
  qs_test::mem_store store(o);
  const std::uint64_t listed = page_with_freed_space(store);
  rig r(store);
  r.begin();
  void* first = r.allocator.allocate(raw_descriptor(), 120, nullptr);
  CHECK(r.access.page_of(first)->page == listed);  // offered to everyone
  r.abort();
  r.begin();
  void* retry = r.allocator.allocate(raw_descriptor(), 120, nullptr);
  void* next = r.allocator.allocate(raw_descriptor(), 120, nullptr);
  CHECK(r.access.page_of(retry)->page != listed);
  CHECK(r.access.page_of(next) == r.access.page_of(retry));  // follows it
  r.commit();
}

TEST_CASE("allocator: an abort forgets the transaction's pages and its free-space changes") {
  qs_test::mem_store store(store_options());
  rig r(store);
  r.begin();
  void* keep = r.allocator.allocate(raw_descriptor(), 100, nullptr);
  r.commit();
  r.begin();
  void* gone = r.allocator.allocate(raw_descriptor(), 8100, nullptr);  // more than keep's page has left
  page_desc* d = r.access.page_of(gone);
  REQUIRE(d->is_new());
  r.abort();
  CHECK(r.access.page_of(gone) == nullptr);
  CHECK(r.access.page_of(keep) != nullptr);
  CHECK(store.page_count() == 1);
}

TEST_CASE("roots and indexes: locations that lead back to their objects") {
  qs_test::mem_store store(store_options());
  rig r(store);
  r.begin();
  void* cell = r.named.cell("head", pointer_descriptor(), 8, typeid(void*));
  CHECK(r.named.cell("head", pointer_descriptor(), 8, typeid(void*)) == cell);
  CHECK_THROWS_AS(r.named.cell("head", raw_descriptor(), 8, typeid(long)), qs::root_type_mismatch);
  void* obj = r.allocator.allocate(raw_descriptor(), 32, nullptr);
  std::uint32_t ix = r.index.open("by_key", true);
  std::string ref(reinterpret_cast<const char*>(&obj), sizeof obj);
  r.index.insert(ix, "by_key", "k1", ref);
  CHECK_THROWS_AS(r.index.insert(ix, "by_key", "k1", ref), qs::duplicate_key);
  auto found = r.index.scan(ix, "k1", "k1", 0);
  REQUIRE(found.size() == 1);
  CHECK(found[0].value == ref);
  CHECK(r.index.erase(ix, "k1", ref));
  CHECK(r.index.scan(ix, "", "\xff", 0).empty());
  r.commit();
  // Another process finds the root by name.
  rig again(store, 16, 0x7d0000000000);
  again.begin();
  CHECK(again.named.exists("head"));
  CHECK_FALSE(again.named.exists("tail"));
  store.abort();
}

namespace {

// A store whose next page write (or exclusive lock) fails, as a page
// server's does when the connection drops or the transaction is chosen as a
// deadlock victim.
class failing_store final : public qs_test::mem_store {
 public:
  using mem_store::mem_store;
  bool fail_next = false;
  bool fail_next_put = false;
  void patch_page(std::uint64_t page, const record_header& h, const std::byte* image,
                  std::span<const byte_range> ranges, const std::string* mapping) override {
    if (std::exchange(fail_next, false)) throw qs::deadlock("failing_store: the write was refused");
    mem_store::patch_page(page, h, image, ranges, mapping);
  }
  void put_page(std::uint64_t page, const record_header& h, const std::byte* image,
                const std::string* mapping) override {
    if (std::exchange(fail_next_put, false)) throw qs::connection_lost("failing_store: the connection was lost");
    mem_store::put_page(page, h, image, mapping);
  }
};

}  // namespace

TEST_CASE("pager: a write-back the store refuses leaves the page's header and mapping as stored") {
  failing_store store(store_options());
  std::uint64_t page;
  {
    rig r(store);
    r.begin();
    void* a = r.allocator.allocate(pointer_descriptor(), 8, nullptr);
    page = r.access.page_of(a)->page;
    r.commit();
  }
  rig r(store);
  r.begin();
  page_desc* d = r.relocate.ensure_run(page, 1);
  r.pages.page_in(d);
  record_header before = d->hdr;
  std::string mapping_before = d->mapping;
  r.pages.make_writable(d);
  // A pointer to a large object (a run of pages, which mapping objects
  // list): the mapping object would change.
  void* b = r.allocator.allocate(raw_descriptor(), 20000, nullptr);
  void* a = r.pages.image(d) + sizeof(page_header) + sizeof(object_header);
  std::memcpy(a, &b, sizeof b);
  REQUIRE(r.access.page_of(b) != d);
  store.fail_next = true;
  CHECK_THROWS_AS(r.pages.write_back(d), qs::deadlock);
  CHECK(d->hdr.version == before.version);
  CHECK(d->hdr.checksum == before.checksum);
  CHECK(d->hdr.mapping_entries == before.mapping_entries);
  CHECK(d->mapping == mapping_before);
  // Written again, it goes through with the next version.
  r.pages.write_back(d);
  CHECK(d->hdr.version == before.version + 1);
  CHECK(d->hdr.mapping_entries == 1);
  store.abort();
}

TEST_CASE("pager: a commit that changes only data keeps the mapping; one that changes a pointer rewrites it") {
  qs_test::mem_store store(store_options());
  rig r(store);
  r.begin();
  // One page holding a pointer cell and raw bytes; targets on other pages,
  // large objects (runs of pages, which mapping objects list).
  void* cell = r.allocator.allocate(pointer_descriptor(), 8, nullptr);
  void* data = r.allocator.allocate(raw_descriptor(), 64, cell);
  void* filler = r.allocator.allocate(raw_descriptor(), 8000, nullptr);
  (void)filler;
  void* t1 = r.allocator.allocate(raw_descriptor(), 20000, nullptr);
  void* t2 = r.allocator.allocate(raw_descriptor(), 20000, nullptr);
  std::uint64_t page = r.access.page_of(cell)->page;
  REQUIRE(r.access.page_of(data)->page == page);
  REQUIRE(r.access.page_of(t1)->page != page);
  REQUIRE(r.access.page_of(t2)->page != r.access.page_of(t1)->page);
  std::memcpy(r.image_of(cell), &t1, sizeof t1);
  r.commit();
  std::optional<std::string> first = store.stored_mapping(page);
  REQUIRE(first.has_value());

  // Data only: the stored mapping is the one before, and only data went out.
  r.begin();
  page_desc* d = r.access.page_of(cell);
  r.pages.make_writable(d);
  r.image_of(data)[8] = std::byte{42};
  std::uint64_t before = r.stats.diff_bytes;
  r.commit();
  CHECK(r.stats.diff_bytes - before == 8);
  CHECK(store.stored_mapping(page) == first);

  // The pointer now leads to t2's page: the mapping must say so.
  r.begin();
  r.pages.make_writable(d);
  std::memcpy(r.image_of(cell), &t2, sizeof t2);
  r.commit();
  std::optional<std::string> second = store.stored_mapping(page);
  REQUIRE(second.has_value());
  CHECK(second != first);
}

TEST_CASE("pager: an eviction whose one-time write-back the store refuses leaves the page where the program sees it") {
  failing_store store(store_options());
  std::uint64_t page;
  {
    rig r(store);
    r.begin();
    void* a = r.allocator.allocate(pointer_descriptor(), 8, nullptr);
    void* b = r.allocator.allocate(raw_descriptor(), 8160, nullptr);  // on a page of its own
    REQUIRE(r.access.page_of(a) != r.access.page_of(b));
    page = r.access.page_of(a)->page;
    std::memcpy(r.image_of(a), &b, sizeof b);
    r.commit();
  }
  // Every run moves as it comes in, and one-time relocation writes the
  // rewritten page back when it is evicted.
  qs::options o;
  o.relocation_policy = qs::relocation::one_time;
  o.force_relocation_percent = 100;
  rig r(store, 16, 0x7e0000000000, o);
  r.begin();
  page_desc* d = r.relocate.ensure_run(page, 1);
  r.pages.page_in(d);
  REQUIRE(r.log.relocate_pending(d));
  store.fail_next_put = true;
  CHECK_THROWS_AS(r.pages.evict(d), qs::connection_lost);
  // Still resident: its frame shows its slot, as it did before (a later
  // revalidation only changes the frame's protection).
  REQUIRE(d->resident());
  r.access.set_access(d, false);
  CHECK(std::memcmp(r.access.address(d), r.pages.image(d), page_size) == 0);
  store.abort();
}

namespace {

// Two clients of a page server create a database at once. This one loses:
// its commit is a deadlock victim, and when it looks again the winner has
// not committed yet; a moment later the winner's records are there.
class losing_creator final : public qs_test::mem_store {
 public:
  using mem_store::mem_store;
  void commit(bool durable) override {
    if (!lost_) {
      lost_ = true;
      throw qs::deadlock("losing_creator: chosen as the deadlock victim");
    }
    mem_store::commit(durable);
  }
  std::optional<std::string> get(std::string_view key) override {
    if (lost_ && !won_ && !in_transaction() && key == "page_size") {
      won_ = true;  // the winner commits now
      mem_store::put("format", page_access::format_name);
      mem_store::put("page_size", "8192");
      mem_store::put("base", std::to_string(std::uintptr_t{0x7d0000000000}));
      mem_store::put("reservation", std::to_string(std::uint64_t{64} << 20));
      mem_store::put("next_page", "1");
      mem_store::put("next_frame", "0");
      return std::nullopt;
    }
    return mem_store::get(key);
  }

 private:
  bool lost_ = false, won_ = false;
};

}  // namespace

TEST_CASE("catalog: a client that loses the race to create a database opens the winner's") {
  losing_creator store(store_options());
  qs::options o;
  o.reservation_bytes = std::uint64_t{64} << 20;
  std::uint32_t ps = 4096;
  std::unique_ptr<frame_space> frames;
  home_region home;
  CHECK_NOTHROW(frames = open_catalog(store, o, ps, home));
  CHECK(home.base == 0x7d0000000000);
  CHECK(ps == 8192);
  REQUIRE(frames);
  CHECK(reinterpret_cast<std::uintptr_t>(frames->base()) == 0x7d0000000000);
}

// index_of answers most calls from a cache of the descriptors it answered
// last; an abort that forgets a type must empty it, or the next
// transaction's object would take the forgotten index and no schema record
// would say what it is.
TEST_CASE("schema registry: a type its aborted transaction added is stored again by the next one") {
  static const qs::member_record members[] = {
      {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "n", "long int", ""}};
  static const qs::type_descriptor widget{"Widget", 8, 8, nullptr, 0, nullptr, 0, members, 1};
  qs_test::mem_store s(store_options());
  schema_registry reg(s);
  reg.load();
  s.begin();
  const std::uint32_t first = reg.index_of(&widget);
  CHECK(reg.index_of(&widget) == first);  // answered from the cache
  s.abort();
  reg.abort();
  CHECK(!s.get("t:Widget"));
  s.begin();
  const std::uint32_t again = reg.index_of(&widget);
  s.commit(true);
  reg.commit();
  CHECK(s.get("t:Widget"));
  schema_registry fresh(s);
  fresh.load();
  REQUIRE(fresh.layout(again));
  CHECK(fresh.layout(again)->name == "Widget");
  CHECK(fresh.index_of(&widget) == again);
}
