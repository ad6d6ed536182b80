// qs-scale: one phase of the scale benchmark (scripts/scale runs them), each
// in a process of its own so that its peak resident memory is its own.
//
//   qs-scale create DIR BYTES POOL_BYTES   a database of about BYTES of
//       linked 64-byte items (each pointing to the next and to a random
//       earlier one, often on another page), a 24 KiB large object every
//       1,024 items, and a directory of every 64th item for random reads;
//       committed every 32 MiB of items
//   qs-scale read DIR POOL_BYTES READS cold|warm   READS random items read
//       through the directory in one transaction, with the store's files
//       dropped from the OS page cache first (cold) or read into it (warm)
//   qs-scale update DIR POOL_BYTES   one transaction that writes the items
//       of the list in order until it has dirtied twice as many pages as the
//       pool holds (dirty pages are evicted into the store transaction on
//       the way), then commits
//
// Each prints one line `SCALE phase=... key=value ...`.
#include <qs/qs.hpp>

#include <qs/cli/cli.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

// Persistent types live in a named namespace (schema-gen fills their
// descriptor slots from another file).
namespace scale {

struct Big {
  QS_PERSISTENT(Big)
  std::uint64_t words[3000];
};

struct Item {
  QS_PERSISTENT(Item)
  Item* next;
  Item* other;
  Big* big;
  std::uint64_t value;
  std::uint64_t pad[4];
};

// 1,024 directory entries: 8 KiB and a header, a large object of two pages.
struct Chunk {
  QS_PERSISTENT(Chunk)
  std::uint64_t used;
  Item* items[1024];
};

struct Top {
  QS_PERSISTENT(Top)
  std::uint64_t items;
  std::uint64_t chunks;
  Item* head;
  Chunk* chunk[4096];  // 4M directory entries: 256M items, 16 GB of items
};

}  // namespace scale

namespace {

using scale::Big;
using scale::Chunk;
using scale::Item;
using scale::Top;

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::uint64_t peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

// The store's data files (not the log), and what to do with each.
template <class F>
void for_each_file(const std::string& dir, bool data_only, F f) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      if (data_only && (n.rfind("log.", 0) == 0 || n.rfind("__db", 0) == 0)) continue;
      f(dir + "/" + n);
    }
    ::closedir(d);
  }
}

std::uint64_t data_bytes(const std::string& dir) {
  std::uint64_t total = 0;
  for_each_file(dir, true, [&](const std::string& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
  });
  return total;
}

// cold: every file of the store leaves the OS page cache; warm: every data
// file is read into it.
void set_os_cache(const std::string& dir, bool cold) {
  ::sync();
  for_each_file(dir, !cold, [&](const std::string& p) {
    int fd = ::open(p.c_str(), O_RDONLY);
    if (fd < 0) return;
    if (cold) {
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    } else {
      static char buf[1 << 20];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
    ::close(fd);
  });
}

qs::options options_with_pool(std::uint64_t pool_bytes) {
  qs::options o;
  o.pool_bytes = pool_bytes;
  return o;
}

// The process's resident memory now, by kind (kB): anonymous (the runtime's
// tables, Berkeley DB's cache), shared memory (the frames' pages), files.
std::string rss_now() {
  std::string out;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      unsigned long kb = 0;
      char name[64];
      if (std::sscanf(line, "Rss%63[^:]: %lu", name, &kb) == 2)
        out += std::string(" rss_") + name + "=" + std::to_string(kb * 1024);
    }
    std::fclose(f);
  }
  return out;
}

void print_common(const qs::database& db) {
  qs::statistics s = db.stats();
  std::printf(" pool_pages=%u resident_pages=%" PRIu64 " known_pages=%" PRIu64 " frame_memory=%" PRIu64
              " mappings=%" PRIu64 " frames=%s peak_rss=%" PRIu64 "%s\n",
              db.pool_pages(), s.resident_pages, s.known_pages, s.frame_memory_bytes, s.kernel_mappings,
              s.frame_control, peak_rss_bytes(), rss_now().c_str());
}

int create(const std::string& dir, std::uint64_t bytes, std::uint64_t pool_bytes) {
  auto db = qs::database::open(dir, options_with_pool(pool_bytes));
  const std::uint64_t items = bytes / sizeof(Item);
  if ((items + 63) / 64 > std::uint64_t{4096} * 1024)
    throw qs::error("qs-scale: the directory holds 16 GB of items at most, not " + std::to_string(bytes));
  const std::uint64_t batch = (std::uint64_t{32} << 20) / sizeof(Item);
  std::mt19937_64 rng(7);
  auto t0 = clock_type::now();
  std::uint64_t made = 0, most_mappings = 0;
  Item* last = nullptr;
  while (made < items) {
    qs::transaction tx(db);
    Top*& top = db.root<Top*>("top");
    if (!top) top = new (db) Top{};
    for (std::uint64_t end = std::min(items, made + batch); made < end; ++made) {
      Item* it = new (db) Item{};
      it->value = made;
      if (made) {
        std::uint64_t e = rng() % ((made + 63) / 64);  // a directory entry made before
        it->other = top->chunk[e / 1024]->items[e % 1024];
      } else {
        it->other = it;
      }
      if (last) last->next = it;
      else top->head = it;
      if (made % 1024 == 0) it->big = new (db) Big{};
      if (made % 64 == 0) {
        std::uint64_t slot = made / 64;
        if (slot % 1024 == 0) {
          top->chunk[slot / 1024] = new (db) Chunk{};
          ++top->chunks;
        }
        Chunk* c = top->chunk[slot / 1024];
        c->items[c->used++] = it;
      }
      last = it;
      top->items = made + 1;
    }
    tx.commit();
    most_mappings = std::max(most_mappings, db.stats().kernel_mappings);
  }
  double s = seconds_since(t0);
  std::uint64_t on_disk = data_bytes(dir);
  qs::statistics st = db.stats();
  std::printf("SCALE phase=create items=%" PRIu64 " item_bytes=%" PRIu64 " data_bytes=%" PRIu64
              " seconds=%.2f mb_per_s=%.1f pages_written=%" PRIu64 " commit_ms=%.0f most_mappings=%" PRIu64,
              items, items * sizeof(Item), on_disk, s, static_cast<double>(on_disk) / 1e6 / s, st.pages_written,
              static_cast<double>(st.commit_ns) / 1e6, most_mappings);
  print_common(db);
  return 0;
}

int read(const std::string& dir, std::uint64_t pool_bytes, std::uint64_t reads, bool cold) {
  set_os_cache(dir, cold);
  auto t_open = clock_type::now();
  auto db = qs::database::open(dir, options_with_pool(pool_bytes));
  const double open_ms = seconds_since(t_open) * 1e3;
  qs::transaction tx(db);
  const Top* top = db.root<Top*>("top");
  if (!top || top->chunks == 0) throw qs::error("qs-scale: " + dir + " holds no scale database");
  const std::uint64_t entries = (top->items + 63) / 64;
  std::mt19937_64 rng(11);
  std::uint64_t sum = 0;
  qs::statistics s0 = db.stats();
  auto t0 = clock_type::now();
  for (std::uint64_t i = 0; i < reads; ++i) {
    std::uint64_t e = rng() % entries;
    const Item* it = top->chunk[e / 1024]->items[e % 1024];
    sum += it->value + it->other->value;
  }
  double s = seconds_since(t0);
  qs::statistics s1 = db.stats();
  std::uint64_t faults = s1.read_faults - s0.read_faults;
  std::printf("SCALE phase=read os_cache=%s open_ms=%.2f reads=%" PRIu64 " seconds=%.3f read_faults=%" PRIu64
              " pages_fetched=%" PRIu64 " us_per_fault=%.2f fetch_us_per_fault=%.2f evictions=%" PRIu64
              " check=%" PRIu64,
              cold ? "cold" : "warm", open_ms, reads, s, faults, s1.pages_fetched - s0.pages_fetched,
              faults ? s * 1e6 / static_cast<double>(faults) : 0.0,
              faults ? static_cast<double>(s1.fetch_ns - s0.fetch_ns) / 1e3 / static_cast<double>(faults) : 0.0,
              s1.evictions - s0.evictions, sum % 1000);
  print_common(db);
  tx.commit();
  return 0;
}

int update(const std::string& dir, std::uint64_t pool_bytes) {
  set_os_cache(dir, false);
  auto db = qs::database::open(dir, options_with_pool(pool_bytes));
  const std::uint64_t target = 2 * std::uint64_t{db.pool_pages()};
  qs::transaction tx(db);
  const Top* top = db.root<Top*>("top");
  if (!top || !top->head) throw qs::error("qs-scale: " + dir + " holds no scale database");
  qs::statistics s0 = db.stats();
  auto t0 = clock_type::now();
  // The pages changed are counted here, by address, not by polling
  // db.stats(), which reads /proc/self/maps (kernel_mappings) at each call.
  std::uint64_t n = 0, dirtied = 0, page = 0;
  const std::uint32_t page_bytes = db.page_size();
  for (Item* it = top->head; it; it = it->next) {
    const std::uint64_t at = reinterpret_cast<std::uintptr_t>(it) / page_bytes;
    if (at != page) {
      if (dirtied == target) break;
      page = at;
      ++dirtied;
    }
    it->value += 1;
    ++n;
  }
  double body = seconds_since(t0);
  auto t1 = clock_type::now();
  tx.commit();
  double commit = seconds_since(t1);
  qs::statistics s1 = db.stats();
  std::uint64_t written = s1.pages_written - s0.pages_written;
  // Pages written by the commit itself (the rest went out with evictions).
  std::uint64_t at_commit = written - (s1.dirty_evictions - s0.dirty_evictions);
  std::printf("SCALE phase=update items=%" PRIu64 " dirtied_pages=%" PRIu64 " write_faults=%" PRIu64
              " pages_written=%" PRIu64 " dirty_evictions=%" PRIu64
              " body_seconds=%.3f commit_seconds=%.3f us_per_dirtied_page=%.2f"
              " commit_us_per_page=%.2f log_bytes=%" PRIu64,
              n, dirtied, s1.write_faults - s0.write_faults, written, s1.dirty_evictions - s0.dirty_evictions, body,
              commit, dirtied ? (body + commit) * 1e6 / static_cast<double>(dirtied) : 0.0,
              at_commit ? commit * 1e6 / static_cast<double>(at_commit) : 0.0, s1.log_bytes - s0.log_bytes);
  print_common(db);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, how;
  std::uint64_t bytes = 0, pool_bytes = 0, reads = 0;
  qs::cli::app app("One phase of the scale benchmark (scripts/scale runs them).\n", "qs-scale");
  app.require_subcommand(1);
  const std::uint64_t tib = std::uint64_t{1} << 40;
  auto pool = [&](qs::cli::command* phase) {
    phase->add_option("POOL_BYTES", pool_bytes, "the qs buffer pool in bytes, 1 to 1099511627776 (1 TiB)")
        ->type_name("")
        ->required()
        ->check(qs::cli::whole(1, tib));
  };
  qs::cli::command* create_phase = app.add_subcommand("create", "a database of about BYTES of linked 64-byte items");
  create_phase->add_option("DIR", dir, "the database directory")->type_name("")->required();
  create_phase->add_option("BYTES", bytes, "the items' bytes, 1 to 1099511627776 (1 TiB)")
      ->type_name("")
      ->required()
      ->check(qs::cli::whole(1, tib));
  pool(create_phase);
  qs::cli::command* read_phase = app.add_subcommand("read", "READS random items read in one transaction");
  read_phase->add_option("DIR", dir, "the database directory")->type_name("")->required();
  pool(read_phase);
  read_phase->add_option("READS", reads, "1 to 1000000000")
      ->type_name("")
      ->required()
      ->check(qs::cli::whole(1, 1000000000));
  read_phase->add_option("OS_CACHE", how, "the store's files dropped from the OS page cache first, or read into it")
      ->type_name("cold|warm")
      ->required()
      ->check(qs::cli::one_of({"cold", "warm"}));
  qs::cli::command* update_phase = app.add_subcommand("update", "one transaction that dirties twice the pool's pages");
  update_phase->add_option("DIR", dir, "the database directory")->type_name("")->required();
  pool(update_phase);
  if (auto status = app.parse(argc, argv)) return *status;
  try {
    if (*create_phase) return create(dir, bytes, pool_bytes);
    if (*read_phase) return read(dir, pool_bytes, reads, how == "cold");
    return update(dir, pool_bytes);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qs-scale: %s\n", e.what());
    return 1;
  }
}
