// qs_fault_bench: what a fault, a write fault and a dirtied page cost in qs,
// beside the bare operations they are made of, measured in the same run.
//
//   qs_fault_bench [--pages N] [--dir DIR]
//
// Each qs figure is the time of a pass over N pages (one object filling each
// 8 KiB page) divided by N:
//   read fault     first touch of a page whose record is in Berkeley DB's
//                  cache: SIGSEGV, lookup, get, checksum, copy, mmap
//                  (and in the database opened again after its clean
//                  close, files in the OS cache: Berkeley DB reads them
//                  mapped, or, with options::map_store_files off, through
//                  its cache, which starts empty)
//                  (prefetch off; then again with qs's default prefetch,
//                  where most pages come in read ahead, without a fault;
//                  and, prefetch off, of 256 pages of 384 pointers each to
//                  pages not seen yet, as on a page of the shuffled tree
//                  of scripts/peers: the mapping object's 384 entries)
//   new page       a Slab allocated in a transaction (a new page each): the
//                  page built and shown (the commit is not timed)
//   write fault    first write in a transaction to a resident page: SIGSEGV,
//                  before-image copy, mprotect
//   read, then write  a page read in by a fault, then written at once, as an
//                  update traversal does (the database opened again, files
//                  in the OS cache): two faults, or one where pages come
//                  writable as they are read in (options::writable_on_arrival;
//                  the floor is the clean open's read fault)
//   commit/page    commit of N pages with 8 changed bytes each: diff,
//                  checksum, partial put, mprotect (non-durable commit, so
//                  that the disk's flush time does not hide the CPU cost)
// The floor: SIGSEGV delivery plus mprotect, SIGSEGV plus an mmap of a memfd
// page, the mechanism qs's frames use where the kernel offers it (a
// userfault delivered as SIGBUS, answered by UFFDIO_COPY of the page into
// memory not yet allocated), malloc plus memset of 8 KiB, an mprotect, an 8 KiB memcpy, a CRC-32C of 8 KiB, a cached
// Berkeley DB get of an 8 KiB record and a 40-byte partial put into one, with 64 KiB B-tree pages: a page stored as one
// record, as qs stored it before it kept records in 1 KiB pieces (a partial put into a piece compares and logs 1 KiB,
// not 8, which is why qs's commit can come in under this floor).
#include "bench_dir.hpp"

#include <qs/qs.hpp>

#include <qs/cli/cli.hpp>

#include <db_cxx.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <qs/format/checksum.hpp>

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::uint32_t page_size = 8192;

double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

struct Slab {
  QS_PERSISTENT(Slab)
  std::uint64_t words[(page_size - 24) / 8];
};
const qs::member_record slab_members[] = {
    {qs::member_kind::array, qs::number_kind::uint, 0, 8168, 1021, 8, 0, 0, "words", "unsigned long[1021]",
     "unsigned long"},
};
const qs::type_descriptor slab_desc{"Slab", sizeof(Slab), alignof(Slab), nullptr, 0, nullptr, 0, slab_members, 1};

// A page of 384 pointers to Slabs on other pages (the shuffled tree of
// scripts/peers has as many on each of its pages): its mapping object
// names 384 pages.
constexpr std::uint32_t fan_out = 384;
struct Fan {
  QS_PERSISTENT(Fan)
  Slab* to[fan_out];
  std::uint64_t pad[(page_size - 24) / 8 - fan_out];
};
const qs::member_record fan_members[] = {
    {qs::member_kind::array, qs::number_kind::none, 0, fan_out * 8, fan_out, 8, 0, 0, "to", "Slab*[384]", "Slab*"},
    {qs::member_kind::array, qs::number_kind::uint, fan_out * 8, sizeof(Fan::pad), sizeof(Fan::pad) / 8, 8, 0, 0, "pad",
     "unsigned long[637]", "unsigned long"},
};
// The offsets of n pointer words from an object's start.
std::vector<std::uint32_t> pointer_words(std::uint32_t n) {
  std::vector<std::uint32_t> v;
  for (std::uint32_t i = 0; i < n; ++i) v.push_back(i * 8);
  return v;
}
const std::vector<std::uint32_t> fan_pointers = pointer_words(fan_out);
const qs::type_descriptor fan_desc{
    "Fan", sizeof(Fan), alignof(Fan), fan_pointers.data(), fan_out, nullptr, 0, fan_members, 2};

// Where the fans are: one page of pointers to them.
constexpr std::uint32_t fan_pages = 256;
struct Fans {
  QS_PERSISTENT(Fans)
  Fan* at[fan_pages];
};
const qs::member_record fans_members[] = {
    {qs::member_kind::array, qs::number_kind::none, 0, fan_pages * 8, fan_pages, 8, 0, 0, "at", "Fan*[256]", "Fan*"},
};
const std::vector<std::uint32_t> fans_pointers = pointer_words(fan_pages);
const qs::type_descriptor fans_desc{
    "Fans", sizeof(Fans), alignof(Fans), fans_pointers.data(), fan_pages, nullptr, 0, fans_members, 1};

// --- the floor -------------------------------------------------------------

char* bare_region;
int bare_fd = -1;
bool bare_use_mmap = false;

// Installs `handler` for `sig` (with siginfo); returns what was there, for
// putting it back.
struct sigaction install_handler(int sig, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction sa {};
  struct sigaction old {};
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, &old);
  return old;
}

void bare_handler(int, siginfo_t* si, void*) {
  // Pages counted from the region's start: mmap aligns it to 4 KiB only.
  const auto base = reinterpret_cast<std::uintptr_t>(bare_region);
  auto addr = base + (reinterpret_cast<std::uintptr_t>(si->si_addr) - base) / page_size * page_size;
  if (bare_use_mmap) {
    off_t off = static_cast<off_t>(addr - reinterpret_cast<std::uintptr_t>(bare_region));
    mmap(reinterpret_cast<void*>(addr), page_size, PROT_READ, MAP_SHARED | MAP_FIXED, bare_fd, off);
  } else {
    mprotect(reinterpret_cast<void*>(addr), page_size, PROT_READ | PROT_WRITE);
  }
}

double bare_fault_ns(int n, bool use_mmap) {
  const struct sigaction old = install_handler(SIGSEGV, bare_handler);
  std::size_t bytes = std::size_t{page_size} * n;
  bare_region = static_cast<char*>(mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  bare_use_mmap = use_mmap;
  if (use_mmap) {
    bare_fd = memfd_create("bench", 0);
    if (ftruncate(bare_fd, static_cast<off_t>(bytes)) != 0) std::abort();
    // Populate the memfd, as a buffer pool in use is.
    void* all = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bare_fd, 0);
    std::memset(all, 1, bytes);
    munmap(all, bytes);
  } else {
    mprotect(bare_region, bytes, PROT_READ);  // touch memory first so that page allocation is not timed
    for (std::size_t i = 0; i < bytes; i += page_size) (void)*static_cast<volatile char*>(bare_region + i);
    mprotect(bare_region, bytes, PROT_NONE);
  }
  auto t0 = clock_type::now();
  std::uint64_t sum = 0;
  for (int i = 0; i < n; ++i) sum += *reinterpret_cast<volatile char*>(bare_region + std::size_t{page_size} * i);
  double ns = ns_since(t0) / n;
  munmap(bare_region, bytes);
  if (bare_fd >= 0) close(bare_fd), bare_fd = -1;
  sigaction(SIGSEGV, &old, nullptr);
  (void)sum;
  return ns;
}

// A userfault as SIGBUS, answered with UFFDIO_COPY of a page: nanoseconds
// per page, or 0 when the kernel does not offer it.
int userfault_fd = -1;
std::byte* userfault_source;

void userfault_handler(int, siginfo_t* si, void*) {
  const auto base = reinterpret_cast<std::uintptr_t>(bare_region);
  auto addr = base + (reinterpret_cast<std::uintptr_t>(si->si_addr) - base) / page_size * page_size;
  uffdio_copy c{};
  c.dst = addr;
  c.src = reinterpret_cast<std::uintptr_t>(userfault_source);
  c.len = page_size;
  c.mode = UFFDIO_COPY_MODE_WP;
  if (ioctl(userfault_fd, UFFDIO_COPY, &c) != 0) std::abort();
}

double userfault_copy_ns(int n) {
  userfault_fd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
  if (userfault_fd < 0) return 0;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_SIGBUS | UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
  std::size_t bytes = std::size_t{page_size} * n;
  int fd = memfd_create("bench", 0);
  double ns = 0;
  if (ioctl(userfault_fd, UFFDIO_API, &api) == 0 && fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    bare_region = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    uffdio_register r{};
    r.range = {reinterpret_cast<std::uintptr_t>(bare_region), bytes};
    r.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
    if (bare_region != MAP_FAILED && ioctl(userfault_fd, UFFDIO_REGISTER, &r) == 0) {
      userfault_source = static_cast<std::byte*>(::operator new[](page_size, std::align_val_t{4096}));
      std::memset(userfault_source, 1, page_size);
      const struct sigaction old = install_handler(SIGBUS, userfault_handler);
      auto t0 = clock_type::now();
      std::uint64_t sum = 0;
      for (int i = 0; i < n; ++i) sum += *reinterpret_cast<volatile char*>(bare_region + std::size_t{page_size} * i);
      ns = ns_since(t0) / n;
      sigaction(SIGBUS, &old, nullptr);
      ::operator delete[](userfault_source, std::align_val_t{4096});
      (void)sum;
    }
    if (bare_region != MAP_FAILED) munmap(bare_region, bytes);
  }
  if (fd >= 0) close(fd);
  close(userfault_fd);
  return ns;
}

// A new page's memory as a program gets it without qs: malloc and memset of
// 8 KiB, fresh from the kernel (each block freed only at the end).
double malloc_memset_ns(int n) {
  std::vector<void*> blocks(static_cast<std::size_t>(n));
  auto t0 = clock_type::now();
  for (void*& b : blocks) {
    b = std::malloc(page_size - 24);
    std::memset(b, 0, page_size - 24);
    asm volatile("" ::"r"(b) : "memory");
  }
  double ns = ns_since(t0) / n;
  for (void* b : blocks) std::free(b);
  return ns;
}

double memcpy_ns(int n) {
  std::vector<char> a(page_size * 64, 1), b(page_size * 64, 2);
  auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i) {
    std::size_t off = std::size_t{page_size} * (i % 64);
    std::memcpy(b.data() + off, a.data() + off, page_size);
    asm volatile("" ::: "memory");
  }
  return ns_since(t0) / n;
}

double crc_ns(int n) {
  std::vector<std::byte> a(page_size, std::byte{7});
  std::uint32_t c = 0;
  auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i) c = qs::detail::crc32c(c, a.data(), page_size);
  double ns = ns_since(t0) / n;
  if (c == 42) std::puts("");
  return ns;
}

double mprotect_ns(int n) {
  std::size_t bytes = std::size_t{page_size} * 64;
  char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  std::memset(p, 1, bytes);
  auto t0 = clock_type::now();
  for (int i = 0; i < n; ++i)
    mprotect(p + std::size_t{page_size} * (i % 64), page_size, (i / 64) % 2 ? PROT_READ | PROT_WRITE : PROT_READ);
  double ns = ns_since(t0) / n;
  munmap(p, bytes);
  return ns;
}

struct bdb_costs {
  double get, partial_put;
};

bdb_costs bdb_ns(const std::string& dir, int n) {
  std::filesystem::create_directories(dir);
  DbEnv env(0);
  env.set_cachesize(0, 64u << 20, 1);
  env.open(dir.c_str(), DB_CREATE | DB_INIT_TXN | DB_INIT_LOG | DB_INIT_LOCK | DB_INIT_MPOOL | DB_PRIVATE | DB_THREAD,
           0600);
  bdb_costs c{};
  {
    Db db(&env, 0);
    db.set_pagesize(65536);
    db.open(nullptr, "pages.db", nullptr, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT | DB_THREAD, 0600);
    std::vector<char> rec(page_size + 32, 'x');
    auto key_of = [](std::uint64_t k, unsigned char* b) {
      for (int i = 7; i >= 0; --i, k >>= 8) b[i] = static_cast<unsigned char>(k);
    };
    for (int i = 0; i < n; ++i) {
      unsigned char k[8];
      key_of(i, k);
      Dbt key(k, 8), data(rec.data(), static_cast<std::uint32_t>(rec.size()));
      db.put(nullptr, &key, &data, DB_AUTO_COMMIT);
    }
    std::vector<char> out(page_size + 32);
    auto get_all = [&] {
      for (int i = 0; i < n; ++i) {
        unsigned char k[8];
        key_of(i, k);
        Dbt key(k, 8), data;
        data.set_data(out.data());
        data.set_ulen(static_cast<std::uint32_t>(out.size()));
        data.set_flags(DB_DBT_USERMEM);
        DbTxn* txn;
        env.txn_begin(nullptr, &txn, 0);
        db.get(txn, &key, &data, 0);
        txn->commit(DB_TXN_NOSYNC);
      }
    };
    get_all();
    auto t0 = clock_type::now();
    get_all();
    c.get = ns_since(t0) / n;
    // A commit's work per page: a 40-byte partial put, in one transaction.
    t0 = clock_type::now();
    DbTxn* txn;
    env.txn_begin(nullptr, &txn, 0);
    for (int i = 0; i < n; ++i) {
      unsigned char k[8];
      key_of(i, k);
      Dbt key(k, 8), data(rec.data(), 40);
      data.set_flags(DB_DBT_PARTIAL);
      data.set_doff(0);
      data.set_dlen(40);
      db.put(txn, &key, &data, 0);
    }
    txn->commit(DB_TXN_WRITE_NOSYNC);
    c.partial_put = ns_since(t0) / n;
    db.close(0);
  }
  env.close(0);
  return c;
}

// --- qs --------------------------------------------------------------------

struct qs_costs {
  double new_page, read_fault, write_fault, commit_per_page, log_bytes_per_page;
  std::uint64_t mappings;  // the process's kernel mappings with every page resident
  const char* frames;
};

qs_costs measure_qs(const std::string& dir, int n, std::uint32_t prefetch,
                    std::vector<const void*>* addresses = nullptr) {
  qs::options o;
  o.pool_pages = static_cast<std::uint32_t>(n + 64);
  o.prefetch_pages = prefetch;
  o.durable = false;
  o.reservation_bytes = std::uint64_t{1} << 32;
  auto db = qs::database::open(dir, o);
  std::vector<Slab*> slabs(static_cast<std::size_t>(n));
  qs_costs c{};
  {
    qs::transaction tx(db);
    auto t0 = clock_type::now();
    for (Slab*& s : slabs) s = new (db) Slab;
    c.new_page = ns_since(t0) / n;
    tx.commit();
  }
  std::uint64_t sum = 0;
  // Warm Berkeley DB's cache with one pass, then drop qs's pool.
  db.release_cache();
  {
    qs::transaction tx(db);
    for (Slab* s : slabs) sum += *static_cast<volatile std::uint64_t*>(&s->words[0]);
    tx.commit();
  }
  db.release_cache();
  {
    qs::transaction tx(db);
    auto t0 = clock_type::now();
    for (Slab* s : slabs) sum += *static_cast<volatile std::uint64_t*>(&s->words[0]);
    c.read_fault = ns_since(t0) / n;
    for (Slab* s : slabs) s->words[1] += 1;  // a first write transaction warms the before-image memory
    tx.commit();
  }
  {
    qs::transaction tx(db);
    auto t0 = clock_type::now();
    for (Slab* s : slabs) s->words[1] += 1;
    c.write_fault = ns_since(t0) / n;
    auto before = db.stats();
    t0 = clock_type::now();
    tx.commit();
    c.commit_per_page = ns_since(t0) / n;
    c.log_bytes_per_page = double(db.stats().log_bytes - before.log_bytes) / n;
    c.mappings = db.stats().kernel_mappings;
    c.frames = db.stats().frame_control;
  }
  if (sum == 42) std::puts("");
  if (addresses) addresses->assign(slabs.begin(), slabs.end());
  return c;
}

// The options of a database opened again to touch `pages` pages: a pool
// that holds them, prefetch off.
qs::options reopen_options(std::size_t pages) {
  qs::options o;
  o.pool_pages = static_cast<std::uint32_t>(pages + 64);
  o.prefetch_pages = 0;
  o.reservation_bytes = std::uint64_t{1} << 32;
  return o;
}

// The first touch of the pages at `addresses` (the Slabs measure_qs made, at
// their home frames) in the database opened again after its clean close,
// its files in the OS cache: Berkeley DB reads them mapped, or through its
// cache (options::map_store_files). Prefetch off: ns per page.
double measure_clean_open(const std::string& dir, const std::vector<const void*>& addresses, bool mapped) {
  qs::options o = reopen_options(addresses.size());
  o.map_store_files = mapped;
  auto db = qs::database::open(dir, o);
  qs::transaction tx(db);
  std::uint64_t sum = 0;
  auto t0 = clock_type::now();
  for (const void* s : addresses) sum += *static_cast<const volatile std::uint64_t*>(s);
  const double ns = ns_since(t0) / static_cast<double>(addresses.size());
  tx.commit();
  if (sum == 42) std::puts("");
  return ns;
}

// A read, then a write, of each page at `addresses` in the database
// opened again after its clean close, files in the OS cache, prefetch off,
// pages coming writable as they are read in or not
// (options::writable_on_arrival): ns per page, and the share of the pages
// that came writable.
std::pair<double, double> measure_read_then_write(const std::string& dir, const std::vector<const void*>& addresses,
                                                  bool on) {
  qs::options o = reopen_options(addresses.size());
  o.writable_on_arrival = on;
  o.durable = false;
  auto db = qs::database::open(dir, o);
  qs::transaction tx(db);
  std::uint64_t sum = 0;
  const auto s0 = db.stats();
  auto t0 = clock_type::now();
  for (const void* a : addresses) {
    auto* s = static_cast<Slab*>(const_cast<void*>(a));
    sum += *static_cast<volatile std::uint64_t*>(&s->words[0]);
    s->words[1] += 1;
  }
  const double n = static_cast<double>(addresses.size());
  const double ns = ns_since(t0) / n;
  const double share = static_cast<double>(db.stats().writable_on_arrival - s0.writable_on_arrival) / n;
  tx.commit();
  if (sum == 42) std::puts("");
  return {ns, share};
}

// The first touch of 256 pages of 384 pointers each to n Slabs on other
// pages, in a database opened afresh (the pages they name are seen for the
// first time), prefetch off: ns per page.
double measure_fans(const std::string& dir, int n) {
  qs::options o;
  o.pool_pages = static_cast<std::uint32_t>(n + fan_pages + 64);
  o.prefetch_pages = 0;
  o.durable = false;
  o.reservation_bytes = std::uint64_t{1} << 32;
  {
    auto db = qs::database::open(dir, o);
    qs::transaction tx(db);
    std::vector<Slab*> slabs;
    for (int i = 0; i < n; ++i) slabs.push_back(new (db) Slab);
    Fans* fans = new (db) Fans;
    std::uint64_t k = 1;
    for (Fan*& fan : fans->at) {
      fan = new (db) Fan;
      for (Slab*& to : fan->to) {
        k = k * 6364136223846793005ull + 1442695040888963407ull;
        to = slabs[(k >> 33) % static_cast<std::uint64_t>(n)];
      }
    }
    db.root<Fans*>("fans") = fans;
    tx.commit();
  }
  auto db = qs::database::open(dir, o);
  qs::transaction tx(db);
  const Fans* fans = db.root<Fans*>("fans");
  std::uint64_t sum = reinterpret_cast<std::uintptr_t>(fans->at[0]);  // the index's page comes in
  auto t0 = clock_type::now();
  for (const Fan* f : fans->at) sum += *static_cast<const volatile std::uint64_t*>(&f->pad[0]);
  const double ns = ns_since(t0) / fan_pages;
  tx.commit();
  if (sum == 42) std::puts("");
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 4000;
  std::string dir;
  qs::cli::app app(
      "What a fault, a write fault and a dirtied page cost in qs, beside the bare\n"
      "operations they are made of.\n",
      "qs_fault_bench");
  app.add_option("--pages", n, "pages of 8 KiB per pass, 1 to 250000 (default 4000)")
      ->type_name("N")
      ->check(qs::cli::whole(1, 250000));
  app.add_option("--dir", dir, "where the databases go (default: a temporary directory, removed)")->type_name("DIR");
  if (auto status = app.parse(argc, argv)) return *status;
  const qs::bench::bench_dir work(dir, "qs_fault_bench");
  dir = work.path();
  qs::register_type<Slab>(slab_desc);
  qs::register_type<Fan>(fan_desc);
  qs::register_type<Fans>(fans_desc);

  double sig_mprotect = bare_fault_ns(n, false);
  double sig_mmap = bare_fault_ns(n, true);
  double userfault_copy = userfault_copy_ns(n);
  double fresh = malloc_memset_ns(n);
  double copy = memcpy_ns(n * 10);
  double crc = crc_ns(n * 10);
  double protect = mprotect_ns(n);
  bdb_costs bdb = bdb_ns(dir + "/bare", n);
  double get = bdb.get;
  std::vector<const void*> slabs;
  qs_costs q = measure_qs(dir + "/qs", n, 0, &slabs);
  double mapped_fault = measure_clean_open(dir + "/qs", slabs, true);
  double unmapped_fault = measure_clean_open(dir + "/qs", slabs, false);
  const auto [then_write_off, share_off] = measure_read_then_write(dir + "/qs", slabs, false);
  const auto [then_write_on, share_on] = measure_read_then_write(dir + "/qs", slabs, true);
  qs_costs qp = measure_qs(dir + "/qs-prefetch", n, qs::options{}.prefetch_pages);
  double fan_fault = measure_fans(dir + "/qs-fans", n);

  std::printf("qs fault costs, %d pages of %u bytes, one run\n\n", n, page_size);
  std::printf("floor                                   ns/op\n");
  std::printf("  SIGSEGV + mprotect                 %8.0f\n", sig_mprotect);
  std::printf("  SIGSEGV + mmap of a memfd page     %8.0f\n", sig_mmap);
  if (userfault_copy > 0) std::printf("  userfault SIGBUS + UFFDIO_COPY     %8.0f\n", userfault_copy);
  std::printf("  malloc + memset 8 KiB, fresh       %8.0f\n", fresh);
  std::printf("  memcpy 8 KiB                       %8.0f\n", copy);
  std::printf("  CRC-32C 8 KiB                      %8.0f\n", crc);
  std::printf("  mprotect of one page               %8.0f\n", protect);
  std::printf("  Berkeley DB get, cached, 8 KiB     %8.0f\n", get);
  std::printf("  Berkeley DB partial put, 40 bytes  %8.0f   (n in one transaction)\n", bdb.partial_put);
  // The read floor of the mechanism the frames use: the signal with the
  // page's copy into its memory, and the record's get.
  const bool userfault = std::strcmp(q.frames, "userfault") == 0 && userfault_copy > 0;
  double read_floor = (userfault ? userfault_copy : sig_mmap + copy) + get;
  const char* read_floor_says = userfault ? "floor: SIGBUS+UFFDIO_COPY, get" : "floor: SIGSEGV+mmap, get, memcpy";
  double write_floor = sig_mprotect + copy;
  std::printf("\nqs                                      ns/op   floor   ratio\n");
  std::printf("  new page (one 8 KiB object)        %8.0f %7.0f %7.2f   floor: malloc + memset\n", q.new_page, fresh,
              q.new_page / fresh);
  std::printf("  read fault (page in BDB cache)     %8.0f %7.0f %7.2f   %s\n", q.read_fault, read_floor,
              q.read_fault / read_floor, read_floor_says);
  std::printf("  read fault, clean open, mapped     %8.0f %7.0f %7.2f   a new process, files in the OS cache\n",
              mapped_fault, read_floor, mapped_fault / read_floor);
  std::printf("  read fault, clean open, cached     %8.0f %7.0f %7.2f   the same, map_store_files = false\n",
              unmapped_fault, read_floor, unmapped_fault / read_floor);
  std::printf("  read, prefetch on (per page)       %8.0f %7.0f %7.2f   (options::prefetch_pages = %u)\n",
              qp.read_fault, read_floor, qp.read_fault / read_floor, qs::options{}.prefetch_pages);
  std::printf("  read fault, 384 pointers out       %8.0f %7.0f %7.2f   a page naming 384 others, first seen\n",
              fan_fault, read_floor, fan_fault / read_floor);
  std::printf("  write fault (resident page)        %8.0f %7.0f %7.2f   floor: SIGSEGV+mprotect, memcpy\n",
              q.write_fault, write_floor, q.write_fault / write_floor);
  std::printf(
      "  read, then write, two faults       %8.0f %7.0f %7.2f   clean open, writable_on_arrival false (%.0f%%)\n",
      then_write_off, mapped_fault, then_write_off / mapped_fault, 100 * share_off);
  std::printf("  read, then write, writable at once %8.0f %7.0f %7.2f   the same, true: %.0f%% came writable\n",
              then_write_on, mapped_fault, then_write_on / mapped_fault, 100 * share_on);
  double commit_floor = crc + bdb.partial_put + protect;
  std::printf("  commit per dirtied page            %8.0f %7.0f %7.2f   floor: CRC-32C, partial put, mprotect\n",
              q.commit_per_page, commit_floor, q.commit_per_page / commit_floor);
  std::printf("  log bytes per dirtied page (8 changed) %6.0f\n", q.log_bytes_per_page);
  std::printf("\nframes: %s; the process's kernel mappings with all %d pages resident: %llu\n", q.frames, n,
              static_cast<unsigned long long>(q.mappings));
  return 0;
}
