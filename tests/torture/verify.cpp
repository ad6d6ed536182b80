// The checker's comparison of a partition with its expected state (verify.hpp).
#include "verify.hpp"

#include <map>

namespace qs_torture {
namespace {

class comparison {
 public:
  comparison(qs::database& db, std::uint64_t seed, int part, partition_check& out)
      : db_(db), seed_(seed), part_(part), out_(out) {}

  void run() {
    const std::string count_root = root_name(part_, "count");
    if (!db_.has_root(count_root)) {
      out_.k = 0;
    } else {
      out_.k = db_.root<std::int64_t>(count_root);
      if (out_.k <= 0) problem("the count root holds " + std::to_string(out_.k));
    }
    if (out_.k < 0) return;
    const partition_state want = state_after(seed_, part_, out_.k);
    out_.items = want.items();
    out_.arrays = want.arrays();
    out_.table = out_.k > 0;
    for (int j = 0; j < root_count; ++j) {
      std::string name = root_name(part_, "r" + std::to_string(j));
      std::int64_t expected = want.roots[static_cast<std::size_t>(j)];
      bool has = db_.has_root(name);
      if (has != (expected != 0)) {
        problem("root " + name + (has ? " exists" : " is missing") + " after transaction " + std::to_string(out_.k));
      } else if (has && db_.root<std::int64_t>(name) != expected) {
        problem("root " + name + " holds " + std::to_string(db_.root<std::int64_t>(name)) + ", expected " +
                std::to_string(expected));
      }
    }
    const std::string table_root = root_name(part_, "table");
    if (out_.k == 0) {
      if (db_.has_root(table_root)) problem("the table root exists before the first transaction");
      return;
    }
    if (!db_.has_root(table_root)) return problem("the table root is missing");
    const Table* t = db_.root<Table*>(table_root);
    if (!t || !db_.contains(t)) return problem("the table root does not point into the database");
    if (t->magic != table_magic || t->part != part_ || t->k != out_.k || t->born != want.table_born)
      return problem("the table says part " + std::to_string(t->part) + ", transaction " + std::to_string(t->k) +
                     ", made by " + std::to_string(t->born) + "; expected part " + std::to_string(part_) +
                     ", transaction " + std::to_string(out_.k) + ", made by " + std::to_string(want.table_born));
    for (int s = 0; s < slots; ++s) compare_slot(t, s, want.slot[static_cast<std::size_t>(s)]);
    compare_index(t);
  }

 private:
  void problem(const std::string& what) {
    if (out_.problems.size() < 20)
      out_.problems.push_back("partition " + std::to_string(part_) + " at transaction " + std::to_string(out_.k) +
                              ": " + what);
  }

  void compare_slot(const Table* t, int s, const slot_state& want) {
    const std::string where = "slot " + std::to_string(s);
    const Item* it = t->slot[s];
    for (std::size_t seq = 0; seq < want.chain.size(); ++seq, it = it->next) {
      const std::string at = where + " item " + std::to_string(seq);
      if (!it)
        return problem(at + " is missing (the chain of transaction " + std::to_string(want.born) + " has " +
                       std::to_string(want.chain.size()) + ")");
      if (!db_.contains(it)) return problem(at + " is a pointer outside the database");
      const item_spec& spec = want.chain[seq];
      if (it->magic != item_magic || it->part != part_ || it->slot != s || it->born != want.born ||
          it->seq != static_cast<std::int64_t>(seq) || it->stamp != want.stamp || it->words != spec.words)
        return problem(at + ": part " + std::to_string(it->part) + " slot " + std::to_string(it->slot) + " born " +
                       std::to_string(it->born) + " seq " + std::to_string(it->seq) + " stamp " +
                       std::to_string(it->stamp) + " words " + std::to_string(it->words) + "; expected born " +
                       std::to_string(want.born) + " stamp " + std::to_string(want.stamp) + " words " +
                       std::to_string(spec.words));
      if ((it->data != nullptr) != (spec.words > 0)) return problem(at + ": data pointer wrong");
      if (spec.words == 0) continue;
      if (!db_.contains(it->data) || !db_.contains(it->data + spec.words - 1))
        return problem(at + ": data outside the database");
      for (std::int64_t i = 0; i < spec.words; ++i) {
        std::int64_t expected = i == 0 || i == spec.words - 1
                                    ? want.stamp
                                    : word_of(seed_, part_, s, want.born, static_cast<std::int64_t>(seq), i);
        if (it->data[i].w != expected)
          return problem(at + ": data[" + std::to_string(i) + "] of " + std::to_string(spec.words) + " is " +
                         std::to_string(it->data[i].w) + ", expected " + std::to_string(expected));
      }
    }
    if (it)
      problem(where + " has more than the " + std::to_string(want.chain.size()) + " items of transaction " +
              std::to_string(want.born));
  }

  void compare_index(const Table* t) {
    qs::index<std::int64_t, Item> ix(db_, index_name(part_), qs::unique);
    std::map<std::int64_t, const Item*> found;
    ix.range(std::int64_t{-1000}, std::int64_t{1000}, [&](std::int64_t key, Item* it) {
      if (!found.emplace(key, it).second) problem("index entry " + std::to_string(key) + " twice");
      return true;
    });
    for (int s = 0; s < slots; ++s) {
      auto e = found.find(s);
      if (!t->slot[s] && e != found.end()) problem("index entry for the empty slot " + std::to_string(s));
      if (t->slot[s] && e == found.end()) problem("no index entry for slot " + std::to_string(s));
      if (t->slot[s] && e != found.end() && e->second != t->slot[s])
        problem("the index entry for slot " + std::to_string(s) + " names another object than the slot's head");
      if (e != found.end()) found.erase(e);
    }
    for (auto& [key, it] : found) problem("index entry for " + std::to_string(key) + ", not a slot");
  }

  qs::database& db_;
  std::uint64_t seed_;
  int part_;
  partition_check& out_;
};

}  // namespace

partition_check verify_partition(qs::database& db, std::uint64_t seed, int part) {
  partition_check out;
  comparison(db, seed, part, out).run();
  return out;
}

}  // namespace qs_torture
