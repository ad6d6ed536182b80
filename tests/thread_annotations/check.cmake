# The test thread_annotations (see CMakeLists.txt beside this file):
#
#   cmake -DCLANGXX=clang++ -DCLANG_FLAGS="..." -DCXX=g++ -DCXX_FLAGS="..."
#         -DINCLUDE=<libqs/src> -DDIR=<this folder> -P check.cmake
#
# CLANG_FLAGS and CXX_FLAGS are the warning sets, space-separated.
separate_arguments(clang_flags UNIX_COMMAND "${CLANG_FLAGS}")
separate_arguments(cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
set(common -std=c++20 -fsyntax-only "-I${INCLUDE}")

function(compile compiler flags file)
  execute_process(COMMAND "${compiler}" ${common} ${flags} "${DIR}/${file}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
endfunction()

compile("${CLANGXX}" "${clang_flags};-Wthread-safety;-Werror" holds.cpp)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang's thread-safety analysis rejects holds.cpp:\n${out}")
endif()

compile("${CLANGXX}" "${clang_flags};-Wthread-safety;-Wno-error" violates.cpp)
foreach(expected
    "writing variable 'balance_' requires holding mutex 'mutex_' exclusively"
    "mutex 'mutex_' is still held at the end of function"
    "calling function 'add' requires holding mutex 'mutex_' exclusively"
    "releasing mutex 'mutex_' that was not held"
    "writing the value pointed to by 'cell_' requires holding mutex 'mutex_' exclusively")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "clang did not report \"${expected}\" in violates.cpp:\n${out}")
  endif()
endforeach()

foreach(file holds.cpp violates.cpp)
  compile("${CXX}" "${cxx_flags};-Werror" ${file})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CXX} rejects ${file} (the annotations must be empty there):\n${out}")
  endif()
endforeach()
message(STATUS "thread-safety analysis: holds.cpp accepted, every mistake of violates.cpp reported")
