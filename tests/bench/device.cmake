# ctest bench.device_np2: -D on 2 ranks with the host stand-in of a device
# (ARLAB_TEST_DEVICE=host, src/device/host_device_memory.cpp), so the bench's device path runs
# without a GPU: buffers from the device's allocator, inputs and results copied across, every
# transport's staging. Every schedule algorithm and auto on every transport, float and half,
# sum and avg, 8 B to 2 MiB (four staging pieces of 512 KiB); every #wrong 0. The mpi baseline and nccl are
# skipped with their reasons (this MPI is not CUDA-aware; nccl needs a GPU), and the header
# and the JSON say the buffers are device memory. Then -D with no device at all (where this
# machine has none) fails at once with one line saying why.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

file(REMOVE ${OUT}/device.json)
run(rc out err ENV ARLAB_TEST_DEVICE=host ARLAB_TIMEOUT_S=30
    COMMAND ${MPIRUN} ${BENCH} -D -b 8 -e 2M -f 64 -n 3 -w 1 -a all -t all -d float,half -o sum,avg
    --json ${OUT}/device.json)
if(NOT rc EQUAL 0)
  fail("arlab-bench -D exited ${rc}" "${out}" "${err}")
endif()
expect_texts("${out}" "${err}"
  "# buffers: device memory (-D) of host test device; inputs written and results checked through page-locked host copies"
  "mpi (arlab: the mpi baseline needs host buffers"
  "nccl (arlab: nccl baseline"
  "# Out of bounds values : 0 OK")

table_lines("${out}" lines)
set(n 0)
foreach(line IN LISTS lines)
  string(REPLACE "," ";" f "${line}")
  list(GET f 4 transport)
  list(GET f 10 wrong_out)
  list(GET f 16 wrong_in)
  if(transport STREQUAL "native")
    fail("a baseline line on device buffers: ${line}" "${out}" "${err}")
  endif()
  if(NOT wrong_out STREQUAL "0" OR NOT wrong_in STREQUAL "0")
    fail("#wrong ${wrong_out} / ${wrong_in}: ${line}" "${out}" "${err}")
  endif()
  math(EXPR n "${n} + 1")
endforeach()
list(LENGTH TRANSPORTS t)
math(EXPR want "4 * 2 * 2 * 6 * ${t}")  # sizes x types x ops x (5 schedules and auto) x transports
if(NOT n EQUAL want)
  fail("${n} table lines, expected ${want}" "${out}" "${err}")
endif()
file(READ ${OUT}/device.json json)
string(JSON buffers GET "${json}" arlab_bench buffers)
if(NOT buffers STREQUAL "device")
  fail("the JSON header says buffers '${buffers}', expected 'device'" "${out}" "${err}")
endif()

# The real device: where there is none (as in CI), one line saying why, before anything runs.
run(rc out err COMMAND ${MPIRUN} ${BENCH} -D -b 8 -e 8 -a ring)
if(rc EQUAL 0)
  message(STATUS "a CUDA device is here: -D ran on it")
elseif(NOT err MATCHES "arlab-bench: -D: device buffers need a CUDA device: [^\n]+\n")
  fail("-D without a device: exit ${rc}, expected a failure saying why" "${out}" "${err}")
elseif(out MATCHES "[0-9]+ +[0-9]+ +float")
  fail("-D without a device printed table lines" "${out}" "${err}")
endif()
run(rc out err ENV ARLAB_TEST_DEVICE=gpu COMMAND ${MPIRUN} ${BENCH} -D -b 8 -e 8)
if(rc EQUAL 0 OR NOT err MATCHES "ARLAB_TEST_DEVICE='gpu': the only value is 'host'")
  fail("ARLAB_TEST_DEVICE=gpu: exit ${rc}, expected a failure naming the variable" "${out}" "${err}")
endif()
message(STATUS "arlab-bench -D: ${n} lines on the host stand-in of a device, all correct")
