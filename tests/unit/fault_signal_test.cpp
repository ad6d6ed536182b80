// The SIGSEGV handler: a fault inside a fault is reported, not silent.
#include <catch2/catch.hpp>

#include "os/fault_signal.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <string>

using namespace qs::detail;

namespace {

// A target whose handling touches its own (still protected) range again:
// what a runtime bug inside on_fault would do.
struct reentrant final : fault_target {
  volatile char* page;
  void on_fault(void*, bool) override { (void)page[1]; }
};

}  // namespace

TEST_CASE("a fault taken while a fault is handled is reported with its message") {
  char path[] = "/tmp/qs-fault-XXXXXX";
  int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 2);
    void* p = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    reentrant t;
    t.page = static_cast<volatile char*>(p);
    register_fault_range(p, static_cast<char*>(p) + 4096, &t);
    (void)t.page[0];
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  std::string text(8192, '\0');
  text.resize(static_cast<std::size_t>(std::max<ssize_t>(0, ::pread(fd, text.data(), text.size(), 0))));
  ::close(fd);
  ::unlink(path);
  CHECK(text.find("fault while a fault was being handled") != std::string::npos);
}
