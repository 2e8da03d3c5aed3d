// A user project: plain C++, its own struct, coalesce linked as a static library.
#include <coalesce/coalesce.hpp>

#include <cstdio>
#include <vector>

#if COALESCE_WITH_CUDA
#include <cuda_runtime.h>
#endif

struct float2_ {
  float x, y;
};
struct body {
  float2_ pos;
  double mass;
  int id;
};

int main() {
  std::vector<body> legacy(1000);
  for (int i = 0; i < 1000; ++i) legacy[i] = {{float(i), -float(i)}, 1.0 + i, i};
  coalesce::host_vector<body, coalesce::aosoa<16>> h(legacy);  // from AoS records
  std::vector<body> back(h.size());
#if COALESCE_WITH_CUDA
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::puts("no GPU: built against a CUDA coalesce, host part checked only");
    h.copy_to(back);
    return back[999].id == 999 ? 77 : 1;
  }
#endif
  coalesce::device_vector<body> d = h;
  d.copy_to(back);
  for (int i = 0; i < 1000; ++i) {
    if (back[i].id != i || back[i].pos.y != -float(i)) return 1;
  }
  std::puts("consumer ok");
  return 0;
}
