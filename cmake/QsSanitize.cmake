# QsSanitize.cmake: qs built under a sanitizer (the cache option QS_SANITIZE).
#
#   QS_SANITIZE=           none (the default)
#   QS_SANITIZE=address    AddressSanitizer and UndefinedBehaviorSanitizer
#   QS_SANITIZE=thread     ThreadSanitizer
#
#   qs_sanitize_in_directory(<dir>)   the flags on every compiled target
#                                     defined in <dir> and below
#
# The top-level CMakeLists.txt calls qs_sanitize_in_directory on qs's source
# directory once everything is defined, as it does qs_warnings_in_directory,
# so that the runtime, qs-pageserver, the tests, the examples, the benchmarks
# and OO7 are all built the same way. Compile options are PRIVATE; the link
# options are PUBLIC, so that a program of a parent project that links the
# (static) runtime also links the sanitizer's own runtime. A parent's own
# sources are not instrumented: it adds -fsanitize to them itself.
#
# Undefined behaviour ends the program (-fno-sanitize-recover), so that a
# test that meets it fails instead of printing and going on.
#
# Under QS_SANITIZE=address, the targets defined in tests/ (the Catch2 test
# programs, their workers and helpers) get AddressSanitizer only: what
# UndefinedBehaviorSanitizer would check there is mostly Catch2's macros,
# and it made their compilation three times as long (oo7_test.cpp: 221 s
# with both, 79 s with AddressSanitizer alone, at -O1): more than half of
# the build. The code they test (the runtime, qs-pageserver, the libraries
# they share, OO7's and the examples' code) has both; so does every link.
# The tests' own code compiles at -O0 there: the optimizer under
# AddressSanitizer was most of their compilation (wire_messages_test.cpp
# 50 s at -O1, 28 at -Og, 22 at -O0; oo7_test.cpp 28, 16, 11), and what
# they run is mostly the runtime, still at -O1.
#
# What a sanitizer's runtime must be told for qs's SIGSEGV handler to work is
# compiled into the runtime (libqs/src/os/fault_signal.cpp, the
# __*_default_options); docs/tools.md ("Sanitizers, gdb and valgrind") says
# it for programs built otherwise. scripts/sanitize adds, in the tests'
# environment, what makes a finding in a child process fail its test.
include(${CMAKE_CURRENT_LIST_DIR}/QsTargets.cmake)
include_guard(GLOBAL)

set(QS_SANITIZE "" CACHE STRING "Build qs under a sanitizer: empty, address (ASan and UBSan) or thread (TSan)")
set_property(CACHE QS_SANITIZE PROPERTY STRINGS "" address thread)
if(QS_SANITIZE STREQUAL "address")
  set_property(GLOBAL PROPERTY QS_SANITIZE_COMPILE_FLAGS
    -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  set_property(GLOBAL PROPERTY QS_SANITIZE_TEST_COMPILE_FLAGS -O0 -fsanitize=address -fno-omit-frame-pointer)
  set_property(GLOBAL PROPERTY QS_SANITIZE_LINK_FLAGS -fsanitize=address,undefined)
elseif(QS_SANITIZE STREQUAL "thread")
  set_property(GLOBAL PROPERTY QS_SANITIZE_COMPILE_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
  set_property(GLOBAL PROPERTY QS_SANITIZE_TEST_COMPILE_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
  set_property(GLOBAL PROPERTY QS_SANITIZE_LINK_FLAGS -fsanitize=thread)
elseif(NOT QS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "QS_SANITIZE must be empty, address or thread, not '${QS_SANITIZE}'")
endif()
# GCC's manual: sanitizers raise the rate of false -Wmaybe-uninitialized
# warnings (with AddressSanitizer, in libstdc++'s <regex> as Catch2 uses it,
# at -O2), so the warning is off in that build; the others keep it.
if(QS_SANITIZE STREQUAL "address" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set_property(GLOBAL APPEND PROPERTY QS_SANITIZE_COMPILE_FLAGS -Wno-maybe-uninitialized)
  set_property(GLOBAL APPEND PROPERTY QS_SANITIZE_TEST_COMPILE_FLAGS -Wno-maybe-uninitialized)
endif()

# qs_sanitize(<target> [TEST]): TEST takes the test targets' flags (above).
function(qs_sanitize target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "qs_sanitize(${target}): no such target")
  endif()
  if(ARGV1 STREQUAL "TEST")
    get_property(compile GLOBAL PROPERTY QS_SANITIZE_TEST_COMPILE_FLAGS)
  else()
    get_property(compile GLOBAL PROPERTY QS_SANITIZE_COMPILE_FLAGS)
  endif()
  get_property(link GLOBAL PROPERTY QS_SANITIZE_LINK_FLAGS)
  if(compile)
    target_compile_options("${target}" PRIVATE ${compile})
    target_link_options("${target}" PUBLIC ${link})
  endif()
endfunction()

function(qs_sanitize_in_directory dir)
  if(QS_SANITIZE STREQUAL "")
    return()
  endif()
  qs_compiled_targets(targets "${dir}")
  set(tests "${dir}/tests")
  foreach(t IN LISTS targets)
    get_target_property(source_dir "${t}" SOURCE_DIR)
    cmake_path(IS_PREFIX tests "${source_dir}" NORMALIZE is_test)
    if(is_test)
      qs_sanitize("${t}" TEST)
    else()
      qs_sanitize("${t}")
    endif()
  endforeach()
endfunction()
