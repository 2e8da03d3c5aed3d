# cmake -DCXX=... -DPREFIX=<install> -DWORK=... -DSOURCE_DIR=... -DWITH_CUDA=0|1
#       -DLIBRARY=<libcoalesce.a> "-DLINK_FLAGS=..." -P config_checks.cmake
# Configurations that must be refused, each next to one that must be accepted:
#   1. against the installed tree, a -DCOALESCE_WITH_CUDA that disagrees with how libcoalesce was
#      built: an #error that says so (a matching one, or none, compiles)
#   2. against the source tree, which has no generated header, without -DCOALESCE_WITH_CUDA: an
#      #error that says what to pass (with it, it compiles)
#   3. headers configured the other way (the build's build_config.hpp with COALESCE_BUILD_WITH_CUDA
#      flipped), linked with this libcoalesce.a: a link error naming the configuration the file
#      needs (the build's own header links)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK})
set(probe ${SOURCE_DIR}/tests/consumer/plain/config_probe.cpp)
set(compile ${CXX} -std=c++20)
if(WITH_CUDA)
  set(other 0)
  set(built "built with CUDA")
else()
  set(other 1)
  set(built "built without CUDA")
endif()

run(${compile} -fsyntax-only -I${PREFIX}/include ${probe})
run(${compile} -fsyntax-only -I${PREFIX}/include -DCOALESCE_WITH_CUDA=${WITH_CUDA} ${probe})
must_fail("coalesce: this libcoalesce was ${built}, but COALESCE_WITH_CUDA is defined as ${other} here"
          ${compile} -fsyntax-only -I${PREFIX}/include -DCOALESCE_WITH_CUDA=${other} ${probe})

run(${compile} -fsyntax-only -I${SOURCE_DIR}/include -DCOALESCE_WITH_CUDA=${WITH_CUDA} ${probe})
must_fail("coalesce: no coalesce/detail/build_config.hpp on the include path"
          ${compile} -fsyntax-only -I${SOURCE_DIR}/include ${probe})
must_say("-DCOALESCE_WITH_CUDA=1 (CUDA) or -DCOALESCE_WITH_CUDA=0" "${run_output}")

separate_arguments(link UNIX_COMMAND "${LINK_FLAGS}")
file(READ ${PREFIX}/include/coalesce/detail/build_config.hpp header)
string(REPLACE "#define COALESCE_BUILD_WITH_CUDA ${WITH_CUDA}" "#define COALESCE_BUILD_WITH_CUDA ${other}" flipped "${header}")
if(flipped STREQUAL header)
  message(FATAL_ERROR "build_config.hpp has no '#define COALESCE_BUILD_WITH_CUDA ${WITH_CUDA}':\n${header}")
endif()
file(WRITE ${WORK}/other/coalesce/detail/build_config.hpp "${flipped}")
run(${compile} -I${PREFIX}/include ${probe} -o ${WORK}/same ${LIBRARY} ${link})
run(${compile} -c -I${WORK}/other -I${SOURCE_DIR}/include ${probe} -o ${WORK}/other.o)
string(REGEX MATCH "COALESCE_BUILD_VERSION_MAJOR ([0-9]+)" _ "${header}")
set(major ${CMAKE_MATCH_1})
string(REGEX MATCH "COALESCE_BUILD_VERSION_MINOR ([0-9]+)" _ "${header}")
set(minor ${CMAKE_MATCH_1})
must_fail("libcoalesce_${major}_${minor}_built_with_cuda_${other}" ${CXX} ${WORK}/other.o -o ${WORK}/mixed ${LIBRARY} ${link})
