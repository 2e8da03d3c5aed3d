#!/usr/bin/env bash
# Installs what building coalesce needs, from Debian's packages, where it is missing:
# CMake, Ninja, a C++20 compiler, Boost.PFR (libboost1.81-dev, the tests' oracle), doctest, Open MPI
# and clang-format. The CUDA toolkit
# (nvcc, CCCL) is used from /usr/local/cuda when present; nothing is downloaded at build time.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
[[ -f /usr/include/boost/pfr.hpp ]] || need+=(libboost1.81-dev)
[[ -f /usr/include/doctest/doctest.h ]] || need+=(doctest-dev)
# Open MPI for coalesce::mpi and its tests at 1, 2 and 4 ranks (COALESCE_ENABLE_MPI=AUTO finds it).
command -v mpicxx >/dev/null || need+=(libopenmpi-dev)
command -v mpiexec >/dev/null || need+=(openmpi-bin)
# The sanitizer suite's compiler (scripts/test.sh): clang 14 compiles the instrumented tests in
# half GCC's time; its sanitizer runtimes and OpenMP runtime are packages of their own.
command -v clang++-14 >/dev/null || need+=(clang-14)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
[[ -f /usr/lib/llvm-14/lib/libomp.so ]] || need+=(libomp-14-dev)
# The API reference, checked by CTest (docs.api_reference: no doxygen warning, every public name documented).
command -v doxygen >/dev/null || need+=(doxygen)
# The format check (scripts/check_format.sh): the version of .clang-format's comment.
command -v clang-format-14 >/dev/null || command -v clang-format >/dev/null || need+=(clang-format)
for extra in "$@"; do need+=("$extra"); done
if ((${#need[@]} > 0)); then
  echo "installing: ${need[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
