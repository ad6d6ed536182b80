// torture_types.hpp: the persistent objects of the crash torture
// (scripts/torture), described by schema-gen.
//
// Each writer owns a partition of the database: a Table whose slots hold
// chains of Items, each Item with an optional array of Words (on its own
// page when it is larger than one: a large object). Every field is a
// function of the transaction that wrote it (plan.hpp), so that the checker
// can tell exactly which transactions a database holds.
//
// Invariants: magic fields are item_magic and table_magic; nothing else
// points into a partition from outside it.
// Thread-safety: plain persistent data.
#pragma once

#include <qs/qs.hpp>

#include <cstdint>

namespace qs_torture {

constexpr int slots = 32;
constexpr std::int64_t item_magic = 0x6d65744974727574;   // "turtItem"
constexpr std::int64_t table_magic = 0x6c62615474727574;  // "turtTabl"

struct Words {
  QS_PERSISTENT(Words)
  std::int64_t w;
};

struct Item {
  QS_PERSISTENT(Item)
  std::int64_t magic;
  std::int64_t part;
  std::int64_t slot;
  std::int64_t born;   // the transaction that made the chain
  std::int64_t seq;    // place in the chain, from 0 at the head
  std::int64_t stamp;  // the last transaction that touched it
  std::int64_t words;  // elements of data (0: data is null)
  Item* next;
  Words* data;
};

struct Table {
  QS_PERSISTENT(Table)
  std::int64_t magic;
  std::int64_t part;
  std::int64_t k;     // the last transaction of the partition
  std::int64_t born;  // the transaction that made this table
  Item* slot[slots];
};

}  // namespace qs_torture
