# QsFuzz.cmake: whether this machine can build libFuzzer targets.
#
# The main build uses g++; libFuzzer needs clang (Debian's `clang`, installed
# by scripts/setup). Sets QS_CLANGXX and QS_FUZZER_OK (clang++ links
# -fsanitize=fuzzer here). The fuzzers themselves are custom commands that
# invoke clang++ on their sources (libqs/fuzz.cmake, pageserver/fuzz.cmake).
# Included by each directory that builds a fuzzer: the probe runs in each.

find_program(QS_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
set(QS_FUZZER_OK OFF)
if(QS_CLANGXX)
  set(_probe ${CMAKE_BINARY_DIR}/fuzz_probe.cpp)
  file(WRITE ${_probe} "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
  execute_process(COMMAND ${QS_CLANGXX} -std=c++20 -fsanitize=fuzzer ${_probe} -o ${CMAKE_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(QS_FUZZER_OK ON)
  endif()
endif()

# qs_add_fuzzer(<binary> TARGET <build-target> TESTS <test-prefix> WHAT <text>
#               SOURCES ... INCLUDES ... DEPENDS ... CORPUS <dir> MAX_LEN <n>)
# Builds <binary> in the current binary directory with clang, libFuzzer and
# ASan+UBSan (a custom command, since the main build is g++), and, with
# QS_BUILD_TESTS, registers <prefix>_corpus (the saved corpus, once) and
# <prefix>_bounded (4 seconds of fuzzing from it, new inputs into a scratch
# directory of the build tree, never into the sources). Nothing is built when
# QS_FUZZER_OK is off.
function(qs_add_fuzzer binary)
  cmake_parse_arguments(F "" "TARGET;TESTS;WHAT;CORPUS;MAX_LEN" "SOURCES;INCLUDES;DEPENDS" ${ARGN})
  if(NOT QS_FUZZER_OK)
    message(STATUS "qs: clang++ with -fsanitize=fuzzer not found: the ${F_WHAT} fuzzer is not built")
    return()
  endif()
  message(STATUS "qs: building the ${F_WHAT} fuzzer with ${QS_CLANGXX}")
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${binary})
  # qs's warning set, as clang takes it (cmake/QsWarnings.cmake).
  qs_warning_flags(warnings Clang)
  list(TRANSFORM F_INCLUDES PREPEND -I)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${QS_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            ${warnings} ${F_INCLUDES} ${F_SOURCES} -o ${out}
    DEPENDS ${F_SOURCES} ${F_DEPENDS}
    COMMENT "Building the ${F_WHAT} fuzzer with clang (libFuzzer)")
  add_custom_target(${F_TARGET} ALL DEPENDS ${out})
  if(QS_BUILD_TESTS)
    add_test(NAME ${F_TESTS}_corpus COMMAND ${out} -runs=0 ${F_CORPUS})
    add_test(NAME ${F_TESTS}_bounded
             COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
                     sh -c "mkdir -p ${F_TESTS}-work && exec ${out} -max_total_time=4 -timeout=5 -rss_limit_mb=1024 -max_len=${F_MAX_LEN} -seed=1 ${F_TESTS}-work ${F_CORPUS}")
    set_tests_properties(${F_TESTS}_corpus ${F_TESTS}_bounded PROPERTIES TIMEOUT 60)
  endif()
endfunction()
