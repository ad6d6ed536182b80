// store_audit.hpp: a record-by-record check of a torture database's store,
// beside the runtime (fsck for qs).
//
// Every page record up to the page counter is read from the store (an
// embedded Berkeley DB directory, or a qs-pageserver) and checked the way the
// runtime checks a page it faults in (record magic, CRC-32C, page_check's
// structure, a well-formed mapping object of the size the header says), and
// then as a whole database: every page of a large object is there, in
// order, agreeing with its head (type, size); every pointer word of every live object
// falls in a run of its page's mapping object and lands on the start of a
// live object of a page that exists (the torture's objects point only at
// object starts); every root record and index entry names the start of a
// live object; every free-space record ("s:") names a small page (its frame
// and room are hints, not checked). It counts the live objects by type, so that the
// checker can compare them with what the transactions made (a transaction
// applied in part, or an allocation recovery forgot, shows as a count that
// differs).
//
// Thread-safety: uses the store alone; nothing else may write it meanwhile.
#pragma once

#include "store/store.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qs_torture {

struct audit_result {
  std::map<std::string, std::int64_t> objects;  // live objects by type name (a large object once)
  std::int64_t pages = 0;                       // page records
  std::vector<std::string> problems;
};

audit_result audit_store(qs::detail::store& s, const std::vector<std::string>& index_names);

}  // namespace qs_torture
