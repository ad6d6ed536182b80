// Reading and comparing the shared secret (shared_secret.hpp).
#include "shared_secret.hpp"

#include <qs/base/error.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace qs::server {

std::string read_secret(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw qs::error("secret file " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw qs::error("secret file " + path + " is not a regular file");
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw qs::error("secret file " + path + " is readable or writable by group or others (mode " + mode +
                    "); chmod 600 it");
  }
  std::ifstream in(path);
  std::string secret;
  std::getline(in, secret);
  while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  if (secret.empty()) throw qs::error("secret file " + path + " holds no secret on its first line");
  if (secret.size() > 1024) throw qs::error("secret file " + path + ": the secret is longer than 1024 bytes");
  return secret;
}

bool same_secret(std::string_view a, std::string_view b) {
  unsigned d = a.size() != b.size();
  std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    d |= static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^ static_cast<unsigned char>(i < b.size() ? b[i] : 0);
  return d == 0;
}

}  // namespace qs::server
