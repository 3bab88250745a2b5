# Runs the command after "--" and passes only if it exits non-zero and its output
# matches EXPECT. Used for fault-injection tests.
include(${CMAKE_CURRENT_LIST_DIR}/command_after_separator.cmake)
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT 45)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a failure, but the command succeeded:\n${all}")
endif()
if(rc MATCHES "timeout")
  message(FATAL_ERROR "the job hung instead of stopping:\n${all}")
endif()
if(NOT all MATCHES "${EXPECT}")
  message(FATAL_ERROR "exit status ${rc}, but the output lacks /${EXPECT}/:\n${all}")
endif()
message(STATUS "failed as expected (status ${rc}), output matched /${EXPECT}/")
