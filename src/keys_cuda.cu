// Spatial keys in GPU memory: one thread per element; the first bad position is kept with an
// atomicMin so the host can name it. Host memory is handed to host_impl (keys_host.cpp).
#include <cstdint>

#include "keys_math.hpp"
#include "reorder_cuda_launch.cuh"
#include "reorder_state.hpp"

namespace coalesce::detail {

namespace {
template <class E, class Key>
__global__ void keys_kernel(key_params const p, position_columns const pos, std::size_t n, Key* keys,
                            unsigned long long* first_bad) {
  std::size_t const threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += threads) {
    double x[3] = {0, 0, 0};
    for (unsigned a = 0; a < p.dims; ++a) x[a] = *reinterpret_cast<E const*>(pos.axis[a].address(i));
    std::uint32_t cell[3] = {0, 0, 0};
    if (cell_of(p, x, cell)) {
      keys[i] = static_cast<Key>(key_of_cell(p, cell));
    } else {
      keys[i] = 0;
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
}

template <class E, class Key>
void launch_keys(key_params const& p, position_columns const& pos, std::size_t n, void* keys, unsigned long long* flag) {
  keys_kernel<E, Key><<<blocks_for(n), launch_threads>>>(p, pos, n, static_cast<Key*>(keys), flag);
  COALESCE_CUDA_TRY(cudaGetLastError());
}
}  // namespace

std::size_t compute_keys_into(memory_kind kind, key_spec const& spec, position_columns const& pos, std::size_t n,
                              void* keys, reorder_state& s) {
  if (kind == memory_kind::host) return host_impl::compute_keys_into(kind, spec, pos, n, keys, s);
  if (n == 0) return none;
  key_params const p = make_key_params(spec);
  auto* flag = static_cast<unsigned long long*>(s.ensure(s.flag, memory_kind::device, 32));
  COALESCE_CUDA_TRY(cudaMemset(flag, 0xff, sizeof(unsigned long long)));
  if (pos.width == 4) {
    spec.key_bytes == 4 ? launch_keys<float, std::uint32_t>(p, pos, n, keys, flag)
                        : launch_keys<float, std::uint64_t>(p, pos, n, keys, flag);
  } else {
    spec.key_bytes == 4 ? launch_keys<double, std::uint32_t>(p, pos, n, keys, flag)
                        : launch_keys<double, std::uint64_t>(p, pos, n, keys, flag);
  }
  unsigned long long first = 0;
  COALESCE_CUDA_TRY(cudaMemcpy(&first, flag, sizeof first, cudaMemcpyDeviceToHost));
  return first == ~0ull ? none : static_cast<std::size_t>(first);
}

}  // namespace coalesce::detail
