#include <cstdio>
#include <vector>

#include "step.hpp"

#if COALESCE_WITH_CUDA
#include <cuda_runtime.h>
#endif

int main() {
#if COALESCE_WITH_CUDA
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::puts("no GPU: my_sim was built, not run");
    return 77;
  }
#endif
  std::vector<particle> legacy(4096);
  for (int i = 0; i < 4096; ++i) legacy[i] = {{float(i), 0.f, 0.f}, {1.f, 2.f, 3.f}, 1.f};
  coalesce::device_vector<particle> d(legacy);
  step(d, 0.25f);
  d.copy_to(legacy);
  for (int i = 0; i < 4096; ++i) {
    particle const& p = legacy[i];
    if (p.pos.x != float(i) + 0.25f || p.pos.y != 0.5f || p.pos.z != 0.75f || p.mass != 0.5f) {
      std::printf("particle %d is wrong after the step\n", i);
      return 1;
    }
  }
  std::puts("my_sim (make) ok");
  return 0;
}
