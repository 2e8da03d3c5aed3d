# cmake -DNM=... -DLIBRARY=<libcoalesce.a> -P cccl_wrapped.cmake
# The Thrust and CUB compiled into libcoalesce.a must be in coalesce_cccl:: (built with
# THRUST_CUB_WRAPPED_NAMESPACE), so that they cannot collide with a program's own at link time.
execute_process(COMMAND ${NM} -C ${LIBRARY} RESULT_VARIABLE status OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} -C ${LIBRARY} failed (${status}): ${err}")
endif()
string(REGEX MATCHALL "coalesce_cccl::(thrust|cub)::" wrapped "${symbols}")
list(LENGTH wrapped count)
if(count EQUAL 0)
  message(FATAL_ERROR "no symbol of libcoalesce.a is in coalesce_cccl::thrust or coalesce_cccl::cub")
endif()
if(symbols MATCHES "[^:_A-Za-z0-9](thrust|cub)::")
  string(FIND "${symbols}" "${CMAKE_MATCH_0}" at)
  string(SUBSTRING "${symbols}" ${at} 300 example)
  message(FATAL_ERROR "libcoalesce.a has Thrust or CUB symbols in ::thrust or ::cub, not coalesce_cccl::, e.g.\n${example}")
endif()
message(STATUS "${count} mentions of coalesce_cccl::thrust and coalesce_cccl::cub in libcoalesce.a's symbols, none of ::thrust or ::cub")
