// Descriptors of the page-server tests' types, in the form schema-gen
// generates.
#include "ps_types.hpp"

namespace qs_pstest {
namespace {

const qs::type_descriptor counter_desc{"qs_pstest::Counter",
                                       sizeof(Counter),
                                       alignof(Counter),
                                       nullptr,
                                       0,
                                       nullptr,
                                       0,
                                       "0 8 value long\n8 4800 pad long[600]\n"};
std::uint32_t table_offsets[counters];
const qs::type_descriptor table_desc{"qs_pstest::Table",
                                     sizeof(Table),
                                     alignof(Table),
                                     table_offsets,
                                     counters,
                                     nullptr,
                                     0,
                                     "0 8 n long\n8 512 c qs_pstest::Counter*[64]\n"};
std::uint32_t fan_offsets[fan_size];
const qs::type_descriptor fan_desc{"qs_pstest::Fan",
                                   sizeof(Fan),
                                   alignof(Fan),
                                   fan_offsets,
                                   fan_size,
                                   nullptr,
                                   0,
                                   "0 7200 c qs_pstest::Counter*[900]\n"};
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
