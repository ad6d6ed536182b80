# Builds the project internal_linkage/ (a program with a persistent type in an
# anonymous namespace) in a fresh directory and checks that the build fails
# in schema-gen with a message naming the type, why, and what to do.
# Run with -DSOURCE=<that folder> -DBINARY=<a scratch build folder>
# -DQS_SOURCE_DIR=<the qs tree> -DQS_SCHEMA_PYTHON=... -DGENERATOR=...
# -DMAKE_PROGRAM=... -DCXX=<the C++ compiler>.
file(REMOVE_RECURSE "${BINARY}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}"
          "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}" "-DCMAKE_CXX_COMPILER=${CXX}"
          -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DQS_SOURCE_DIR=${QS_SOURCE_DIR}"
          "-DQS_SCHEMA_PYTHON=${QS_SCHEMA_PYTHON}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring ${SOURCE} failed (${rc}):\n${out}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BINARY}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "the build of ${SOURCE} succeeded; schema-gen should have refused "
                      "its type in an anonymous namespace:\n${out}")
endif()
foreach(want
    "qs_schema_gen: error: type `(anonymous namespace)::Node` has internal linkage (it is declared in an anonymous namespace)"
    "has no schema"
    "Move the type out of the anonymous namespace, into a named namespace")
  string(FIND "${out}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the build of ${SOURCE} failed, but its output lacks\n  ${want}\n${out}")
  endif()
endforeach()
file(REMOVE_RECURSE "${BINARY}")
message(STATUS "refused as expected")
