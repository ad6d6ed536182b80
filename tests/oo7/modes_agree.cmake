# Runs every OO7 operation on the tiny database in each oo7 program (qs, sw,
# qs-big, mem) and fails unless all of them give the same result.
#
#   cmake -DPROGRAMS="oo7-qs;oo7-sw;..." -DWORK=dir -P modes_agree.cmake
#
# Each operation runs twice in one transaction on a freshly generated
# database, so that updates see the same state in every program (oo7-mem
# generates its database in the process).
if(NOT PROGRAMS OR NOT WORK)
  message(FATAL_ERROR "usage: cmake -DPROGRAMS=a;b -DWORK=dir -P modes_agree.cmake")
endif()

list(GET PROGRAMS 0 first)
execute_process(COMMAND ${first} ops OUTPUT_VARIABLE ops RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${first} ops failed")
endif()
string(STRIP "${ops}" ops)
string(REPLACE "\n" ";" ops "${ops}")
list(LENGTH ops nops)
if(nops LESS 20)
  message(FATAL_ERROR "${first} ops lists only ${nops} operations")
endif()

set(failed "")
set(table "")
foreach(op IN LISTS ops)
  set(results "")
  set(line "${op}:")
  foreach(program IN LISTS PROGRAMS)
    get_filename_component(mode ${program} NAME)
    set(db ${WORK}/${mode})
    file(REMOVE_RECURSE ${db})
    if(NOT mode STREQUAL "oo7-mem")
      execute_process(COMMAND ${program} gen tiny ${db} --quiet --no-durable
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${mode} gen tiny failed:\n${out}")
      endif()
    endif()
    execute_process(COMMAND ${program} bench tiny ${db} 2 ${op} one --quiet --no-durable --warm-os
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${mode} bench tiny ${op} failed:\n${out}")
    endif()
    if(NOT out MATCHES " result=(-?[0-9]+)")
      message(FATAL_ERROR "${mode} ${op}: no result in:\n${out}")
    endif()
    list(APPEND results ${CMAKE_MATCH_1})
    string(APPEND line " ${mode}=${CMAKE_MATCH_1}")
  endforeach()
  list(REMOVE_DUPLICATES results)
  list(LENGTH results distinct)
  string(APPEND table "${line}\n")
  if(NOT distinct EQUAL 1)
    list(APPEND failed ${op})
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
message("${table}")
if(failed)
  message(FATAL_ERROR "the modes disagree on: ${failed}")
endif()
