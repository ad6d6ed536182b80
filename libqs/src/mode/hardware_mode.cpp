// Hardware mode: pages reached through protected virtual frames, faults as
// the program's first touches, and references that are addresses
// (page_access.hpp, references.hpp).
#include "core/location.hpp"
#include "core/pager.hpp"
#include "core/relocator.hpp"
#include "mode/page_access.hpp"
#include "mode/references.hpp"

#include <qs/error.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace qs::detail {
namespace {

class hardware_access final : public page_access {
 public:
  hardware_access(std::unique_ptr<frame_space> frames, buffer_pool& pool, page_table& table)
      : page_access(std::move(frames), pool, table) {}

  void show(page_desc* d, bool writable) override { frames_->show(d->frame, writable); }
  void hide(page_desc* d) override { frames_->hide(d->frame); }
  void set_access(page_desc* d, bool writable) override { frames_->protect(d->frame, writable); }
  void hide_all() override { frames_->hide_all(); }
  void begin_transaction() override {}
  void make_current(database_impl*) override {}
  void forget_current(database_impl*) override {}

  std::byte* address(const page_desc* d) const override { return frame_address(d); }
  page_desc* page_of(const void* p) const override {
    return frames_->contains(p) ? table_.by_frame(frames_->frame_of(p)) : nullptr;
  }
  bool contains(const void* p) const override { return frames_->contains(p); }
  bool storable_pointer(std::uint64_t v) const override { return frames_->contains(reinterpret_cast<const void*>(v)); }
  std::string raw_address_note() const override { return "inside the persistent region"; }
  void check_fault(void*) const override {}

  bool faults_pages_in() const override { return true; }
  bool pins_transaction_pages() const override { return false; }
  bool builds_whole_objects() const override { return false; }
  std::string pool_full_message(const std::string& db_name, std::uint32_t pool_pages) const override {
    return "database " + db_name + ": every page of the buffer pool (" + std::to_string(pool_pages) +
           " pages) is pinned";
  }
};

// Roots and index entries keep {page, offset in run, run pages, run address}.
class hardware_references final : public references {
 public:
  hardware_references(relocator& frames, page_access& access, page_table& table, const std::string& db_name)
      : frames_(frames), access_(access), table_(table), db_name_(db_name) {}

  std::string location_of(const void* p) override {
    page_desc* t = access_.page_of(p);
    if (!t) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%p", p);
      throw invalid_argument("database " + db_name_ + ": " + buf + " is not in this database's persistent memory");
    }
    page_desc* h = table_.run_head(t);
    auto run = reinterpret_cast<std::uint64_t>(frames_.run_address(h));
    return encode_location(
        {h->page, static_cast<std::uint32_t>(reinterpret_cast<std::uint64_t>(p) - run), h->run_pages, run});
  }
  void* resolve(std::string_view s) override {
    location l = decode_location(db_name_, s);
    page_desc* h = frames_.ensure_run(l.last, l.page, l.run_pages);
    return frames_.run_address(h) + l.offset;
  }
  std::string location_of_ref(std::string_view ref_bytes) override {
    const void* p = nullptr;
    if (ref_bytes.size() == sizeof p) std::memcpy(&p, ref_bytes.data(), sizeof p);
    return location_of(p);
  }
  std::string ref_of_location(std::string_view s) override {
    void* p = resolve(s);
    return std::string(reinterpret_cast<const char*>(&p), sizeof p);
  }
  // Root cells are written like any persistent memory: write faults log them.
  void root_cell_used(void*, std::size_t) override {}
  void announce_root_cells() override {}
  void restore_root_cells() override {}

  void* resolve_identity(std::uint64_t, std::uint32_t, std::uint32_t, bool) override {
    throw error("database " + db_name_ + ": object identifiers are software mode's");
  }
  void identify(const void*, std::uint64_t&, std::uint32_t&, std::uint32_t&) override {
    throw error("database " + db_name_ + ": object identifiers are software mode's");
  }

 private:
  relocator& frames_;
  page_access& access_;
  page_table& table_;
  const std::string& db_name_;
};

}  // namespace

std::unique_ptr<page_access> make_page_access(std::unique_ptr<frame_space> frames, buffer_pool& pool,
                                              page_table& table) {
  return std::make_unique<hardware_access>(std::move(frames), pool, table);
}

std::unique_ptr<references> make_references(pager&, relocator& frames, page_access& access, page_table& table,
                                            transaction_log&, statistics&, const std::string& db_name) {
  return std::make_unique<hardware_references>(frames, access, table, db_name);
}

const char* mode_name() { return "hardware"; }
frame_control mode_frame_control() { return default_frame_control(); }
// Format 3: 48-byte record headers with a page version and the size of the
// page's mapping object.
const char* format_name() { return "qs 4"; }

}  // namespace qs::detail
