// Internal to libcoalesce: the reorder primitives, once as an interface with one implementation
// per kind of memory: host_backend (reorder_host.cpp, keys_host.cpp: loops and Thrust, on all
// cores through OpenMP when `parallel`) and cuda_backend (reorder_cuda.cu, keys_cuda.cu: CUB and
// kernels on one stream). A plan chooses the backend once per call from the memory it works on
// (reorder_state::backend); src/reorder_plan.cpp strings the primitives together for both.
//
// Checks run inside the passes that read the data: a kernel that meets a bad value records its
// position with an atomic minimum in `flags` (words in the backend's memory, all ones meaning
// "nothing found") and carries on without reading out of bounds; the plan reads the words back
// once per call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include <coalesce/memory/buffer.hpp>
#include <coalesce/reorder/reorder_ops.hpp>

namespace coalesce::detail {

struct reorder_state;

// Result of a search for the first offending element: `none` when everything is fine.
inline constexpr std::size_t none = static_cast<std::size_t>(-1);

// The words a checking pass leaves: indices of the first offending element of each kind.
enum check_word : unsigned { bad_count = 0, bad_entry = 1, bad_offset = 2, list_entries = 3, check_words = 4 };

class reorder_backend {
 public:
  virtual ~reorder_backend() = default;

  // Sets the check words to all ones (nothing found), queued before the passes that check.
  virtual void reset_flags(std::uint64_t* flags) = 0;

  // Keys into `keys`; the first element whose position is NaN, infinite or outside the box along an open axis
  // goes to flags[bad_entry].
  virtual void compute_keys_into(key_spec const& spec, position_columns const& pos, std::size_t n, void* keys,
                                 std::uint64_t* flags) = 0;
  // First key with a bit at or above end_bit into flags[bad_entry].
  virtual void find_key_above(void const* keys, unsigned key_bytes, std::size_t n, int end_bit,
                              std::uint64_t* flags) = 0;
  // Stable sort of s.keys (s.key_bytes wide) with values s.perm; leaves sorted keys in s.keys and
  // the permutation in s.perm.
  virtual void sort_pairs(reorder_state& s, std::size_t n, int begin_bit, int end_bit) = 0;
  // One fused gather of all columns: dst element i from src element perm[i].
  virtual void gather_columns(column_copy const* columns, std::size_t count, std::size_t n,
                              std::uint32_t const* perm) = 0;
  virtual void iota(std::uint32_t* v, std::size_t n) = 0;
  virtual void invert(std::uint32_t const* perm, std::uint32_t* inverse, std::size_t n) = 0;
  // First i with v[i] >= bound into flags[bad_entry].
  virtual void find_at_least(std::uint32_t const* v, std::size_t n, std::uint64_t bound, std::uint64_t* flags) = 0;
  // v[i] = inverse[v[i]] where v[i] < bound; an entry >= bound stays as it is and goes to
  // flags[bad_entry] (when flags is not null).
  virtual void map_indices(std::uint32_t* v, std::size_t n, std::uint32_t const* inverse, std::uint64_t bound,
                           std::uint64_t* flags) = 0;
  // Fixed-width lists, checked while remapped: row i of out from row perm[i] of the list, used
  // entries renumbered through inverse, unused slots copied as they are, counts permuted into
  // out_counts (when the list has counts). A count above max_neighbors goes to flags[bad_count]
  // (flags may be null: nothing recorded; bad values are never read through either way)
  // (as the row of the list), a used entry >= bound to flags[bad_entry] (as its slot in the list).
  virtual void remap_fixed(neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                           std::uint64_t bound, std::uint32_t* out, std::uint32_t* out_counts,
                           std::uint64_t* flags) = 0;
  // CSR offsets: offsets[0] != 0 or a drop offsets[i + 1] < offsets[i] goes to flags[bad_offset]
  // (as i + 1, 0 for offset 0), and offsets[particles] to flags[list_entries].
  virtual void check_csr_offsets(std::uint32_t const* offsets, std::size_t particles, std::uint64_t* flags) = 0;
  // new_offsets[i] = length of old row perm[i], then an exclusive scan over particles + 1.
  virtual void csr_permuted_offsets(std::uint32_t const* offsets, std::uint32_t const* perm, std::size_t particles,
                                    std::uint32_t* new_offsets, reorder_state& s) = 0;
  // CSR rows moved and renumbered; an entry >= bound goes to flags[bad_entry] (its position).
  virtual void remap_csr(neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                         std::uint64_t bound, std::uint32_t const* new_offsets, std::uint32_t* out,
                         std::uint64_t* flags) = 0;
  // Sum of |i - j| and number of entries (waits for the result).
  virtual std::pair<double, std::uint64_t> locality_sum(neighbor_desc const& list, reorder_state& s) = 0;
  // starts[c] = first sorted element with key >= c, for c in [0, cells]; keys sorted (a key at
  // or above cells writes nothing past starts[cells]).
  virtual void cell_starts(void const* sorted_keys, unsigned key_bytes, std::size_t n, std::uint64_t cells,
                           std::uint32_t* starts) = 0;
};

// The overrides every backend declares, written once.
#define COALESCE_DETAIL_BACKEND_OVERRIDES                                                                            \
  void reset_flags(std::uint64_t*) override;                                                                         \
  void compute_keys_into(key_spec const&, position_columns const&, std::size_t, void*, std::uint64_t*) override;     \
  void find_key_above(void const*, unsigned, std::size_t, int, std::uint64_t*) override;                             \
  void sort_pairs(reorder_state&, std::size_t, int, int) override;                                                   \
  void gather_columns(column_copy const*, std::size_t, std::size_t, std::uint32_t const*) override;                  \
  void iota(std::uint32_t*, std::size_t) override;                                                                   \
  void invert(std::uint32_t const*, std::uint32_t*, std::size_t) override;                                           \
  void find_at_least(std::uint32_t const*, std::size_t, std::uint64_t, std::uint64_t*) override;                     \
  void map_indices(std::uint32_t*, std::size_t, std::uint32_t const*, std::uint64_t, std::uint64_t*) override;       \
  void remap_fixed(neighbor_desc const&, std::uint32_t const*, std::uint32_t const*, std::uint64_t, std::uint32_t*,  \
                   std::uint32_t*, std::uint64_t*) override;                                                         \
  void check_csr_offsets(std::uint32_t const*, std::size_t, std::uint64_t*) override;                                \
  void csr_permuted_offsets(std::uint32_t const*, std::uint32_t const*, std::size_t, std::uint32_t*, reorder_state&) \
      override;                                                                                                      \
  void remap_csr(neighbor_desc const&, std::uint32_t const*, std::uint32_t const*, std::uint64_t,                    \
                 std::uint32_t const*, std::uint32_t*, std::uint64_t*) override;                                     \
  std::pair<double, std::uint64_t> locality_sum(neighbor_desc const&, reorder_state&) override;                      \
  void cell_starts(void const*, unsigned, std::size_t, std::uint64_t, std::uint32_t*) override;

// Host memory; `parallel`: on all cores (device memory of a build without CUDA).
class host_backend final : public reorder_backend {
 public:
  explicit host_backend(bool parallel) : parallel_(parallel) {}
  COALESCE_DETAIL_BACKEND_OVERRIDES

 private:
  bool parallel_;
};

#if COALESCE_WITH_CUDA
// GPU memory; every launch and copy goes to `stream` (a cudaStream_t, null: the default stream).
class cuda_backend final : public reorder_backend {
 public:
  explicit cuda_backend(void* stream) : stream_(stream) {}
  COALESCE_DETAIL_BACKEND_OVERRIDES

 private:
  void* stream_;
};
#endif

}  // namespace coalesce::detail
