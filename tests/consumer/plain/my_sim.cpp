// The one-file program of docs/building.md: a device loop that is a GPU kernel when
// libcoalesce.a was built with CUDA (compiled by nvcc as my_sim.cu), and runs on all CPU cores
// through OpenMP otherwise (g++ -fopenmp). No -DCOALESCE_WITH_CUDA: the installed
// coalesce/detail/build_config.hpp says how the library was built.
#include <coalesce/coalesce.hpp>

#include <cstdio>
#include <vector>

#if COALESCE_WITH_CUDA
#include <cuda_runtime.h>
#endif

struct vec3 {
  float x, y, z;
};
struct particle {
  vec3 pos;
  vec3 vel;
  float mass;
};

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
  auto v = d.view();
  float const dt = 0.25f;
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    auto [pos, vel, mass] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
    y += vy * dt;
    z += vz * dt;
    mass *= 0.5f;
  });
  coalesce::synchronize(coalesce::device{});
  d.copy_to(legacy);
  for (int i = 0; i < 4096; ++i) {
    particle const& p = legacy[i];
    if (p.pos.x != float(i) + 0.25f || p.pos.y != 0.5f || p.pos.z != 0.75f || p.mass != 0.5f) {
      std::printf("particle %d is wrong after the step\n", i);
      return 1;
    }
  }
  std::printf("my_sim ok (%s)\n", coalesce::device_is_gpu ? "GPU" : "OpenMP");
  return 0;
}
