// temp_dir.hpp: fresh directories for tests, under $TMPDIR (or /tmp).
//
// Every test that needs a directory (a database, a small file system's
// mount point, a torture run, an OO7 configuration) takes it from here:
// make_temp_dir creates one and leaves it; temp_dir removes its own, with
// everything in it, when it goes out of scope. Header-only, so that test
// programs that link nothing of qs's test support (OO7's plain-memory
// tests) share it too.
//
// Thread-safety: mkdtemp names each directory uniquely; a temp_dir is used
// by one thread.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace qs_test {

// A new directory named `prefix`-XXXXXX under $TMPDIR (or /tmp). Throws
// std::runtime_error when it cannot be made.
inline std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw std::runtime_error("cannot make a temporary directory " + pattern + ": " +
                             std::error_code(errno, std::generic_category()).message());
  return buf.data();
}

// A directory of its own for the scope of a test, removed at its end.
class temp_dir {
 public:
  explicit temp_dir(const std::string& prefix = "qs-test") : path_(make_temp_dir(prefix)) {}
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  // A path inside it.
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace qs_test
