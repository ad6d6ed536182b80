#include <qs/base/pause_point.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace qs {
namespace {

struct pause_config {
  std::string name;
  long nth = 1;
  int fd = -1;
  bool on = false;
  pause_config() {
    const char* at = std::getenv("QS_PAUSE_AT");
    if (!at || !*at) return;
    name = at;
    auto colon = name.rfind(':');
    if (colon != std::string::npos) {
      nth = std::atol(name.c_str() + colon + 1);
      name.resize(colon);
    }
    const char* fd_s = std::getenv("QS_PAUSE_FD");
    fd = fd_s ? std::atoi(fd_s) : -1;
    on = true;
  }
};

}  // namespace

void pause_point(const char* name) noexcept {
  static const pause_config config;
  static std::atomic<long> passes{0};
  if (!config.on || config.name != name) return;
  if (++passes != config.nth) return;
  if (config.fd >= 0) {
    ssize_t r = ::write(config.fd, "p", 1);
    (void)r;
  }
  for (;;) ::pause();
}

}  // namespace qs
