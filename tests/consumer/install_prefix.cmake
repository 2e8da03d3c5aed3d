# cmake -DBUILD_DIR=... -DPREFIX=... -P install_prefix.cmake: a fresh install of the build, which
# the consumer tests that need one share (ctest fixture coalesce_installed).
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE status
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${status}):\n${out}${err}")
endif()
