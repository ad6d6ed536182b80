// The record-level audit of a torture database (store_audit.hpp).
#include "store_audit.hpp"

#include <qs/format/checksum.hpp>
#include <qs/format/keys.hpp>
#include <qs/format/mapping.hpp>
#include "core/location.hpp"
#include "core/page_check.hpp"
#include "core/page_format.hpp"
#include "core/page_heap.hpp"
#include "core/schema_registry.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <unordered_map>

namespace qs_torture {
namespace {

using namespace qs::detail;

constexpr std::uint32_t large_start = sizeof(page_header) + sizeof(object_header);

struct page_info {
  record_header h{};
  std::unique_ptr<std::byte[]> image;
  mapping runs;
  std::set<std::uint32_t> starts;  // payload offsets of live objects (small pages)
};

class auditor {
 public:
  auditor(store& s, audit_result& out) : store_(s), out_(out), schema_(s) {}

  void run(const std::vector<std::string>& index_names) {
    auto ps = store_.get("page_size");
    auto next = store_.get("next_page");
    if (!ps || !next) return problem("no page_size or next_page record");
    page_size_ = static_cast<std::uint32_t>(std::stoul(*ps));
    store_.set_page_size(page_size_);
    auto base = store_.get("base");
    auto reservation = store_.get("reservation");
    if (!base || !reservation) return problem("no base or reservation record");
    home_ = home_region::of(std::stoull(*base), std::stoull(*reservation), page_size_);
    schema_.load();
    const std::uint64_t last = std::stoull(*next);
    for (std::uint64_t p = 1; p < last; ++p) read(p);
    for (auto& [p, info] : pages_) check_runs(p, info);
    for (auto& [p, info] : pages_) check_pointers(p, info);
    store_.scan("s:", [&](std::string_view key, std::string_view value) { check_room(key, value); });
    store_.scan("r:", [&](std::string_view key, std::string_view value) {
      if (value.size() < 24) return problem("root record " + std::string(key.substr(2)) + " is too short");
      location l = decode_location(value.substr(0, 24));
      check_location(l, "root " + std::string(key.substr(2)));
    });
    for (const std::string& name : index_names) {
      std::uint32_t ix = store_.open_index(name, true);
      store_.index_scan(ix, std::string_view(), std::string(8, '\xff'), [&](std::string_view, std::string_view v) {
        check_location(decode_location(v), "an entry of index " + name);
        return true;
      });
    }
  }

 private:
  void problem(const std::string& what) {
    if (out_.problems.size() < 20) out_.problems.push_back("store: " + what);
  }
  static std::string page_name(std::uint64_t p) { return "page " + std::to_string(p); }

  std::string type_name(std::uint32_t type) {
    const type_layout* l = schema_.layout(type);
    return l ? l->name : "type " + std::to_string(type);
  }

  void read(std::uint64_t p) {
    page_info info;
    info.image = std::make_unique<std::byte[]>(page_size_);
    std::string m;
    if (!store_.read_page(p, info.h, info.image.get(), m)) return;
    ++out_.pages;
    const record_header& h = info.h;
    if (h.magic != record_magic) return problem(page_name(p) + ": a damaged record header");
    if (record_checksum(h, info.image.get(), page_size_) != h.checksum)
      return problem(page_name(p) + ": failed its checksum");
    std::string wrong = check_page(h, info.image.get(), page_size_, [&](std::uint32_t type, bool& has_words) {
      const type_layout* l = schema_.layout(type);
      if (!l) return std::uint32_t{0};
      has_words = !l->pointers.empty() || !l->vptrs.empty();
      return l->size;
    });
    if (!wrong.empty()) return problem(page_name(p) + " holds " + wrong);
    if (h.mapping_entries != 0) {
      auto runs = decode_mapping(m, page_size_);
      if (!runs || runs->size() != h.mapping_entries)
        return problem(page_name(p) + ": its mapping object does not have the header's " +
                       std::to_string(h.mapping_entries) + " entries");
      info.runs = std::move(*runs);
    }
    if (h.kind == page_kind::small) {
      heap_for_each(info.image.get(), page_size_, [&](std::uint32_t off, const object_header& oh) {
        info.starts.insert(off);
        ++out_.objects[type_name(oh.type)];
      });
    } else if (h.kind == page_kind::large_head) {
      ++out_.objects[type_name(h.type)];
    }
    pages_.emplace(p, std::move(info));
  }

  std::uint64_t run_length(const record_header& h) const {
    return (std::uint64_t{large_start} + h.size + page_size_ - 1) / page_size_;
  }

  // A large object's pages: all there, in order, agreeing with the head.
  // (Their frames are hints, written by whichever process last wrote each
  // page, and are not compared.)
  void check_runs(std::uint64_t p, const page_info& info) {
    const record_header& h = info.h;
    if (h.kind == page_kind::large_tail) {
      auto head = pages_.find(p - h.index);
      std::string wrong;
      if (head == pages_.end()) wrong = "is missing";
      else if (head->second.h.kind != page_kind::large_head) wrong = "is not a large object's head";
      else if (head->second.h.type != h.type || head->second.h.size != h.size)
        wrong = "is of type " + std::to_string(head->second.h.type) + ", " + std::to_string(head->second.h.size) +
                " bytes (this page: " + std::to_string(h.type) + ", " + std::to_string(h.size) + ")";
      if (!wrong.empty())
        problem(page_name(p) + " is page " + std::to_string(h.index) + " of a large object whose head page " +
                std::to_string(p - h.index) + " " + wrong);
      return;
    }
    if (h.kind != page_kind::large_head) return;
    for (std::uint64_t i = 1; i < run_length(h); ++i)
      if (pages_.find(p + i) == pages_.end())
        problem(page_name(p) + " heads a large object of " + std::to_string(run_length(h)) + " pages whose page " +
                std::to_string(i) + " is missing");
  }

  // Whether (page, offset) is the start of a live object; `run` the pages of
  // its run, when known.
  bool live_start(std::uint64_t page, std::uint64_t offset, std::uint64_t run) {
    auto it = pages_.find(page);
    if (it == pages_.end()) return false;
    const record_header& h = it->second.h;
    if (h.kind == page_kind::large_head) return offset == large_start && (run == 0 || run == run_length(h));
    if (h.kind == page_kind::small)
      return (run == 0 || run == 1) && offset < page_size_ &&
             it->second.starts.count(static_cast<std::uint32_t>(offset)) != 0;
    return false;
  }

  void check_location(const location& l, const std::string& what) {
    if (!live_start(l.page, l.offset, l.run_pages))
      problem(what + " names page " + std::to_string(l.page) + " offset " + std::to_string(l.offset) +
              ", not the start of a live object");
  }

  void check_pointers(std::uint64_t p, const page_info& info) {
    auto check_object = [&](std::uint32_t type, std::uint64_t payload_off, std::uint64_t payload) {
      const type_layout* l = schema_.layout(type);
      if (!l || l->pointers.empty() || l->size == 0) return;
      for (std::uint64_t e = 0; e + l->size <= payload; e += l->size)
        for (std::uint32_t po : l->pointers) {
          std::uint64_t at = payload_off + e + po;
          if (at + 8 > page_size_) continue;  // a large object's later pages: not checked here
          std::uint64_t v;
          std::memcpy(&v, info.image.get() + at, 8);
          if (v == 0) continue;
          std::string what = page_name(p) + " offset " + std::to_string(at) + " (" + member_name(*l, po) + ")";
          // In a run of the mapping object, or home-form: into the small
          // page whose home frame holds it (mapping.hpp).
          const mapping_entry* r = find_run(info.runs, v, page_size_);
          const mapping_entry home{v - (v - home_.base) % page_size_, home_.page_of(v), 1};
          if (!r && home.page == 0) {
            problem(what + " points outside every run of the page's mapping object and outside the home frames");
            continue;
          }
          if (!r) r = &home;
          std::uint64_t delta = v - r->address;
          if (!live_start(r->page + delta / page_size_, delta % page_size_, r->pages))
            problem(what + " points at page " + std::to_string(r->page + delta / page_size_) + " offset " +
                    std::to_string(delta % page_size_) + ", not the start of a live object");
        }
    };
    if (info.h.kind == page_kind::small) {
      heap_for_each(info.image.get(), page_size_,
                    [&](std::uint32_t off, const object_header& oh) { check_object(oh.type, off, oh.size); });
    } else if (info.h.kind == page_kind::large_head) {
      check_object(info.h.type, large_start, info.h.size);
    }
  }

  void check_room(std::string_view key, std::string_view value) {
    std::uint64_t page = from_be64(key.substr(2));
    unsigned long long frame = 0;
    unsigned room = 0;
    if (std::sscanf(std::string(value).c_str(), "%llu %u", &frame, &room) != 2)
      return problem("the free-space record of " + page_name(page) + " is malformed");
    auto it = pages_.find(page);
    if (it == pages_.end() || it->second.h.kind != page_kind::small)
      return problem("a free-space record names " + page_name(page) + ", which is not a small page");
    // The frame is a hint: where the page was in the process that last
    // changed it, which relocation may have made another than the record's.
    // The room is a hint too: clients of a page server that fill a page
    // another client listed do not always unlist it.
    (void)room;
  }

  store& store_;
  audit_result& out_;
  schema_registry schema_;
  home_region home_;
  std::uint32_t page_size_ = 0;
  std::unordered_map<std::uint64_t, page_info> pages_;
};

}  // namespace

audit_result audit_store(store& s, const std::vector<std::string>& index_names) {
  audit_result out;
  try {
    auditor(s, out).run(index_names);
  } catch (const std::exception& e) {
    out.problems.push_back(std::string("store: ") + e.what());
  }
  return out;
}

}  // namespace qs_torture
