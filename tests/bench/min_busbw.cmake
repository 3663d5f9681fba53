# ctest bench.min_busbw_np2: ARLAB_BENCH_MIN_BUSBW fails the run (exit 1, named on stderr)
# when the best algorithm's average busbw is below it, and passes when it is not.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(args -b 1K -e 4K -f 4 -n 3 -w 1 -a ring,mpi -q)
run(rc out err ENV ARLAB_BENCH_MIN_BUSBW=1000000 COMMAND ${MPIRUN} ${BENCH} ${args})
if(NOT rc EQUAL 1 OR NOT err MATCHES "arlab-bench: ARLAB_BENCH_MIN_BUSBW=1e\\+06: best average busbw [0-9.]+ GB/s \\((ring over mpi|mpi baseline)\\): below, FAILED")
  fail("ARLAB_BENCH_MIN_BUSBW=1000000: exit ${rc}, expected 1 and the verdict on stderr" "${out}" "${err}")
endif()
run(rc out err ENV ARLAB_BENCH_MIN_BUSBW=0.000001 COMMAND ${MPIRUN} ${BENCH} ${args})
if(NOT rc EQUAL 0)
  fail("ARLAB_BENCH_MIN_BUSBW=0.000001: exit ${rc}, expected 0" "${out}" "${err}")
endif()
message(STATUS "ARLAB_BENCH_MIN_BUSBW: fails below, passes above")
