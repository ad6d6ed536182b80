// bench/bench_dir.hpp: where a benchmark keeps its databases: the directory
// its --dir option named, or a temporary directory of its own, removed when
// the benchmark ends.
//
// Invariants:
//  * path() names an existing directory from construction on.
//  * A directory this object made is removed with everything in it by its
//    destructor, also when the benchmark ends with an exception (not when
//    it calls std::exit); a directory it was given is never removed.
//
// Thread-safety: one per benchmark process, used on its main thread.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace qs::bench {

class bench_dir {
 public:
  // `given` as --dir gave it; empty: a new directory `<program>-XXXXXX` in
  // the system's temporary directory. When that cannot be made, says so on
  // stderr, naming the directory, and exits with status 1.
  bench_dir(std::string given, const char* program) : path_(std::move(given)) {
    if (!path_.empty()) return;
    std::error_code ec;
    std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    if (ec) tmp = "/tmp";
    std::string tmpl = (tmp / (std::string(program) + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) {
      std::fprintf(stderr, "%s: cannot make a temporary directory %s: %s (or give one with --dir)\n", program,
                   tmpl.c_str(), std::strerror(errno));
      std::exit(1);
    }
    path_ = std::move(tmpl);
    owned_ = true;
  }
  ~bench_dir() {
    std::error_code ec;  // a benchmark's result stands even if its files cannot be removed
    if (owned_) std::filesystem::remove_all(path_, ec);
  }
  bench_dir(const bench_dir&) = delete;
  bench_dir& operator=(const bench_dir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

}  // namespace qs::bench
