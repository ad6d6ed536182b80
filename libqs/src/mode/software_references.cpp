// Software mode's references: object identifiers, qs::ref's slow path and
// object-level before-images (software_references.hpp).
#include "mode/references.hpp"

#include "core/location.hpp"
#include "core/page_heap.hpp"
#include "core/pager.hpp"
#include "core/relocator.hpp"
#include "util/stopwatch.hpp"

#include <qs/error.hpp>
#include <qs/ref.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace qs::detail {
namespace {

std::string where(std::uint64_t page, std::uint32_t offset, std::uint32_t tag) {
  return "page " + std::to_string(page) + ", offset " + std::to_string(offset) + ", tag " + std::to_string(tag);
}

// qs::index's values are the bytes of a qs::ref: {page, offset, tag}.
struct identifier {
  std::uint64_t page;
  std::uint32_t offset, tag;
};

}  // namespace

std::string software_references::location_of(const void* p) {
  std::uint64_t page;
  std::uint32_t offset, tag;
  identify(p, page, offset, tag);
  return encode_location({page, offset, 0, tag});
}

void* software_references::resolve(std::string_view s) {
  location l = decode_location(s);
  return resolve_identity(l.page, l.offset, static_cast<std::uint32_t>(l.last), false);
}

std::string software_references::location_of_ref(std::string_view ref_bytes) {
  identifier id{};
  if (ref_bytes.size() == sizeof id) std::memcpy(&id, ref_bytes.data(), sizeof id);
  return encode_location({id.page, id.offset, 0, id.tag});
}

// The identifier only: the object is fetched when followed.
std::string software_references::ref_of_location(std::string_view s) {
  location l = decode_location(s);
  identifier id{l.page, l.offset, static_cast<std::uint32_t>(l.last)};
  return std::string(reinterpret_cast<const char*>(&id), sizeof id);
}

// Root cells are written through the C++ reference root<T>() returns, not
// through qs::write: each cell handed out keeps its bytes as they were.
void software_references::root_cell_used(void* cell, std::size_t size) {
  if (!log_.open() ||
      std::any_of(root_reads_.begin(), root_reads_.end(), [&](const root_read& r) { return r.cell == cell; }))
    return;
  root_reads_.push_back({cell, std::string(static_cast<const char*>(cell), size)});
}

void software_references::announce_root_cells() {
  for (const root_read& r : root_reads_) {
    std::size_t n = r.before.size();
    if (std::memcmp(r.cell, r.before.data(), n) == 0) continue;
    // The before-image is taken from the cell: put the old bytes back for it.
    std::string now(static_cast<const char*>(r.cell), n);
    std::memcpy(r.cell, r.before.data(), n);
    std::uint64_t page;
    std::uint32_t offset, tag;
    identify(r.cell, page, offset, tag);
    try {
      announce_write(table_.by_page(page), offset);
    } catch (...) {
      std::memcpy(r.cell, now.data(), n);
      throw;
    }
    std::memcpy(r.cell, now.data(), n);
  }
  root_reads_.clear();
}

void software_references::restore_root_cells() {
  for (const root_read& r : root_reads_) std::memcpy(r.cell, r.before.data(), r.before.size());
  root_reads_.clear();
}

void* software_references::resolve_identity(std::uint64_t page, std::uint32_t offset, std::uint32_t tag,
                                            bool for_write) {
  page_desc* h;
  if (access_.resident(page)) {
    h = table_.by_page(page);
  } else {
    if (!log_.open())
      throw no_transaction("a reference to " + where(page, offset, tag) +
                           " was followed outside a transaction, and the page is not resident");
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t before = stats_.pages_fetched;
    h = locate(page);
    if (stats_.pages_fetched != before) {
      ++stats_.read_faults;
      stats_.fault_ns += ns_since(t0);
    }
  }
  // Is the object still there? Its header holds the reference's tag (the
  // check the inline fast path makes too).
  const std::byte* img = pages_.image(h);
  const object_header* oh = nullptr;
  bool small = h->hdr.kind == page_kind::small;
  if (small ? offset >= sizeof(page_header) + sizeof(object_header) &&
                  offset <= reinterpret_cast<const page_header*>(img)->top
            : offset == sizeof(page_header) + sizeof(object_header))
    oh = reinterpret_cast<const object_header*>(img + offset - sizeof(object_header));
  if (!oh || oh->type == free_type || tag_of(*oh) != tag) {
    bool other = small && offset < pages_.page_size() && heap_object_at(img, pages_.page_size(), offset);
    throw dangling_reference(
        "the reference to " + where(page, offset, tag) +
        (other ? " names a deleted object (another object is there now)" : " names a deleted object"));
  }
  if (for_write) {
    if (!log_.open()) throw no_transaction("qs::write needs a transaction");
    announce_write(h, offset);
  }
  return access_.address(h) + offset;
}

void software_references::identify(const void* p, std::uint64_t& page, std::uint32_t& offset, std::uint32_t& tag) {
  page_desc* d = access_.page_of(p);
  if (d) {
    page_desc* h = table_.run_head(d);
    auto off = static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - access_.address(h));
    const object_header* oh = nullptr;
    if (h->hdr.kind == page_kind::small)
      oh = heap_object_at(pages_.image(h), pages_.page_size(), static_cast<std::uint32_t>(off));
    else if (off == sizeof(page_header) + sizeof(object_header))
      oh = reinterpret_cast<const object_header*>(pages_.image(h) + sizeof(page_header));
    if (oh) {
      page = h->page;
      offset = static_cast<std::uint32_t>(off);
      tag = tag_of(*oh);
      return;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%p", p);
  throw invalid_argument(std::string("a qs::ref made from ") + buf +
                         (d ? ", where no persistent object starts (on page " + std::to_string(d->page) + ")"
                            : ", which is not a resident persistent object"));
}

// The page's descriptor (a large object's head, with frames for its whole
// run), its run resident, current and pinned; throws
// qs::dangling_reference when the page cannot hold objects a reference
// names.
page_desc* software_references::locate(std::uint64_t page) {
  page_desc* d = table_.by_page(page);
  if (!d) {
    // Not seen in this process: the record says whether it heads a large
    // object, which needs frames for all of its pages.
    d = frames_.ensure_run(page, 1);
    pages_.make_current(d);
    if (d->hdr.kind == page_kind::large_head && d->run_pages() == 1) {  // (else its run came with it)
      std::uint64_t n = large_object_pages(d->hdr.size, pages_.page_size());
      if (n > 1) {
        pages_.drop(d);
        d = frames_.ensure_run(page, static_cast<std::uint32_t>(n));
      }
    }
  }
  page_desc* h = table_.run_head(d);
  for (std::uint32_t i = 0; i < h->run_pages(); ++i) {
    page_desc* t = i == 0 ? h : table_.by_page(h->page + i);
    pages_.make_current(t);
    t->referenced = true;
    log_.pin(t);
    access_.set_access(t, t->state() == page_state::writable);  // back in the residency table
  }
  if (h->page != page)
    throw dangling_reference("a reference names page " + std::to_string(page) + ", which is inside a large object");
  return h;
}

// Makes the object at `offset` of the run headed by h writable: its
// before-image saved, or a large object's pages logged whole.
void software_references::announce_write(page_desc* h, std::uint32_t offset) {
  if (h->hdr.kind == page_kind::small) {
    save_object(h, offset);
    return;
  }
  for (std::uint32_t i = 0; i < h->run_pages(); ++i) {
    page_desc* t = i == 0 ? h : table_.by_page(h->page + i);
    if (t->state() != page_state::writable) {
      ++stats_.write_faults;
      pages_.make_writable(t);
    }
  }
}

void software_references::save_object(page_desc* d, std::uint32_t offset) {
  if (d->state() != page_state::writable && d->rewritten()) {
    // Its image differs from the stored one already: it is logged whole,
    // and abort needs the whole before-image.
    ++stats_.write_faults;
    pages_.make_writable(d);
    return;
  }
  if (d->state() != page_state::writable) pages_.make_writable_by_objects(d);
  if (d->whole_page_logged() || log_.is_saved(d, offset)) return;
  ++stats_.write_faults;
  auto* oh = reinterpret_cast<const object_header*>(pages_.image(d) + offset - sizeof(object_header));
  log_.save(d, pages_.image(d), offset, oh->size, pages_.page_size());
}

}  // namespace qs::detail
