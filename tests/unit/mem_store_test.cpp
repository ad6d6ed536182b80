// Unit tests of the in-memory store (tests/support/mem_store.hpp): each part
// of the store interface alone, then one script of operations run on a
// mem_store and on the embedded bdb_store, whose observations must agree.
#include <catch2/catch.hpp>

#include "mem_store.hpp"
#include "store/bdb_store.hpp"
#include "temp_dir.hpp"

#include <qs/error.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using qs::detail::byte_range;
using qs::detail::record_header;
using qs::detail::store;
using qs_test::mem_store;

namespace {

constexpr std::uint32_t page_size = 4096;

record_header header(std::uint64_t version, std::uint32_t mapping_entries) {
  record_header h{};
  h.magic = qs::detail::record_magic;
  h.kind = qs::detail::page_kind::small;
  h.frame = 7;
  h.version = version;
  h.mapping_entries = mapping_entries;
  return h;
}

std::vector<std::byte> image(char fill) { return std::vector<std::byte>(page_size, static_cast<std::byte>(fill)); }

// A page as read back: its version, two of its bytes, its mapping object.
struct page_seen {
  bool found = false;
  std::uint64_t version = 0;
  char first = 0, at100 = 0;
  std::string mapping;
};
page_seen read(store& s, std::uint64_t page) {
  page_seen r;
  record_header h{};
  std::vector<std::byte> img(page_size);
  r.mapping = "untouched";
  r.found = s.read_page(page, h, img.data(), r.mapping);
  if (!r.found) return r;
  r.version = h.version;
  r.first = static_cast<char>(img[0]);
  r.at100 = static_cast<char>(img[100]);
  return r;
}

std::vector<std::string> entries(store& s, std::uint32_t ix, std::string_view lo = "", std::string_view hi = "~") {
  std::vector<std::string> out;
  s.index_scan(ix, lo, hi, [&](std::string_view k, std::string_view v) {
    out.push_back(std::string(k) + "=" + std::string(v));
    return true;
  });
  return out;
}

mem_store small_store() { return mem_store({"unit", page_size, false}); }

}  // namespace

TEST_CASE("mem_store: a page record and its mapping object") {
  mem_store s = small_store();
  const std::string m(24, 'm');
  auto a = image('a');
  s.put_page(1, header(1, 1), a.data(), &m);
  page_seen p = read(s, 1);
  CHECK(p.found);
  CHECK(p.version == 1);
  CHECK(p.first == 'a');
  CHECK(p.mapping == m);
  CHECK(s.stored_mapping(1) == m);
  CHECK_FALSE(read(s, 2).found);
  CHECK(read(s, 2).mapping == "untouched");

  SECTION("a patch writes the header and its ranges; a null mapping keeps the stored one") {
    auto b = image('b');
    byte_range r{100, 8};
    s.patch_page(1, header(2, 1), b.data(), {&r, 1}, nullptr);
    p = read(s, 1);
    CHECK(p.version == 2);
    CHECK(p.first == 'a');
    CHECK(p.at100 == 'b');
    CHECK(p.mapping == m);
  }
  SECTION("an empty mapping removes it") {
    const std::string none;
    s.put_page(1, header(2, 0), a.data(), &none);
    CHECK(read(s, 1).mapping.empty());
    CHECK_FALSE(s.stored_mapping(1));
  }
  SECTION("the mapping object is read only when the header counts entries") {
    s.put_page(1, header(2, 0), a.data(), nullptr);
    CHECK(read(s, 1).mapping.empty());
    CHECK(s.stored_mapping(1) == m);  // kept, but not read
  }
  SECTION("delete_page removes the record and its mapping object") {
    s.delete_page(1);
    CHECK_FALSE(read(s, 1).found);
    CHECK_FALSE(s.stored_mapping(1));
    CHECK(s.page_count() == 0);
  }
  SECTION("a patch needs a record, and stays inside the image") {
    byte_range r{page_size - 4, 8};
    CHECK_THROWS_AS(s.patch_page(1, header(2, 1), a.data(), {&r, 1}, nullptr), qs::invalid_argument);
    byte_range ok{0, 8};
    CHECK_THROWS_AS(s.patch_page(9, header(1, 0), a.data(), {&ok, 1}, nullptr), qs::store_error);
  }
  SECTION("a record of another page size is refused as corrupt") {
    s.set_page_size(8192);
    record_header h{};
    std::vector<std::byte> img(8192);
    std::string mapping;
    CHECK_THROWS_AS(s.read_page(1, h, img.data(), mapping), qs::corrupt_page);
  }
}

// (bdb_store, a store of one client, always reads: it does not override
// read_page_if_changed. mem_store keeps the interface's promise, so that it
// can stand in for a shared store.)
TEST_CASE("mem_store: read_page_if_changed answers unchanged for the version held") {
  mem_store s = small_store();
  auto a = image('a');
  const std::string m(24, 'm');
  s.put_page(3, header(5, 1), a.data(), &m);
  record_header h{};
  std::vector<std::byte> img(page_size);
  std::string mapping = "kept";
  CHECK(s.read_page_if_changed(3, 5, h, img.data(), mapping) == store::page_read::unchanged);
  CHECK(mapping == "kept");
  CHECK(s.read_page_if_changed(3, 4, h, img.data(), mapping) == store::page_read::read);
  CHECK(h.version == 5);
  CHECK(mapping == m);
  CHECK(s.read_page_if_changed(4, 4, h, img.data(), mapping) == store::page_read::absent);
  CHECK_FALSE(s.shared());
  CHECK(mem_store({"shared", page_size, true}).shared());
}

TEST_CASE("mem_store: metadata records and prefix scans") {
  mem_store s = small_store();
  s.put("r:b", "2");
  s.put("r:a", "1");
  s.put("s:x", "3");
  s.put("r:a", "one");
  CHECK(s.get("r:a") == "one");
  CHECK_FALSE(s.get("r:c"));
  std::vector<std::string> seen;
  s.scan("r:", [&](std::string_view k, std::string_view v) {
    seen.push_back(std::string(k) + "=" + std::string(v));
    s.put("r:z", "added while scanning");  // the scan has collected its entries
  });
  CHECK(seen == std::vector<std::string>{"r:a=one", "r:b=2"});
  s.del("r:b");
  s.del("r:none");
  CHECK_FALSE(s.get("r:b"));
  CHECK(s.get("r:z"));
}

TEST_CASE("mem_store: unique and non-unique indexes") {
  mem_store s = small_store();
  std::uint32_t u = s.open_index("by_name", true);
  std::uint32_t d = s.open_index("by_date", false);
  CHECK(s.open_index("by_name", true) == u);
  CHECK_THROWS_AS(s.open_index("by_name", false), qs::invalid_argument);
  CHECK_THROWS_AS(s.open_index("no spaces", false), qs::invalid_argument);
  CHECK_THROWS_AS(s.index_insert(9, "k", "v"), qs::invalid_argument);

  CHECK(s.index_insert(u, "k", "v1"));
  CHECK_FALSE(s.index_insert(u, "k", "v2"));  // the key is taken
  CHECK(entries(s, u) == std::vector<std::string>{"k=v1"});
  CHECK_FALSE(s.index_erase(u, "k", "w"));
  CHECK(s.index_erase(u, "k", "v"));
  CHECK(entries(s, u).empty());

  CHECK(s.index_insert(d, "k", "v2"));
  CHECK(s.index_insert(d, "k", "v1"));
  CHECK(s.index_insert(d, "k", "v1"));  // the same entry again: there once
  CHECK(s.index_insert(d, "j", "v9"));
  CHECK(s.index_insert(d, "m", "v0"));
  CHECK(entries(s, d) == std::vector<std::string>{"j=v9", "k=v1", "k=v2", "m=v0"});
  CHECK(entries(s, d, "k", "k") == std::vector<std::string>{"k=v1", "k=v2"});
  int calls = 0;
  s.index_scan(d, "", "~", [&](std::string_view, std::string_view) { return ++calls < 2; });
  CHECK(calls == 2);  // stops when told
  CHECK(s.index_erase(d, "k", "v2"));
  CHECK_FALSE(s.index_erase(d, "k", "v3"));
  CHECK(entries(s, d) == std::vector<std::string>{"j=v9", "k=v1", "m=v0"});
}

TEST_CASE("mem_store: abort restores pages, mapping objects, metadata, index entries and counters") {
  mem_store s = small_store();
  auto a = image('a');
  const std::string m(24, 'm');
  std::uint32_t ix = s.open_index("ix", false);
  s.put_page(1, header(1, 1), a.data(), &m);  // outside a transaction: committed at once
  s.put("r:a", "1");
  s.index_insert(ix, "k", "v");

  s.begin();
  CHECK(s.in_transaction());
  CHECK_THROWS_AS(s.begin(), qs::store_error);
  store::page_range r = s.allocate_pages(3);
  CHECK(r.page == 1);  // no counters yet: pages from 1, frames from 0
  CHECK(r.frame == 0);
  auto b = image('b');
  const std::string none;
  s.put_page(1, header(2, 0), b.data(), &none);
  s.put_page(2, header(1, 0), b.data(), nullptr);
  s.put("r:a", "2");
  s.del("r:a");
  s.put("r:b", "3");
  s.index_erase(ix, "k", "v");
  s.index_insert(ix, "k2", "v2");
  s.abort();

  CHECK_FALSE(s.in_transaction());
  page_seen p = read(s, 1);
  CHECK(p.version == 1);
  CHECK(p.first == 'a');
  CHECK(p.mapping == m);
  CHECK_FALSE(read(s, 2).found);
  CHECK(s.get("r:a") == "1");
  CHECK_FALSE(s.get("r:b"));
  CHECK(entries(s, ix) == std::vector<std::string>{"k=v"});

  s.begin();
  r = s.allocate_pages(2);
  CHECK(r.page == 1);  // the aborted numbers come back, as in the embedded store
  CHECK(s.allocate_pages(1).page == 3);
  CHECK(s.get("next_page") == "4");
  CHECK(s.get("next_frame") == "3");
  s.commit(true);
  CHECK(s.get("next_page") == "4");
  CHECK_THROWS_AS(s.commit(true), qs::store_error);
  CHECK_THROWS_AS(s.allocate_pages(1), qs::store_error);  // outside a transaction
}

TEST_CASE("mem_store: the log position counts the bytes written") {
  mem_store s = small_store();
  auto a = image('a');
  const std::string m(48, 'm');
  std::uint64_t at = s.log_position();
  s.put_page(1, header(1, 2), a.data(), &m);
  CHECK(s.log_position() - at == sizeof(record_header) + page_size + m.size());
  at = s.log_position();
  byte_range r[] = {{0, 8}, {200, 16}};
  s.patch_page(1, header(2, 2), a.data(), r, nullptr);
  CHECK(s.log_position() - at == sizeof(record_header) + 24);
  at = s.log_position();
  s.put("key", "value");
  CHECK(s.log_position() - at == 8);
  s.begin();
  s.put("key", "other");
  s.abort();
  CHECK(s.log_position() - at == 16);  // written, then undone: still logged
}

// The same operations on both stores, described by what each one answers.
static std::vector<std::string> script(store& s) {
  std::vector<std::string> seen;
  auto note = [&](const std::string& what) { seen.push_back(what); };
  auto note_page = [&](std::uint64_t page) {
    page_seen p = read(s, page);
    note("page " + std::to_string(page) +
         (p.found ? " v" + std::to_string(p.version) + " " + p.first + p.at100 + " mapping " + p.mapping : " absent"));
  };
  auto note_throw = [&](const char* what, auto f) {
    try {
      f();
      note(std::string(what) + ": no error");
    } catch (const qs::invalid_argument&) {
      note(std::string(what) + ": invalid_argument");
    } catch (const qs::store_error&) {
      note(std::string(what) + ": store_error");
    }
  };
  s.set_page_size(page_size);
  s.put("next_page", "1");
  s.put("next_frame", "0");
  std::uint32_t u = s.open_index("unique_ix", true);
  std::uint32_t d = s.open_index("dup_ix", false);
  note_throw("reopen with other uniqueness", [&] { s.open_index("unique_ix", false); });
  note_throw("a bad index name", [&] { s.open_index("a/b", false); });

  s.begin();
  note_throw("a second begin", [&] { s.begin(); });
  store::page_range r = s.allocate_pages(3);
  note("allocated " + std::to_string(r.page) + " " + std::to_string(r.frame));
  auto a = image('a'), b = image('b');
  const std::string m(24, 'm'), none;
  s.put_page(1, header(1, 1), a.data(), &m);
  s.put_page(2, header(1, 0), b.data(), nullptr);
  byte_range patch{100, 8};
  // A patch's image is the stored one with the patched bytes changed.
  auto ab = a;
  std::memcpy(ab.data() + patch.offset, b.data() + patch.offset, patch.length);
  s.patch_page(1, header(2, 1), ab.data(), {&patch, 1}, nullptr);
  note_page(1);
  note_page(2);
  note_page(3);
  record_header h{};
  std::vector<std::byte> img(page_size);
  std::string mapping;
  note("if changed from 1: " + std::to_string(static_cast<int>(s.read_page_if_changed(1, 1, h, img.data(), mapping))));
  note("if changed, absent: " + std::to_string(static_cast<int>(s.read_page_if_changed(3, 1, h, img.data(), mapping))));
  s.commit(true);

  s.begin();
  s.patch_page(1, header(3, 0), a.data(), {&patch, 1}, &none);
  note_page(1);
  s.delete_page(2);
  note_page(2);
  s.put("r:a", "1");
  s.put("r:b", "2");
  s.put("t:x", "3");
  std::string scanned;
  s.scan("r:", [&](std::string_view k, std::string_view v) { scanned += std::string(k) + "=" + std::string(v) + ";"; });
  note("scan " + scanned);
  note("unique insert " + std::to_string(s.index_insert(u, "k", "v1")));
  note("unique insert again " + std::to_string(s.index_insert(u, "k", "v2")));
  s.index_insert(d, "k", "v2");
  s.index_insert(d, "k", "v1");
  note("dup insert again " + std::to_string(s.index_insert(d, "k", "v1")));
  s.index_insert(d, "a", "v0");
  for (auto& e : entries(s, d)) note("dup " + e);
  note("erase by prefix " + std::to_string(s.index_erase(d, "k", "v")));
  note("erase missing " + std::to_string(s.index_erase(d, "k", "zz")));
  note("unique erase other prefix " + std::to_string(s.index_erase(u, "k", "w")));
  for (auto& e : entries(s, d)) note("dup after erase " + e);
  s.abort();

  note_page(1);
  note_page(2);
  note("r:a after abort " + s.get("r:a").value_or("none"));
  note("dup entries after abort " + std::to_string(entries(s, d).size()));
  note("unique entries after abort " + std::to_string(entries(s, u).size()));
  note("next_page " + s.get("next_page").value_or("none"));
  s.begin();
  r = s.allocate_pages(1);
  note("allocated " + std::to_string(r.page) + " " + std::to_string(r.frame));
  s.commit(false);
  return seen;
}

TEST_CASE("mem_store answers a script of store operations as the embedded Berkeley DB store does") {
  qs_test::temp_dir dir("qs-unit");
  qs::detail::bdb_store bdb(dir.sub("db"), qs::detail::bdb_options{page_size, 8u << 20});
  mem_store mem = small_store();
  std::vector<std::string> from_bdb = script(bdb);
  std::vector<std::string> from_mem = script(mem);
  REQUIRE(from_bdb.size() == from_mem.size());
  for (std::size_t i = 0; i < from_bdb.size(); ++i) {
    INFO("observation " << i);
    CHECK(from_mem[i] == from_bdb[i]);
  }
}
