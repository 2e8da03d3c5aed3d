// coalesce/reorder/reorder_plan.hpp - the reusable state of a reorder: CUB's scratch, the last
// sort's permutation and its inverse, the stream its calls run on and when it checks its input.
//
//   coalesce::reorder_plan plan;                              // reused step after step
//   std::vector<std::uint32_t> order = plan.permutation_on_host();   // after a sort_by_key
//   plan.set_checks(coalesce::check_policy::deferred);        // report bad input at plan.check()
//
// Documented with the calls that take it in coalesce/reorder/reorder.hpp; a header of its own so
// that keys.hpp and reorder.hpp can both take a plan without including each other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "../memory/buffer.hpp"

namespace coalesce {

class reorder_plan;

// How a plan checks the data it is given (index ranges, counts <= max_neighbors, CSR offsets,
// key bit ranges, finite positions). The checks run inside the passes that read the data, so
// they cost no extra pass; what differs is whether the host waits for their verdict.
enum class check_policy : unsigned char {
  // Every call waits for its checks (one read-back) and throws coalesce::error naming the
  // element before anything the caller owns is written: bad input changes nothing. The default.
  before_writing,
  // Calls never wait: a bad element is recorded on the GPU and reported (coalesce::error, naming
  // it) by the plan's next check() or next call that waits; by then the arrays of the failing
  // call may hold entries that were out of range, copied as they were. For streams and graphs.
  deferred,
  // No check words at all. Out-of-range entries are still never read through (a remap copies
  // them unchanged), but nothing reports them.
  off,
};

namespace detail {
struct reorder_state;  // src/reorder_state.hpp: buffers, sizes, counters
reorder_state& state_of(reorder_plan& plan);

// The scope of one _async call (coalesce/reorder/async.hpp): while it is open, the plan's calls
// that would wait for their checks' verdict (check_policy::before_writing) record it as
// check_policy::deferred does instead. The plan's policy, checks(), is never changed.
class deferred_call {
 public:
  explicit deferred_call(reorder_plan& plan);
  ~deferred_call();
  deferred_call(deferred_call const&) = delete;
  deferred_call& operator=(deferred_call const&) = delete;

 private:
  reorder_plan& plan_;
};
}  // namespace detail

// Owns everything a reorder needs between calls: the sort's temporary storage, the keys, the
// permutation (new -> old) and its inverse (old -> new), and the scratch allocations that
// vectors are permuted into (a vector adopts the scratch and hands its old allocation back, so
// the next reorder of the same vector allocates nothing). Calls with the sizes of the previous
// call allocate nothing: the plan keeps one scratch buffer per size a loop uses (a loop over
// vectors and lists of 8 sizes holds 8), and release() gives everything back.
//
// A plan runs its work on one stream (coalesce/memory/stream.hpp), like a cuFFT plan: every key
// computation, sort, apply, remap and cell_offsets through it is queued there. Which calls
// wait for the stream depends on the check policy (check_policy above): with before_writing,
// calls that check data wait once for the verdict; with deferred or off, nothing waits except
// what returns a value to the host (neighbor_locality, permutation_on_host, cell_offsets' size
// check). Move-only; not thread-safe (one plan per thread or stream).
class reorder_plan {
 public:
  // A plan on the default stream that checks before writing.
  reorder_plan();
  // A plan whose calls run on `on` and check their input as `checks` says.
  explicit reorder_plan(coalesce::stream on, check_policy checks = check_policy::before_writing);
  ~reorder_plan();
  // Takes over other's buffers, stream and policy; other acts as a new default plan if used again.
  reorder_plan(reorder_plan&&) noexcept;
  // The same; what this plan held is freed.
  reorder_plan& operator=(reorder_plan&&) noexcept;
  reorder_plan(reorder_plan const&) = delete;
  reorder_plan& operator=(reorder_plan const&) = delete;

  // Elements ordered by the last sort (0 before the first).
  std::size_t size() const;
  // permutation()[new] = old, inverse()[old] = new; size() entries in the memory where the last
  // sort ran (GPU memory for device vectors in a CUDA build). Valid until the next sort.
  [[nodiscard]] std::span<std::uint32_t const> permutation();
  // The inverse, old -> new, in the same memory; valid until the next sort.
  [[nodiscard]] std::span<std::uint32_t const> inverse();
  // The same, copied to host memory (wherever the sort ran); waits for the plan's stream.
  [[nodiscard]] std::vector<std::uint32_t> permutation_on_host();
  // inverse(), copied to host memory; waits for the plan's stream.
  [[nodiscard]] std::vector<std::uint32_t> inverse_on_host();
  // Allocations the plan has made so far; a steady-state loop of same-sized reorders leaves it
  // unchanged (what the tests check).
  std::size_t allocations() const;
  // Bytes the plan holds (temporary storage, keys, permutations, scratch).
  std::size_t bytes_held() const;
  // Frees everything held; the permutation is forgotten. The stream and policy stay.
  void release();

  // The stream the plan's work goes to, and the check policy; both can change between calls.
  coalesce::stream stream() const;
  void set_stream(coalesce::stream on);  // for the calls after this one
  // The old name of stream(); deprecated.
  [[deprecated(
      "coalesce: reorder_plan::get_stream() is now stream(), as on halo_plan and communicator")]] coalesce::stream
  get_stream() const {
    return stream();
  }
  check_policy checks() const;           // before_writing unless set otherwise
  void set_checks(check_policy checks);  // for the calls after this one
  // Waits for the plan's stream and reports what deferred checks found since the last report
  // (coalesce::error); nothing to report with the other policies.
  void check();

 private:
  friend detail::reorder_state& detail::state_of(reorder_plan&);
  std::unique_ptr<detail::reorder_state> state_;
};

}  // namespace coalesce
