# ctest gpu.check_script: scripts/gpu-check --bundle from this build, then scripts/gpu-check on
# the host stand-in of a device (ARLAB_TEST_DEVICE=host, --quick), with this machine's Open MPI,
# UCX and the rest hidden where a mount namespace can hide them (without_system_mpi.sh), so the
# bundle's relocated mpirun and libraries are what runs. Variables: SCRIPT, BUILD, DIR.
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E env ARLAB_BUILD_DIR=${BUILD} bash ${SCRIPT} --bundle ${DIR}/bundle
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "gpu-check: bundle [^\n]*: [0-9]+ MiB, glibc GLIBC_2\\.[0-9]+ needed")
  message(FATAL_ERROR "gpu-check --bundle: exit ${rc}\n${out}\n${err}")
endif()
set(hide ${CMAKE_CURRENT_LIST_DIR}/without_system_mpi.sh)
execute_process(COMMAND ${hide} true RESULT_VARIABLE hidden OUTPUT_QUIET)
if(NOT hidden EQUAL 0)
  message(STATUS "the system's MPI stays visible (no mount namespace here): the bundle's relocation is not proven")
  set(hide "")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ARLAB_TEST_DEVICE=host --unset=OUT
                        ${hide} bash ${SCRIPT} --bundle-dir ${DIR}/bundle --out ${DIR}/results --quick
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${DIR}/results/summary.txt summary)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpu-check: exit ${rc}\n${out}\n${err}")
endif()
foreach(want "step gpu-tests: ok" "step staged: ok" "step mpirun: ok" "step bench-np2: ok"
             "staged ring +host +[0-9.]+ us, device +[0-9.]+ us, bound +[0-9.]+ us: [0-9.]+x"
             "gpu-check: [0-9]+ s; results in ")
  if(NOT summary MATCHES "${want}")
    message(FATAL_ERROR "the summary does not say '${want}':\n${summary}")
  endif()
endforeach()
foreach(file log.txt staged.csv bench-np2.json gpu-tests.xml)
  if(NOT EXISTS ${DIR}/results/${file})
    message(FATAL_ERROR "gpu-check left no ${file}:\n${summary}")
  endif()
endforeach()
message(STATUS "gpu-check on the host stand-in:\n${summary}")
