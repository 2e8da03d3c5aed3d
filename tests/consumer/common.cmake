# Helpers for the consumer test scripts (cmake -P).
string(REPLACE "|" ";" PREFIX_PATH "${PREFIX_PATH}")
string(REPLACE "|" ";" ARCHS "${ARCHS}")

# run(<command>...): fails the test, with the command's output, unless it succeeds; leaves that
# output in run_output.
macro(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE run_status OUTPUT_VARIABLE run_out ERROR_VARIABLE run_err)
  set(run_output "${run_out}${run_err}")
  if(NOT run_status EQUAL 0)
    message(FATAL_ERROR "failed (${run_status}): ${ARGV}\n${run_output}")
  endif()
endmacro()

# must_fail(<expected text> <command>...): the command must fail and say the expected text.
macro(must_fail expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE run_status OUTPUT_VARIABLE run_out ERROR_VARIABLE run_err)
  set(run_output "${run_out}${run_err}")
  if(run_status EQUAL 0)
    message(FATAL_ERROR "succeeded, but must fail with \"${expected}\": ${ARGN}\n${run_output}")
  endif()
  string(FIND "${run_output}" "${expected}" where)
  if(where EQUAL -1)
    message(FATAL_ERROR "failed as it should, but without \"${expected}\": ${ARGN}\n${run_output}")
  endif()
  message(STATUS "failed as expected (${expected}): ${ARGN}")
endmacro()

# must_say(<text> <output>): the output must contain the text.
function(must_say text output)
  string(FIND "${output}" "${text}" where)
  if(where EQUAL -1)
    message(FATAL_ERROR "expected \"${text}\" in:\n${output}")
  endif()
endfunction()

# run_program(<program> [args]): 0 passes; 77 (no GPU here) marks the test skipped.
function(run_program)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${ARGV0}: ${out}${err}")
  if(status EQUAL 77)
    set(consumer_skipped TRUE PARENT_SCOPE)
  elseif(NOT status EQUAL 0)
    message(FATAL_ERROR "${ARGV0} failed (${status})")
  endif()
endfunction()
