# A database generated with OO7_INDEX=bdb (Berkeley DB's B-trees) keeps them:
# run without OO7_INDEX it uses them; run with OO7_INDEX=btree it is refused
# with a message saying which kind it has. A qs::btree database likewise
# refuses OO7_INDEX=bdb. Both answer Q1 (10 lookups) alike.
#   cmake -DQS=oo7-qs -DWORK=dir -P index_mismatch.cmake
file(REMOVE_RECURSE ${WORK})
foreach(kind bdb btree)
  set(db ${WORK}/${kind})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OO7_INDEX=${kind} ${QS} gen tiny ${db} --quiet --no-durable
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "indexes=${kind} ")
    message(FATAL_ERROR "OO7_INDEX=${kind} oo7-qs gen failed (exit ${rc}):\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=OO7_INDEX ${QS} bench tiny ${db} 1 q1 one --quiet
                          --no-durable --warm-os
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES " indexes=${kind} " OR NOT out MATCHES " result=10 ")
    message(FATAL_ERROR "oo7-qs did not run Q1 on its ${kind} indexes (exit ${rc}):\n${out}")
  endif()
endforeach()
foreach(pair "bdb;btree" "btree;bdb")
  list(GET pair 0 has)
  list(GET pair 1 asked)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OO7_INDEX=${asked} ${QS} bench tiny ${WORK}/${has} 1 q1 one --quiet
                          --no-durable --warm-os
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR NOT out MATCHES "OO7_INDEX=${asked} asks for the other kind")
    message(FATAL_ERROR "a ${has} database ran with OO7_INDEX=${asked} (exit ${rc}):\n${out}")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
