// inspect/describe.hpp: what qs-inspect's stat, roots, schema, page and object
// print about a database (qs/inspect.hpp has what each shows).
//
// Each prints what the records hold, damaged or not: a page that fails its
// checks is shown with what is wrong, and its objects are not decoded.
//
// Thread-safety: one thread at a time (the stored_database's).
#pragma once

#include "inspect/stored_database.hpp"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string_view>

namespace qs::detail {

void describe_stat(stored_database& db, std::ostream& out,
                   const std::function<void(std::uint64_t, std::uint64_t)>& progress);
void describe_roots(stored_database& db, std::ostream& out);
void describe_schema(stored_database& db, std::ostream& out);
void describe_page(stored_database& db, std::uint64_t page, std::ostream& out);
void describe_object(stored_database& db, std::string_view address, std::ostream& out);

}  // namespace qs::detail
