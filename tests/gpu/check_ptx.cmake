# cmake -DPTX=file.ptx -DEXPECT=regex -DCOUNT=n -P check_ptx.cmake: the PTX must contain at least
# COUNT matches of EXPECT (one per kernel that must use the instruction).
file(READ ${PTX} ptx)
string(REGEX MATCHALL "${EXPECT}" found "${ptx}")
list(LENGTH found n)
if(n LESS COUNT)
  message(FATAL_ERROR "${PTX}: ${n} matches of '${EXPECT}', expected at least ${COUNT}")
endif()
message(STATUS "${PTX}: ${n} matches of '${EXPECT}'")
