// A host-only file that includes CUDA's cuda_fp16.h / cuda_bf16.h itself, after coalesce.hpp (so
// coalesce did not include them), and names __half and __nv_bfloat16 as stored formats: they must
// store what coalesce::half and coalesce::bfloat16 store.
#include <coalesce/coalesce.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>

struct Body {
  float vel;
  float mass;
};
using cuda_tags = coalesce::stored_as<coalesce::soa, coalesce::store<&Body::vel, __half>,
                                      coalesce::store<&Body::mass, __nv_bfloat16>>;
static_assert(coalesce::detail::format_of<__half>::value == coalesce::detail::format_of<coalesce::half>::value);
static_assert(coalesce::detail::format_of<__nv_bfloat16>::value ==
              coalesce::detail::format_of<coalesce::bfloat16>::value);

int main() {
  coalesce::host_vector<Body, cuda_tags> h(3);
  auto v = h.view();
  v[1] = Body{1.0f / 3.0f, 1.0f / 3.0f};
  Body const b = v[1];
  // binary16 keeps 11 significant bits, bfloat16 8: 1/3 rounds to 0.333251953125 and 0.333984375.
  if (b.vel != 0.333251953125f || b.mass != 0.333984375f) {
    std::printf("FAILED: __half / __nv_bfloat16 stored 1/3 as %.12g / %.12g\n", double(b.vel), double(b.mass));
    return 1;
  }
  std::puts(
      "__half and __nv_bfloat16 named in a host file that includes CUDA's headers itself: stored as half / bfloat16");
  return 0;
}
