# ctest bench.command_line: arlab-bench as one process (no mpirun). --help documents every
# flag; a bad value exits 2 with exactly one line naming the flag and what it accepts; bad
# files and environment exit 2 before anything runs; -q prints the table only.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

# expect(<rc> <regex for stderr> args...): stdout must be empty when rc is 2.
function(expect rc_want pattern)
  cmake_parse_arguments(E "" "ENV" "" ${ARGN})  # ENV VAR=VALUE: one variable
  run(rc out err ENV ${E_ENV} COMMAND ${BENCH} ${E_UNPARSED_ARGUMENTS})
  if(NOT rc EQUAL rc_want)
    fail("arlab-bench ${E_UNPARSED_ARGUMENTS}: exit ${rc}, expected ${rc_want}" "${out}" "${err}")
  endif()
  if(NOT err MATCHES "${pattern}")
    fail("arlab-bench ${E_UNPARSED_ARGUMENTS}: stderr does not match '${pattern}'" "${out}" "${err}")
  endif()
  if(rc_want EQUAL 2 AND NOT out STREQUAL "")
    fail("arlab-bench ${E_UNPARSED_ARGUMENTS}: printed on stdout before failing" "${out}" "${err}")
  endif()
endfunction()

run(rc out err COMMAND ${BENCH} --help)
string(REGEX REPLACE "[ \n]+" " " flat "${out}")
if(NOT rc EQUAL 0 OR NOT flat MATCHES "-z, --inplace 0\\|1 0: both sections[^(]*\\(send == recv\\), as nccl-tests prints them; 1 \\(or a bare -z\\): in place only \\(default: 0\\)")
  fail("--help does not document -z" "${out}" "${err}")
endif()
foreach(flag -b -e -f -i -a -d -o -n -w -c -t -z --ranks-per-node --topology --json --csv --plot -q --progress)
  if(NOT out MATCHES "\n +${flag}[ ,]")
    fail("--help does not list ${flag}" "${out}" "${err}")
  endif()
endforeach()

# One line each, naming the flag and the accepted values.
expect(2 "^arlab-bench: bad value 'float8' for -d: expected one of int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float, double, all\n$" -d float8)
expect(2 "^arlab-bench: bad value 'tcp' for -t: expected one of mpi, ucx, ucx-rma, all\n$" -t mpi,tcp)
expect(2 "^arlab-bench: bad value 'fast' for -a: expected one of auto, ring, tree, recursive-doubling, rabenseifner, hierarchical, mpi, nccl, all\n$" -a fast)
expect(2 "^arlab-bench: bad value '3' for -z: expected 0 or 1\n$" -z 3)
expect(2 "^arlab-bench: bad value '1' for -f: expected an integer >= 2\n$" -f 1)
expect(2 "^arlab-bench: bad value '1Q' for -e: expected a size in bytes such as 8, 64K, 1M or 2G\n$" -e 1Q)
expect(2 "^arlab-bench: -f and -i exclude each other: -f N multiplies the size, -i SIZE adds to it\n$" -f 4 -i 1M)
expect(2 "^arlab-bench: unknown option '--bogus' \\(see --help\\)\n$" --bogus)
expect(2 "^arlab-bench: bad value 'lots' for ARLAB_BENCH_MIN_BUSBW: expected a bus bandwidth in GB/s >= 0\n$"
       ENV ARLAB_BENCH_MIN_BUSBW=lots -b 8 -e 8)
expect(2 "^arlab-bench: bad value '2' for --ranks-per-node: expected a divisor of the rank count 1\n$" --ranks-per-node 2 -b 8 -e 8)

# Files: a bad topology names file, line and column; unwritable outputs; --plot without matplotlib.
file(WRITE ${OUT}/bad.yaml "name: bad\nnodes: 1\nranks_per_node: 4\nlinks:\n  intra: { alpha_us: 1, bandwidth_GBps: -3 }\nreduce: { bandwidth_GBps: 5 }\n")
expect(2 "^arlab-bench: [^\n]*bad.yaml:5:41: links.intra.bandwidth_GBps must be positive, got '-3'\n$" --topology ${OUT}/bad.yaml -b 8 -e 8)
expect(2 "cannot open topology file" --topology ${OUT}/missing.yaml -b 8 -e 8)
expect(2 "^arlab-bench: cannot write --json ${OUT}/no/such/dir.json: No such file or directory\n$" --json ${OUT}/no/such/dir.json -b 8 -e 8)
expect(2 "^arlab-bench: --plot ${OUT}/x.png: /bin/false cannot import matplotlib" ENV ARLAB_BENCH_PYTHON=/bin/false --plot ${OUT}/x.png -b 8 -e 8)
# The image is written after the sweep: its path is checked before it, as --json's is.
expect(2 "^arlab-bench: cannot write --plot ${OUT}/no/such/dir.png: No such file or directory\n$" --plot ${OUT}/no/such/dir.png -b 8 -e 8)
file(MAKE_DIRECTORY ${OUT}/a-dir.png)
expect(2 "^arlab-bench: cannot write --plot ${OUT}/a-dir.png: it is a directory\n$" --plot ${OUT}/a-dir.png -b 8 -e 8)
expect(2 "^arlab-bench: bad value '-' for --json: expected a file name \\(stdout carries the table\\)\n$" --json - -b 8 -e 8)
expect(2 "^arlab-bench: topology file '${OUT}' is a directory\n$" --topology ${OUT} -b 8 -e 8)

# Buffers larger than the memory at hand: one line saying so, exit 1 (not an abort).
run(rc out err COMMAND sh -c "ulimit -v 1000000 && exec ${BENCH} -b 8G -e 8G -n 1 -w 0 -a ring -c 0 -t mpi")
if(NOT rc EQUAL 1 OR NOT err MATCHES "^arlab-bench: cannot allocate 8589934592 bytes \\([^)]+\\): each rank needs a send and a receive buffer of the largest size\n$")
  fail("-e 8G under a 1 GB limit: exit ${rc}, expected 1 with one line" "${out}" "${err}")
endif()

# -q: the three heading lines and one line per algorithm, nothing else.
run(rc out err COMMAND ${BENCH} -q -b 8 -e 8 -n 2 -w 1 -a ring,mpi --topology ${TOPOLOGY_DIR}/local.yaml)
table_lines("${out}" lines)
list(LENGTH lines n)
string(REGEX MATCHALL "(^|\n)#" hashes "${out}")
list(LENGTH hashes heading)
if(NOT rc EQUAL 0 OR NOT n EQUAL 2 OR NOT heading EQUAL 3)
  fail("-q: exit ${rc}, ${n} lines and ${heading} '#' lines, expected 0, 2 and 3" "${out}" "${err}")
endif()

# --ranks-per-node 1 on one rank, and the header's model line.
run(rc out err COMMAND ${BENCH} -b 8 -e 8 -n 1 -w 0 -a ring --ranks-per-node 1 --topology ${TOPOLOGY_DIR}/local.yaml)
if(NOT rc EQUAL 0 OR NOT out MATCHES "# model: 'local, 1 rank per node' \\([^)]*local.yaml\\), 1 rank as 1 node of 1 rank; --ranks-per-node 1: 1 node of 1 rank, joined by its intra-node link")
  fail("--ranks-per-node 1: exit ${rc} or no model line" "${out}" "${err}")
endif()
message(STATUS "arlab-bench command line: all checks passed")
