// read_around (qs/bdb/read_around.hpp): a pread that reads the block
// around a page-cache miss, and Berkeley DB's once installed. It returns
// what pread would, brings the miss's block into the page cache (and no
// more), starts nothing on a read the cache holds, stops reading around
// for a reader whose blocks go unused, and is what Berkeley DB reads
// through once installed.
#include <catch2/catch.hpp>

#include <qs/bdb/read_around.hpp>

#include "temp_dir.hpp"

#include <db_cxx.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t window = std::size_t{1} << 20;
constexpr std::size_t file_size = 64 * window;

std::uint8_t pattern(std::size_t offset) { return static_cast<std::uint8_t>((offset * 2654435761u) >> 13); }

// The file's 4 KiB pages in [from, to) that the page cache holds.
std::size_t resident(int fd, std::size_t from, std::size_t to) {
  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(map != MAP_FAILED);
  std::vector<unsigned char> in((to - from) / 4096);
  REQUIRE(::mincore(static_cast<char*>(map) + from, to - from, in.data()) == 0);
  ::munmap(map, file_size);
  std::size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// A file of file_size patterned bytes in a directory of its own, out of
// the page cache; `ready` false (with a warning) where the page cache keeps
// it (tmpfs). The descriptor is closed with it.
struct cold_file {
  qs_test::temp_dir dir;
  int fd = -1;
  std::vector<std::uint8_t> bytes;
  bool ready = false;

  cold_file() {
    const std::string path = dir.sub("file");
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    bytes.resize(file_size);
    for (std::size_t i = 0; i < file_size; ++i) bytes[i] = pattern(i);
    REQUIRE(::pwrite(fd, bytes.data(), file_size, 0) == static_cast<ssize_t>(file_size));
    REQUIRE(::fsync(fd) == 0);
    ready = drop() == 0;
    if (!ready)
      WARN("the page cache keeps " << path << " after POSIX_FADV_DONTNEED (tmpfs?): read-around not observable here");
  }
  // Drops the file from the page cache and returns how many of its pages
  // stay. A read around started earlier may still be under way: its pages
  // are not counted by mincore until they arrive, and POSIX_FADV_DONTNEED
  // passes over them, so they would turn up later. Reading the whole file
  // first waits for them.
  std::size_t drop() {
    std::vector<std::uint8_t> all(file_size);
    REQUIRE(::pread(fd, all.data(), file_size, 0) == static_cast<ssize_t>(file_size));
    REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    return resident(fd, 0, file_size);
  }
  ~cold_file() {
    if (fd >= 0) ::close(fd);
  }
  cold_file(const cold_file&) = delete;
  cold_file& operator=(const cold_file&) = delete;
};

}  // namespace

TEST_CASE("read_around: reads what pread reads, and a read that misses the page cache brings in its block") {
  cold_file file;
  if (!file.ready) return;
  const int fd = file.fd;
  const std::vector<std::uint8_t>& bytes = file.bytes;
  qs::detail::read_around around(window);
  REQUIRE(around.window() == window);

  // A miss: the bytes, and the whole aligned block around them, no more.
  const auto before = around.counts();
  std::vector<std::uint8_t> got(16384);
  const std::size_t at = 3 * window + 40960;
  CHECK(around.pread(fd, got.data(), got.size(), static_cast<std::int64_t>(at)) == static_cast<long>(got.size()));
  CHECK(std::memcmp(got.data(), bytes.data() + at, got.size()) == 0);
  auto after = around.counts();
  CHECK(after.reads == before.reads + 1);
  CHECK(after.blocks_started == before.blocks_started + 1);
  // The block's read was started, not waited for: wait for it (no timing
  // is asserted; a block that never comes fails after a minute).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (resident(fd, 3 * window, 4 * window) < window / 4096 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(resident(fd, 3 * window, 4 * window) == window / 4096);
  CHECK(resident(fd, 5 * window, 6 * window) == 0);

  // A read the page cache holds starts nothing.
  CHECK(around.pread(fd, got.data(), got.size(), static_cast<std::int64_t>(3 * window + 700)) ==
        static_cast<long>(got.size()));
  CHECK(std::memcmp(got.data(), bytes.data() + 3 * window + 700, got.size()) == 0);
  CHECK(around.counts().blocks_started == after.blocks_started);

  // The end of the file, and errors, as pread gives them.
  CHECK(around.pread(fd, got.data(), got.size(), static_cast<std::int64_t>(file_size - 100)) == 100);
  CHECK(std::memcmp(got.data(), bytes.data() + file_size - 100, 100) == 0);
  CHECK(around.pread(fd, got.data(), got.size(), static_cast<std::int64_t>(file_size)) == 0);
  ::close(fd);
  file.fd = -1;
  errno = 0;
  CHECK(around.pread(fd, got.data(), got.size(), 0) == -1);
  CHECK(errno == EBADF);
}

TEST_CASE("read_around: a reader whose blocks go unused stops reading around, and starts again once they are used") {
  cold_file file;
  if (!file.ready) return;
  const int fd = file.fd;
  const std::vector<std::uint8_t>& bytes = file.bytes;
  qs::detail::read_around around(window);
  std::vector<std::uint8_t> got(16384);
  auto read_block = [&](std::size_t block, std::size_t at) {
    const std::size_t offset = block * window + at;
    REQUIRE(around.pread(fd, got.data(), got.size(), static_cast<std::int64_t>(offset)) ==
            static_cast<long>(got.size()));
    REQUIRE(std::memcmp(got.data(), bytes.data() + offset, got.size()) == 0);
  };
  // 40 blocks read once each, scattered: 16 recent blocks, then 8 more that
  // push out unused ones, and no more.
  for (std::size_t i = 0; i < 40; ++i) read_block((i * 37) % 64, 8192);
  auto c = around.counts();
  CHECK(c.blocks_started == 24);
  CHECK(c.blocks_unused == 8);
  // A reader that comes back to its blocks: only probes read around at
  // first (every 256th miss), and each probe that is used counts for it,
  // until misses read around again. Each miss here is a new 16 KiB of a
  // block, so the blocks' reads are misses that land in a recent block.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  for (std::size_t round = 0; round < 64 && around.counts().blocks_started - c.blocks_started < 40; ++round)
    for (std::size_t block = 0; block < 64; ++block) {
      ::posix_fadvise(fd, static_cast<off_t>(block * window), static_cast<off_t>(window), POSIX_FADV_DONTNEED);
      read_block(block, 16384 * (round % 60));
      read_block(block, 16384 * (round % 60) + 4096);
    }
  CHECK(around.counts().blocks_started - c.blocks_started >= 40);
}

// Runs `reads` in a child whose kernel refuses cachestat (ENOSYS, as
// before Linux 6.5) and, if `nowait_too`, preadv2 (EOPNOTSUPP), through a
// seccomp filter, which cannot be undone; the child's exit status is what
// `reads` returns, 2 where no filter can be set.
template <class Reads>
int refused(bool nowait_too, Reads reads) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    constexpr unsigned cachestat_call = 451;
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, cachestat_call, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_preadv2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, nowait_too ? SECCOMP_RET_ERRNO | (EOPNOTSUPP & SECCOMP_RET_DATA) : SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      ::_exit(2);
    ::_exit(reads());
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

TEST_CASE(
    "read_around: where the kernel has no cachestat the bytes still come; where it refuses RWF_NOWAIT too, no "
    "block is read around") {
  cold_file file;
  if (!file.ready) return;
  const int fd = file.fd;
  const std::vector<std::uint8_t>& bytes = file.bytes;
  // The bytes come either way; with neither call no block is read around.
  // (Without cachestat a miss that the device answers at once can pass for
  // a hit: how many blocks RWF_NOWAIT starts is not asserted.)
  for (const bool nowait_too : {false, true}) {
    CAPTURE(nowait_too);
    REQUIRE(file.drop() == 0);
    const int status = refused(nowait_too, [&] {
      qs::detail::read_around around(window);
      std::vector<std::uint8_t> got(16384);
      for (std::size_t block : {3, 9}) {
        const std::size_t at = block * window + 4096;
        if (around.pread(fd, got.data(), got.size(), static_cast<std::int64_t>(at)) != static_cast<long>(got.size()) ||
            std::memcmp(got.data(), bytes.data() + at, got.size()) != 0)
          return 3;
      }
      if (!nowait_too) return 0;
      return around.counts().blocks_started == 0 && resident(fd, 9 * window + 65536, 10 * window) == 0 ? 0 : 4;
    });
    if (status == 2) {
      WARN("no seccomp filter here: the refusal of cachestat and RWF_NOWAIT was not tried");
      return;
    }
    CHECK(status == 0);
  }
}

TEST_CASE("read_around: Berkeley DB reads its pages through it once it is installed") {
  REQUIRE(qs::detail::install_read_around(window));
  const qs::detail::read_around* installed = qs::detail::installed_read_around();
  REQUIRE(installed != nullptr);
  CHECK(installed->window() == window);
  qs_test::temp_dir dir;
  auto open_env = [&](DbEnv& env) {
    REQUIRE(env.open(dir.path().c_str(), DB_CREATE | DB_INIT_MPOOL | DB_PRIVATE, 0600) == 0);
  };
  {
    DbEnv env(DB_CXX_NO_EXCEPTIONS);
    open_env(env);
    Db db(&env, DB_CXX_NO_EXCEPTIONS);
    REQUIRE(db.open(nullptr, "t.db", nullptr, DB_BTREE, DB_CREATE, 0600) == 0);
    for (std::uint32_t k = 0; k < 2000; ++k) {
      std::string v(1000, static_cast<char>('a' + k % 26));
      Dbt key(&k, sizeof k), data(v.data(), static_cast<std::uint32_t>(v.size()));
      REQUIRE(db.put(nullptr, &key, &data, 0) == 0);
    }
    REQUIRE(db.close(0) == 0);
    REQUIRE(env.close(0) == 0);
  }
  DbEnv env(DB_CXX_NO_EXCEPTIONS);
  open_env(env);  // a new cache: every page is read from the file
  Db db(&env, DB_CXX_NO_EXCEPTIONS);
  REQUIRE(db.open(nullptr, "t.db", nullptr, DB_BTREE, 0, 0600) == 0);
  const auto before = installed->counts();
  std::uint32_t k = 1234;
  Dbt key(&k, sizeof k), data;
  data.set_flags(DB_DBT_MALLOC);
  REQUIRE(db.get(nullptr, &key, &data, 0) == 0);
  CHECK(std::string(static_cast<const char*>(data.get_data()), data.get_size()) ==
        std::string(1000, static_cast<char>('a' + 1234 % 26)));
  std::free(data.get_data());
  CHECK(installed->counts().reads > before.reads);
  REQUIRE(db.close(0) == 0);
  REQUIRE(env.close(0) == 0);
}

TEST_CASE("read_around: a directory's device's read-ahead is a power of two, for a path not made yet too") {
  qs_test::temp_dir dir;
  for (const std::string& path : {dir.path(), dir.sub("not/made/yet")}) {
    const std::size_t bytes = qs::detail::device_read_ahead(path);
    CHECK(bytes >= 4096);
    CHECK(bytes <= std::size_t{64} << 20);
    CHECK((bytes & (bytes - 1)) == 0);
  }
  CHECK(qs::detail::device_read_ahead(dir.sub("not/made/yet")) == qs::detail::device_read_ahead(dir.path()));
}
