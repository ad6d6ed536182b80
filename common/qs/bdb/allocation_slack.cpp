// Slack after Berkeley DB's small allocations (allocation_slack.hpp).
#include <qs/bdb/allocation_slack.hpp>

#include <db_cxx.h>

#include <cstdlib>
#include <mutex>

namespace qs::detail {
namespace {

constexpr std::size_t small = 4096, slack = 128;

std::size_t with_slack(std::size_t n) { return n < small ? n + slack : n; }

void* slack_malloc(std::size_t n) { return std::malloc(with_slack(n)); }

void* slack_realloc(void* p, std::size_t n) { return std::realloc(p, with_slack(n)); }

}  // namespace

void install_allocation_slack() {
  static std::once_flag once;
  std::call_once(once, [] {
    db_env_set_func_malloc(slack_malloc);
    db_env_set_func_realloc(slack_realloc);
  });
}

}  // namespace qs::detail
