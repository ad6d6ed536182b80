// Catch2's own SIGSEGV handler would take the faults qs uses to bring pages
// in, so the tests run without it.
#define CATCH_CONFIG_NO_POSIX_SIGNALS
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
