// Where no GPU is visible (CI), a device allocation must say so, not "driver version is
// insufficient ... (0 of 0 bytes free); reduce the size". Where a GPU is visible there is nothing
// to test, and the test reports itself skipped (exit 77).
#include <cstdio>
#include <string>

#include <cuda_runtime.h>

#include <coalesce/coalesce.hpp>

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    std::fprintf(stderr, "SKIPPED: a GPU is visible; this test checks the message given without one\n");
    return 77;
  }
  try {
    coalesce::detail::buffer b(coalesce::detail::memory_kind::device, 1024);
    std::fprintf(stderr, "FAILED: a device allocation succeeded without a visible GPU\n");
    return 1;
  } catch (coalesce::error const& e) {
    std::string const what = e.what();
    if (what.find("no GPU is visible") == std::string::npos || what.find("reduce the size") != std::string::npos) {
      std::fprintf(stderr, "FAILED: the message does not say that no GPU is visible:\n  %s\n", e.what());
      return 1;
    }
    std::printf("passed: %s\n", e.what());
    return 0;
  }
}
