// coalesce::reorder_plan, the reusable state of a reorder (documented in coalesce/reorder.hpp).
// Lives here so that keys.hpp and reorder.hpp can both take a plan without including each other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "memory.hpp"

namespace coalesce {

class reorder_plan;
namespace detail {
struct reorder_state;  // src/reorder_state.hpp: buffers, sizes, counters
reorder_state& state_of(reorder_plan& plan);
}  // namespace detail

// Owns everything a reorder needs between calls: the sort's temporary storage, the keys, the
// permutation (new -> old) and its inverse (old -> new), and the scratch allocations that
// vectors are permuted into (a vector adopts the scratch and hands its old allocation back, so
// the next reorder of the same vector allocates nothing). Calls with the sizes of the previous
// call allocate nothing; a new size replaces a scratch buffer of another size (the plan holds
// as many scratch buffers as one call needs at once). Move-only; not thread-safe.
class reorder_plan {
 public:
  reorder_plan();
  ~reorder_plan();
  reorder_plan(reorder_plan&&) noexcept;
  reorder_plan& operator=(reorder_plan&&) noexcept;
  reorder_plan(reorder_plan const&) = delete;
  reorder_plan& operator=(reorder_plan const&) = delete;

  // Elements ordered by the last sort (0 before the first).
  std::size_t size() const;
  // permutation()[new] = old, inverse()[old] = new; size() entries in the memory where the last
  // sort ran (GPU memory for device vectors in a CUDA build). Valid until the next sort.
  [[nodiscard]] std::span<std::uint32_t const> permutation();
  [[nodiscard]] std::span<std::uint32_t const> inverse();
  // The same, copied to host memory (wherever the sort ran).
  [[nodiscard]] std::vector<std::uint32_t> permutation_on_host();
  [[nodiscard]] std::vector<std::uint32_t> inverse_on_host();
  // Allocations the plan has made so far; a steady-state loop of same-sized reorders leaves it
  // unchanged (what the tests check).
  std::size_t allocations() const;
  // Bytes the plan holds (temporary storage, keys, permutations, scratch).
  std::size_t bytes_held() const;
  // Frees everything held; the permutation is forgotten.
  void release();

 private:
  friend detail::reorder_state& detail::state_of(reorder_plan&);
  std::unique_ptr<detail::reorder_state> state_;
};

}  // namespace coalesce
