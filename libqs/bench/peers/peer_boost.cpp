// peer-boost: the workload of scripts/peers (workload.hpp) on
// Boost.Interprocess's managed_mapped_file: a heap in one memory-mapped file,
// nodes linked with offset_ptr (the file may map at another address).
//
//   peer-boost {build|open|traverse|update} FILE N
//
// build     creates FILE (removed first), allocates the N nodes with the
//           segment's allocator and links them, names the root, then
//           flush() and fdatasync(). flush() is msync(MS_ASYNC) in Boost
//           1.74, which writes nothing by itself: the fdatasync is what makes
//           the file durable. There is no atomicity: a crash before it
//           leaves any subset of the pages written, the allocator's own
//           metadata included.
// open      maps the file and finds the named root
// traverse  a depth-first pass, then the hot passes (workload.hpp), in one
//           process
// update    adds 1 to 1% of the nodes, then flush() and fdatasync() (not
//           atomic: a crash in between leaves some of them changed)
// The file is created sparse at N * 128 bytes + 8 MiB (a managed_mapped_file
// cannot grow while mapped).
#include <fcntl.h>
#include <unistd.h>

#include <boost/interprocess/managed_mapped_file.hpp>
#include <boost/interprocess/offset_ptr.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "workload.hpp"

namespace {

namespace bip = boost::interprocess;

struct Node {
  bip::offset_ptr<Node> kid[peers::fanout];
  std::uint64_t id;
  std::uint64_t value;
  std::uint64_t pad[3];
};
static_assert(sizeof(Node) == peers::node_bytes);
using root_cell = bip::offset_ptr<Node>;

const auto child = [](const Node* p, int c) -> Node* { return p->kid[c].get(); };

// flush() (msync with MS_ASYNC), then fdatasync of the file.
void make_durable(bip::managed_mapped_file& seg, const std::string& path) {
  if (!seg.flush()) throw std::runtime_error("flush failed");
  int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0 || ::fdatasync(fd) != 0) throw std::runtime_error(path + ": fdatasync: " + std::strerror(errno));
  ::close(fd);
}

Node* find_root(bip::managed_mapped_file& seg, const std::string& path) {
  root_cell* r = seg.find<root_cell>("tree").first;
  if (r == nullptr) throw std::runtime_error(path + ": no root named 'tree'");
  return r->get();
}

void build_phase(const peers::command& cmd) {
  std::filesystem::remove(cmd.path);
  std::vector<std::uint32_t> order = peers::allocation_order(cmd.n);
  std::vector<Node*> at(cmd.n);
  auto t0 = peers::clock_type::now();
  std::optional<bip::managed_mapped_file> seg;
  seg.emplace(bip::create_only, cmd.path.c_str(), std::size_t{cmd.n} * 128 + (std::size_t{8} << 20));
  for (std::uint32_t t : order) at[t] = ::new (seg->allocate(sizeof(Node))) Node{{nullptr, nullptr, nullptr}, t, t, {}};
  for (std::uint32_t t : order)
    for (int c = 0; c < peers::fanout; ++c) {
      std::uint32_t k = peers::child_of(t, c, cmd.n);
      at[t]->kid[c] = k < cmd.n ? at[k] : nullptr;
    }
  seg->construct<root_cell>("tree")(at[0]);
  make_durable(*seg, cmd.path);
  double build_s = peers::seconds_since(t0);
  std::size_t used = seg->get_size() - seg->get_free_memory();
  auto t1 = peers::clock_type::now();
  seg.reset();
  double close_s = peers::seconds_since(t1);
  std::printf("RESULT peer=boost phase=build n=%u build_s=%.4f close_s=%.4f used_bytes=%zu\n", cmd.n, build_s, close_s,
              used);
}

void open_phase(const peers::command& cmd) {
  auto t0 = peers::clock_type::now();
  bip::managed_mapped_file seg(bip::open_only, cmd.path.c_str());
  volatile std::uint64_t v = find_root(seg, cmd.path)->value;
  double open_ms = peers::ms_since(t0);
  (void)v;
  std::printf("RESULT peer=boost phase=open n=%u open_ms=%.3f\n", cmd.n, open_ms);
}

void traverse_phase(const peers::command& cmd) {
  auto t0 = peers::clock_type::now();
  bip::managed_mapped_file seg(bip::open_only, cmd.path.c_str());
  Node* root = find_root(seg, cmd.path);
  double open_ms = peers::ms_since(t0);
  peers::tally first;
  auto t1 = peers::clock_type::now();
  peers::walk(root, child, first);
  double first_ms = peers::ms_since(t1);
  double hot_ms = peers::hot_ms(root, child);
  peers::check_tally("peer-boost", first, cmd.n);
  std::printf("RESULT peer=boost phase=traverse n=%u open_ms=%.3f first_ms=%.3f hot_ms=%.3f sum=%llu\n", cmd.n, open_ms,
              first_ms, hot_ms, static_cast<unsigned long long>(first.sum));
}

void update_phase(const peers::command& cmd) {
  std::vector<std::uint32_t> targets = peers::update_targets(cmd.n);
  std::optional<bip::managed_mapped_file> seg(std::in_place, bip::open_only, cmd.path.c_str());
  auto t0 = peers::clock_type::now();
  Node* root = find_root(*seg, cmd.path);
  for (std::uint32_t t : targets) peers::reach(root, t, child)->value += 1;
  auto t1 = peers::clock_type::now();
  make_durable(*seg, cmd.path);
  double update_ms = peers::ms_since(t0);
  double commit_ms = peers::ms_since(t1);
  auto t2 = peers::clock_type::now();
  seg.reset();
  double close_s = peers::seconds_since(t2);
  std::printf("RESULT peer=boost phase=update n=%u updated=%zu update_ms=%.3f commit_ms=%.3f close_s=%.4f\n", cmd.n,
              targets.size(), update_ms, commit_ms, close_s);
}

}  // namespace

int main(int argc, char** argv) {
  qs::cli::app app("The workload of scripts/peers on Boost.Interprocess's managed_mapped_file.\n", "peer-boost");
  peers::command cmd = peers::parse(app, argc, argv);
  // boost::interprocess::interprocess_exception among what may escape
  return peers::run_phase(
      cmd, "peer-boost",
      {[&] { build_phase(cmd); }, [&] { open_phase(cmd); }, [&] { traverse_phase(cmd); }, [&] { update_phase(cmd); }});
}
