// small_fs.hpp: a small real file system for the tests that fill the disk.
//
// A tmpfs of a given size, or an ext4 image on a loop device, mounted on a
// fresh directory and unmounted (its image removed) when the object goes.
// Mounting needs root: usable() says whether it worked and, when not, why
// (the tests that need it then skip with that message). fill_to() leaves a
// chosen number of bytes free by allocating a ballast file; drain() removes
// it.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <string>

namespace qs_test {

class small_fs {
 public:
  enum class kind { tmpfs, ext4 };
  small_fs(kind k, std::uint64_t bytes);
  ~small_fs();
  small_fs(const small_fs&) = delete;
  small_fs& operator=(const small_fs&) = delete;

  bool usable() const { return usable_; }
  const std::string& why_not() const { return why_not_; }
  const std::string& path() const { return mount_point_; }
  const char* name() const { return kind_ == kind::tmpfs ? "tmpfs" : "ext4"; }
  std::uint64_t free_bytes() const;
  // Allocates a ballast file so that about `free` bytes stay free.
  void fill_to(std::uint64_t free);
  void drain();
  // Mounts it again read-only (a CD, a read-only snapshot).
  void make_read_only();
  // A tmpfs: mounts it again `more` bytes larger (a disk given room).
  void grow(std::uint64_t more);

 private:
  kind kind_;
  std::uint64_t bytes_;
  bool usable_ = false;
  std::string why_not_, root_, mount_point_, image_;
};

}  // namespace qs_test
