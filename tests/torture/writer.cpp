// The torture's writer (writer.hpp).
#include "writer.hpp"

#include "plan.hpp"
#include "torture_types.hpp"

#include <qs/pause_point.hpp>
#include <qs/qs.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace qs_torture {
namespace {

// One line on standard output, in one write(2): it is in the file (or pipe)
// as soon as the call returns, whatever happens to the process next.
[[gnu::format(printf, 1, 2)]] void say(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  std::size_t len = std::min(static_cast<std::size_t>(n), sizeof line - 2);
  line[len++] = '\n';
  for (std::size_t done = 0; done < len;) {
    ssize_t w = ::write(1, line + done, len - done);
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

// The database is not what the transactions made it: found by the writer
// while it frees or touches what an earlier transaction wrote.
class damage : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

qs::options open_options(const writer_options& w) {
  qs::options o;
  o.pool_pages = w.pool_pages;
  o.durable = true;
  o.reservation_bytes = std::uint64_t{1} << 30;
  o.store_cache_bytes = 16u << 20;
  // A killed server comes back only once every writer has said it lost it:
  // a commit cut off asks for its outcome briefly, then says it is unknown.
  o.reconnect_budget_ms = 300;
  if (w.relocation >= 1) o.force_relocation_percent = 25;
  if (w.relocation == 2) o.relocation_policy = qs::relocation::one_time;
  return o;
}

using heads_index = qs::index<std::int64_t, Item>;

class partition_writer {
 public:
  // `committed`: the last transaction this process saw commit.
  partition_writer(qs::database& db, heads_index& ix, const writer_config& c, std::int64_t committed)
      : db_(db), ix_(ix), c_(c), committed_(committed) {}

  // One transaction's body: the next transaction of the partition. Returns its number.
  std::int64_t next() {
    const int p = c_.part;
    auto& count = db_.root<std::int64_t>(root_name(p, "count"));
    auto& table = db_.root<Table*>(root_name(p, "table"));
    const std::int64_t k = count + 1;
    if (k <= committed_)
      throw damage("the count root reads " + std::to_string(count) + ", but this writer committed transaction " +
                   std::to_string(committed_));
    const txn_plan plan = plan_of(c_.seed, p, k);
    const bool broken = k == c_.break_at;
    Table* t = table;
    if (t) expect_table(t, k);
    if (plan.new_table) {
      Table* n = new (db_) Table{table_magic, p, k - 1, k, {}};
      if (t) {
        for (int s = 0; s < slots; ++s) n->slot[s] = t->slot[s];
        delete t;
      }
      table = t = n;
    }
    for (std::size_t i = 0; i < plan.rewrites.size(); ++i) {
      const rewrite& w = plan.rewrites[i];
      if (broken && c_.break_how == "partial" && i == 1) break;
      if (i == plan.rewrites.size() / 2) qs::pause_point("torture.mid");
      Item* old = t->slot[w.slot];
      if (old) {
        if (!ix_.erase(w.slot, old)) throw damage("slot " + std::to_string(w.slot) + " has no index entry");
        free_chain(old, w.slot);
      }
      Item* head = make_chain(w, k);
      t->slot[w.slot] = head;
      if (head) {
        try {
          ix_.insert(w.slot, head);
        } catch (const qs::duplicate_key&) {
          throw damage("transaction " + std::to_string(k) + ": the index already has slot " + std::to_string(w.slot) +
                       ", which the table said was " + (old ? "another chain's" : "empty"));
        }
      }
    }
    if (broken && c_.break_how == "partial") {  // no touches, no named root
      t->k = k;
      count = k;
      return k;
    }
    for (int s : plan.touches)
      for (Item* it = t->slot[s]; it; it = it->next) {
        expect_item(it, s);
        it->stamp = k;
        if (it->words > 0) it->data[0].w = it->data[it->words - 1].w = k;
      }
    if (broken && c_.break_how == "leak") new (db_) Item{item_magic, p, -1, k, 0, k, 0, nullptr, nullptr};
    db_.root<std::int64_t>(root_name(p, "r" + std::to_string(plan.root))) = k;
    t->k = k;
    count = k;
    qs::pause_point("torture.end");
    return k;
  }

 private:
  void expect_table(const Table* t, std::int64_t k) {
    if (t->magic != table_magic || t->part != c_.part || t->k != k - 1)
      throw damage("the table of partition " + std::to_string(c_.part) + " says transaction " + std::to_string(t->k) +
                   ", the count root " + std::to_string(k - 1));
  }

  void expect_item(const Item* it, int slot) {
    if (it->magic != item_magic || it->part != c_.part || it->slot != slot)
      throw damage("slot " + std::to_string(slot) + " holds something that is not its Item");
  }

  void free_chain(Item* it, int slot) {
    while (it) {
      expect_item(it, slot);
      Item* next = it->next;
      if (it->data) qs::allocator<Words>().deallocate(it->data, static_cast<std::size_t>(it->words));
      delete it;
      it = next;
    }
  }

  Item* make_chain(const rewrite& w, std::int64_t k) {
    Item* next = nullptr;
    for (auto seq = static_cast<std::int64_t>(w.chain.size()) - 1; seq >= 0; --seq) {
      const item_spec& spec = w.chain[static_cast<std::size_t>(seq)];
      Item v{item_magic, c_.part, w.slot, k, seq, k, spec.words, next, nullptr};
      Item* it = spec.near && next ? new (qs::near(next)) Item(v) : new (db_) Item(v);
      if (spec.words > 0) {
        Words* d = qs::allocator<Words>().allocate(static_cast<std::size_t>(spec.words));
        for (std::int64_t i = 1; i + 1 < spec.words; ++i) d[i].w = word_of(c_.seed, c_.part, w.slot, k, seq, i);
        d[0].w = d[spec.words - 1].w = k;
        it->data = d;
      }
      next = it;
    }
    return next;
  }

  qs::database& db_;
  heads_index& ix_;
  const writer_config& c_;
  std::int64_t committed_;
};

std::int64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::int64_t v = 0;
  in >> v;
  return in ? v : 0;
}

}  // namespace

int run_writer(const writer_config& c) {
  try {
    std::optional<qs::database> db;
    std::optional<heads_index> ix;
    std::int64_t losses = 0, committed = 0;
    for (std::int64_t n = 0; n < c.max_txns;) {
      if (!c.hold.empty() && std::filesystem::exists(c.hold)) {
        say("held %lld", static_cast<long long>(read_number(c.hold)));
        while (std::filesystem::exists(c.hold)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      try {
        if (!db) db.emplace(qs::database::open(c.target, open_options(c.options)));
        if (!ix) ix.emplace(*db, index_name(c.part), qs::unique);
        partition_writer w(*db, *ix, c, committed);
        std::int64_t k = 0;
        db->run([&] { k = w.next(); });
        committed = k;
        say("committed %lld", static_cast<long long>(k));
        ++n;
      } catch (const qs::error& e) {
        // The server was killed: the connection is lost, or a commit it cut
        // off has an unknown outcome (the check accepts one more than
        // reported).
        bool lost = dynamic_cast<const qs::connection_lost*>(&e) || dynamic_cast<const qs::commit_unknown*>(&e);
        if (c.go.empty() || !lost) throw;
        say("lost %lld: %s", static_cast<long long>(++losses), e.what());
        // The torture restarts the server and checks the database first.
        for (int waited = 0; read_number(c.go) < losses; waited += 10) {
          if (waited > 600000) {
            say("no go after loss %lld", static_cast<long long>(losses));
            return 6;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    }
    return 0;
  } catch (const damage& e) {
    std::fprintf(stderr, "writer %d: damage: %s\n", c.part, e.what());
    return 5;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer %d: %s\n", c.part, e.what());
    return 1;
  }
}

}  // namespace qs_torture
