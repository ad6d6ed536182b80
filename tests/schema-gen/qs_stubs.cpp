// Stand-ins for the libqs functions the fixtures reference, used only when the
// fixtures are built without the qs library (QS_SCHEMA_GEN_TESTS_LINK_QS=OFF).
// The fixtures never call them at run time except descriptor_of's fallbacks.
#include <qs/persistent.hpp>

#include <cstdio>
#include <cstdlib>

namespace qs::detail {

namespace {
[[noreturn]] void unavailable(const char* what) {
  std::fprintf(stderr, "schema-gen fixture: %s called, but libqs is not linked\n", what);
  std::abort();
}
const type_descriptor pointer_desc{"pointer", 8, 8, nullptr, 0, nullptr, 0, nullptr, 0};
const type_descriptor raw_desc{"raw", 1, 1, nullptr, 0, nullptr, 0, nullptr, 0};
}  // namespace

const type_descriptor* pointer_descriptor() noexcept { return &pointer_desc; }
const type_descriptor* raw_descriptor() noexcept { return &raw_desc; }
void note_registered(const type_descriptor*) {}
void throw_no_schema(const std::type_info& t) {
  std::fprintf(stderr, "no schema for %s\n", t.name());
  std::abort();
}
void* allocate(database&, const type_descriptor*, std::size_t, const void*) { unavailable("qs::detail::allocate"); }
void* allocate_near(const void*, const type_descriptor*, std::size_t) { unavailable("qs::detail::allocate_near"); }
void release(void*) noexcept { unavailable("qs::detail::release"); }
database& current_database() { unavailable("qs::detail::current_database"); }
void check_class_size(std::size_t, std::size_t, const char*) { unavailable("qs::detail::check_class_size"); }

}  // namespace qs::detail
