# Runs the command after "--" RUNS times; each run must exit non-zero within SECONDS and
# print EXPECT. Used for the dying-rank tests: a rank killed with SIGKILL must end the whole
# job, loudly, every time.
include(${CMAKE_CURRENT_LIST_DIR}/command_after_separator.cmake)
foreach(run RANGE 1 ${RUNS})
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    TIMEOUT ${SECONDS})
  string(TIMESTAMP end "%s")
  math(EXPR elapsed "${end} - ${start}")
  set(all "${out}${err}")
  if(rc MATCHES "timeout")
    message(FATAL_ERROR "run ${run}: the job was still running after ${SECONDS} s:\n${all}")
  endif()
  if(rc EQUAL 0)
    message(FATAL_ERROR "run ${run}: the job succeeded although a rank died:\n${all}")
  endif()
  if(NOT all MATCHES "${EXPECT}")
    message(FATAL_ERROR "run ${run}: exit status ${rc}, but the output lacks /${EXPECT}/:\n${all}")
  endif()
  message(STATUS "run ${run}: ended with status ${rc} in about ${elapsed} s")
endforeach()
