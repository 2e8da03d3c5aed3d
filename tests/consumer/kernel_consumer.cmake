# cmake -DPREFIX=<install> -DWORK=... -DSOURCE_DIR=... -DCXX=... -DCUDA=<nvcc> -DARCHS=<library's>
#       -DPREFIX_PATH=... -P kernel_consumer.cmake
# A find_package(coalesce) project with LANGUAGES CXX CUDA and a kernel of its own:
#   1. without CMAKE_CUDA_ARCHITECTURES (CMake's default, sm_75): configuring must fail and say
#      which target builds for which architectures, and how to set them
#   2. the same with COALESCE_CUDA_ARCHITECTURES_CHECK=WARNING: a warning, configuring goes on
#   3. as 1, with coalesce as a subdirectory: coalesce follows the project's (CMake's default)
#      architectures, consistently, but warns that they are CMake's default and not its own
#   4. with the library's architectures before project(): it configures, sees
#      coalesce_CUDA_ARCHITECTURES, ptxas compiles its for_each_index kernel for exactly those
#      architectures, and it runs (skipped without a GPU)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK})
set(ENV{CUDAARCHS} "")  # CMake would take architectures from it
set(project ${SOURCE_DIR}/tests/consumer/kernel)
set(configure -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_CUDA_COMPILER=${CUDA} "-DCMAKE_PREFIX_PATH=${PREFIX}\;${PREFIX_PATH}")

must_fail("coalesce: libcoalesce.a's kernels were built for CUDA architectures ${ARCHS}"
          ${CMAKE_COMMAND} -S ${project} -B ${WORK}/default ${configure})
must_say("kernel_consumer: CUDA_ARCHITECTURES" "${run_output}")
must_say("CMAKE_CUDA_ARCHITECTURES before project()" "${run_output}")

run(${CMAKE_COMMAND} -S ${project} -B ${WORK}/warning ${configure} -DCOALESCE_CUDA_ARCHITECTURES_CHECK=WARNING)
must_say("CMake Warning" "${run_output}")
must_say("coalesce: libcoalesce.a's kernels were built for" "${run_output}")

run(${CMAKE_COMMAND} -S ${project} -B ${WORK}/subdirectory -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_CUDA_COMPILER=${CUDA}
    -DCOALESCE_SOURCE_DIR=${SOURCE_DIR} -DCOALESCE_ENABLE_CUDA=ON "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}")
must_say("coalesce: device code is built for CMake's default CUDA architectures" "${run_output}")

string(REPLACE ";" "\\;" archs_arg "${ARCHS}")
run(${CMAKE_COMMAND} -S ${project} -B ${WORK}/build ${configure} -DCMAKE_CUDA_ARCHITECTURES=${archs_arg})
must_say("consumer sees coalesce_CUDA_ARCHITECTURES=${ARCHS}" "${run_output}")
set(ENV{NVCC_APPEND_FLAGS} "--resource-usage")  # ptxas names each kernel and its architecture
run(${CMAKE_COMMAND} --build ${WORK}/build --verbose)
set(ENV{NVCC_APPEND_FLAGS} "")
string(REGEX MATCHALL "Compiling entry function '[^']*for_each_index_kernel[^']*' for 'sm_[0-9a-z]+'" kernels "${run_output}")
if(NOT kernels)
  message(FATAL_ERROR "no for_each_index kernel was compiled:\n${run_output}")
endif()
set(built)
foreach(k IN LISTS kernels)
  string(REGEX MATCH "sm_([0-9a-z]+)'$" _ "${k}")
  list(APPEND built ${CMAKE_MATCH_1})
endforeach()
list(REMOVE_DUPLICATES built)
set(wanted)
foreach(a IN LISTS ARCHS)
  string(REGEX REPLACE "-(real|virtual)$" "" a "${a}")
  list(APPEND wanted ${a})
endforeach()
list(SORT built)
list(SORT wanted)
if(NOT built STREQUAL wanted)
  message(FATAL_ERROR "the consumer's kernel was built for sm_${built}, coalesce for ${ARCHS}")
endif()
message(STATUS "the consumer's for_each_index kernel is built for sm_${built}, as libcoalesce.a is")

run_program(${WORK}/build/kernel_consumer)
if(consumer_skipped)
  message(STATUS "SKIPPED: consumer built for the library's architectures; running it needs a GPU")
endif()
