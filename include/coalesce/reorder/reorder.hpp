// coalesce/reorder/reorder.hpp - sort particles along space so that gathers through neighbour and cell
// lists read neighbouring memory, and keep every index array pointing at the right records.
//
//   coalesce::reorder_plan plan;                                  // reused across calls
//   auto keys = coalesce::morton_keys(d, &Particle::pos, box, plan);    // keys.hpp
//   coalesce::sort_by_key(d, keys, plan);      // 1 radix sort + 1 fused gather of all columns
//   coalesce::apply(plan, forces, ids_on_host);              // permute more arrays the same way
//   coalesce::remap(coalesce::device_neighbor_list<std::uint32_t>{.indices = nbr, .particles = n, .max_neighbors = 32,
//                   .order = coalesce::neighbor_order::row_major, .counts = counts}, plan);  // rows moved,
//                                                                              // entries renumbered
//   coalesce::remap(coalesce::device_span<std::uint32_t>{.data = bonds, .size = 2 * nb}, plan);  // old -> new index
//
//   // Cell lists: sort by cell id, then cell c holds sorted elements [start[c], start[c + 1]).
//   auto cells = coalesce::cell_keys(d, &Particle::pos, box, cutoff, plan);
//   coalesce::sort_by_key(d, cells, plan);
//   std::span<std::uint32_t const> start = coalesce::cell_offsets(plan, cells);
//
//   // When to reorder: every N steps, or when the neighbour list's locality has degraded.
//   coalesce::reorder_policy policy({.every = 500, .degradation = 1.5, .check_every = 20});
//   if (policy.due(step, [&] { return coalesce::neighbor_locality(list, plan); })) {
//     /* keys, sort_by_key, remap as above */
//     policy.reordered(step, coalesce::neighbor_locality(list, plan));
//   }
//
// The sort is stable (equal keys keep their order): CUB DeviceRadixSort over the keys' bit range
// on the GPU, Thrust's stable_sort_by_key with the OpenMP policy without CUDA. Every column of
// the vector (every layout) is then permuted in one launch into a scratch allocation of the
// same capacity, which the vector adopts; its old allocation goes back to the plan for the next
// reorder. Arrays in device memory (device_span, neighbour lists) are permuted through plan
// scratch and copied back in place (remap(from, to, plan) writes into your second list instead).
// Bad input (keys of the wrong length, indices out of range, counts above max_neighbors, broken CSR offsets) is a coalesce::error naming the element, and
// nothing is modified: every check runs before anything is written.
//
// Streams and waiting: a plan queues all its work on its stream (reorder_plan(s), set_stream;
// coalesce/memory/stream.hpp). With the default check_policy::before_writing, a call that checks data
// (keys from positions, sort_keys with caller keys, remap) waits once for the verdict of checks
// that ran inside its own passes; with check_policy::deferred nothing waits (plan.check()
// reports), so a steady-state loop can be captured into a CUDA graph (docs/reorder.md).
//
// Index arrays hold std::uint32_t or std::int32_t; a reorder handles up to 2^32 - 1 elements.
//
// Streams (the one rule of coalesce/memory/stream.hpp): every call that runs work takes a stream
// last, coalesce::default_stream when left out; these calls take a reorder_plan, whose stream
// (the one it was made with) is theirs.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../memory/array.hpp"
#include "../memory/buffer.hpp"
#include "reorder_ops.hpp"
#include "reorder_plan.hpp"
#include "../core/error.hpp"
#include "keys.hpp"
#include "../core/layout.hpp"
#include "../memory/index_arrays.hpp"
#include "../memory/particle_array.hpp"
#include "../core/reflect.hpp"
#include "../memory/space.hpp"
#include "../memory/vector.hpp"
#include "../core/layout_storage.hpp"

namespace coalesce {

namespace detail {

template <class Index> constexpr void check_index_type() {
  static_assert(std::is_same_v<Index, std::uint32_t> || std::is_same_v<Index, std::int32_t>,
                "coalesce: index arrays for remap hold std::uint32_t or std::int32_t");
}

inline void check_same_size(char const* what, std::size_t got, std::size_t want) {
  if (got != want) {
    throw_error(std::string(what) + " has " + std::to_string(got) + " elements but the plan orders " +
                std::to_string(want) + "; sort keys of the same length first");
  }
}

// The columns a permutation moves: a blob that holds records (every column in it unblocked,
// with one stride R, inside [0, R): aos, a split's packed group) moves as R-byte records (two
// 16-byte words for a 32-byte record instead of eight 4-byte loads); other blobs column by
// column. No heap allocation.
template <class T, class L> struct permutation_columns {
  std::array<column_copy, reflect::column_count_v<T> + layout_storage<T, L>::blob_count> columns{};
  std::size_t count = 0;
};
template <class T, class L> std::size_t record_stride_of_blob(layout_storage<T, L> const& s, std::size_t blob) {
  using M = typename layout_storage<T, L>::mapping_type;
  std::size_t stride = 0;
  bool records = true;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    if (M::blob_of(l) != blob) return;
    column_place const p = s.map.place(l, j);
    if (stride == 0) stride = p.stride;
    records = records && p.block == 0 && p.stride == stride && p.offset + layout_storage<T, L>::leaf_bytes(l) <= stride;
  });
  return records ? stride : 0;
}
template <class T, class L>
permutation_columns<T, L> columns_to_permute(layout_storage<T, L> const& dst, layout_storage<T, L> const& src) {
  using M = typename layout_storage<T, L>::mapping_type;
  permutation_columns<T, L> out;
  std::array<bool, layout_storage<T, L>::blob_count> as_records{};
  for (std::size_t b = 0; b < as_records.size(); ++b) {
    std::size_t const stride = record_stride_of_blob(src, b);
    as_records[b] = stride != 0 && stride == record_stride_of_blob(dst, b);
    if (as_records[b]) {
      out.columns[out.count++] = {column_ref{dst.blobs[b], stride, 0, 63}, column_ref{src.blobs[b], stride, 0, 63},
                                  stride};
    }
  }
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    if (!as_records[M::blob_of(l)])
      out.columns[out.count++] = {dst.column(l, j), src.column(l, j), layout_storage<T, L>::leaf_bytes(l)};
  });
  return out;
}

// apply() gathers through the permutation (new order); apply_inverse() through its inverse (back
// to the order before the sort).
enum class direction : unsigned char { sorted, original };
inline std::uint32_t const* order_in(reorder_plan& plan, memory_kind kind, direction d) {
  return d == direction::sorted ? permutation_in(plan, kind) : inverse_in(plan, kind);
}

template <class T, class L, class S> void permute_one(reorder_plan& plan, direction d, vector<T, L, S>& v) {
  constexpr memory_kind kind = kind_of_space<S>;
  if (v.allocated_bytes() == 0) return;  // no elements, no allocation: nothing to move
  buffer& target = scratch(plan, kind, v.allocated_bytes());
  auto const columns = columns_to_permute(layout_storage<T, L>::over(target.data(), v.capacity()), v.storage());
  permute_columns(plan, kind, columns.columns.data(), columns.count, v.size(), order_in(plan, kind, d));
  v.adopt_buffer(target);
  target.free_on(plan.stream().handle());  // the vector's old storage: read by the gathers just queued
}

// A view over memory the caller owns: every column permuted into plan scratch laid out by the
// view's own mapping, then copied back (the memory, and pointers the caller keeps, stay valid).
template <class T, class L> void permute_view(reorder_plan& plan, direction d, memory_kind kind, view<T, L> const& v) {
  using storage_t = layout_storage<std::remove_const_t<T>, L>;
  if (v.size() == 0) return;
  auto const& map = v.storage().map;
  buffer& target = scratch(plan, kind, storage_t::bytes(map));
  storage_t sorted = storage_t::over(target.data(), map);
  detail::set_frame(sorted, v.storage().frame);  // the same box: column_copies back are byte copies
  void* const stream = plan.stream().handle();
  zero_gaps(sorted, kind, stream);
  auto const columns = columns_to_permute(sorted, v.storage());
  permute_columns(plan, kind, columns.columns.data(), columns.count, v.size(), order_in(plan, kind, d));
  // Column by column, elements [0, size()) only: a view may cover the first n elements of larger
  // storage (slots past n in std::array sub-columns or in the last aosoa block are not its own).
  auto const back = column_copies(v.storage(), sorted);  // same layout: byte copies only
  copy_columns(kind, back.copies.data(), back.copies.size(), back.runs.data(), back.runs.size(), v.size(), stream,
               record_gaps::zero);  // every leaf
}

// Arrays the caller owns are permuted into plan scratch and copied back.
template <class U> void permute_array(reorder_plan& plan, direction d, memory_kind kind, U* data, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<U>, "coalesce: apply() permutes trivially copyable elements");
  if (n == 0) return;
  buffer& target = scratch(plan, kind, n * sizeof(U));
  column_copy const column{column_ref{target.data(), sizeof(U), 0, 63},
                           column_ref{reinterpret_cast<std::byte*>(data), sizeof(U), 0, 63}, sizeof(U)};
  permute_columns(plan, kind, &column, 1, n, order_in(plan, kind, d));
  copy_in_plan_stream(plan, kind, data, target.data(), n * sizeof(U));
}
// coalesce::array, std::vector and span_in: contiguous elements, one column.
template <class A>
requires array_traits<A>::contiguous void permute_one(reorder_plan& plan, direction d, A&& a) {
  using traits = array_traits<A>;
  auto* const data = traits::data(a);
  if constexpr (!traits::owned) check_space(memory_of_array<A>, data, "apply: a span_in");
  permute_array(plan, d, memory_of_array<A>, data, traits::size(a));
}

template <class Index, class S> neighbor_desc describe(neighbor_list<Index, S> const& list) {
  check_index_type<Index>();
  check_space(kind_of_space<S>, list.indices, "the neighbor_list's indices");
  check_space(kind_of_space<S>, list.counts, "the neighbor_list's counts");
  neighbor_desc d;
  d.format = list.order == neighbor_order::row_major ? list_format::row_major : list_format::column_major;
  d.indices = reinterpret_cast<std::uint32_t*>(list.indices);
  d.counts = reinterpret_cast<std::uint32_t*>(list.counts);
  d.particles = list.particles;
  d.max_neighbors = list.max_neighbors;
  d.is_signed = std::is_signed_v<Index>;
  return d;
}
template <class Index, class S> neighbor_desc describe(csr_neighbor_list<Index, S> const& list) {
  check_index_type<Index>();
  check_space(kind_of_space<S>, list.indices, "the csr_neighbor_list's indices");
  check_space(kind_of_space<S>, list.offsets, "the csr_neighbor_list's offsets");
  neighbor_desc d;
  d.format = list_format::csr;
  d.indices = reinterpret_cast<std::uint32_t*>(list.indices);
  d.offsets = reinterpret_cast<std::uint32_t*>(list.offsets);
  d.particles = list.particles;
  d.is_signed = std::is_signed_v<Index>;
  return d;
}

}  // namespace detail

// Sorts (key, index) pairs stably; the plan then holds the permutation. Nothing else moves.
template <class Key, class S> void sort_keys(key_array<Key, S> const& keys, reorder_plan& plan) {
  if (keys.generation == 0) detail::check_space(detail::kind_of_space<S>, keys.data, "sort_by_key: the key array");
  detail::sort_keys(plan, detail::kind_of_space<S>, keys.data, sizeof(Key), keys.size, keys.begin_bit, keys.end_bit,
                    keys.generation);
}

// Permutes each argument the way the plan's last sort ordered its keys: element i becomes old
// element permutation()[i]. Arguments: coalesce::vector (any element type, layout, space),
// coalesce::array, span_in<U, Space> (device_span, host_span) and std::vector<U> on the host.
// All sizes are checked before anything moves; if memory runs out part-way (a scratch
// allocation throws), the arguments before the failing one have already been permuted.
template <class... X> void apply(reorder_plan& plan, X&&... arrays) {
  (detail::check_same_size("apply: an array", detail::particle_count(arrays), plan.size()), ...);
  (detail::permute_one(plan, detail::direction::sorted, arrays), ...);
}
// The reverse: arrays in the sorted order go back to the order before the sort (element
// permutation()[i] becomes element i). Results computed on reordered particles return to the
// caller's original order without carrying an id column.
template <class... X> void apply_inverse(reorder_plan& plan, X&&... arrays) {
  (detail::check_same_size("apply_inverse: an array", detail::particle_count(arrays), plan.size()), ...);
  (detail::permute_one(plan, detail::direction::original, arrays), ...);
}

// Sorts v by keys (stable) and permutes every column of v in one fused pass.
template <class T, class L, class S, class Key>
void sort_by_key(vector<T, L, S>& v, key_array<Key, S> const& keys, reorder_plan& plan) {
  detail::check_same_size("sort_by_key: the key array", keys.size, v.size());
  sort_keys(keys, plan);
  detail::permute_one(plan, detail::direction::sorted, v);
}
// The same for a view over memory the program owns, in space S (coalesce::host{} or
// coalesce::device{}): e.g. a split view that keeps a user's float4 positions as they are. The
// elements are permuted through plan scratch and copied back into the user's memory, on the
// plan's stream (a device{s} naming another stream is an error: give s to the plan).
template <class S, class T, class L, class Key>
requires space<S>
void sort_by_key(S space, view<T, L> const& v, key_array<Key, S> const& keys, reorder_plan& plan) {
  static_assert(!std::is_const_v<T>, "coalesce: sort_by_key needs a writable view (view<T, L>), not view<T const, L>");
  detail::check_view_call(space, v, plan, "sort_by_key");
  detail::check_same_size("sort_by_key: the key array", keys.size, v.size());
  sort_keys(keys, plan);
  detail::permute_view(plan, detail::direction::sorted, detail::kind_of_space<S>, v);
}
// User keys (std::uint32_t or std::uint64_t) in the memory of v's space, all bits significant.
template <class T, class L, class S, class Key>
void sort_by_key(vector<T, L, S>& v, std::span<Key const> keys, reorder_plan& plan) {
  sort_by_key(v, key_array<Key, S>{keys.data(), keys.size()}, plan);
}

// Old index -> new index, in place, for every entry (a bond list, a pair list, a selection).
template <class Index, class S> void remap(span_in<Index, S> indices, reorder_plan& plan) {
  detail::check_index_type<Index>();
  detail::check_space(detail::kind_of_space<S>, indices.data, "remap: the index span");
  detail::remap_indices(plan, detail::kind_of_space<S>,
                        {reinterpret_cast<std::uint32_t*>(indices.data), indices.size, std::is_signed_v<Index>});
}
// The same for a std::vector of indices (host memory).
template <class Index, class A> void remap(std::vector<Index, A>& indices, reorder_plan& plan) {
  remap(host_span<Index>{indices.data(), indices.size()}, plan);
}
// A per-particle neighbour list of the reordered particles: rows follow their particle (row i
// becomes the row of new particle i, counts and CSR offsets with it) and entries are renumbered,
// so a kernel that walked the list before the reorder walks it unchanged after.
template <class Index, class S> void remap(neighbor_list<Index, S> const& list, reorder_plan& plan) {
  detail::remap_neighbors(plan, detail::kind_of_space<S>, detail::describe(list));
}
// The same for a CSR list (offsets follow their rows); it has no _async form (async.hpp).
template <class Index, class S> void remap(csr_neighbor_list<Index, S> const& list, reorder_plan& plan) {
  detail::remap_neighbors(plan, detail::kind_of_space<S>, detail::describe(list));
}
// The same into `to`, a list of the same shape (order, max_neighbors, counts or not) in other
// memory: `from` is only read and nothing is copied back, so a code that double-buffers its
// list swaps the two afterwards instead of paying for a copy. CSR: `to` needs room for as many
// entries as `from` has, and gets the new offsets. Bad input leaves `from` unchanged (with
// check_policy::before_writing, `to` may then hold a partial result).
template <class Index, class S>
void remap(neighbor_list<Index, S> const& from, neighbor_list<Index, S> const& to, reorder_plan& plan) {
  detail::neighbor_desc const into = detail::describe(to);
  detail::remap_neighbors(plan, detail::kind_of_space<S>, detail::describe(from), &into);
}
// The same for CSR lists (`to` gets the new offsets).
template <class Index, class S>
void remap(csr_neighbor_list<Index, S> const& from, csr_neighbor_list<Index, S> const& to, reorder_plan& plan) {
  detail::neighbor_desc const into = detail::describe(to);
  detail::remap_neighbors(plan, detail::kind_of_space<S>, detail::describe(from), &into);
}

// Mean |i - j| over the entries j of each row i: a cheap gather-locality measure computed
// where the list lives (one pass over it). Small after a spatial reorder, grows as particles move.
// Waits for the plan's stream (the value returns to the host).
template <class Index, class S>
[[nodiscard]] double neighbor_locality(neighbor_list<Index, S> const& list, reorder_plan& plan) {
  return detail::neighbor_locality(plan, detail::kind_of_space<S>, detail::describe(list));
}
// The same for a CSR list.
template <class Index, class S>
[[nodiscard]] double neighbor_locality(csr_neighbor_list<Index, S> const& list, reorder_plan& plan) {
  return detail::neighbor_locality(plan, detail::kind_of_space<S>, detail::describe(list));
}

// After sorting by cell keys: cells.cells + 1 offsets, cell c holding sorted elements
// [offsets[c], offsets[c + 1]), in the memory of S (sort + boundary kernel, no histogram).
template <class Key, class S>
[[nodiscard]] std::span<std::uint32_t const> cell_offsets(reorder_plan& plan, key_array<Key, S> const& cells) {
  if (cells.cells == 0) detail::throw_error("cell_offsets: the keys are not cell keys (use cell_keys)");
  return {detail::cell_offsets(plan, cells.cells, cells.generation), static_cast<std::size_t>(cells.cells + 1)};
}

// When to reorder: at least every `every` steps, and whenever the measured locality exceeds
// `degradation` times its value right after the last reorder (measured every `check_every`
// steps). 0 switches a rule off. The first call to due() always says yes.
struct reorder_settings {
  std::size_t every = 0;         // steps between reorders at most (0: no such rule)
  double degradation = 0.0;      // reorder when locality exceeds this times the baseline (0: no such rule)
  std::size_t check_every = 10;  // steps between locality measurements (0: never)
};

// Decides at which steps to reorder, by the rules of reorder_settings; the caller reports each
// reorder with reordered(). Host-side bookkeeping only: it runs no work of its own.
class reorder_policy {
 public:
  // With the default settings both rules are off: due() says yes only until the first reordered().
  explicit reorder_policy(reorder_settings settings = {}) : settings_(settings) {}

  // Measure is called (at most once) only on steps where the locality rule is checked.
  template <class Measure> bool due(std::size_t step, Measure&& measure) {
    if (!started_) return true;
    if (step < last_step_) last_step_ = step;  // the step counter went back (a restart): count from here
    std::size_t const since = step - last_step_;
    if (settings_.every > 0 && since >= settings_.every) return true;
    if (settings_.degradation > 0 && settings_.check_every > 0 && since > 0 && since % settings_.check_every == 0) {
      last_measured_ = static_cast<double>(measure());
      return last_measured_ > settings_.degradation * baseline_;
    }
    return false;
  }
  // The `every` rule alone (nothing measured): for a policy without the locality rule.
  bool due(std::size_t step) {
    return due(step, [] { return 0.0; });
  }
  // Call right after a reorder, with the locality measured then (the baseline).
  void reordered(std::size_t step, double locality_after = 0.0) {
    started_ = true;
    last_step_ = step;
    baseline_ = locality_after;
    last_measured_ = locality_after;
    ++count_;
  }
  double baseline() const { return baseline_; }                   // the locality given to the last reordered()
  double last_measured() const { return last_measured_; }         // the last locality measured (or the baseline)
  std::size_t last_reorder_step() const { return last_step_; }    // the step given to the last reordered()
  std::size_t reorders() const { return count_; }                 // reordered() calls so far
  reorder_settings const& settings() const { return settings_; }  // the rules it follows

 private:
  reorder_settings settings_;
  bool started_ = false;
  std::size_t last_step_ = 0;
  std::size_t count_ = 0;
  double baseline_ = 0.0;
  double last_measured_ = 0.0;
};

}  // namespace coalesce
