# cmake -DPTX=file.ptx -DEXPECT=regex -DCOUNT=n [-DFORBID=regex] -P check_ptx.cmake: the PTX must
# contain at least COUNT matches of EXPECT (one per kernel that must use the instruction), and no
# match of FORBID where given (an instruction that must not appear, e.g. byte-wise loads).
file(READ ${PTX} ptx)
string(REGEX MATCHALL "${EXPECT}" found "${ptx}")
list(LENGTH found n)
if(n LESS COUNT)
  message(FATAL_ERROR "${PTX}: ${n} matches of '${EXPECT}', expected at least ${COUNT}")
endif()
if(DEFINED FORBID)
  string(REGEX MATCHALL "${FORBID}" forbidden "${ptx}")
  list(LENGTH forbidden f)
  if(f GREATER 0)
    message(FATAL_ERROR "${PTX}: ${f} matches of '${FORBID}', expected none")
  endif()
endif()
message(STATUS "${PTX}: ${n} matches of '${EXPECT}'")
