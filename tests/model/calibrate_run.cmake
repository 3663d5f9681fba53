# ctest: arlab-calibrate --quick under mpirun on 2 ranks writes a topology file that arlab-model
# loads, with one regime and, with a small --cache-bytes, with two; --help and bad flags exit 0 and 2 without an MPI launch; a --ranks-per-node that does
# not divide the ranks exits 2 with one line.
# Run: cmake -DMPIEXEC=mpirun -DMPIRUN_FLAGS="..." -DTOOL=arlab-calibrate -DMODEL=arlab-model
#            -DTRANSPORT=mpi -DOUT=calibrated.yaml -P calibrate_run.cmake
separate_arguments(flags UNIX_COMMAND "${MPIRUN_FLAGS}")

function(expect rc_want pattern)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL rc_want)
    message(FATAL_ERROR "${ARGN}: exit ${rc}, expected ${rc_want}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "${ARGN}: output does not match '${pattern}':\n${out}${err}")
  endif()
  message(STATUS "${ARGN}: exit ${rc}\n${out}${err}")
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# A file that cannot be written fails before anything is measured (no header printed).
get_filename_component(dir ${OUT} DIRECTORY)
expect(2 "^arlab-calibrate: cannot write -o ${dir}/no/such/dir.yaml: No such file or directory\n"
       ${MPIEXEC} -np 2 ${flags} ${TOOL} --quick -t ${TRANSPORT} -o ${dir}/no/such/dir.yaml)
if(out MATCHES "# arlab-calibrate")
  message(FATAL_ERROR "arlab-calibrate measured before finding that -o cannot be written:\n${out}")
endif()

file(REMOVE ${OUT})
expect(0 "# link intra: ranks 0 and 1.*exchange .* us \\+ bytes / .* GB/s.*R\\^2.*# compute:.*reduce gamma.*# wrote"
       ${MPIEXEC} -np 2 ${flags} ${TOOL} --quick -t ${TRANSPORT} --name ctest-calibrated -o ${OUT})
if(NOT EXISTS ${OUT})
  message(FATAL_ERROR "arlab-calibrate did not write ${OUT}")
endif()
expect(0 "# arlab-model: ctest-calibrated .*\n# 2 ranks on 1 node; intra .*Crossovers"
       ${MODEL} --topology ${OUT} --sizes 8:1M:16)

# A cache small enough that the largest quick sizes lie beyond it: both regimes reach the file.
file(REMOVE ${OUT})
expect(0 "# a node's cache: 256 KiB, from --cache-bytes.*exchange, in cache .*exchange, beyond .*reduce, beyond .*beyond the cache [0-9.]+ GB/s.*# wrote"
       ${MPIEXEC} -np 2 ${flags} ${TOOL} --quick -t ${TRANSPORT} --name ctest-cached --cache-bytes 256K -o ${OUT})
file(READ ${OUT} written)
if(NOT written MATCHES "cache_bytes: 262144\n.*bandwidth_GBps_beyond_cache: ")
  message(FATAL_ERROR "${OUT} lacks the beyond-cache regime:\n${written}")
endif()
expect(0 "# beyond the cache \\(a node's working set of 256 KiB or more\\): intra .*Crossovers"
       ${MODEL} --topology ${OUT} --sizes 8:1M:16)

if(TRANSPORT STREQUAL "mpi")
  expect(0 "usage: mpirun -np P arlab-calibrate.*--ranks-per-node K.*--quick" ${TOOL} --help)
  expect(2 "^arlab-calibrate: bad value 'tcp' for --transport: expected mpi, ucx or ucx-rma\n$" ${TOOL} -t tcp)
  # mpirun adds its own notice of the exit status; the tool's line comes once, from rank 0.
  expect(2 "^arlab-calibrate: --ranks-per-node 3 does not divide the 2 ranks into whole nodes\n"
         ${MPIEXEC} -np 2 ${flags} ${TOOL} --quick --ranks-per-node 3)
  string(REGEX MATCHALL "arlab-calibrate: " lines "${out}${err}")
  list(LENGTH lines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one error line from rank 0, got ${n}")
  endif()
endif()
