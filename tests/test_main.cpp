// Test runner for the CPU tests. In a CUDA build, device vectors live in GPU memory, so without
// a GPU these tests cannot run: the runner says so loudly and exits 77, which CTest reports as
// skipped (never as passed).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "gpu_presence.hpp"

int main(int argc, char** argv) {
  if (coalesce_test::needs_gpu_but_has_none()) {
    std::fprintf(stderr,
                 "SKIPPED: coalesce was built with CUDA and no CUDA GPU is visible; these tests "
                 "need one (build with -DCOALESCE_ENABLE_CUDA=OFF to run them on the CPU)\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
