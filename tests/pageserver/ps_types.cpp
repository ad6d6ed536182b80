// Descriptors of the page-server tests' types, in the form schema-gen
// generates.
#include "ps_types.hpp"

namespace qs_pstest {
namespace {

const qs::member_record counter_members[] = {
    {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "value", "long", ""},
    {qs::member_kind::array, qs::number_kind::sint, 8, 4800, 600, 8, 0, 0, "pad", "long[600]", "long"},
};
const qs::type_descriptor counter_desc{
    "qs_pstest::Counter", sizeof(Counter), alignof(Counter), nullptr, 0, nullptr, 0, counter_members, 2};
std::uint32_t table_offsets[counters];
const qs::member_record table_members[] = {
    {qs::member_kind::number, qs::number_kind::sint, 0, 8, 1, 8, 0, 0, "n", "long", ""},
    {qs::member_kind::array, qs::number_kind::none, 8, 512, 64, 8, 0, 0, "c", "qs_pstest::Counter*[64]",
     "qs_pstest::Counter*"},
};
const qs::type_descriptor table_desc{
    "qs_pstest::Table", sizeof(Table), alignof(Table), table_offsets, counters, nullptr, 0, table_members, 2};
std::uint32_t fan_offsets[fan_size];
const qs::member_record fan_members[] = {
    {qs::member_kind::array, qs::number_kind::none, 0, 7200, 900, 8, 0, 0, "c", "qs_pstest::Counter*[900]",
     "qs_pstest::Counter*"},
};
const qs::type_descriptor fan_desc{
    "qs_pstest::Fan", sizeof(Fan), alignof(Fan), fan_offsets, fan_size, nullptr, 0, fan_members, 1};
const bool registered = [] {
  for (int i = 0; i < fan_size; ++i) fan_offsets[i] = static_cast<std::uint32_t>(8 * i);
  qs::register_type<Fan>(fan_desc);
  for (int i = 0; i < counters; ++i) table_offsets[i] = static_cast<std::uint32_t>(8 + 8 * i);
  qs::register_type<Counter>(counter_desc);
  qs::register_type<Table>(table_desc);
  return true;
}();

}  // namespace
}  // namespace qs_pstest
