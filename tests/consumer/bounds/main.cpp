// Prints whether v[i] is checked in this target, and checks that it then really is.
#include <coalesce/memory/vector.hpp>

#include <cstdio>

struct sample {
  float x;
  int id;
};

int main() {
  coalesce::host_vector<sample> h(3);
#if COALESCE_CHECK_BOUNDS
  try {
    auto v = h.view();
    (void)v[3];
    std::puts("bounds checks on, but v[3] of 3 was not caught");
    return 1;
  } catch (coalesce::error const&) {
  }
#endif
  std::printf("bounds checks: %d\n", COALESCE_CHECK_BOUNDS);
  return 0;
}
