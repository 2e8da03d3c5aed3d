// A host-only file of a user's particle code: its own float4 (types.h), then coalesce.hpp, with
// CUDA's include directory on the include path before coalesce's (tests/CMakeLists.txt). It must
// compile, and the user's float4 must work as a member: a drift step on the device space and back.
#include "types.h"
// The user's types first, as an outside code's files do; coalesce after.
#include <coalesce/coalesce.hpp>

#include <cstdio>
#include <vector>

struct Atom {
  float4 pos;  // w: the atom's charge, as such codes keep it
  double2 extra;
  int type;
};

int main() {
#if defined(__CUDA_RUNTIME_H__) || defined(__VECTOR_TYPES_H__) || defined(__CUDA_FP16_H__)
  std::puts("FAILED: coalesce.hpp brought CUDA's headers into a host-only file");
  return 1;
#else
  std::vector<Atom> legacy(1000);
  for (std::size_t i = 0; i < legacy.size(); ++i) {
    legacy[i] = Atom{make_float4(float(i), 1.f, 2.f, -1.f), make_double2(0.5, 1.5), int(i % 3)};
  }
  coalesce::device_vector<Atom> d{std::span<Atom const>(legacy)};
  // The step runs on the host vector: in a CUDA build a device loop needs nvcc, and this file is
  // the host side. The device vector's upload and download go through libcoalesce either way.
  coalesce::host_vector<Atom> h = d;
  auto v = h.view();
  coalesce::for_each_index(coalesce::host{}, v.size(), [=](std::size_t i) {
    auto [x, y, z, w] = v[i][&Atom::pos];
    x += 0.25f * w;
    (void)y, (void)z;
  });
  d = h;
  d.copy_to(std::span<Atom>(legacy));
  for (std::size_t i = 0; i < legacy.size(); ++i) {
    if (legacy[i].pos.x != float(i) - 0.25f || legacy[i].extra.y != 1.5 || legacy[i].type != int(i % 3)) {
      std::printf("FAILED: atom %zu came back as x = %g\n", i, double(legacy[i].pos.x));
      return 1;
    }
  }
  std::puts("a user's own float4, double2 and make_float4 beside coalesce.hpp: compiled and ran");
  return 0;
#endif
}
