// qs-pageserver's log lines (log.hpp).
#include "log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace qs::server {

void log_line(std::uint64_t connection, const std::string& text) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  std::string line = "qs-pageserver " + std::string(stamp) + " [#" + std::to_string(connection) + "] ";
  // Control characters from clients (names, keys) are not written raw.
  for (char c : text) line += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  line += '\n';
  ssize_t n = ::write(2, line.data(), line.size());
  (void)n;
}

std::string seconds(std::chrono::milliseconds t) {
  std::string s = std::to_string(t.count() / 1000);
  if (long ms = static_cast<long>(t.count() % 1000)) {
    std::string frac = std::to_string(1000 + ms).substr(1);
    while (frac.back() == '0') frac.pop_back();
    s += "." + frac;
  }
  return s + " s";
}

}  // namespace qs::server
