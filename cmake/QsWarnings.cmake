# QsWarnings.cmake: the one warning set of qs's own targets.
#
#   qs_warnings(<target>)                 the set on one target
#   qs_warnings_in_directory(<dir>)       the set on every compiled target
#                                         defined in <dir> and below
#
# The top-level CMakeLists.txt calls qs_warnings_in_directory on qs's source
# directory after everything is defined, so every library, program, test,
# example and benchmark of qs gets the same set, including targets added
# later, without a call of their own. The options are PRIVATE: a project that
# links qs never inherits them, and a parent project's targets are never
# visited (only qs's directories are).
#
# QS_WERROR=ON adds -Werror. Under clang the set also has -Wthread-safety,
# which checks the annotations of libqs/src/util/thread_annotations.hpp.
include(${CMAKE_CURRENT_LIST_DIR}/QsTargets.cmake)
include_guard(GLOBAL)

# The set is what qs's code holds clean. Left out: -Wsign-conversion and
# -Wuseless-cast (dozens of deliberate, harmless conversions and portable
# casts), -Wcast-align (pages are byte arrays by design) and
# -Wnull-dereference (its findings change with the optimiser). Kept in global
# properties so that qs_warnings works from any directory.
set_property(GLOBAL PROPERTY QS_WARNING_FLAGS
  -Wall
  -Wextra
  -Wpedantic
  -Wshadow
  -Wnon-virtual-dtor
  -Wold-style-cast
  -Woverloaded-virtual
  -Wsuggest-override
  -Wcast-qual
  -Wformat=2
  -Wextra-semi
  -Wmissing-declarations
  -Wredundant-decls
  -Wimplicit-fallthrough
  -Wzero-as-null-pointer-constant
  -Wundef)
# clang's -Wconversion also means -Wsign-conversion: g++ only.
set_property(GLOBAL PROPERTY QS_WARNING_FLAGS_GNU -Wconversion -Wduplicated-cond -Wlogical-op)
set_property(GLOBAL PROPERTY QS_WARNING_FLAGS_Clang -Wthread-safety)

# qs_warning_flags(<var> <compiler-id>): the set as a plain list for a
# compiler (GNU or Clang), -Werror included when QS_WERROR is on; for
# commands that do not compile through a target (the fuzzer's).
function(qs_warning_flags var compiler)
  get_property(flags GLOBAL PROPERTY QS_WARNING_FLAGS)
  get_property(extra GLOBAL PROPERTY QS_WARNING_FLAGS_${compiler})
  list(APPEND flags ${extra})
  if(QS_WERROR)
    list(APPEND flags -Werror)
  endif()
  set(${var} ${flags} PARENT_SCOPE)
endfunction()

function(qs_warnings target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "qs_warnings(${target}): no such target")
  endif()
  qs_warning_flags(flags "${CMAKE_CXX_COMPILER_ID}")
  target_compile_options("${target}" PRIVATE ${flags})
endfunction()

function(qs_warnings_in_directory dir)
  qs_compiled_targets(targets "${dir}")
  foreach(t IN LISTS targets)
    qs_warnings("${t}")
  endforeach()
endfunction()
