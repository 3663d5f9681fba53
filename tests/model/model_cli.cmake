# ctest: arlab-model's command line. --help names every flag with its default; bad flags exit 2
# with one line naming the flag and what it accepts; a bad topology file exits 1 naming the
# file, line and column; every shipped topology file runs.
# Run: cmake -DTOOL=arlab-model -DTOPOLOGY_DIR=topology -P model_cli.cmake
function(expect rc_want pattern)
  execute_process(COMMAND ${TOOL} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL rc_want)
    message(FATAL_ERROR "arlab-model ${ARGN}: exit ${rc}, expected ${rc_want}\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "arlab-model ${ARGN}: output does not match '${pattern}':\n${out}${err}")
  endif()
endfunction()

set(h100 ${TOPOLOGY_DIR}/h100-8gpu-nvlink.yaml)
expect(0 "--ranks P +number of ranks.*default: nodes x ranks_per_node.*--sizes MIN:MAX.*default: 8:1G:4.*--algorithms LIST.*default: all.*--explain.*--json FILE" --help)
expect(2 "^arlab-model: --topology FILE is required")
expect(2 "^arlab-model: bad value '0' for --ranks: expected an integer from 1 to 4096\n$" --topology ${h100} --ranks 0)
expect(2 "^arlab-model: bad value '65536' for --ranks: expected an integer from 1 to 4096\n$" --topology ${h100} --ranks 65536)
# A chunk under 1K would cut a large call into millions of steps; sizes under one float are none.
expect(2 "^arlab-model: bad value '1' for --chunk: expected 0, or a size in bytes of at least 1K" --topology ${h100} --chunk 1)
expect(2 "^arlab-model: --sizes 1:3 holds no whole float \\(4 bytes\\)\n$" --topology ${h100} --sizes 1:3)
expect(2 "^arlab-model: cannot write --json file '[^']*/no/such/dir.json': No such file or directory\n$"
       --topology ${h100} --json ${CMAKE_CURRENT_BINARY_DIR}/no/such/dir.json)
expect(2 "^arlab-model: bad value '8:1X' for --sizes: expected MIN:MAX\\[:FACTOR\\]" --topology ${h100} --sizes 8:1X)
expect(2 "^arlab-model: bad value 'ring,mpi' for --algorithms: expected a comma list of ring, tree, recursive-doubling \\(rd\\), rabenseifner \\(rab\\), hierarchical, or all\n$"
       --topology ${h100} --algorithms ring,mpi)
expect(2 "^arlab-model: unknown argument '--rank'; flags: --topology, --ranks," --topology ${h100} --rank 4)
expect(2 "^arlab-model: --json needs a value" --topology ${h100} --json)

file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/model_cli_bad.yaml "name: bad\nnodes: 1\nranks_per_node: 4\nlinks:\n  intra: { alpha_us: 1, bandwidth_GBps: -3 }\nreduce: { bandwidth_GBps: 5 }\n")
expect(1 "^arlab-model: [^\n]*model_cli_bad.yaml:5:41: links.intra.bandwidth_GBps must be positive, got '-3'\n$"
       --topology ${CMAKE_CURRENT_BINARY_DIR}/model_cli_bad.yaml)
expect(1 "cannot open topology file '[^']*no-such-file.yaml': No such file or directory" --topology ${TOPOLOGY_DIR}/no-such-file.yaml)
expect(1 "^arlab-model: topology file '${TOPOLOGY_DIR}' is a directory\n$" --topology ${TOPOLOGY_DIR})
# A file's own rank count is held to the same limit as --ranks.
file(READ ${TOPOLOGY_DIR}/emulated-2x2-1gbit.yaml big)
string(REGEX REPLACE "\nnodes: [0-9]+" "\nnodes: 100000" big "${big}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/model_cli_big.yaml "${big}")
expect(1 "^arlab-model: the file places 200000 ranks \\(nodes x ranks_per_node\\); arlab-model walks at most 4096: give --ranks\n$"
       --topology ${CMAKE_CURRENT_BINARY_DIR}/model_cli_big.yaml --sizes 8:8)

file(GLOB shipped ${TOPOLOGY_DIR}/*.yaml)
foreach(f IN LISTS shipped)
  expect(0 "Crossovers" --topology ${f} --sizes 8:16M:16)
endforeach()
# --ranks overrides the file: 4 ranks of the 2-node file stay on node 0.
expect(0 "# 4 ranks on 1 node;" --topology ${TOPOLOGY_DIR}/h100-2node-ndr.yaml --ranks 4 --sizes 8:8)
