// The SIGSEGV handler: a fault inside a fault is reported, not silent.
#include <catch2/catch.hpp>

#include "os/fault_signal.hpp"
#include "process.hpp"

#include <sys/mman.h>
#include <csignal>
#include <cstdio>
#include <string>

using namespace qs::detail;

namespace {

// A target whose handling touches its own (still protected) range again:
// what a runtime bug inside on_fault would do.
struct reentrant final : fault_target {
  volatile char* page;
  void on_fault(void*, bool, const void*) override { (void)page[1]; }
};

}  // namespace

TEST_CASE("a fault taken while a fault is handled is reported with its message") {
  qs_test::forked r = qs_test::run_forked([] {
    void* p = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    reentrant t;
    t.page = static_cast<volatile char*>(p);
    register_fault_range(p, static_cast<char*>(p) + 4096, &t);
    (void)t.page[0];
  });
  CHECK(r.status == -SIGABRT);
  const std::string& text = r.err;
  CHECK(text.find("fault while a fault was being handled") != std::string::npos);
}
