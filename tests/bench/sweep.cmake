# ctest bench.sweep_np2: a short sweep on 2 ranks over every transport of the build. The table
# must have exactly one line per algorithm x transport x size (the mpi baseline once per size,
# transport "native"), every #wrong 0, the footer OK; it leaves sweep.json and sweep.csv in OUT
# for the schema tests. 8 B .. 4 KiB, factor 8: 4 sizes.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(sizes 8 64 512 4096)
set(schedules ring tree recursive-doubling rabenseifner auto)
file(REMOVE ${OUT}/sweep.json ${OUT}/sweep.csv)
run(rc out err COMMAND ${MPIRUN} ${BENCH} -b 8 -e 4K -f 8 -n 3 -w 1 -a ring,tree,rd,rab,mpi,auto -t all
    --ranks-per-node 1 --json ${OUT}/sweep.json --csv ${OUT}/sweep.csv)
file(WRITE ${OUT}/sweep.txt "${out}")
if(NOT rc EQUAL 0)
  fail("arlab-bench exited ${rc}" "${out}" "${err}")
endif()

set(expected "")
foreach(size IN LISTS sizes)
  foreach(t IN LISTS TRANSPORTS)
    foreach(a IN LISTS schedules)
      list(APPEND expected "${size}/${t}/${a}")
    endforeach()
  endforeach()
  list(APPEND expected "${size}/native/mpi")
endforeach()

table_lines("${out}" lines)
set(seen "")
foreach(line IN LISTS lines)
  string(REPLACE "," ";" f "${line}")
  list(LENGTH f n)
  if(NOT n EQUAL 18)  # size count type redop transport algorithm, then pred and 5 more per section
    fail("a table line with ${n} fields, expected 18: ${line}" "${out}" "${err}")
  endif()
  list(GET f 0 size)
  list(GET f 4 transport)
  list(GET f 5 algorithm)
  list(GET f 10 wrong_out)
  list(GET f 16 wrong_in)
  string(REGEX REPLACE "^auto\\(.*\\)$" "auto" algorithm "${algorithm}")
  set(key "${size}/${transport}/${algorithm}")
  if(key IN_LIST seen)
    fail("two lines for ${key}" "${out}" "${err}")
  endif()
  if(NOT key IN_LIST expected)
    fail("an unexpected line ${key}" "${out}" "${err}")
  endif()
  if(NOT wrong_out STREQUAL "0" OR NOT wrong_in STREQUAL "0")
    fail("#wrong ${wrong_out} / ${wrong_in} on ${key}" "${out}" "${err}")
  endif()
  list(APPEND seen "${key}")
endforeach()
foreach(key IN LISTS expected)
  if(NOT key IN_LIST seen)
    fail("no line for ${key}" "${out}" "${err}")
  endif()
endforeach()

list(JOIN TRANSPORTS ", " transports)
foreach(pattern "# arlab-bench [0-9.]+: all-reduce on 2 ranks on 1 host\n"
                "# command: [^\n]*arlab-bench -b 8 -e 4K -f 8 -n 3 -w 1 -a ring,tree,rd,rab,mpi,auto -t all"
                "# transports: ${transports};"
                "# model: [^\n]*, 2 ranks as 2 nodes of 1 rank; --ranks-per-node 1"
                "# Out of bounds values : 0 OK\n"
                "# Avg bus bandwidth ring over mpi +: +[0-9.]+ GB/s"
                "# Avg bus bandwidth mpi baseline +: +[0-9.]+ GB/s"
                "# +4KiB  [a-z-]+ (over [a-z-]+|baseline) +[0-9.]+ +[0-9.]+  [a-z-]+ over")
  if(NOT out MATCHES "${pattern}")
    fail("the output does not match '${pattern}'" "${out}" "${err}")
  endif()
endforeach()
list(LENGTH seen n)
message(STATUS "arlab-bench sweep: ${n} lines, all correct")
