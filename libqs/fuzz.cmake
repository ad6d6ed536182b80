# The libFuzzer target for page records and mapping objects
# (fuzz/page_fuzzer.cpp), built with clang by a custom command when
# cmake/QsFuzz.cmake finds a clang++ that links -fsanitize=fuzzer.
# Tests: the saved corpus, then a few seconds of fuzzing from it; scripts/fuzz
# runs it longer. Built only with QS_BUILD_FUZZ (libqs/CMakeLists.txt).
include(QsFuzz)
if(QS_FUZZER_OK)
  set(_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/qs_page_fuzzer)
  set(_src ${CMAKE_CURRENT_SOURCE_DIR}/src)
  set(_sources ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/page_fuzzer.cpp ${_src}/page_check.cpp ${_src}/page_heap.cpp
               ${_src}/format/checksum.cpp ${_src}/format/mapping.cpp)
  qs_warning_flags(_warnings Clang)
  add_custom_command(
    OUTPUT ${_fuzzer}
    COMMAND ${QS_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined ${_warnings}
            -I${PROJECT_SOURCE_DIR}/libqs/include -I${_src} -I${_src}/format ${_sources} -o ${_fuzzer}
    DEPENDS ${_sources} ${_src}/page_check.hpp ${_src}/page_heap.hpp ${_src}/page_format.hpp
            ${_src}/format/page_record.hpp ${_src}/format/mapping.hpp
    COMMENT "Building the page fuzzer with clang (libFuzzer)")
  add_custom_target(qs_page_fuzzer_build ALL DEPENDS ${_fuzzer})
  if(QS_BUILD_TESTS)
    set(_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
    add_test(NAME page_fuzz_corpus COMMAND ${_fuzzer} -runs=0 ${_corpus})
    # New inputs go to a scratch directory in the build tree, never to the sources.
    add_test(NAME page_fuzz_bounded
             COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
                     sh -c "mkdir -p page-fuzz-work && exec ${_fuzzer} -max_total_time=4 -timeout=5 -rss_limit_mb=1024 -max_len=8192 -seed=1 page-fuzz-work ${_corpus}")
    set_tests_properties(page_fuzz_corpus page_fuzz_bounded PROPERTIES TIMEOUT 60)
  endif()
else()
  message(STATUS "qs: clang++ with -fsanitize=fuzzer not found: the page fuzzer is not built")
endif()
