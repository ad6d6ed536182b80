// inspect/stored_database.hpp: a database as its store holds it, opened for
// looking inside (qs/inspect.hpp): its catalog records, its stored types, and
// its page records read and checked one by one, with what each pointer word
// leads to.
//
// Nothing here maps frames or takes faults: a page is a record read into a
// buffer. Pointers are read as the page's writer stored them: a hardware-mode
// pointer leads where the page's mapping object says its run was, or, in
// home form, to the page whose home frame holds it (mapping.hpp); a
// software-mode reference names its page, offset and tag.
//
// Invariants:
//  * read() never throws for what a record holds: what is wrong with it is
//    in stored_page::problem, and the rest of the page is then not trusted
//    (no objects or words are listed for it).
//  * the store transaction opened with the database (a snapshot through a
//    page server) stays open until it is destroyed; it writes nothing.
//
// Thread-safety: one thread at a time.
#pragma once

#include "core/page_format.hpp"
#include "core/schema_registry.hpp"
#include "store/store.hpp"

#include <qs/database.hpp>
#include <qs/format/mapping.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qs::detail {

// An object on a page: its payload's offset (in its first page for a large
// object) and header.
struct stored_object {
  std::uint32_t offset;
  object_header header;
};

// Where a pointer word leads: `page` is the page its byte is on (the head
// of a large object's run), `offset` the byte's offset from the start of
// that page (of the run); `page` 0 when it leads nowhere in the database
// (then `problem` says why).
struct pointer_target {
  std::uint64_t page = 0;
  std::uint64_t offset = 0;
  std::uint32_t tag = 0;  // software mode: the reference's tag
  std::string problem;
};

struct stored_page {
  std::uint64_t page = 0;
  record_header h{};
  std::vector<std::byte> image;
  std::string mapping_bytes;
  std::optional<mapping> runs;  // decoded, when the header says it has one
  // What is wrong with the record (checksum, structure, mapping object);
  // empty when nothing is.
  std::string problem;
  std::vector<stored_object> objects;  // small pages, when no problem
};

// A pointer word (or vptr) of a page: its offset in the page, the type it
// belongs to and its offset in the type's element (which names the member).
struct stored_word {
  std::uint32_t offset;
  bool vptr;
  const type_layout* layout;
  std::uint32_t in_element;
};

class stored_database {
 public:
  stored_database(const std::string& path, const options& opts);
  ~stored_database();

  store& st() { return *store_; }
  const std::string& name() const { return store_->name(); }
  bool remote() const { return remote_; }
  const std::string& format() const { return format_; }
  std::uint32_t page_size() const { return page_size_; }
  const home_region& home() const { return home_; }
  std::uint64_t reservation() const { return reservation_; }
  std::uint64_t next_page() const { return next_page_; }
  std::uint64_t next_frame() const { return next_frame_; }
  schema_registry& schema() { return *schema_; }

  // Reads and checks page n into `out`; false when it has no record.
  bool read(std::uint64_t n, stored_page& out);
  // Calls f for every page record, in page order, read in batches;
  // `progress` (when set) with pages done of next_page() - 1.
  void for_each_page(const std::function<void(stored_page&)>& f,
                     const std::function<void(std::uint64_t, std::uint64_t)>& progress);
  // The pointer words and vptrs of a page that read() found no problem with:
  // hardware mode's pointer words (type_layout::pointers), software mode's
  // qs::ref members (reference_offsets).
  std::vector<stored_word> words(const stored_page& p);
  // The offsets of a type's references in one element: its pointer words,
  // or in software mode its qs::ref members (a member ending in page_
  // followed by offset_ and tag_ at +8 and +12).
  const std::vector<std::uint32_t>& reference_offsets(const type_layout& l);
  // Where the pointer word at `offset` of page p leads; nullopt for null.
  std::optional<pointer_target> follow(const stored_page& p, std::uint32_t offset) const;
  // The page and offset a hardware address names at the preferred base
  // (home form), or a PAGE:OFFSET text; nullopt when it names neither.
  std::optional<std::pair<std::uint64_t, std::uint32_t>> parse_address(std::string_view text) const;
  // The address of `offset` on page `page` at its home frame, or 0 when it
  // has none.
  std::uint64_t home_address(std::uint64_t page, std::uint64_t offset) const;
  // Every index of the database, opened as it was made (unique or not).
  struct stored_index {
    std::string name;
    bool unique;
    std::uint32_t number;  // for store::index_scan
  };
  std::vector<stored_index> indexes();
  // Calls f(key, value) for every entry of an index, in key order.
  void for_each_entry(const stored_index& ix, const std::function<void(std::string_view, std::string_view)>& f);
  // The name of a type index ("type index N" when the database has none).
  std::string type_name(std::uint32_t type) const;
  // Bytes from the start of a large object's run to its payload.
  static constexpr std::uint32_t large_payload = sizeof(page_header) + sizeof(object_header);

 private:
  void check(stored_page& p);

  std::unique_ptr<store> store_;
  bool remote_ = false;
  std::string format_;
  std::uint32_t page_size_ = 0;
  std::uint64_t reservation_ = 0, next_page_ = 1, next_frame_ = 0;
  home_region home_;
  std::unique_ptr<schema_registry> schema_;
  std::unordered_map<const type_layout*, std::vector<std::uint32_t>> references_;
};

// "0x..." of a value: how qs-inspect shows addresses and checksums.
std::string hex(std::uint64_t v);
// The bytes as lower-case hexadecimal digits, two a byte.
std::string hex_bytes(const std::byte* p, std::size_t n);

// The bytes of a mode's pointer word: 8 (an address) or 16 (a qs::ref).
constexpr std::uint32_t pointer_word_bytes = QS_SOFTWARE_SWIZZLE ? 16 : 8;

}  // namespace qs::detail
