// coalesce/neighbors/cluster_pair_loop.hpp - the pair engine's GPU loop over a cluster-pair list
// (cluster_pairs.hpp): a warp per cluster, the user's evaluator called per pair. Internal to
// compute_pairs (pair_engine.hpp), which calls it for a verlet_list<cluster_pairs> in GPU memory.
//
// A warp takes cluster c: lane l holds particle l % 8 of c (its position, type and force sum) and,
// for each listed cluster, the pairs with its particles l / 8 and l / 8 + 4: 64 pairs in two
// steps of 32 lanes. On a half list each reaction is summed over the 8 lanes that share a particle
// of the listed cluster (three shuffles) and added once (one atomic per component); a listed
// cluster with no pair within its cutoff costs no shuffle and no atomic. After the row, each
// particle of c sums its 4 lanes (two shuffles): stored (full list: the row is all of its pairs)
// or added (half list).
//
// The arithmetic per pair is the generic loop's (pair_engine.hpp): the separation under the
// nearest image, r^2, the type pair's cutoff compared in double, the evaluator in its real type.
// With exclusions (pair_exclusions.hpp), a pair in reach is then looked up in the short row of the
// lane's own particle, read once per lane; without them the test is compiled out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../core/atomic.hpp"
#include "../core/config.hpp"
#include "cluster_pairs.hpp"
#include "cluster_tile.hpp"
#include "pair_exclusions.hpp"
#include "pair_law.hpp"

namespace coalesce::detail {

#if defined(__CUDA_ARCH__)
template <class Real>
__device__ COALESCE_INLINE Real warp_sum_lanes(Real value, unsigned first_mask, unsigned last_mask) {
  for (unsigned step = first_mask; step <= last_mask; step <<= 1) value += __shfl_xor_sync(0xffffffffu, value, step);
  return value;
}
#endif

// r2 below the type pair's cutoff, decided as double(r2) < cutoff2 (the generic loop's test) without
// converting r2 when the loop is in float (cutoff2_in, pair_law.hpp).
template <class Real, class Table>
COALESCE_HOST_DEVICE COALESCE_INLINE bool within_cutoff(Real r2, Table const& table, std::size_t a, std::size_t b) {
  return r2 < cutoff2_in<Real>(table, a, b);
}

// Thread t of clusters * 32 (whole warps: for_each_index's blocks are multiples of 32 threads and
// the count is one): the work of lane t % 32 for cluster t / 32. Energy and virial go into the
// caller's double sums (each pair once over the whole pass). On the host it is never called
// (compute_pairs takes cluster_pair_loop_host.hpp's SIMD loop there).
template <bool Energy, bool Virial, class Real, class View, class Position, class Force, class TypeMember,
          class Evaluator, class Table, class Exclusions, class Sums>
COALESCE_HOST_DEVICE COALESCE_INLINE void cluster_pair_lane(std::size_t t, verlet_list_ref<cluster_pairs> const& list,
                                                            View const& v, Position position, Force force,
                                                            TypeMember type_member, Evaluator const& law,
                                                            Table const& table, Exclusions const& exclusions,
                                                            double const (&length)[3], bool const (&periodic)[3],
                                                            Sums sums) {
#if defined(__CUDA_ARCH__)
  constexpr std::uint32_t size = cluster_pairs::cluster_size;
  auto const c = static_cast<std::uint32_t>(t / 32);
  auto const lane = static_cast<std::uint32_t>(t % 32);
  std::uint32_t const ii = lane % size, jg = lane / size;  // i particle; j particles jg and jg + 4
  std::uint32_t const own = c * size + ii;
  std::uint32_t const pi = list.slots[own];
  bool const has_i = pi != cluster_pairs::empty_slot;
  Real x0 = 0, x1 = 0, x2 = 0;
  std::size_t ti = 0;
  decltype(exclusions.row(0)) excluded{};  // pi's partners, read once per lane (no_exclusions: nothing)
  if (has_i) {
    auto const xi = v[pi][position.pointer];
    x0 = coordinate<Real>(xi, 0), x1 = coordinate<Real>(xi, 1), x2 = coordinate<Real>(xi, 2);
    ti = type_of(v[pi], type_member);
    excluded = exclusions.row(pi);
  }
  // The box lengths and the cutoff in the loop's type, converted once: a conversion per pair costs
  // more than the pair's arithmetic.
  Real const len[3] = {static_cast<Real>(length[0]), static_cast<Real>(length[1]), static_cast<Real>(length[2])};
  Real f0 = 0, f1 = 0, f2 = 0;
  double energy = 0, virial = 0;
  double const share = list.half ? 1.0 : 0.5;  // each pair once over the pass
  std::uint32_t const end = list.row_offsets[c + 1];
  for (std::uint32_t e = list.row_offsets[c]; e < end; ++e) {
    std::uint32_t const jc = list.entries[e];
    Real r0[2] = {0, 0}, r1[2] = {0, 0}, r2r[2] = {0, 0};  // reactions on the two j particles
    std::uint32_t pj[2];
    bool hit = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t const jj = jg + 4 * static_cast<std::uint32_t>(h);
      std::uint32_t const slot = jc * size + jj;
      pj[h] = list.slots[slot];
      bool const pair =
          has_i && pj[h] != cluster_pairs::empty_slot && (jc != c || (list.half ? slot > own : slot != own));
      if (!pair) continue;
      auto const xj = v[pj[h]][position.pointer];
      Real const d0 = x0 - nearest_image(x0, coordinate<Real>(xj, 0), periodic[0], len[0]);
      Real const d1 = x1 - nearest_image(x1, coordinate<Real>(xj, 1), periodic[1], len[1]);
      Real const d2 = x2 - nearest_image(x2, coordinate<Real>(xj, 2), periodic[2], len[2]);
      Real const rr = d0 * d0 + d1 * d1 + d2 * d2;
      std::size_t const tj = type_of(v[pj[h]], type_member);
      if (!within_cutoff(rr, table, ti, tj)) continue;
      // pi's row holds pj whichever of the two rows lists the pair (the exclusions are symmetric).
      if constexpr (excludes_pairs<Exclusions>) {
        if (excluded.contains(pj[h])) continue;
      }
      pair_value<Real> const p = law(rr, table.param(ti, tj));
      f0 += p.force_over_r * d0;
      f1 += p.force_over_r * d1;
      f2 += p.force_over_r * d2;
      r0[h] = -p.force_over_r * d0;
      r1[h] = -p.force_over_r * d1;
      r2r[h] = -p.force_over_r * d2;
      hit = true;
      if constexpr (Energy) energy += share * static_cast<double>(p.energy);
      if constexpr (Virial) virial += share * static_cast<double>(p.force_over_r) * static_cast<double>(rr);
    }
    if (!list.half || !__any_sync(0xffffffffu, hit)) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      Real const s0 = warp_sum_lanes(r0[h], 1u, 4u);
      Real const s1 = warp_sum_lanes(r1[h], 1u, 4u);
      Real const s2 = warp_sum_lanes(r2r[h], 1u, 4u);
      if (ii == 0 && pj[h] != cluster_pairs::empty_slot && (s0 != Real(0) || s1 != Real(0) || s2 != Real(0))) {
        atomic_add(v[pj[h]][force.pointer][0], s0);
        atomic_add(v[pj[h]][force.pointer][1], s1);
        atomic_add(v[pj[h]][force.pointer][2], s2);
      }
    }
  }
  f0 = warp_sum_lanes(f0, 8u, 16u);
  f1 = warp_sum_lanes(f1, 8u, 16u);
  f2 = warp_sum_lanes(f2, 8u, 16u);
  if (jg == 0 && has_i) {
    if (list.half) {
      atomic_add(v[pi][force.pointer][0], f0);
      atomic_add(v[pi][force.pointer][1], f1);
      atomic_add(v[pi][force.pointer][2], f2);
    } else {
      v[pi][force.pointer][0] = f0;
      v[pi][force.pointer][1] = f1;
      v[pi][force.pointer][2] = f2;
    }
  }
  if constexpr (Energy || Virial) {
    energy = warp_sum_lanes(energy, 1u, 16u);
    virial = warp_sum_lanes(virial, 1u, 16u);
    if (lane == 0) sums(energy, virial);
  }
#else
  (void)t, (void)list, (void)v, (void)position, (void)force, (void)type_member, (void)law, (void)table,
      (void)exclusions, (void)length, (void)periodic, (void)sums;
#endif
}

}  // namespace coalesce::detail
