// coalesce/reorder/async.hpp - the reorder calls in forms that never wait for the GPU.
//
//   coalesce::reorder_plan plan(s);                                   // checks before writing (the default)
//   auto keys = coalesce::hilbert_keys_async(d, &Particle::pos, box, plan);
//   coalesce::sort_by_key_async(d, keys, plan);
//   coalesce::remap_async(list, plan);
//   coalesce::apply_async(plan, forces);
//   plan.check();  // waits for s; a coalesce::error naming the first bad element, if there was one
//
// X_async(args...) is X(args...) with the plan's checks deferred for that one call: its work is
// queued on the plan's stream and it returns without waiting for it. The plan's policy is not
// touched (checks() reads the same during the call; with check_policy::off nothing is checked). What the checks
// find is reported by the plan's next check() or by its next call that checks data and waits
// for the verdict (keys, remap, sort_by_key on caller keys), before that call does anything; by then
// the arrays of the failing call may hold the out-of-range entries, copied as they were
// (check_policy::deferred). On host memory the work is done when the call returns, as always.
//
// No _async form where the host needs a result: the remap of a CSR list (its entry count sizes
// the output), cell_offsets (checks the cell count), neighbor_locality, permutation_on_host.
// Copies into or out of host memory (vector construction from records, copy_to) wait too: the
// host reads or reuses that memory as soon as they return.
#pragma once
#include <type_traits>
#include <utility>

#include "keys.hpp"
#include "../memory/index_arrays.hpp"
#include "reorder.hpp"

namespace coalesce {
namespace detail {

// The one reorder_plan among a call's arguments.
template <class... A> reorder_plan& plan_among(A&... args) {
  static_assert((std::is_same_v<std::remove_cvref_t<A>, reorder_plan> + ...) == 1,
                "coalesce: an _async call takes exactly one reorder_plan, as the call it stands for");
  reorder_plan* found = nullptr;
  (
      [&](auto& a) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, reorder_plan>) found = &a;
      }(args),
      ...);
  return *found;
}

// Runs `call` inside a deferred_call scope: its checks are recorded, not waited for, and the
// plan's own policy (checks()) stays what it is, also when the call throws.
template <class F> decltype(auto) without_waiting(reorder_plan& plan, F&& call) {
  deferred_call const scope(plan);
  return std::forward<F>(call)();
}

template <class X> inline constexpr bool is_csr_list = false;
template <class Index, class S> inline constexpr bool is_csr_list<csr_neighbor_list<Index, S>> = true;

}  // namespace detail

// cell_keys, morton_keys, hilbert_keys (keys.hpp), same arguments, without waiting.
template <class Key = std::uint32_t, class... A> [[nodiscard]] auto cell_keys_async(A&&... args) {
  return detail::without_waiting(detail::plan_among(args...), [&] { return cell_keys<Key>(std::forward<A>(args)...); });
}
// morton_keys without waiting.
template <class Key = std::uint32_t, class... A> [[nodiscard]] auto morton_keys_async(A&&... args) {
  return detail::without_waiting(detail::plan_among(args...),
                                 [&] { return morton_keys<Key>(std::forward<A>(args)...); });
}
// hilbert_keys without waiting.
template <class Key = std::uint32_t, class... A> [[nodiscard]] auto hilbert_keys_async(A&&... args) {
  return detail::without_waiting(detail::plan_among(args...),
                                 [&] { return hilbert_keys<Key>(std::forward<A>(args)...); });
}

// sort_by_key (reorder.hpp): a vector or a view, same arguments, without waiting.
template <class... A> void sort_by_key_async(A&&... args) {
  detail::without_waiting(detail::plan_among(args...), [&] { sort_by_key(std::forward<A>(args)...); });
}

// apply and apply_inverse (reorder.hpp), without waiting.
template <class... X> void apply_async(reorder_plan& plan, X&&... arrays) {
  detail::without_waiting(plan, [&] { apply(plan, std::forward<X>(arrays)...); });
}
// apply_inverse without waiting.
template <class... X> void apply_inverse_async(reorder_plan& plan, X&&... arrays) {
  detail::without_waiting(plan, [&] { apply_inverse(plan, std::forward<X>(arrays)...); });
}

// remap (reorder.hpp) of index spans and fixed-width neighbour lists, in place or into a second
// list, without waiting.
template <class... A> void remap_async(A&&... args) {
  static_assert(!(detail::is_csr_list<std::remove_cvref_t<A>> || ...),
                "coalesce: the remap of a CSR list waits for its entry count (it sizes the output), so it has no "
                "_async form; call remap()");
  detail::without_waiting(detail::plan_among(args...), [&] { remap(std::forward<A>(args)...); });
}

}  // namespace coalesce
