# ctest bench.calibrate_np2: --calibrate measures each transport's machine again in the same
# launch (ARLAB_CALIBRATE=force) and caches it; with --ranks-per-node it measures the emulated
# nodes itself. The header says so (with --ranks-per-node it shows the fitted numbers); every
# schedule algorithm's line has a prediction; no temporary file is left behind. With one rank
# it refuses (exit 2, one line).
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(tmp ${OUT}/calibrate-tmp)
file(REMOVE_RECURSE ${tmp})
file(MAKE_DIRECTORY ${tmp})
run(rc out err ENV TMPDIR=${tmp} ARLAB_CACHE_DIR=${tmp}/cache ARLAB_DEBUG=INFO
  COMMAND ${MPIRUN} ${BENCH} -b 8 -e 1K -f 64 -a rd,ring -n 3 -w 1 --calibrate)
if(NOT rc EQUAL 0)
  fail("exit ${rc}, expected 0" "${out}" "${err}")
endif()
expect_texts("${out}" "${err}" "# model: each transport's machine (no topology file), 2 ranks:"
  "#   mpi: '" "', calibrated now over mpi in ")
# At Info, where the calibration's time went (one node: no inter-node link).
if(NOT err MATCHES "arlab INFO: the calibration's stages: intra-node link [0-9.]+ s, compute [0-9.]+ s\n")
  fail("no line of the calibration's stages" "${out}" "${err}")
endif()
file(REMOVE_RECURSE ${tmp}/cache)
run(rc out err ENV TMPDIR=${tmp} COMMAND ${MPIRUN} ${BENCH} -b 8 -e 1K -f 64 -a rd,ring -n 3 -w 1 --calibrate --ranks-per-node 1)
if(NOT rc EQUAL 0)
  fail("--ranks-per-node 1: exit ${rc}, expected 0" "${out}" "${err}")
endif()
expect_texts("${out}" "${err}" "model: 'calibrated by arlab-bench' (measured in this launch by --calibrate over mpi, "
  "# fitted machine 'calibrated by arlab-bench'" "#   inter  alpha ")
table_lines("${out}" lines)
list(LENGTH lines n)
if(NOT n EQUAL 4)  # 8 B and 512 B x rd and ring
  fail("${n} table lines, expected 4" "${out}" "${err}")
endif()
foreach(line IN LISTS lines)
  string(REPLACE "," ";" fields "${line}")
  list(GET fields 6 pred)
  if(NOT pred MATCHES "^[0-9]+\\.[0-9]+$")
    fail("no prediction in: ${line}" "${out}" "${err}")
  endif()
endforeach()
file(GLOB left ${tmp}/*)
if(left)
  fail("temporary files left behind: ${left}" "${out}" "${err}")
endif()

# One rank cannot measure a link.
run(rc out err COMMAND ${BENCH} -b 8 -e 8 -a rd --calibrate)
if(NOT rc EQUAL 2 OR NOT err MATCHES "arlab-bench: --calibrate: needs at least 2 ranks")
  fail("one rank with --calibrate: exit ${rc}, expected 2 and the reason" "${out}" "${err}")
endif()
message(STATUS "--calibrate: measured in the launch, predictions on every line, no file left")
