# Decides COALESCE_WITH_CUDA from COALESCE_ENABLE_CUDA (AUTO|ON|OFF) and enables the language.
# Device code is built for sm_90 (Hopper) unless CMAKE_CUDA_ARCHITECTURES says otherwise.
string(TOUPPER "${COALESCE_ENABLE_CUDA}" coalesce_cuda_request)
set(COALESCE_WITH_CUDA OFF)
if(coalesce_cuda_request STREQUAL "OFF")
  message(STATUS "coalesce: CUDA disabled; device memory is host memory, device loops use OpenMP")
else()
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc AND NOT DEFINED ENV{CUDACXX})
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(COALESCE_WITH_CUDA ON)
    message(STATUS "coalesce: CUDA enabled for architectures ${CMAKE_CUDA_ARCHITECTURES}")
    # As a subproject of a project that enabled CUDA itself without choosing architectures,
    # coalesce follows CMake's default (sm_75 for nvcc 13), not its own: consistent, but
    # probably not the GPU meant.
    include(${CMAKE_CURRENT_LIST_DIR}/coalesce_consumer.cmake)
    _coalesce_cuda_architectures_defaulted(coalesce_cuda_archs_defaulted)
    if(NOT coalesce_top_level AND coalesce_cuda_archs_defaulted AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "90")
      message(WARNING "coalesce: device code is built for CMake's default CUDA architectures (${CMAKE_CUDA_ARCHITECTURES}), "
                      "as CMAKE_CUDA_ARCHITECTURES was not set before the enclosing project() enabled CUDA; "
                      "coalesce's own default is 90 (Hopper). Set CMAKE_CUDA_ARCHITECTURES before project().")
    endif()
  elseif(coalesce_cuda_request STREQUAL "ON")
    message(FATAL_ERROR "coalesce: COALESCE_ENABLE_CUDA=ON but no CUDA compiler was found; install the CUDA "
                        "toolkit, set CUDACXX=/path/to/nvcc, or configure with -DCOALESCE_ENABLE_CUDA=OFF")
  else()
    message(STATUS "coalesce: no CUDA compiler found; device memory is host memory, device loops use OpenMP")
  endif()
endif()
