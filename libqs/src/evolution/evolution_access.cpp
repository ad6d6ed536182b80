// Schema evolution's view of an open database: what a page holds, and the
// references kept outside pages (roots, index entries) (evolution_access.hpp).
#include "evolution/evolution_access.hpp"

#include "core/page_heap.hpp"
#include "evolution/evolution_plan.hpp"

#include <algorithm>
#include <memory>

namespace qs::detail {
namespace {

// The page's descriptor, given frames now when it has none; nullptr when
// the database has no such page.
page_desc* desc_of_page(runtime& rt, std::uint64_t page) {
  page_desc* known = rt.table.by_page(page);
  if (known && (known->resident() || known->is_new())) return known;
  record_header h{};
  std::string mapping;
  auto image = std::make_unique<std::byte[]>(rt.page_size);
  // A page this transaction deleted (a large object freed) keeps its
  // descriptor, and has no record.
  if (!rt.storage.read_page(page, h, image.get(), mapping)) return nullptr;
  if (known) return known;
  auto bad = [&](const std::string& what) { return corrupt_page(page, "page " + std::to_string(page) + " " + what); };
  if (h.magic != record_magic) throw bad("is not a page record");
  std::uint64_t first = page, pages = 1;
  if (h.kind == page_kind::large_head || h.kind == page_kind::large_tail) {
    pages = large_object_pages(h.size, rt.page_size);
    if (h.kind == page_kind::large_tail) {
      if (h.index == 0 || h.index >= pages || h.index > page)
        throw bad("says it is page " + std::to_string(h.index) + " of a large object of " + std::to_string(pages));
      first = page - h.index;
    }
  } else if (h.kind != page_kind::small) {
    throw bad("has an unknown kind");
  }
  rt.relocate.ensure_run(first, static_cast<std::uint32_t>(pages));
  return rt.table.by_page(page);
}

// The same, brought up to date for the open transaction.
page_desc* current_page(runtime& rt, transaction_engine& tx, std::uint64_t page) {
  tx.require("schema evolution");
  page_desc* d = desc_of_page(rt, page);
  if (d && pager::needs_current(d)) rt.pages.make_current(d);
  return d;
}

}  // namespace

std::string evolution_access::refused() {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> std::string {
    if (rt.storage.shared())
      return "it is served by qs-pageserver: stop the server and open its directory with qs::options::evolve, so "
             "that no client sees it half converted";
    if constexpr (!page_access::faults_pages_in)
      return "schema evolution converts databases of the hardware mode (qs-hardware); this program uses the software "
             "mode";
    return {};
  });
}

std::vector<schema_registry::pending_change> evolution_access::pending_changes() {
  return db_.with_runtime(
      [&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> std::vector<schema_registry::pending_change> {
        return rt.schema.pending();
      });
}

type_layout evolution_access::stored_layout(std::uint32_t index) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> type_layout {
    const type_layout* l = rt.schema.layout(index);
    return l ? *l : type_layout{};
  });
}

std::vector<member_info> evolution_access::members_of(const std::string& type) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> std::vector<member_info> {
    for (const auto& p : rt.schema.pending())
      if (p.program->name == type) return detail::members_of(*p.program);
    for (std::size_t i = 0; i < rt.schema.index_limit(); ++i)
      if (const type_layout* l = rt.schema.layout(static_cast<std::uint32_t>(i)); l && l->name == type)
        return l->program ? detail::members_of(*l->program) : l->members;
    return {};
  });
}

std::uint32_t evolution_access::adopt_type(const schema_registry::pending_change& p) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> std::uint32_t {
    tx.require("converting type " + std::string(p.program->name));
    return rt.schema.adopt(p);
  });
}

std::uint64_t evolution_access::page_limit() {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> std::uint64_t {
    auto v = rt.storage.get("next_page");
    if (!v) return 0;
    try {
      return std::stoull(*v);
    } catch (const std::logic_error&) {
      throw corrupt_page(0, "its page counter is damaged");
    }
  });
}

std::vector<std::uint64_t> evolution_access::stored_pages(std::uint64_t first, std::uint64_t last) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> std::vector<std::uint64_t> {
    std::vector<std::uint64_t> pages;
    if (first >= last) return pages;
    // One pass over the records that exist: a page counter of any size (the
    // catalog's, from the file) costs nothing for the numbers no page has.
    auto scratch = std::make_unique<std::byte[]>(rt.page_size);
    bool scanned = rt.storage.read_range(
        first, last - 1, [&](std::uint64_t) { return scratch.get(); },
        [&](std::uint64_t page, const record_header&, std::string) { pages.push_back(page); });
    if (!scanned) throw error("its store cannot list its pages, which schema evolution needs");
    return pages;
  });
}

bool evolution_access::objects_on_page(std::uint64_t page, std::vector<object_span>& out) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> bool {
    out.clear();
    page_desc* d = current_page(rt, tx, page);
    if (!d) return false;
    std::byte* frame = rt.access.frame_address(d);
    if (d->hdr.kind == page_kind::small) {
      heap_for_each(rt.pages.image(d), rt.page_size, [&](std::uint32_t payload, const object_header& oh) {
        out.push_back({frame + payload, oh.type, oh.size});
      });
    } else if (d->hdr.kind == page_kind::large_head) {
      out.push_back({frame + sizeof(page_header) + sizeof(object_header), d->hdr.type, d->hdr.size});
    }
    return true;
  });
}

bool evolution_access::pointer_words_on_page(std::uint64_t page, std::vector<pointer_word>& out) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) -> bool {
    out.clear();
    page_desc* d = current_page(rt, tx, page);
    if (!d) return false;
    std::byte* frame = rt.access.frame_address(d);
    struct word {
      std::uint32_t offset;
      const type_layout* layout;
      std::uint32_t which;
    };
    std::vector<word> found;
    rt.words.for_each(d, rt.pages.image(d),
                      [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t i) {
                        if (!is_vptr) found.push_back({off, &l, i});
                      });
    const type_layout* last = nullptr;  // consecutive words mostly share a layout
    const std::vector<std::string>* pointees = nullptr;
    for (const word& w : found) {
      if (w.layout != last) {
        auto known = pointees_.find(w.layout->name);
        if (known == pointees_.end()) known = pointees_.emplace(w.layout->name, pointees_of(*w.layout)).first;
        last = w.layout;
        pointees = &known->second;
      }
      out.push_back(
          {frame + w.offset, w.which < pointees->size() ? std::string_view((*pointees)[w.which]) : std::string_view()});
    }
    return true;
  });
}

std::uint64_t evolution_access::move_roots(const std::function<void*(void*)>& forward) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) {
    tx.require("schema evolution");
    std::vector<std::pair<std::string, std::string>> records;
    rt.storage.scan("r:", [&](std::string_view k, std::string_view v) { records.emplace_back(k, v); });
    std::uint64_t moved = 0;
    for (auto& [key, value] : records) {
      if (value.size() < 24) throw corrupt_page(0, "the record of root '" + key.substr(2) + "' is damaged");
      void* cell = rt.refs.resolve(std::string_view(value).substr(0, 24));
      void* now = forward(cell);
      if (now == cell) continue;
      rt.storage.put(key, rt.refs.location_of(now) + value.substr(24));
      ++moved;
    }
    rt.named.forget();
    return moved;
  });
}

std::uint64_t evolution_access::move_index_entries(const std::function<void*(void*)>& forward) {
  return db_.with_runtime([&](runtime& rt, [[maybe_unused]] transaction_engine& tx) {
    tx.require("schema evolution");
    std::uint64_t moved = 0;
    for (const std::string& index : rt.storage.index_names()) {
      std::uint32_t ix;
      try {
        ix = rt.storage.open_index(index, false);
      } catch (const invalid_argument&) {
        ix = rt.storage.open_index(index, true);
      }
      // Every key is below 64 KiB of 0xff bytes (Berkeley DB compares bytes).
      const std::string top(65536, '\xff');
      std::vector<std::pair<std::string, std::string>> entries;
      rt.storage.index_scan(ix, "", top, [&](std::string_view k, std::string_view v) {
        entries.emplace_back(k, v);
        return true;
      });
      for (auto& [key, value] : entries) {
        void* at = rt.refs.resolve(value);
        void* now = forward(at);
        if (now == at) continue;
        if (!rt.storage.index_erase(ix, key, std::string_view(value).substr(0, 16)))
          throw error("index " + index + " lost an entry while its objects moved");
        rt.storage.index_insert(ix, key, rt.refs.location_of(now));
        ++moved;
      }
    }
    return moved;
  });
}

}  // namespace qs::detail
