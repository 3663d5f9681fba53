# ctest bench.rounds_np2: --rounds 3, the input written anew before each call (the default). The header says how lines were timed; the
# JSON records rounds and fresh_input; every line and section is there once (not once per
# round), checked (the last round checks, #wrong 0), with min <= time <= max.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(json ${OUT}/rounds.json)
run(rc out err COMMAND ${MPIRUN} ${BENCH} -b 1K -e 4K -f 4 -a ring,rd -n 3 -w 1 --rounds 3 --json ${json})
if(NOT rc EQUAL 0)
  fail("exit ${rc}, expected 0" "${out}" "${err}")
endif()
expect_texts("${out}" "${err}" "1 warm-up, 3 timed per line and section, in 3 interleaved rounds"
  "the input written anew before each call (untimed; --reuse-input: the same every call)"
  "each line's median round shown")
table_lines("${out}" lines)
list(LENGTH lines n)
if(NOT n EQUAL 4)  # 1 KiB and 4 KiB x ring and rd, one line each
  fail("${n} table lines, expected 4" "${out}" "${err}")
endif()

file(READ ${json} doc)
string(JSON rounds GET "${doc}" arlab_bench rounds)
string(JSON fresh GET "${doc}" arlab_bench fresh_input)
if(NOT rounds EQUAL 3 OR NOT fresh STREQUAL "ON")
  message(FATAL_ERROR "header rounds ${rounds}, fresh_input ${fresh}; expected 3 and true")
endif()
string(JSON records LENGTH "${doc}" records)
if(NOT records EQUAL 8)  # the 4 lines x out-of-place and in-place
  message(FATAL_ERROR "${records} records, expected 8")
endif()
math(EXPR last "${records} - 1")
foreach(i RANGE ${last})
  string(JSON wrong GET "${doc}" records ${i} wrong)
  string(JSON t GET "${doc}" records ${i} time_us)
  string(JSON lo GET "${doc}" records ${i} time_min_us)
  string(JSON hi GET "${doc}" records ${i} time_max_us)
  if(NOT wrong EQUAL 0)
    message(FATAL_ERROR "record ${i}: wrong ${wrong}")
  endif()
  if(lo GREATER t OR t GREATER hi)
    message(FATAL_ERROR "record ${i}: time ${t} not within [${lo}, ${hi}]")
  endif()
endforeach()
message(STATUS "--rounds 3, fresh input: 4 lines, 8 records, all checked")
