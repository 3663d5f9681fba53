# Helpers for the arlab-bench ctest scripts. Variables from the test: BENCH (the binary),
# MPIRUN (mpirun and its flags for 2 ranks, '|'-separated), OUT (a directory for files),
# TRANSPORTS (those this build has, '|'-separated), TOPOLOGY_DIR.
cmake_minimum_required(VERSION 3.24)  # policies for -P scripts (IN_LIST)
string(REPLACE "|" ";" MPIRUN "${MPIRUN}")
string(REPLACE "|" ";" TRANSPORTS "${TRANSPORTS}")
file(MAKE_DIRECTORY ${OUT})

# run(<rc> <stdout var> <stderr var> [ENV VAR=VALUE ...] COMMAND args...)
function(run rc_var out_var err_var)
  cmake_parse_arguments(R "" "" "ENV;COMMAND" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${R_ENV} ${R_COMMAND}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if("${out}${err}" MATCHES "UCX +(WARN|ERROR)[^\n]*")
    fail("UCX warned: '${CMAKE_MATCH_0}' (a communicator left an operation unfinished)" "${out}" "${err}")
  endif()
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(fail what out err)
  message(FATAL_ERROR "${what}\n--- stdout:\n${out}\n--- stderr:\n${err}")
endfunction()

# Fails unless every text after the first two arguments occurs in `out`.
function(expect_texts out err)
  foreach(text IN LISTS ARGN)
    string(FIND "${out}" "${text}" at)
    if(at EQUAL -1)
      fail("the output does not say '${text}'" "${out}" "${err}")
    endif()
  endforeach()
endfunction()

# The table's data lines (not starting with '#'), as a list; each line's fields ';'-separated.
function(table_lines out_text result)
  string(REPLACE ";" "," text "${out_text}")
  string(REPLACE "\n" ";" text "${text}")
  set(lines "")
  foreach(line IN LISTS text)
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    string(REGEX REPLACE " +" "," line "${line}")
    list(APPEND lines "${line}")
  endforeach()
  set(${result} "${lines}" PARENT_SCOPE)
endfunction()
