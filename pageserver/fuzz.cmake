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

if(QS_FUZZER_OK)
  message(STATUS "qs: building the wire-protocol fuzzer with ${QS_CLANGXX}")
  set(_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/qs_parser_fuzzer)
  set(_wire ${PROJECT_SOURCE_DIR}/libqs/src/wire)
  set(_sources ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/parser_fuzzer.cpp ${_wire}/messages.cpp)
  # qs's warning set, as clang takes it (cmake/QsWarnings.cmake).
  qs_warning_flags(_warnings Clang)
  add_custom_command(
    OUTPUT ${_fuzzer}
    COMMAND ${QS_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined ${_warnings}
            -I${PROJECT_SOURCE_DIR}/libqs/include -I${_wire} ${_sources} -o ${_fuzzer}
    DEPENDS ${_sources} ${_wire}/messages.hpp ${_wire}/codec.hpp
    COMMENT "Building the wire-protocol fuzzer with clang (libFuzzer)")
  add_custom_target(qs_parser_fuzzer_build ALL DEPENDS ${_fuzzer})
  set(_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
  add_test(NAME pageserver_fuzz_corpus COMMAND ${_fuzzer} -runs=0 ${_corpus})
  # New inputs go to a scratch directory in the build tree, never to the sources.
  add_test(NAME pageserver_fuzz_bounded
           COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
                   sh -c "mkdir -p fuzz-work && exec ${_fuzzer} -max_total_time=4 -timeout=5 -rss_limit_mb=1024 -max_len=4096 -seed=1 fuzz-work ${_corpus}")
  set_tests_properties(pageserver_fuzz_corpus pageserver_fuzz_bounded PROPERTIES TIMEOUT 60)
else()
  message(STATUS "qs: clang++ with -fsanitize=fuzzer not found: the wire-protocol fuzzer is not built")
endif()
