# cmake -DPREFIX=<install> -DWORK=... -DSOURCE_DIR=... -DCXX=... -DPREFIX_PATH=... -P bounds_consumer.cmake
# Whether a consumer's v[i] is checked: the package's default (COALESCE_CHECK_BOUNDS=AUTO) checks
# Debug builds only, and so not CMake's default empty build type (which does not define NDEBUG);
# a target's COALESCE_CHECK_BOUNDS property, and COALESCE_CHECK_BOUNDS set for find_package,
# override it; find_package says what was chosen.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK})
set(project ${SOURCE_DIR}/tests/consumer/bounds)
set(configure -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_PREFIX_PATH=${PREFIX}\;${PREFIX_PATH}")

function(expect build target value)
  run(${CMAKE_COMMAND} --build ${WORK}/${build} --target bounds_${target})
  run(${WORK}/${build}/bounds_${target})
  if(NOT run_output MATCHES "bounds checks: ${value}")
    message(FATAL_ERROR "${build}: bounds_${target} should have bounds checks ${value}, but says: ${run_output}")
  endif()
  message(STATUS "${build}: bounds_${target}: ${run_output}")
endfunction()

run(${CMAKE_COMMAND} -S ${project} -B ${WORK}/empty ${configure})
set(said "${run_output}")
expect(empty default 0)
expect(empty ON 1)
must_say("coalesce: bounds checks of v[i] are off (CMAKE_BUILD_TYPE=''" "${said}")

run(${CMAKE_COMMAND} -S ${project} -B ${WORK}/debug ${configure} -DCMAKE_BUILD_TYPE=Debug)
set(said "${run_output}")
expect(debug default 1)
expect(debug OFF 0)
must_say("coalesce: bounds checks of v[i] are on (CMAKE_BUILD_TYPE=Debug)" "${said}")

run(${CMAKE_COMMAND} -S ${project} -B ${WORK}/release_on ${configure} -DCMAKE_BUILD_TYPE=Release -DCOALESCE_CHECK_BOUNDS=ON)
set(said "${run_output}")
expect(release_on default 1)
must_say("coalesce: bounds checks of v[i] are on: COALESCE_CHECK_BOUNDS=ON" "${said}")
