// qs::inspector (qs/inspect.hpp): the entry points of qs-inspect.
#include <qs/inspect.hpp>

#include "inspect/describe.hpp"
#include "inspect/dump.hpp"
#include "inspect/stored_database.hpp"
#include "inspect/verify.hpp"
#include "mode/page_access.hpp"

namespace qs {

inspector::inspector(const std::string& path, const options& opts)
    : db_(std::make_unique<detail::stored_database>(path, opts)) {}
inspector::~inspector() = default;

const char* inspector::mode() { return detail::page_access::mode_name; }

void inspector::stat(std::ostream& out, const progress& p) { detail::describe_stat(*db_, out, p); }
void inspector::roots(std::ostream& out) { detail::describe_roots(*db_, out); }
void inspector::schema(std::ostream& out) { detail::describe_schema(*db_, out); }
void inspector::page(std::uint64_t n, std::ostream& out) { detail::describe_page(*db_, n, out); }
void inspector::object(std::string_view address, std::ostream& out) { detail::describe_object(*db_, address, out); }
std::uint64_t inspector::dump(std::ostream& out, const progress& p) { return detail::dump_database(*db_, out, p); }
void inspector::backup(const std::string& target, const progress& p) { db_->st().backup(target, p)(); }
std::uint64_t inspector::verify(const problem& report, const progress& p) {
  return detail::verify_database(*db_, report, p);
}

}  // namespace qs
