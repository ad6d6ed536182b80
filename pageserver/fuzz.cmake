# The libFuzzer target for the wire protocol's parsers (fuzz/parser_fuzzer.cpp).
# The main build uses g++; libFuzzer needs clang (Debian's `clang`, installed
# by scripts/setup). The fuzzer is built by a custom command invoking clang++
# on the parser sources, only when clang++ links -fsanitize=fuzzer here.
# Tests: the saved corpus, then a few seconds of fuzzing from it. Built only
# with QS_BUILD_FUZZ (pageserver/CMakeLists.txt).
include(QsFuzz)

# The fuzzer's seed corpus is written by the protocol's own encoders:
# `cmake --build build --target qs_make_fuzz_corpus && build/pageserver/qs_make_fuzz_corpus pageserver/fuzz/corpus`
# after a change to the messages.
add_executable(qs_make_fuzz_corpus EXCLUDE_FROM_ALL fuzz/make_corpus.cpp)
target_link_libraries(qs_make_fuzz_corpus PRIVATE qs_wire)

set(_wire ${PROJECT_SOURCE_DIR}/common/qs/wire)
qs_add_fuzzer(qs_parser_fuzzer TARGET qs_parser_fuzzer_build TESTS pageserver_fuzz WHAT "wire-protocol"
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/parser_fuzzer.cpp ${_wire}/messages.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/common
  DEPENDS ${_wire}/messages.hpp ${_wire}/codec.hpp
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus MAX_LEN 4096)
