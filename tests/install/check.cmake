# The test install (see CMakeLists.txt beside this file):
#
#   cmake -DBUILD_DIR=<qs build> -DAPP_SOURCE_DIR=<this>/app -DMAIN=<main.cpp>
#         -DRUN_TWICE=<run_twice.cmake> -DWORK=<dir> -DGENERATOR=<generator>
#         -DCXX=<c++ compiler> -P check.cmake
#
# WORK/prefix is where qs is installed (afresh on every run); WORK/src the
# app's sources; WORK/build its CMake build; WORK/by-hand the build without
# CMake.
foreach(v BUILD_DIR APP_SOURCE_DIR MAIN RUN_TWICE WORK GENERATOR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check.cmake: -D${v}=... is missing")
  endif()
endforeach()

set(prefix "${WORK}/prefix")
set(src "${WORK}/src")
set(build "${WORK}/build")
set(hand "${WORK}/by-hand")
file(REMOVE_RECURSE "${prefix}" "${src}" "${build}" "${hand}")
file(MAKE_DIRECTORY "${src}" "${hand}")
file(COPY "${APP_SOURCE_DIR}/CMakeLists.txt" "${APP_SOURCE_DIR}/runs.cpp" "${MAIN}" DESTINATION "${src}")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run("installing qs" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f bin/qs-pageserver bin/qs-evolve bin/qs-inspect bin/qs-inspect-software bin/qs-schema-gen
          lib/libqs-hardware.a lib/libqs-software.a
          lib/cmake/qs/qsConfig.cmake lib/cmake/qs/QsSchema.cmake lib/pkgconfig/qs.pc include/qs/qs.hpp
          include/qs/base/error.hpp share/qs/schema-gen/qs_schema_gen.py)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "cmake --install put no ${f} under the prefix")
  endif()
endforeach()

# With CMake: find_package(qs) and nothing else set but where qs is.
run("configuring the app" ${CMAKE_COMMAND} -S "${src}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${prefix}")
run("building the app" ${CMAKE_COMMAND} --build "${build}")
run("running shapes twice" ${CMAKE_COMMAND} "-DPROGRAM=${build}/shapes" -DFIRST=circle "-DSECOND=square circle"
    -P "${RUN_TWICE}")
run("running runs (software mode) twice" ${CMAKE_COMMAND} "-DPROGRAM=${build}/runs" -DFIRST=1 -DSECOND=2
    -P "${RUN_TWICE}")

# The installed qs-inspect reads a hardware-mode database, and runs the
# installed qs-inspect-software for a software-mode one.
set(dbs "${WORK}/databases")
file(REMOVE_RECURSE "${dbs}")
run("shapes, for qs-inspect" "${build}/shapes" "${dbs}/shapes")
run("runs, for qs-inspect" "${build}/runs" "${dbs}/runs")
foreach(db shapes runs)
  run("qs-inspect ${db} verify" "${prefix}/bin/qs-inspect" "${dbs}/${db}" verify)
  run("qs-inspect ${db} stat" "${prefix}/bin/qs-inspect" "${dbs}/${db}" stat)
endforeach()
if(NOT output MATCHES "software mode")
  message(FATAL_ERROR "qs-inspect stat of a software-mode database says:\n${output}")
endif()
file(REMOVE_RECURSE "${dbs}")

# Without CMake: pkg-config's flags, the objects compiled with -g, their
# schema from qs-schema-gen, compiled and linked with them.
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
run("pkg-config --cflags qs" pkg-config --cflags qs)
separate_arguments(cflags UNIX_COMMAND "${output}")
run("pkg-config --libs qs" pkg-config --libs qs)
separate_arguments(libs UNIX_COMMAND "${output}")
run("compiling main.cpp by hand" "${CXX}" -g -O1 ${cflags} -c "${MAIN}" -o "${hand}/main.o")
run("qs-schema-gen" "${prefix}/bin/qs-schema-gen" -o "${hand}/schema.cpp" "${hand}/main.o")
run("compiling the schema by hand" "${CXX}" -O1 ${cflags} -c "${hand}/schema.cpp" -o "${hand}/schema.o")
run("linking by hand" "${CXX}" "${hand}/main.o" "${hand}/schema.o" -o "${hand}/shapes" ${libs})
run("running the hand-built shapes twice" ${CMAKE_COMMAND} "-DPROGRAM=${hand}/shapes" -DFIRST=circle
    "-DSECOND=square circle" -P "${RUN_TWICE}")
message(STATUS "qs installed under ${prefix} was used with find_package(qs) and with pkg-config")
