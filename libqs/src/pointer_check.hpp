// pointer_check.hpp: the commit's check that every pointer word on a page
// is null or persistent.
//
// A pointer word holding a transient address (or, in software mode, any
// raw address: persistent objects refer to each other through qs::ref)
// would be meaningless in the next process. The check walks a page's
// pointer words (page_words.hpp) and asks the mode (page_access) whether
// each value may be stored; a refusal names the member, the page and where
// the value points (qs::transient_pointer, or qs::cross_database_pointer
// for a pointer into another open database).
//
// Thread-safety: none; the runtime's lock guards it.
#pragma once

#include "page_access.hpp"
#include "page_table.hpp"
#include "page_words.hpp"

#include <string>

namespace qs::detail {

class pointer_check {
 public:
  pointer_check(page_words& words, const page_access& access, const std::string& db_name)
      : words_(words), access_(access), db_name_(db_name) {}

  // Whether every pointer word on d's image `img` may be stored. Throws
  // when one may not and `throw_on_violation` is set.
  bool check(const page_desc* d, const std::byte* img, bool throw_on_violation);

 private:
  page_words& words_;
  const page_access& access_;
  const std::string& db_name_;
};

}  // namespace qs::detail
