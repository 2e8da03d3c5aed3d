// Spatial keys in GPU memory: one thread per element, on the backend's stream; the first bad
// position is recorded with an atomic minimum in the plan's check words.
#include <cstdint>

#include "keys_math.hpp"
#include "reorder_cuda_launch.cuh"
#include "reorder_state.hpp"

namespace coalesce::detail {

namespace {
template <class E, class Key, unsigned Dims> __global__ void keys_kernel(key_params const p, position_columns const pos,
                                                                         std::size_t n, Key* keys,
                                                                         std::uint64_t* first_bad) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x[3] = {0, 0, 0};
#pragma unroll
  for (unsigned a = 0; a < Dims; ++a) x[a] = key_coordinate<E>(pos, a, i);
  std::uint32_t cell[3] = {0, 0, 0};
  if (cell_of(p, Dims, x, cell)) {
    keys[i] = static_cast<Key>(key_of_cell(p, Dims, cell));
  } else {
    keys[i] = 0;
    record_first(first_bad, i);
  }
}

template <class E, class Key> void launch_keys(cudaStream_t stream, key_params const& p, position_columns const& pos,
                                               std::size_t n, void* keys, std::uint64_t* first_bad) {
  // One thread per element, every block at once (n < 2^32 is checked by the plan).
  unsigned const blocks = static_cast<unsigned>((n + launch_threads - 1) / launch_threads);
  if (p.dims == 3) {
    keys_kernel<E, Key, 3><<<blocks, launch_threads, 0, stream>>>(p, pos, n, static_cast<Key*>(keys), first_bad);
  } else {
    keys_kernel<E, Key, 2><<<blocks, launch_threads, 0, stream>>>(p, pos, n, static_cast<Key*>(keys), first_bad);
  }
  COALESCE_CUDA_TRY(cudaGetLastError());
}
}  // namespace

void cuda_backend::compute_keys_into(key_spec const& spec, position_columns const& pos, std::size_t n, void* keys,
                                     std::uint64_t* flags) {
  if (n == 0) return;
  auto const stream = static_cast<cudaStream_t>(stream_);
  key_params const p = make_key_params(spec);
  std::uint64_t* const first_bad = flags ? flags + bad_entry : nullptr;
  if (stored_position(pos)) {
    spec.key_bytes == 4 ? launch_keys<std::int32_t, std::uint32_t>(stream, p, pos, n, keys, first_bad)
                        : launch_keys<std::int32_t, std::uint64_t>(stream, p, pos, n, keys, first_bad);
  } else if (pos.width == 4) {
    spec.key_bytes == 4 ? launch_keys<float, std::uint32_t>(stream, p, pos, n, keys, first_bad)
                        : launch_keys<float, std::uint64_t>(stream, p, pos, n, keys, first_bad);
  } else {
    spec.key_bytes == 4 ? launch_keys<double, std::uint32_t>(stream, p, pos, n, keys, first_bad)
                        : launch_keys<double, std::uint64_t>(stream, p, pos, n, keys, first_bad);
  }
}

}  // namespace coalesce::detail
