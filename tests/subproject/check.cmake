# The test subproject (see CMakeLists.txt beside this file):
#
#   cmake -DQS_SOURCE_DIR=<qs> -DAPP_SOURCE_DIR=<this>/app -DWORK=<dir>
#         -DGENERATOR=<generator> -DCXX=<c++ compiler> -P check.cmake
#
# WORK/src is the app's source directory: its two files, and `qs`, a symbolic
# link to QS_SOURCE_DIR (as a checkout of qs inside the project would be).
# WORK/build is its build directory; its cache is dropped on every run, so
# that each run configures from scratch, while the objects already built stay.
foreach(v QS_SOURCE_DIR APP_SOURCE_DIR WORK GENERATOR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check.cmake: -D${v}=... is missing")
  endif()
endforeach()

set(src "${WORK}/src")
set(build "${WORK}/build")
file(REMOVE_RECURSE "${src}" "${build}/CMakeCache.txt" "${build}/CMakeFiles")
file(MAKE_DIRECTORY "${src}")
file(COPY "${APP_SOURCE_DIR}/CMakeLists.txt" "${APP_SOURCE_DIR}/main.cpp" DESTINATION "${src}")
file(CREATE_LINK "${QS_SOURCE_DIR}" "${src}/qs" SYMBOLIC)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
endfunction()

run("configuring the app" ${CMAKE_COMMAND} -S "${src}" -B "${build}" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}")
# Only the app's target: it needs the runtime and nothing else of qs.
run("building the app's target shapes" ${CMAKE_COMMAND} --build "${build}" --target shapes)
# Each run adds a shape to the persistent list and prints the list.
run("running shapes twice" ${CMAKE_COMMAND} "-DPROGRAM=${build}/shapes" -DFIRST=circle "-DSECOND=square circle"
    -P "${QS_SOURCE_DIR}/examples/run_twice.cmake")
message(STATUS "the app built with add_subdirectory(qs) kept its data between two runs")
