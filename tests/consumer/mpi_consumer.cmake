# cmake -DPREFIX=<install> -DWORK=... -DSOURCE_DIR=... -DCXX=... -DPREFIX_PATH=... -P mpi_consumer.cmake
# The installed package defines coalesce::mpi where MPI is found: a project links it and runs.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/mpi -B ${WORK} -DCMAKE_CXX_COMPILER=${CXX}
    "-DCMAKE_PREFIX_PATH=${PREFIX}\;${PREFIX_PATH}")
run(${CMAKE_COMMAND} --build ${WORK})
run(${WORK}/mpi_consumer)
must_say("mpi consumer: kept 10 of 10" "${run_output}")
