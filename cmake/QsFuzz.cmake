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
