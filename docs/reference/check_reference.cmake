# Builds the API reference with Doxygen and fails on any warning (an undocumented public
# symbol, a broken reference, a malformed comment), printing them.
#   cmake -DDOXYGEN=... -DSOURCE_DIR=... -DOUT_DIR=... -P check_reference.cmake
file(REMOVE_RECURSE "${OUT_DIR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ROAM_DOCS_OUT=${OUT_DIR}
  ${DOXYGEN} docs/reference/Doxyfile
  WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${rc}):\n${out}")
endif()
file(READ "${OUT_DIR}/warnings.txt" warnings)
string(STRIP "${warnings}" warnings)
if(warnings)
  message(FATAL_ERROR "the API reference has warnings (document every public symbol):\n${warnings}")
endif()
message(STATUS "API reference: ${OUT_DIR}/html/index.html, no warnings")
