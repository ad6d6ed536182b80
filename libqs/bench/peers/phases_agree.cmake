# Runs the phases of one peer program of scripts/peers on a small tree in a
# fresh directory and checks what the traversals see: every node, with the
# values it was built with, then with the update's 1% of them one higher
# (after a reopen, so from the file or the store). PROGRAM is the program;
# N the node count (a multiple of 100). peer-mem runs its single "all" phase.
string(RANDOM LENGTH 8 suffix)
set(dir "$ENV{TMPDIR}")
if(NOT dir)
  set(dir /tmp)
endif()
set(path "${dir}/qs-peers-test-${suffix}")
math(EXPR built "${N} * (${N} - 1) / 2")
math(EXPR updated "${built} + ${N} / 100")

function(run_phase phase expected_sum)
  execute_process(COMMAND "${PROGRAM}" ${phase} "${path}" ${N}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE "${path}")
    message(FATAL_ERROR "${PROGRAM} ${phase} failed (${rc}): ${err}")
  endif()
  message(STATUS "${out}")
  if(expected_sum AND NOT out MATCHES " sum=${expected_sum}[ \n]")
    file(REMOVE_RECURSE "${path}")
    message(FATAL_ERROR "${PROGRAM} ${phase}: expected sum=${expected_sum}")
  endif()
endfunction()

if(PROGRAM MATCHES "peer-mem$")
  run_phase(all ${built})
else()
  run_phase(build "")
  run_phase(open "")
  run_phase(traverse ${built})
  run_phase(update "")
  run_phase(traverse ${updated})
endif()
file(REMOVE_RECURSE "${path}")
