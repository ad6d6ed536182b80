#include "small_fs.hpp"

#include "temp_dir.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace qs_test {

namespace {

int run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

}  // namespace

small_fs::small_fs(kind k, std::uint64_t bytes) : kind_(k), bytes_(bytes) {
  root_ = make_temp_dir("qs-smallfs");
  mount_point_ = root_ + "/mnt";
  std::filesystem::create_directory(mount_point_);
  if (::geteuid() != 0) {
    why_not_ = "mounting a small file system needs root";
    return;
  }
  if (k == kind::tmpfs) {
    const std::string opts = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      why_not_ = std::string("mount tmpfs: ") + std::strerror(errno);
      return;
    }
  } else {
    image_ = root_ + "/image";
    if (::truncate(image_.c_str(), 0) != 0) {
      int fd = ::open(image_.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
    }
    if (::truncate(image_.c_str(), static_cast<off_t>(bytes)) != 0) {
      why_not_ = std::string("cannot make the image: ") + std::strerror(errno);
      return;
    }
    if (run("mkfs.ext4 -q -F " + image_) != 0) {
      why_not_ = "mkfs.ext4 failed (is e2fsprogs installed?)";
      return;
    }
    if (run("mount -o loop " + image_ + " " + mount_point_) != 0) {
      why_not_ = "mount -o loop failed (no loop devices here?)";
      return;
    }
  }
  usable_ = true;
}

small_fs::~small_fs() {
  if (usable_) ::umount2(mount_point_.c_str(), MNT_DETACH);
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

std::uint64_t small_fs::free_bytes() const {
  struct statvfs st {};
  if (::statvfs(mount_point_.c_str(), &st) != 0) return 0;
  return std::uint64_t{st.f_bavail} * st.f_frsize;
}

void small_fs::fill_to(std::uint64_t free) {
  const std::uint64_t now = free_bytes();
  if (now <= free) return;
  const std::string ballast = mount_point_ + "/ballast";
  int fd = ::open(ballast.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + ballast);
  struct stat st {};
  ::fstat(fd, &st);
  int rc = ::fallocate(fd, 0, st.st_size, static_cast<off_t>(now - free));
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot allocate the ballast: " + std::string(std::strerror(errno)));
}

void small_fs::make_read_only() {
  if (::mount(nullptr, mount_point_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0)
    throw std::runtime_error("cannot remount read-only: " + std::string(std::strerror(errno)));
}

void small_fs::grow(std::uint64_t more) {
  if (kind_ != kind::tmpfs) throw std::runtime_error("only a tmpfs grows here");
  const std::string opts = "size=" + std::to_string(bytes_ + more);
  if (::mount(nullptr, mount_point_.c_str(), nullptr, MS_REMOUNT, opts.c_str()) != 0)
    throw std::runtime_error("cannot remount the tmpfs larger: " + std::string(std::strerror(errno)));
  bytes_ += more;
}

void small_fs::drain() { ::unlink((mount_point_ + "/ballast").c_str()); }

}  // namespace qs_test
