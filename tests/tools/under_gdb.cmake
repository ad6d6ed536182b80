# Runs PROGRAM under gdb in batch mode, twice on one fresh database, with the
# line docs/tools.md gives for qs ("handle SIGSEGV SIGBUS nostop noprint pass": the page
# faults are qs's, and go to its handler), and checks what each run printed:
# FIRST, then SECOND. gdb's exit status is the program's
# (--return-child-result). Prints "gdb not found" (the test is then skipped)
# when GDB is empty.
#
#   cmake -DGDB=<gdb or empty> -DPROGRAM=<program> -DFIRST=... -DSECOND=... -P under_gdb.cmake
if(NOT GDB)
  message(STATUS "gdb not found: nothing to run")
  return()
endif()
string(RANDOM LENGTH 8 suffix)
set(dir "$ENV{TMPDIR}")
if(NOT dir)
  set(dir /tmp)
endif()
set(work "${dir}/qs-gdb-${suffix}")
# In a build with AddressSanitizer (QS_SANITIZE=address): LeakSanitizer
# cannot run under a debugger (ptrace), and would end the program.
if(DEFINED ENV{ASAN_OPTIONS})
  set(ENV{ASAN_OPTIONS} "$ENV{ASAN_OPTIONS}:detect_leaks=0")
else()
  set(ENV{ASAN_OPTIONS} "detect_leaks=0")
endif()
file(MAKE_DIRECTORY "${work}")
foreach(run 1 2)
  # The program's own output goes to a file, apart from gdb's.
  execute_process(
    COMMAND "${GDB}" -nx -batch --return-child-result
            -ex "handle SIGSEGV SIGBUS nostop noprint pass"
            -ex "run \"${work}/db\" > \"${work}/out${run}\""
            "${PROGRAM}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE gdb_out ERROR_VARIABLE gdb_out)
  if(EXISTS "${work}/out${run}")
    file(READ "${work}/out${run}" out${run})
  else()
    set(out${run} "")
  endif()
  string(STRIP "${out${run}}" out${run})
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE "${work}")
    message(FATAL_ERROR "run ${run} under gdb failed (${rc}); the program printed '${out${run}}'; gdb said:\n${gdb_out}")
  endif()
endforeach()
file(REMOVE_RECURSE "${work}")
message(STATUS "under gdb, run 1:\n${out1}\nrun 2:\n${out2}")
if(NOT out1 STREQUAL FIRST OR NOT out2 STREQUAL SECOND)
  message(FATAL_ERROR "expected '${FIRST}' then '${SECOND}'")
endif()
