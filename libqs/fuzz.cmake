# The libFuzzer target for page records and mapping objects
# (fuzz/page_fuzzer.cpp), built with clang by a custom command when
# cmake/QsFuzz.cmake finds a clang++ that links -fsanitize=fuzzer.
# Tests: the saved corpus, then a few seconds of fuzzing from it; scripts/fuzz
# runs it longer. Built only with QS_BUILD_FUZZ (libqs/CMakeLists.txt).
include(QsFuzz)
set(_src ${CMAKE_CURRENT_SOURCE_DIR}/src)
set(_format ${PROJECT_SOURCE_DIR}/common/qs/format)
qs_add_fuzzer(qs_page_fuzzer TARGET qs_page_fuzzer_build TESTS page_fuzz WHAT "page"
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/page_fuzzer.cpp ${_src}/core/page_check.cpp ${_src}/core/page_heap.cpp
          ${_format}/checksum.cpp ${_format}/mapping.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/libqs/include ${PROJECT_SOURCE_DIR}/common ${_src}
  DEPENDS ${_src}/core/page_check.hpp ${_src}/core/page_heap.hpp ${_src}/core/page_format.hpp ${_format}/page_record.hpp
          ${_format}/mapping.hpp
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus MAX_LEN 8192)
