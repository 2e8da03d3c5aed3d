/* Added for coalesce's build: CoMD's Makefile writes this header with generate_info_header
   (compiler, flags and host); CMake builds the library without that step, so the values are fixed. */
#ifndef CoMD_info_hpp
#define CoMD_info_hpp

#define CoMD_VARIANT "CoMD-openmp"
#define CoMD_HOSTNAME "unknown"
#define CoMD_KERNEL_NAME "'unknown'"
#define CoMD_KERNEL_RELEASE "'unknown'"
#define CoMD_PROCESSOR "'unknown'"

#define CoMD_COMPILER "'CMake C compiler'"
#define CoMD_COMPILER_VERSION "'unknown'"
#define CoMD_CFLAGS "'-std=c99 -fopenmp -DDOUBLE -O3 -march=native'"
#define CoMD_LDFLAGS "'-lm'"

#endif
