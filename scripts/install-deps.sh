#!/usr/bin/env bash
# Installs what building coalesce needs, from Debian's packages, where it is missing:
# CMake, Ninja, a C++20 compiler, Boost.PFR (libboost1.81-dev) and doctest. The CUDA toolkit
# (nvcc, CCCL) is used from /usr/local/cuda when present; nothing is downloaded at build time.
set -euo pipefail
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
[[ -f /usr/include/boost/pfr.hpp ]] || need+=(libboost1.81-dev)
[[ -f /usr/include/doctest/doctest.h ]] || need+=(doctest-dev)
for extra in "$@"; do need+=("$extra"); done
if ((${#need[@]} > 0)); then
  echo "installing: ${need[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
