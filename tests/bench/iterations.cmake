# ctest bench.iterations_np2: without -n every section times at least 20 calls and as many more
# as fill 1 ms (at most 1000), the same on every rank, and --json says how many; -n N times
# exactly N. An 8 B call takes a few microseconds here, so its sections time far more than 20
# (at least one of them, below).
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

function(iters_of json result)
  file(READ ${json} text)
  string(REGEX MATCHALL "\"iters\": [0-9]+" all "${text}")
  list(REMOVE_AT all 0)  # the header's
  set(${result} "${all}" PARENT_SCOPE)
endfunction()

run(rc out err COMMAND ${MPIRUN} ${BENCH} -b 8 -e 8 -a rd,ring --topology ${TOPOLOGY_DIR}/local.yaml
    --json ${OUT}/iterations.json)
if(NOT rc EQUAL 0)
  fail("exit ${rc}, expected 0" "${out}" "${err}")
endif()
expect_texts("${out}" "${err}" "timed per line and section" "at least 20 (and enough for 1 ms, at most 1000)")
iters_of(${OUT}/iterations.json counts)
list(LENGTH counts n)
if(NOT n EQUAL 4)  # rd and ring, out of place and in place
  fail("${n} records, expected 4: ${counts}" "${out}" "${err}")
endif()
# How many more than 20 depends on the warm-up calls' speed: under load (other tests beside
# this one on 2 cores) one section's warm-up may take 50 us a call and time only 20; all four
# at 20 would mean the fill is not counted.
set(above 0)
foreach(c IN LISTS counts)
  string(REGEX REPLACE "\"iters\": " "" c "${c}")
  if(c LESS 20 OR c GREATER 1000)
    fail("an 8 B section timed ${c} calls: expected 20 to 1000" "${out}" "${err}")
  endif()
  if(c GREATER 20)
    math(EXPR above "${above} + 1")
  endif()
endforeach()
if(above EQUAL 0)
  fail("every 8 B section timed 20 calls (${counts}): expected more where calls are short (enough for 1 ms)"
       "${out}" "${err}")
endif()

run(rc out err COMMAND ${MPIRUN} ${BENCH} -b 8 -e 8 -a rd -n 7 --topology ${TOPOLOGY_DIR}/local.yaml
    --json ${OUT}/iterations.json)
iters_of(${OUT}/iterations.json counts)
if(NOT rc EQUAL 0 OR NOT counts STREQUAL "\"iters\": 7;\"iters\": 7")
  fail("-n 7: exit ${rc}, iters ${counts}, expected 7 for both sections" "${out}" "${err}")
endif()
message(STATUS "iterations: more than 20 where calls are short, exactly -n when given")
