// The transactions of the crash torture and their expected result (plan.hpp).
#include "plan.hpp"

#include <algorithm>

namespace qs_torture {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

class stream {
 public:
  explicit stream(std::uint64_t s) : s_(s) {}
  std::uint64_t next() { return mix(s_ += 0x632be59bd9b4e019); }
  // Uniform in [lo, hi].
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return static_cast<int>(next() % 100) < percent; }

 private:
  std::uint64_t s_;
};

std::int64_t words_of(stream& r) {
  int c = static_cast<int>(r.in(0, 99));
  if (c < 10) return 0;
  if (c < 70) return r.in(1, 24);
  if (c < 92) return r.in(25, 700);
  // Now and then (one item in a thousand) a large object of 2 MiB and more:
  // a transaction that adds hundreds of pages (its index updates mostly
  // come first, so it seldom takes a bulk transaction: bdb_env.hpp), and
  // through a page server a commit long enough to be under way when the
  // writer that sent it is killed.
  if (c == 99 && r.chance(10)) return r.in(270000, 280000);
  return r.in(1100, 4500);  // more than an 8 KiB page: a large object
}

}  // namespace

txn_plan plan_of(std::uint64_t seed, int part, std::int64_t k) {
  stream r(mix(seed ^ mix(static_cast<std::uint64_t>(part) + 1) ^ mix(static_cast<std::uint64_t>(k) << 8)));
  txn_plan p;
  std::array<bool, slots> used{};
  auto fresh_slot = [&] {
    for (;;) {
      int s = static_cast<int>(r.in(0, slots - 1));
      if (!used[static_cast<std::size_t>(s)]) {
        used[static_cast<std::size_t>(s)] = true;
        return s;
      }
    }
  };
  for (std::int64_t n = r.in(1, 3); n > 0; --n) {
    rewrite w;
    w.slot = fresh_slot();
    if (!r.chance(10))
      for (std::int64_t len = r.in(1, 5); len > 0; --len) w.chain.push_back({words_of(r), r.chance(50)});
    p.rewrites.push_back(std::move(w));
  }
  for (std::int64_t n = r.in(0, 3); n > 0; --n) p.touches.push_back(fresh_slot());
  p.new_table = k == 1 || r.chance(6);
  p.root = static_cast<int>(r.in(0, root_count - 1));
  return p;
}

std::int64_t word_of(std::uint64_t seed, int part, int slot, std::int64_t born, std::int64_t seq, std::int64_t i) {
  std::uint64_t h = mix(seed ^ (static_cast<std::uint64_t>(part) << 56) ^ (static_cast<std::uint64_t>(slot) << 48));
  h = mix(h ^ static_cast<std::uint64_t>(born));
  h = mix(h ^ (static_cast<std::uint64_t>(seq) << 32) ^ static_cast<std::uint64_t>(i));
  return static_cast<std::int64_t>(h >> 1);
}

std::int64_t partition_state::items() const {
  std::int64_t n = 0;
  for (const slot_state& s : slot) n += static_cast<std::int64_t>(s.chain.size());
  return n;
}

std::int64_t partition_state::arrays() const {
  std::int64_t n = 0;
  for (const slot_state& s : slot)
    n += std::count_if(s.chain.begin(), s.chain.end(), [](const item_spec& i) { return i.words > 0; });
  return n;
}

partition_state state_after(std::uint64_t seed, int part, std::int64_t k) {
  partition_state st;
  st.k = k;
  std::array<bool, slots> done{};
  std::array<std::int64_t, slots> touched{};  // the last touch seen, scanning back
  std::array<bool, root_count> root_done{};
  int open = slots + root_count + 1;
  for (std::int64_t t = k; t >= 1 && open > 0; --t) {
    txn_plan p = plan_of(seed, part, t);
    if (st.table_born == 0 && p.new_table) {
      st.table_born = t;
      --open;
    }
    if (!root_done[static_cast<std::size_t>(p.root)]) {
      root_done[static_cast<std::size_t>(p.root)] = true;
      st.roots[static_cast<std::size_t>(p.root)] = t;
      --open;
    }
    for (int s : p.touches) {
      auto i = static_cast<std::size_t>(s);
      if (!done[i] && touched[i] == 0) touched[i] = t;
    }
    for (rewrite& w : p.rewrites) {
      auto i = static_cast<std::size_t>(w.slot);
      if (done[i]) continue;
      done[i] = true;
      --open;
      if (w.chain.empty()) continue;
      st.slot[i].born = t;
      st.slot[i].stamp = touched[i] ? touched[i] : t;
      st.slot[i].chain = std::move(w.chain);
    }
  }
  return st;
}

std::string root_name(int part, const std::string& what) { return "t" + std::to_string(part) + "." + what; }
std::string index_name(int part) { return "t" + std::to_string(part) + "_heads"; }

}  // namespace qs_torture
