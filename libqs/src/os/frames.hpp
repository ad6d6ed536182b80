// os/frames.hpp: virtual frames and the memory behind them (Linux).
//
// A frame_space is one reservation of address space (PROT_NONE, MAP_NORESERVE)
// cut into frames of one page each. pool_memory is the buffer pool's real
// memory: a memfd of `slots` pages, mapped once read-write for the runtime.
// A resident page's frame is a second, shared mapping of its pool slot, with
// the protection the page's state allows, so the runtime reads and writes
// pages through its own mapping and never touches a protected frame. Each
// slot also has a shadow page (private memory) that holds the before-image
// of the page in the slot while it is being written: no allocation, and no
// first-touch fault after the first use of a slot.
//
// Invariants:
//  * A frame is either reserved (PROT_NONE, no memory) or maps exactly one
//    pool slot, read-only or read-write.
//  * Every distinct run of frames costs kernel memory mappings (Linux caps them
//    with vm.max_map_count); check_map_budget refuses a pool that could run
//    out of them.
//
// This file and fault_signal.* are the only places that know about mmap,
// mprotect, fork and signals.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qs::detail {

class pool_memory {
 public:
  pool_memory(std::uint32_t slots, std::uint32_t page_size);
  ~pool_memory();
  pool_memory(const pool_memory&) = delete;
  pool_memory& operator=(const pool_memory&) = delete;

  std::byte* slot(std::uint32_t i) const { return base_ + std::size_t{i} * page_size_; }
  std::byte* shadow(std::uint32_t i) const { return shadow_ + std::size_t{i} * page_size_; }
  int fd() const { return fd_; }
  bool contains(const void* p) const { return p >= base_ && p < base_ + bytes_; }
  std::uint32_t slot_of(const void* p) const {
    return static_cast<std::uint32_t>((static_cast<const std::byte*>(p) - base_) / page_size_);
  }
  // Gives a slot's memory back to the kernel.
  void discard(std::uint32_t i);

 private:
  int fd_ = -1;
  std::byte* base_ = nullptr;
  std::byte* shadow_ = nullptr;
  std::size_t bytes_;
  std::uint32_t page_size_;
};

class frame_space {
 public:
  // Reserves `bytes` at exactly `preferred` when `exact`, else anywhere
  // (preferring `preferred`). Throws qs::error when it cannot.
  frame_space(std::uintptr_t preferred, std::uint64_t bytes, std::uint32_t page_size, bool exact);
  ~frame_space();
  frame_space(const frame_space&) = delete;
  frame_space& operator=(const frame_space&) = delete;

  std::byte* base() const { return base_; }
  std::byte* end() const { return base_ + bytes_; }
  std::uint64_t frames() const { return bytes_ / page_size_; }
  std::byte* frame_address(std::uint64_t f) const { return base_ + f * page_size_; }
  bool contains(const void* p) const { return p >= base_ && p < end(); }
  std::uint64_t frame_of(const void* p) const {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - base_) / page_size_;
  }

  // Maps pool slot `slot` at frame `f`.
  void map(std::uint64_t f, const pool_memory& pool, std::uint32_t slot, bool writable);
  void protect(std::uint64_t f, bool writable);
  // Returns frame f to the reserved state.
  void unmap(std::uint64_t f);
  // Makes every frame inaccessible, keeping the mappings (one system call);
  // protect() gives a frame its access back.
  void revoke_all();

 private:
  std::byte* base_ = nullptr;
  std::uint64_t bytes_;
  std::uint32_t page_size_;
};

// Throws qs::invalid_argument when a pool of `slots` pages could need more
// memory mappings than vm.max_map_count allows.
void check_map_budget(std::uint32_t slots);

// Zero-filled memory reserved up front and committed page by page as it is
// written (MAP_NORESERVE): a table that never moves, however far it grows.
class zeroed_memory {
 public:
  explicit zeroed_memory(std::size_t bytes);
  ~zeroed_memory();
  zeroed_memory(const zeroed_memory&) = delete;
  zeroed_memory& operator=(const zeroed_memory&) = delete;
  std::byte* data() const { return base_; }
  std::size_t size() const { return bytes_; }

 private:
  std::byte* base_;
  std::size_t bytes_;
};

// fork(): a child does not keep an open database's memory. When a process
// forks, the child unmaps every region of the pools, reservations and
// tables above (the parent's stay as they are: the pool is shared memory,
// which a child's page-ins would otherwise overwrite) and fork_generation()
// grows, so that a database can tell it was opened by another process.
std::uint64_t fork_generation() noexcept;

}  // namespace qs::detail
