// The coordinator's entry points for schema evolution: what a page holds,
// and the references kept outside pages (roots, index entries).
#include "database_impl.hpp"

#include "evolution_plan.hpp"
#include "page_heap.hpp"

#include <algorithm>
#include <memory>

namespace qs::detail {

std::string database_impl::evolution_refused() {
  lock_scope g(*this);
  if (store_->shared())
    return "it is served by qs-pageserver: stop the server and open its directory with qs::options::evolve, so "
           "that no client sees it half converted";
  if (!access_->faults_pages_in())
    return "schema evolution converts databases of the hardware mode (qs-hardware); this program uses the software "
           "mode";
  return {};
}

std::vector<schema_registry::pending_change> database_impl::pending_changes() {
  lock_scope g(*this);
  return schema_.pending();
}

type_layout database_impl::stored_layout(std::uint32_t index) {
  lock_scope g(*this);
  const type_layout* l = schema_.layout(index);
  return l ? *l : type_layout{};
}

std::string database_impl::members_of(const std::string& type) {
  lock_scope g(*this);
  for (const auto& p : schema_.pending())
    if (p.program->name == type) return p.program->members ? p.program->members : "";
  for (std::size_t i = 0; i < schema_.index_limit(); ++i)
    if (const type_layout* l = schema_.layout(static_cast<std::uint32_t>(i)); l && l->name == type) {
      if (l->program) return l->program->members ? l->program->members : "";
      return l->members;
    }
  return {};
}

std::uint32_t database_impl::adopt_type(const schema_registry::pending_change& p) {
  lock_scope g(*this);
  require_transaction("converting type " + std::string(p.program->name));
  return schema_.adopt(p);
}

std::uint64_t database_impl::page_limit() {
  lock_scope g(*this);
  auto v = store_->get("next_page");
  if (!v) return 0;
  try {
    return std::stoull(*v);
  } catch (const std::logic_error&) {
    throw corrupt_page(0, "database " + name() + ": its page counter is damaged");
  }
}

std::vector<std::uint64_t> database_impl::stored_pages(std::uint64_t first, std::uint64_t last) {
  lock_scope g(*this);
  std::vector<std::uint64_t> pages;
  if (first >= last) return pages;
  // One pass over the records that exist: a page counter of any size (the
  // catalog's, from the file) costs nothing for the numbers no page has.
  auto scratch = std::make_unique<std::byte[]>(page_size_);
  bool scanned = store_->read_range(
      first, last - 1, [&](std::uint64_t) { return scratch.get(); },
      [&](std::uint64_t page, const record_header&, std::string) { pages.push_back(page); });
  if (!scanned) throw error("database " + name() + ": its store cannot list its pages, which schema evolution needs");
  return pages;
}

page_desc* database_impl::desc_of_page(std::uint64_t page) {
  page_desc* known = table_.by_page(page);
  if (known && (known->resident() || known->is_new())) return known;
  record_header h{};
  std::string mapping;
  auto image = std::make_unique<std::byte[]>(page_size_);
  // A page this transaction deleted (a large object freed) keeps its
  // descriptor, and has no record.
  if (!store_->read_page(page, h, image.get(), mapping)) return nullptr;
  if (known) return known;
  auto bad = [&](const std::string& what) {
    return corrupt_page(page, "database " + name() + ": page " + std::to_string(page) + " " + what);
  };
  if (h.magic != record_magic) throw bad("is not a page record");
  std::uint64_t first = page, pages = 1;
  if (h.kind == page_kind::large_head || h.kind == page_kind::large_tail) {
    pages = large_object_pages(h.size, page_size_);
    if (h.kind == page_kind::large_tail) {
      if (h.index == 0 || h.index >= pages || h.index > page || h.index > h.frame)
        throw bad("says it is page " + std::to_string(h.index) + " of a large object of " + std::to_string(pages));
      first = page - h.index;
    }
  } else if (h.kind != page_kind::small) {
    throw bad("has an unknown kind");
  }
  const frame_space& fs = access_->frames();
  std::uint64_t frame = h.frame - (page - first);
  auto address = frame < fs.frames() ? reinterpret_cast<std::uint64_t>(fs.frame_address(frame)) : 0;
  relocator_->ensure_run(address, first, static_cast<std::uint32_t>(pages));
  return table_.by_page(page);
}

page_desc* database_impl::current_page(std::uint64_t page) {
  require_transaction("schema evolution");
  page_desc* d = desc_of_page(page);
  if (d && (!d->resident() || d->state() == page_state::stale)) pager_->make_current(d);
  return d;
}

bool database_impl::objects_on_page(std::uint64_t page, std::vector<object_span>& out) {
  lock_scope g(*this);
  out.clear();
  page_desc* d = current_page(page);
  if (!d) return false;
  std::byte* frame = access_->frame_address(d);
  if (d->hdr.kind == page_kind::small) {
    heap_for_each(pager_->image(d), page_size_, [&](std::uint32_t payload, const object_header& oh) {
      out.push_back({frame + payload, oh.type, oh.size});
    });
  } else if (d->hdr.kind == page_kind::large_head) {
    out.push_back({frame + sizeof(page_header) + sizeof(object_header), d->hdr.type, d->hdr.size});
  }
  return true;
}

bool database_impl::pointer_words_on_page(std::uint64_t page, std::vector<pointer_word>& out) {
  lock_scope g(*this);
  out.clear();
  page_desc* d = current_page(page);
  if (!d) return false;
  std::byte* frame = access_->frame_address(d);
  struct word {
    std::uint32_t offset;
    const type_layout* layout;
    std::uint32_t which;
  };
  std::vector<word> found;
  words_->for_each(d, pager_->image(d), [&](std::uint32_t off, bool is_vptr, const type_layout& l, std::uint32_t i) {
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
}

std::uint64_t database_impl::move_roots(const std::function<void*(void*)>& forward) {
  lock_scope g(*this);
  require_transaction("schema evolution");
  std::vector<std::pair<std::string, std::string>> records;
  store_->scan("r:", [&](std::string_view k, std::string_view v) { records.emplace_back(k, v); });
  std::uint64_t moved = 0;
  for (auto& [key, value] : records) {
    if (value.size() < 24)
      throw corrupt_page(0, "database " + name() + ": the record of root '" + key.substr(2) + "' is damaged");
    void* cell = refs_->resolve(std::string_view(value).substr(0, 24));
    void* now = forward(cell);
    if (now == cell) continue;
    store_->put(key, refs_->location_of(now) + value.substr(24));
    ++moved;
  }
  roots_->forget();
  return moved;
}

std::uint64_t database_impl::move_index_entries(const std::function<void*(void*)>& forward) {
  lock_scope g(*this);
  require_transaction("schema evolution");
  std::uint64_t moved = 0;
  for (const std::string& index : store_->index_names()) {
    std::uint32_t ix;
    try {
      ix = store_->open_index(index, false);
    } catch (const invalid_argument&) {
      ix = store_->open_index(index, true);
    }
    // Every key is below 64 KiB of 0xff bytes (Berkeley DB compares bytes).
    const std::string top(65536, '\xff');
    std::vector<std::pair<std::string, std::string>> entries;
    store_->index_scan(ix, "", top, [&](std::string_view k, std::string_view v) {
      entries.emplace_back(k, v);
      return true;
    });
    for (auto& [key, value] : entries) {
      void* at = refs_->resolve(value);
      void* now = forward(at);
      if (now == at) continue;
      if (!store_->index_erase(ix, key, std::string_view(value).substr(0, 16)))
        throw error("database " + name() + ": index " + index + " lost an entry while its objects moved");
      store_->index_insert(ix, key, refs_->location_of(now));
      ++moved;
    }
  }
  return moved;
}

}  // namespace qs::detail
