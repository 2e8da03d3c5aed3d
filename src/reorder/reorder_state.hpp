// Internal to libcoalesce: what a reorder_plan holds between calls: its buffers, its stream and
// check policy, and one backend object per kind of memory (src/reorder_backend.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <array>
#include <deque>
#include <utility>
#include <vector>

#include <string>
#include <coalesce/core/error.hpp>
#include <coalesce/memory/buffer.hpp>
#include <coalesce/reorder/reorder_ops.hpp>
#include <coalesce/reorder/reorder_plan.hpp>

#include "reorder_backend.hpp"

namespace coalesce::detail {

struct reorder_state {
  void* stream = nullptr;                              // a cudaStream_t for GPU work (null: the default stream)
  check_policy checks = check_policy::before_writing;  // the plan's own (reorder_plan::checks())
  int deferring_calls = 0;  // open _async calls (detail::deferred_call): their checks wait for nothing
  // The policy of the call under way: the plan's, with before_writing deferred inside an _async call.
  check_policy policy_now() const {
    return deferring_calls > 0 && checks == check_policy::before_writing ? check_policy::deferred : checks;
  }
  host_backend host_loops{false};
  host_backend host_cores{true};
#if COALESCE_WITH_CUDA
  cuda_backend gpu{nullptr};
#endif
  // The backend for memory of `kind`, chosen here once for every primitive of a call.
  reorder_backend& backend(memory_kind kind) {
#if COALESCE_WITH_CUDA
    if (kind == memory_kind::device) return gpu;
    return host_loops;
#else
    return kind == memory_kind::device ? host_cores : host_loops;
#endif
  }
  void set_stream(void* s) {
    stream = s;
#if COALESCE_WITH_CUDA
    gpu = cuda_backend(s);
#endif
  }
  std::array<std::uint64_t, check_words> host_flags{};  // check words of the host backends
  bool deferred_flags_set = false;                      // deferred checks: the words hold results nobody read yet
  memory_kind deferred_flags_kind = memory_kind::host;
  memory_kind kind = memory_kind::device;  // where the last sort ran
  std::size_t n = 0;                       // elements of the last sort
  bool sorted = false;
  unsigned key_bytes = 4;  // of the sorted keys now in `keys`
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
  buffer temp;                         // CUB / scan temporary storage
  buffer flag;                         // the check words of GPU passes (reorder_backend.hpp)
  buffer scalars;                      // device-side sums (neighbor_locality)
  buffer cells;                        // cell start offsets
  buffer perm_mirror, inverse_mirror;  // the permutations in the other kind of memory
  bool perm_mirror_valid = false, inverse_mirror_valid = false;
  // Scratch for out-of-place permutations and remaps (a deque: references stay valid). Each
  // buffer remembers the last reorder step (sort) that used it: a buffer idle for a whole step
  // is what a new size replaces, so a steady-state loop keeps every size it uses, whatever their
  // number, and a drifting size does not pile up buffers.
  struct pooled {
    buffer memory;
    std::uint64_t last_step = 0;
  };
  std::deque<pooled> pool;
  std::uint64_t step = 0;           // sorts so far
  std::vector<buffer> host_blocks;  // Thrust's temporary storage on the host, reused
  std::vector<bool> host_block_used;
  std::size_t allocations = 0;

  // At least `bytes` bytes of `kind` in b (reallocated, contents dropped, only when too small
  // or of the other kind). A buffer that grows gets an eighth more than asked: counts that
  // wander step to step (a migration's, a halo's) would otherwise reallocate at every new high.
  void* ensure(buffer& b, memory_kind k, std::size_t bytes) {
    if (b.kind() != k || b.size() < bytes || (b.data() == nullptr && bytes > 0)) {
      std::size_t const room = b.kind() == k && b.size() > 0 ? bytes + bytes / 8 : bytes;
      b = buffer();  // free first: the peak is one buffer, not two
      b = buffer(k, room);
      ++allocations;
    }
    return b.data();
  }
};

// Waits for the plan's stream and throws what deferred checks recorded (reorder_plan::check).
void report_deferred(reorder_state& s);

// One value from the plan's memory, read on the plan's stream (waits for it).
template <class U> U read_one(reorder_state const& s, memory_kind kind, U const* p) {
  U value{};
  copy_bytes(memory_kind::host, &value, kind, p, sizeof(U), s.stream);
  return value;
}

// Permutations are 32-bit: refuses element counts a reorder cannot index.
inline void check_element_count(std::size_t n, char const* what) {
  if (n > 0xffffffffull) {
    throw_error(std::string(what) + ": " + std::to_string(n) + " elements; a reorder handles at most 2^32 - 1");
  }
}

// What a backend's "first element that ..." search leaves in its word when nothing matched.
constexpr std::uint64_t nothing_found = ~std::uint64_t{0};

}  // namespace coalesce::detail
