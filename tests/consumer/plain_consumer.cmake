# cmake -DMODE=nvcc|cxx -DPREFIX=<install> -DWORK=... -DSOURCE_DIR=...
#       [-DCUDA_ROOT=... -DARCHS=...] -P plain_consumer.cmake
# Runs the command lines of docs/building.md exactly as written there (the fenced block after each
# "<!-- tested: NAME" comment), against the installed tree, on tests/consumer/plain/:
#   nvcc: the nvcc line and the Makefile. Each must build without a warning and without Boost
#         (coalesce's reflection is its own), ptxas must
#         compile a for_each_index kernel for sm_90 (no -DCOALESCE_WITH_CUDA on the line: the
#         installed build_config.hpp says CUDA), and the programs run (skipped without a GPU).
#   cxx:  the g++ -fopenmp line for a CPU build of coalesce, built without a warning and run.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK})

function(documented name out)
  file(READ ${SOURCE_DIR}/docs/building.md page)
  string(FIND "${page}" "<!-- tested: ${name}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "docs/building.md has no block marked <!-- tested: ${name}")
  endif()
  string(SUBSTRING "${page}" ${at} -1 page)
  if(NOT page MATCHES "\n```[a-z]*\n(.*)")
    message(FATAL_ERROR "no fenced block after <!-- tested: ${name}")
  endif()
  string(FIND "${CMAKE_MATCH_1}" "\n```" end)
  string(SUBSTRING "${CMAKE_MATCH_1}" 0 ${end} block)
  set(${out} "${block}\n" PARENT_SCOPE)
endfunction()

# No warnings (ptxas's --resource-usage lines are information, asked for by the test).
function(must_be_quiet output)
  string(REGEX MATCHALL "[^\n]*[Ww]arning[^\n]*" warnings "${output}")
  if(warnings)
    message(FATAL_ERROR "the documented build printed warnings:\n${output}")
  endif()
endfunction()

function(must_have_kernel output arch)
  if(NOT output MATCHES "Compiling entry function '[^']*for_each_index_kernel[^']*' for '${arch}'")
    message(FATAL_ERROR "no for_each_index kernel was compiled for ${arch}: the device loop is not a GPU kernel\n${output}")
  endif()
endfunction()

set(ENV{PREFIX} ${PREFIX})
set(plain ${SOURCE_DIR}/tests/consumer/plain)
if(MODE STREQUAL "nvcc")
  if(NOT ARCHS MATCHES "^90(-real)?$")
    message(STATUS "SKIPPED: docs/building.md says -arch=sm_90; this coalesce is built for ${ARCHS}")
    return()
  endif()
  set(ENV{PATH} "${CUDA_ROOT}/bin:$ENV{PATH}")
  set(ENV{NVCC_APPEND_FLAGS} "--resource-usage")  # ptxas names each kernel and its architecture

  file(MAKE_DIRECTORY ${WORK}/one)
  configure_file(${plain}/my_sim.cpp ${WORK}/one/my_sim.cu COPYONLY)
  documented(nvcc line)
  file(WRITE ${WORK}/one/build.sh "${line}")
  message(STATUS "docs/building.md, nvcc:\n${line}")
  execute_process(COMMAND sh -e build.sh WORKING_DIRECTORY ${WORK}/one RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the documented nvcc line failed (${status}):\n${out}${err}")
  endif()
  must_be_quiet("${out}${err}")
  must_have_kernel("${out}${err}" sm_90)
  run_program(${WORK}/one/my_sim)

  file(MAKE_DIRECTORY ${WORK}/make)
  foreach(f main.cpp step.cu step.hpp)
    configure_file(${plain}/${f} ${WORK}/make/${f} COPYONLY)
  endforeach()
  documented(makefile makefile)
  file(WRITE ${WORK}/make/Makefile "${makefile}")
  execute_process(COMMAND make PREFIX=${PREFIX} CUDA=${CUDA_ROOT} WORKING_DIRECTORY ${WORK}/make
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the documented Makefile failed (${status}):\n${out}${err}")
  endif()
  message(STATUS "make:\n${out}")
  must_be_quiet("${out}${err}")
  must_have_kernel("${out}${err}" sm_90)
  run_program(${WORK}/make/my_sim)
else()
  file(MAKE_DIRECTORY ${WORK}/one)
  configure_file(${plain}/my_sim.cpp ${WORK}/one/my_sim.cpp COPYONLY)
  documented(cxx line)
  file(WRITE ${WORK}/one/build.sh "${line}")
  message(STATUS "docs/building.md, g++:\n${line}")
  execute_process(COMMAND sh -e build.sh WORKING_DIRECTORY ${WORK}/one RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the documented g++ line failed (${status}):\n${out}${err}")
  endif()
  must_be_quiet("${out}${err}")
  run_program(${WORK}/one/my_sim)
endif()
if(consumer_skipped)
  message(STATUS "SKIPPED: built as docs/building.md says; running the programs needs a GPU")
endif()
