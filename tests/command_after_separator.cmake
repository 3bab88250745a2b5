# For the scripts run with `cmake -P SCRIPT -- COMMAND...`: sets `command` to the list of
# the arguments after "--".
set(command "")
set(seen_separator FALSE)
foreach(i RANGE ${CMAKE_ARGC})
  if(seen_separator AND DEFINED CMAKE_ARGV${i})
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen_separator TRUE)
  endif()
endforeach()
