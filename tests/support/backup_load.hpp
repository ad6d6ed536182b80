// backup_load.hpp: a hot backup taken while another thread commits, and the
// check that the copy holds a committed prefix of what it committed
// (embedded and through a page server alike).
//
// Node is a persistent type with `Node* right` and `std::uint64_t key`.
// Transaction i pushes `per_transaction` nodes of key i onto root "head".
//
// Thread-safety: commit_during starts one thread of its own and joins it.
#pragma once

#include <qs/qs.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>

namespace qs_test {

constexpr int per_transaction = 20;

// Runs `backup` in this thread once a writer thread has committed 50
// transactions, and stops the writer after it; returns the transactions
// the writer had committed when backup began and when it returned.
template <class Node>
std::pair<std::uint64_t, std::uint64_t> commit_during(qs::database& db, const std::function<void()>& backup) {
  std::atomic<std::uint64_t> committed{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t i = 1; !stop; ++i) {
      qs::transaction tx(db);
      Node*& head = db.root<Node*>("head");
      for (int k = 0; k < per_transaction; ++k) {
        Node* n = new (db) Node{};
        n->key = i;
        n->right = head;
        head = n;
      }
      tx.commit();
      committed = i;
    }
  });
  while (committed < 50) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::uint64_t before = committed;
  try {
    backup();
  } catch (...) {
    stop = true;
    writer.join();
    throw;
  }
  const std::uint64_t after = committed;
  stop = true;
  writer.join();
  return {before, after};
}

// The transactions the list at root "head" of `db` holds when it holds
// exactly transactions n..1, whole; -1 otherwise.
template <class Node>
std::int64_t committed_prefix(qs::database& db) {
  qs::transaction tx(db);
  Node* c = db.root<Node*>("head");
  if (!c) return 0;
  const std::uint64_t n = c->key;
  std::uint64_t expect = n;
  int in_this = 0;
  for (; c; c = c->right) {
    if (c->key != expect) return -1;
    if (++in_this == per_transaction) {
      in_this = 0;
      --expect;
    }
  }
  return expect == 0 && in_this == 0 ? static_cast<std::int64_t>(n) : -1;
}

}  // namespace qs_test
