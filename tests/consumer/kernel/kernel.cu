// A user's kernel: for_each_index over a device_vector's view, compiled by the user's project
// (not by coalesce), so it runs only if that project builds for the GPU coalesce was built for.
#include <coalesce/coalesce.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

struct vec2 {
  float x, y;
};
struct body {
  vec2 pos;
  vec2 vel;
  float mass;
};

int main() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::puts("no GPU: the kernel was built, not run");
    return 77;
  }
  std::vector<body> legacy(1000);
  for (int i = 0; i < 1000; ++i) legacy[i] = {{float(i), 0.f}, {1.f, -2.f}, 1.f};
  coalesce::device_vector<body> d(legacy);
  auto v = d.view();
  float const dt = 0.5f;
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    auto [pos, vel, mass] = v[i];
    auto [x, y] = pos;
    auto [vx, vy] = vel;
    x += vx * dt;
    y += vy * dt;
    mass *= 2.f;
  });
  coalesce::synchronize(coalesce::device{});
  d.copy_to(legacy);
  for (int i = 0; i < 1000; ++i) {
    if (legacy[i].pos.x != float(i) + 0.5f || legacy[i].pos.y != -1.f || legacy[i].mass != 2.f) {
      std::printf("element %d: (%g, %g) mass %g\n", i, legacy[i].pos.x, legacy[i].pos.y, legacy[i].mass);
      return 1;
    }
  }
  std::puts("kernel consumer ok");
  return 0;
}
