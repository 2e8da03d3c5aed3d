// Internal to libcoalesce: what a reorder_plan holds between calls, and the primitives each
// backend (reorder_host.cpp: loops and Thrust with OpenMP; reorder_cuda.cu: CUB and kernels)
// provides. src/reorder_plan.cpp strings the primitives together (checks before writes) once,
// for both backends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include <coalesce/detail/memory.hpp>
#include <coalesce/detail/reorder_ops.hpp>
#include <coalesce/detail/reorder_plan.hpp>

namespace coalesce::detail {

struct reorder_state {
  memory_kind kind = memory_kind::device;  // where the last sort ran
  std::size_t n = 0;                       // elements of the last sort
  bool sorted = false;
  unsigned key_bytes = 4;                  // of the sorted keys now in `keys`
  // Which computation the contents of `keys` come from (plan_keys in reorder_ops.hpp):
  // key_generation names the unsorted keys of the last compute_keys (0 once a sort consumed
  // them); sorted_generation the computed keys that the last sort ordered (0 for the caller's
  // keys, or once a later computation overwrote the sorted keys).
  std::uint64_t key_generation = 0;
  std::uint64_t sorted_generation = 0;

  buffer keys, keys_alt;  // keys (computed here, or copied from the user); sorted keys after a sort
  buffer perm, perm_alt;  // permutation new -> old after a sort
  buffer inverse;         // old -> new, built on first use after a sort
  bool inverse_valid = false;
  buffer temp;            // CUB / scan temporary storage
  buffer flag;            // a few words for device-side results (first bad index, sums)
  buffer cells;           // cell start offsets
  buffer perm_mirror, inverse_mirror;  // the permutations in the other kind of memory
  bool perm_mirror_valid = false, inverse_mirror_valid = false;
  std::deque<buffer> pool;  // scratch for out-of-place permutations (a deque: references stay valid)
  std::vector<buffer> host_blocks;  // Thrust's temporary storage on the host, reused
  std::vector<bool> host_block_used;
  std::size_t allocations = 0;

  // At least `bytes` bytes of `kind` in b (reallocated, contents dropped, only when too small
  // or of the other kind).
  void* ensure(buffer& b, memory_kind k, std::size_t bytes) {
    if (b.kind() != k || b.size() < bytes || (b.data() == nullptr && bytes > 0)) {
      b = buffer();  // free first: the peak is one buffer, not two
      b = buffer(k, bytes);
      ++allocations;
    }
    return b.data();
  }
};

// Result of a search for the first offending element: `none` when everything is fine.
inline constexpr std::size_t none = static_cast<std::size_t>(-1);

// The host backend (reorder_host.cpp, keys_host.cpp) is host_impl; without CUDA it is the only
// backend, so its names are the primitives themselves. With CUDA, reorder_cuda.cu and
// keys_cuda.cu define the primitives and hand host memory to host_impl.
#if COALESCE_WITH_CUDA
#define COALESCE_HOST_IMPL_INLINE
namespace host_impl {
#include "reorder_primitives.inc"
}  // namespace host_impl
#include "reorder_primitives.inc"
#else
#define COALESCE_HOST_IMPL_INLINE inline  // reopen it as inline too (clang warns otherwise)
inline namespace host_impl {
#include "reorder_primitives.inc"
}  // namespace host_impl
#endif

}  // namespace coalesce::detail
