// The catalog: creating a database's records, and checking them at open.
#include "api/catalog.hpp"

#include "mode/page_access.hpp"

#include <qs/error.hpp>
#include <qs/format/keys.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace qs::detail {
namespace {

// Where reservations go: 16 TiB up, well clear of the heap, of PIE
// executables (0x55...) and of shared libraries (0x7f...).
constexpr std::uintptr_t first_base = std::uintptr_t{0x1000} << 32;

// A decimal metadata record, checked: it may come from a damaged file or
// from any client of a page server.
std::uint64_t number(store& s, const char* key, std::uint64_t lo, std::uint64_t hi) {
  auto v = s.get(key);
  if (!v) throw corrupt_page(0, "database " + s.name() + ": metadata record '" + key + "' is missing");
  std::uint64_t x = 0;
  bool ok = !v->empty() && v->size() <= 20;
  for (char c : *v) {
    if (c < '0' || c > '9' || x > (~std::uint64_t{0} - 9) / 10) {
      ok = false;
      break;
    }
    x = x * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok || x < lo || x > hi)
    throw corrupt_page(0, "database " + s.name() + ": metadata record '" + key + "' holds '" + v->substr(0, 40) +
                              "', not a number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return x;
}

// Creates the records; false when another client created them first.
bool create(store& s, const options& opts, std::uint32_t page_size, const frame_space& frames) {
  bool created = false;
  s.begin();
  try {
    if (!s.get("page_size")) {
      s.put("format", page_access::format_name);
      s.put("page_size", std::to_string(page_size));
      s.put("base", std::to_string(reinterpret_cast<std::uintptr_t>(frames.base())));
      s.put("reservation", std::to_string(opts.reservation_bytes));
      s.put("next_page", "1");
      s.put("next_frame", "0");
      s.commit(true);
      created = true;
    } else {
      s.abort();
    }
  } catch (const deadlock&) {
    s.abort();
  } catch (...) {
    s.abort();
    throw;
  }
  return created;
}

}  // namespace

std::unique_ptr<frame_space> open_catalog(store& s, const options& opts, std::uint32_t& page_size, home_region& home) {
  const frame_control control = page_access::control();
  auto ps = s.get("page_size");
  if (!ps) {
    // A new database: find a free place for its reservation.
    std::unique_ptr<frame_space> frames;
    std::uint64_t step = (opts.reservation_bytes + (std::uint64_t{1} << 40) - 1) & ~((std::uint64_t{1} << 40) - 1);
    for (int k = 0; k < 64 && !frames; ++k) {
      try {
        frames = std::make_unique<frame_space>(first_base + k * step, opts.reservation_bytes, page_size, true, control);
      } catch (const error&) {
      }
    }
    // None of them free (or none usable: ThreadSanitizer keeps these ranges
    // for itself): wherever the kernel puts it.
    if (!frames) frames = std::make_unique<frame_space>(first_base, opts.reservation_bytes, page_size, false, control);
    // Two clients of a page server may create the database at once: the
    // check is repeated in the transaction, and the loser of the race (a
    // deadlock victim, or one that finds the records) loads the winner's.
    // A deadlock victim may look before the winner's commit is done: it
    // tries again, and its read in the transaction waits for the winner.
    for (int attempt = 1; !ps; ++attempt) {
      if (create(s, opts, page_size, *frames)) {
        home = home_region::of(reinterpret_cast<std::uintptr_t>(frames->base()), opts.reservation_bytes, page_size);
        return frames;
      }
      ps = s.get("page_size");
      if (!ps && attempt == 50)
        throw store_error("database " + s.name() + ": creating the database failed " + std::to_string(attempt) +
                          " times (each time a deadlock victim)");
      if (!ps) std::this_thread::sleep_for(std::chrono::milliseconds(attempt));
    }
  }
  std::string format = page_access::format_name;
  if (auto f = s.get("format"); f && *f != format) {
    if (*f == format_hardware || *f == format_software)
      throw error("database " + s.name() + " was created by a program built in " +
                  (*f == format_hardware ? "hardware" : "software") + " mode; this program is built in " +
                  page_access::mode_name + " mode (QS_SWIZZLE), and the two lay objects out differently");
    if (*f == format_previous_hardware || *f == format_previous_software)
      throw error("database " + s.name() + " has format '" + *f +
                  "', written by an earlier qs; this qs reads format '" + format +
                  "' only (format 5 stores pointers to pages at home without mapping entries)");
    throw error("database " + s.name() + " has format '" + *f + "'; this qs reads format '" + format + "' only");
  }
  page_size = static_cast<std::uint32_t>(number(s, "page_size", 4096, 65536));
  if (page_size & (page_size - 1))
    throw corrupt_page(
        0, "database " + s.name() + ": its page size, " + std::to_string(page_size) + ", is not a power of two");
  s.set_page_size(page_size);
  // The preferred base, where the database's pointers need no rewriting;
  // when something else is there, anywhere else: pages are then relocated as
  // they come in.
  std::uintptr_t base = number(s, "base", 0, std::uint64_t{1} << 47);
  home =
      home_region::of(base, number(s, "reservation", std::uint64_t{page_size} * 16, std::uint64_t{1} << 46), page_size);
  try {
    return std::make_unique<frame_space>(base, opts.reservation_bytes, page_size, true, control);
  } catch (const error&) {
    return std::make_unique<frame_space>(base, opts.reservation_bytes, page_size, false, control);
  }
}

}  // namespace qs::detail
