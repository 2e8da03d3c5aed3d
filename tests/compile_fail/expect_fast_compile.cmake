# cmake -DCXX=... -DSOURCE=file.cpp -DINCLUDES=a;b -DSECONDS=n -P expect_fast_compile.cmake
# The file must compile (syntax and templates, no code generation) within SECONDS.
set(include_flags)
foreach(dir IN LISTS INCLUDES)
  list(APPEND include_flags -I${dir})
endforeach()
string(TIMESTAMP start "%s")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${include_flags} -DCOALESCE_WITH_CUDA=0 ${SOURCE}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${SECONDS})
string(TIMESTAMP stop "%s")
math(EXPR took "${stop} - ${start}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${SOURCE} did not compile within ${SECONDS} s (${status}, after ${took} s)\n${err}")
endif()
message(STATUS "compiled in about ${took} s (limit ${SECONDS} s)")
