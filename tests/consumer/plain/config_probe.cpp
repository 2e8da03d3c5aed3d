// Compiled by config_checks.cmake against configurations that must be refused: at compile time
// (a COALESCE_WITH_CUDA of one's own that disagrees with the build, or none at all against the
// source tree) or at link time (headers configured one way, libcoalesce.a built the other).
#include <coalesce/coalesce.hpp>

struct sample {
  float x;
  int id;
};

int main() {
  coalesce::host_vector<sample> h(4);
  return h.size() == 4 ? 0 : 1;
}
