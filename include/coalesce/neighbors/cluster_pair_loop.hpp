// coalesce/neighbors/cluster_pair_loop.hpp - the pair engine's GPU loop over a cluster-pair list
// (cluster_pairs.hpp): a warp per cluster, the user's evaluator called per pair. Internal to
// compute_pairs (pair_engine.hpp), which calls it for a verlet_list<cluster_pairs> in GPU memory.
//
// A warp takes cluster c: lane l holds particle l % 8 of c (its position, type and force sum) and,
// for each listed cluster, the pairs with its particles l / 8 and l / 8 + 4: 64 pairs in two
// steps of 32 lanes. On a half list the 8 lanes that share the listed cluster's two particles sum
// their 6 reaction components by a reduce-scatter (6 shuffles, not 18: each lane ends with one
// component's sum) and 6 of the 8 add theirs (one atomic instruction for the warp, not six); a
// listed cluster with no pair within its cutoff costs no shuffle and no atomic. After the row,
// each particle of c sums its 4 lanes (two shuffles): stored (full list: the row is all of its
// pairs) or added (half list).
//
// The particles are read from a copy in slot order (staged_particle, below). The arithmetic per pair
// is the generic loop's (pair_engine.hpp): the separation under the nearest image (skipped for a
// row whose 8 particles lie a cutoff from every periodic face: staged_box), r^2, the type pair's
// cutoff, the evaluator in its real type. Forces go to sums in slot order (plain float or
// double force members; stored after the loop) or into the force member itself (a member stored as
// fixed point: its integer atomics keep the sums alike run to run).
// With exclusions (pair_exclusions.hpp), a pair in reach is then looked up in the short row of the
// lane's own particle, read once per lane; without them the test is compiled out.
//
// Instructions (SASS, sm_90, nvcc 13.0, the LJ benchmark's forces-only half-list loop over rows away
// from the faces, per list entry of 64 pairs; the hand-written kernel of benchmarks/neighbor_build:
// 108): 119 -> 95 (the law behind a branch), 116 -> 92 (branch_free law). Where they went: a pair's
// force masked alone, not its products (staged_far: -6 selects or moves); the lanes of odd ii read
// their two j particles in the other order (reduce_scatter_reactions: -6 selects); the reactions
// summed as the forces on the j particles (-1 negation); addresses as one wide multiply-add onto a
// lane's own pointer (opaque_pointer: -7); the row's bounds the same in every lane by construction
// (a shuffle from lane 0: the warp-convergence checks before each collective went, -4); the next
// entry read without a guard (-2); half lists a compile-time case (-1). Then 95 -> 93 (92 -> 91):
// the own-cluster test one compare of jc * 8 with a threshold per lane (-1) and the next entry's
// index one min (-1). With energy and virial (the same loop, 2 x 4 instructions more per entry:
// the law's energy, its sum and f r^2) the kernel held 48 registers, 5 blocks of 256 threads per
// multiprocessor instead of 6: with the register the own-cluster test no longer takes, 40 (104 -> 101
// per entry). The pairs' order in an entry (geometry of both, the vote, then the law: see the loop)
// keeps the two j loads together in the forces-only pass; the E+V one issues the second after
// the first pair's law.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../core/atomic.hpp"
#include "../core/config.hpp"
#include "cluster_pairs.hpp"
#include "cluster_tile.hpp"
#include "pair_exclusions.hpp"
#include "pair_law.hpp"

namespace coalesce::detail {

#if defined(__CUDA_ARCH__)
// Addresses in the cluster loop: a lane's pointer into an array (the same every entry) plus the
// entry's cluster times a stride, one wide multiply-add (IMAD.WIDE.U32) per address. The lane's
// pointer passes through opaque_pointer so that nvcc does not fold its offset into the entry's
// index: folded, every address was a wide multiply, an OR and a 64-bit shift-add (4 instructions,
// 3 for the second j particle and 4 for the reaction's). The pointer is then generic to nvcc, so
// the loads and the reduction say their state space themselves (ld.global.nc: the staged particles
// are read-only during the loop; red.global).
template <class T> __device__ COALESCE_INLINE T* opaque_pointer(T* p) {
  std::uint64_t out;
  asm("mov.b64 %0, %1;" : "=l"(out) : "l"(reinterpret_cast<std::uint64_t>(p)));
  return reinterpret_cast<T*>(out);
}
template <class Real> __device__ COALESCE_INLINE void red_global_add(Real* p, Real f) {
  if constexpr (std::is_same_v<Real, float>) {
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"(f) : "memory");
  } else if constexpr (std::is_same_v<Real, double>) {
    asm volatile("red.global.add.f64 [%0], %1;" ::"l"(p), "d"(f) : "memory");
  } else if constexpr (std::is_same_v<Real, std::int64_t>) {  // fixed-point sums (two's complement: u64 adds)
    asm volatile("red.global.add.u64 [%0], %1;" ::"l"(p), "l"(f) : "memory");
  } else {
    atomic_add_scalar(p, f);
  }
}

template <class Real>
__device__ COALESCE_INLINE Real warp_sum_lanes(Real value, unsigned first_mask, unsigned last_mask) {
  for (unsigned step = first_mask; step <= last_mask; step <<= 1) value += __shfl_xor_sync(0xffffffffu, value, step);
  return value;
}

// Six values (two particles' reactions, x y z each: v[h][d]) summed over the 8 lanes of a group
// (lane bits 0-2 = ii) and scattered: each lane gets one sum. Lane ii's v[0] is j particle
// jg + 4 (ii & 1) and v[1] the other one (the loop reads them in that order), so the first step
// keeps v[0] and sends v[1] with no select: after it the lane pair holds one particle's x y z, and
// each step after halves what a lane holds (2 shuffles, then 1): 6 shuffles and 4 selects, not 18
// shuffles for a plain butterfly (nor 10 selects with both particles in the same order in every lane).
// The sum a lane holds: reaction_particle(ii) (of jg, jg + 4), component reaction_axis(ii).
template <class Real> __device__ COALESCE_INLINE Real reduce_scatter_reactions(Real const (&v)[2][3], unsigned ii) {
  constexpr unsigned all = 0xffffffffu;
  bool const b1 = (ii & 2u) != 0, b2 = (ii & 4u) != 0;
  Real w[3];  // w[d]: component d of particle jg + 4 (ii & 1) over the lane pair
#pragma unroll
  for (int d = 0; d < 3; ++d) w[d] = v[0][d] + __shfl_xor_sync(all, v[1][d], 1);
  Real const keep1 = b1 ? w[1] : w[0], send1 = b1 ? w[0] : w[1];
  Real const u0 = keep1 + __shfl_xor_sync(all, send1, 2);  // component b1 over 4 lanes
  Real const u1 = w[2] + __shfl_xor_sync(all, w[2], 2);    // component 2 over 4 lanes
  Real const keep2 = b2 ? u1 : u0, send2 = b2 ? u0 : u1;
  return keep2 + __shfl_xor_sync(all, send2, 4);
}
#endif

// Which j particle of its group (0: jg, 1: jg + 4) lane ii reads first, and whose reaction sum
// (reduce_scatter_reactions) it holds; and which component: lanes 6 and 7 (bits 2 and 1 set) hold
// a copy of lanes 4 and 5's z.
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint32_t reaction_particle(std::uint32_t ii) { return ii & 1u; }
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint32_t reaction_axis(std::uint32_t ii) {
  return (ii & 4u) != 0 ? 2u : (ii & 2u) >> 1;
}

// r2 below the type pair's cutoff, decided as double(r2) < cutoff2 (the generic loop's test) without
// converting r2 when the loop is in float (cutoff2_in, pair_law.hpp).
template <class Real, class Table>
COALESCE_HOST_DEVICE COALESCE_INLINE bool within_cutoff(Real r2, Table const& table, std::size_t a, std::size_t b) {
  return r2 < cutoff2_in<Real>(table, a, b);
}

// The particles staged in slot order: before the loop one pass copies each slot's position and type
// into one vector of 16 bytes (float; 32 for double), so a listed cluster's 8 particles are one
// coalesced 128-byte read and a j particle one vector load (read through the slot's particle index
// and the particles' own layout, a j particle was 5 scattered loads). The nearest image is
// d - L rint(d / L), branch-free (1 / L = 0 along an open axis). An empty slot is staged far away,
// at staged_far (type 0), and an empty i slot's lane holds -staged_far instead: a difference with
// either is about 1e20 or more along each axis, so its square fails every cutoff (float: infinite)
// while the difference stays finite, and a zero force times it is zero. So the loop masks a pair's
// force alone (one select or none per pair); staged at NaN, every product with the difference had
// to be masked as well (NaN times zero is NaN: 6 selects or moves per entry). The nearest image would
// fold such a difference back into the box, so where the loop takes it, it also tests the plain
// difference along x (staged_close: one compare per pair, in the rows near a face only).
template <class Real> struct alignas(4 * sizeof(Real)) staged_particle {
  Real x, y, z;
  std::int32_t type;
};
template <class Real> inline constexpr Real staged_far = Real(1e20);
#if defined(__CUDA_ARCH__)
// One staged particle from global memory, read-only during the loop (through a pointer nvcc sees as
// generic: opaque_pointer above).
template <class Real> __device__ COALESCE_INLINE staged_particle<Real> load_staged(staged_particle<Real> const* p) {
  if constexpr (std::is_same_v<Real, float>) {
    float4 const v = __ldg(reinterpret_cast<float4 const*>(p));
    return {v.x, v.y, v.z, __float_as_int(v.w)};
  } else {
    static_assert(std::is_same_v<Real, double>);
    double2 const a = __ldg(reinterpret_cast<double2 const*>(p));
    double2 const b = __ldg(reinterpret_cast<double2 const*>(p) + 1);
    return {a.x, a.y, b.x, static_cast<std::int32_t>(static_cast<std::uint32_t>(__double_as_longlong(b.y)))};
  }
}
#endif
// A plain difference of staged positions that involves no empty slot (nor an empty i lane).
template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE bool staged_close(Real d) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<Real, float>) {
    return fabsf(d) < 1e19f;  // one compare of the absolute value
  } else {
    return fabs(d) < 1e19;
  }
#else
  return d < Real(1e19) && d > Real(-1e19);
#endif
}

// The table of a single particle type as the loop reads it: the one pair's parameters and cutoff
// as values, so that the kernel reads them once instead of indexing the table by two types per
// pair (an index, a multiply and two loads per pair; compute_pairs picks it when types() is 1).
template <class Param> struct one_type_pair {
  Param param_value;
  double cutoff2_value;
  float cutoff2_float_value;
  COALESCE_HOST_DEVICE COALESCE_INLINE Param const& param(std::size_t, std::size_t) const { return param_value; }
  COALESCE_HOST_DEVICE COALESCE_INLINE double cutoff2(std::size_t, std::size_t) const { return cutoff2_value; }
  COALESCE_HOST_DEVICE COALESCE_INLINE float cutoff2_float(std::size_t, std::size_t) const {
    return cutoff2_float_value;
  }
};

template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real wrapped(Real d, Real length, Real inverse) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<Real, float>) {
    return d - length * rintf(d * inverse);
  } else {
    return d - length * rint(d * inverse);
  }
#else
  return d - length * std::rint(d * inverse);
#endif
}

// x brought into [0, L] along a periodic axis (inverse 1 / L); along an open one (inverse 0) x as it is.
template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE Real into_box(Real x, Real length, Real inverse) {
  if (inverse == Real(0)) return x;
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<Real, float>) {
    return x - length * floorf(x * inverse);
  } else {
    return x - length * floor(x * inverse);
  }
#else
  return x - length * std::floor(x * inverse);
#endif
}

// The box as the staged loop reads it: lengths and inverse lengths (0 along an open axis, where the
// nearest image leaves a difference as it is), and the interior. The staging brings every position
// into [0, L] along a periodic axis (into_box), so a particle at least the largest cutoff from both
// faces of each periodic axis finds every partner within a cutoff at its staged place: the plain
// difference is the nearest image (a partner at the other side of a face lies a cutoff or more
// away in both). A warp whose 8 particles are all interior skips the image for its whole row:
// 9 of ~50 instructions per pair, for ~90% of the rows of a large box.
template <class Real> struct staged_box {
  Real length[3], inverse[3];
  Real interior_low[3], interior_high[3];  // [reach, L - reach]; [-inf, inf] along an open axis

  // reach: the largest cutoff of the pair table (or more).
  static staged_box make(double const (&len)[3], bool const (&periodic)[3], double reach) {
    staged_box b{};
    Real const inf = std::numeric_limits<Real>::infinity();
    for (int a = 0; a < 3; ++a) {
      b.length[a] = static_cast<Real>(len[a]);
      b.inverse[a] = periodic[a] ? static_cast<Real>(1.0 / len[a]) : Real(0);
      // A margin of a few roundings: the test needs only be safe, not tight.
      double const margin = reach * (1 + 1e-5) + 1e-5 * len[a];
      b.interior_low[a] = periodic[a] ? static_cast<Real>(margin) : -inf;
      b.interior_high[a] = periodic[a] ? static_cast<Real>(len[a] - margin) : inf;
    }
    return b;
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE bool near_a_face(Real x, Real y, Real z) const {
    return x < interior_low[0] || x > interior_high[0] || y < interior_low[1] || y > interior_high[1] ||
           z < interior_low[2] || z > interior_high[2];
  }
};

// Where the loop's forces go: forces.add_component(slot, d, f) one component of a reaction and
// forces.add(slot, f0, f1, f2) a half list's row sum, from any warp; forces.store(slot, f0, f1, f2)
// a full list's row sum, from its one lane.
// slot_sums: 4 Reals per slot in slot order (float atomics; stored into the particles by a pass
// after the loop; zeroed first on a half list).
template <class Real> struct slot_sums {
  Real* sums;
  COALESCE_HOST_DEVICE COALESCE_INLINE void add_component(std::size_t slot, std::uint32_t d, Real f) const {
    atomic_add_scalar(sums + 4 * slot + d, f);
  }
  // Component d of slot k of cluster jc (the cluster loop's reactions; first: jc * cluster_size):
  // the lane's own address within a cluster (the same every entry) advanced by the cluster, one
  // instruction per entry.
  COALESCE_HOST_DEVICE COALESCE_INLINE void add_in_cluster(std::uint32_t first, std::uint32_t k, std::uint32_t d,
                                                           Real f) const {
#if defined(__CUDA_ARCH__)
    struct slot_stride {  // a slot's 4 Reals, for the stride alone
      Real v[4];
    };
    auto* const lane = opaque_pointer(reinterpret_cast<slot_stride*>(sums + (4 * k + d)));  // hoisted
    red_global_add(reinterpret_cast<Real*>(lane + first), f);
#else
    add_component(static_cast<std::size_t>(first) + k, d, f);
#endif
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE void add(std::uint32_t slot, Real f0, Real f1, Real f2) const {
    atomic_add_scalar(sums + 4 * slot + 0, f0);
    atomic_add_scalar(sums + 4 * slot + 1, f1);
    atomic_add_scalar(sums + 4 * slot + 2, f2);
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE void store(std::uint32_t slot, Real f0, Real f1, Real f2) const {
    sums[4 * slot + 0] = f0;
    sums[4 * slot + 1] = f1;
    sums[4 * slot + 2] = f2;
  }
};
// The particles' force member itself, through its proxy: a member stored in another format (64-bit
// fixed point: atomics of integers, sums alike run to run) is added into as it is stored.
template <class View, class Force> struct member_sums {
  View v;
  Force force;
  std::uint32_t const* slots;
  template <class Real>
  COALESCE_HOST_DEVICE COALESCE_INLINE void add_component(std::size_t slot, std::uint32_t d, Real f) const {
    atomic_add(v[slots[slot]][force.pointer][d], f);
  }
  template <class Real> COALESCE_HOST_DEVICE COALESCE_INLINE void add_in_cluster(std::uint32_t first, std::uint32_t k,
                                                                                 std::uint32_t d, Real f) const {
    add_component(static_cast<std::size_t>(first) + k, d, f);
  }
  template <class Real>
  COALESCE_HOST_DEVICE COALESCE_INLINE void add(std::uint32_t slot, Real f0, Real f1, Real f2) const {
    std::uint32_t const p = slots[slot];
    atomic_add(v[p][force.pointer][0], f0);
    atomic_add(v[p][force.pointer][1], f1);
    atomic_add(v[p][force.pointer][2], f2);
  }
  template <class Real>
  COALESCE_HOST_DEVICE COALESCE_INLINE void store(std::uint32_t slot, Real f0, Real f1, Real f2) const {
    std::uint32_t const p = slots[slot];
    v[p][force.pointer][0] = f0;
    v[p][force.pointer][1] = f1;
    v[p][force.pointer][2] = f2;
  }
};

// The work of lane t % 32 for cluster t / 32 (whole warps: for_each_index's blocks are multiples of
// 32 threads and the count is one) over the staged particles. Energy and virial go into the
// caller's double sums (each pair once over the whole pass).
template <bool Energy, bool Virial, class Real, class Evaluator, class Table, class Exclusions, class Forces,
          class Sums>
COALESCE_HOST_DEVICE COALESCE_INLINE void staged_cluster_pair_lane(std::size_t t,
                                                                   verlet_list_ref<cluster_pairs> const& list,
                                                                   staged_particle<Real> const* staged,
                                                                   Forces const& forces, Evaluator const& law,
                                                                   Table const& table, Exclusions const& exclusions,
                                                                   staged_box<Real> const& box, Sums sums) {
#if defined(__CUDA_ARCH__)
  constexpr std::uint32_t size = cluster_pairs::cluster_size;
  auto const c = static_cast<std::uint32_t>(t / 32);
  auto const lane = static_cast<std::uint32_t>(t % 32);
  std::uint32_t const ii = lane % size, jg = lane / size;  // i particle; j particles jg and jg + 4
  std::uint32_t const own = c * size + ii;
  bool const has_i = list.slots[own] != cluster_pairs::empty_slot;
  staged_particle<Real> si = staged[own];
  if (!has_i) si.x = si.y = si.z = -staged_far<Real>;  // apart from every slot, an empty one too
  auto const ti = static_cast<std::size_t>(si.type);
  decltype(exclusions.row(0)) excluded{};  // i's partners, read once per lane (no_exclusions: nothing)
  if constexpr (excludes_pairs<Exclusions>) {
    if (has_i) excluded = exclusions.row(list.slots[own]);
  }
  // The lane's two j particles of each listed cluster, jg + 4 q[h]: lane ii reads
  // jg + 4 reaction_particle(ii) first (reduce_scatter_reactions), each through a pointer of its
  // own (one wide multiply-add per load: the cluster's offset onto it).
  std::uint32_t q[2];
  q[0] = reaction_particle(ii);
  q[1] = 1u - q[0];
  staged_particle<Real> const* const lane_j[2] = {opaque_pointer(staged + (jg + 4 * q[0])),
                                                  opaque_pointer(staged + (jg + 4 * q[1]))};
  // The reaction sum this lane adds for each listed cluster (its component of particle jg + 4 q[0]).
  std::uint32_t const reaction_slot = jg + 4 * q[0], axis = reaction_axis(ii);
  bool const adds_reaction = (ii & 6u) != 6u;
  Real f0 = 0, f1 = 0, f2 = 0;
  // The lane's energy and virial over its row, in Real: summed per pair in double they cost two
  // to four conversions and double operations per pair (quarter- and half-rate on the H100), 1.27x
  // the forces-only pass; a row is a few dozen pairs, converted to double once at its end.
  Real row_energy = 0, row_virial = 0;
  bool const half = list.half;
  double const share = half ? 1.0 : 0.5;  // each pair once over the pass
  // Within its own cluster (jc == c) the lane's pair with j particle jg + 4 q[h] is kept once (half:
  // the higher slot's) or unless it is the particle itself (full): one compare per pair of the
  // entry's first slot jc * 8 with the lane's threshold own - j (signed: it may be below 0). A half
  // list lists no cluster below its row's (cluster_pairs.hpp: search_row), so there the pair is
  // kept when jc * 8 + j > own; a full list keeps it when jc * 8 + j != own. (The test was jc == c
  // and a flag per particle: a register and an instruction more per entry.)
  std::int32_t below[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) below[h] = static_cast<std::int32_t>(own) - static_cast<std::int32_t>(jg + 4 * q[h]);
  std::uint32_t const end = __shfl_sync(0xffffffffu, list.row_offsets[c + 1], 0);
  // The row's entries, the nearest image taken per pair (Wrap) or not (the 8 particles interior),
  // the reactions added (Half) or not: a compile-time flag, not a test per entry.
  auto const row = [&](auto wrap, auto half_list) {
    constexpr bool Wrap = decltype(wrap)::value;
    constexpr bool Half = decltype(half_list)::value;
    std::uint32_t e = __shfl_sync(0xffffffffu, list.row_offsets[c], 0);
    // The next entry, read an iteration ahead; past the row's last entry the last one again (an
    // unconditional load: a guarded one cost a compare and two moves per entry).
    std::uint32_t const last = end - 1;
    std::uint32_t const* const entries = opaque_pointer(list.entries);  // held, not reloaded per entry
    std::uint32_t next = e < end ? __ldg(entries + e) : 0;
    for (; e < end; ++e) {
      std::uint32_t const jc = next;
      next = __ldg(entries + min(e + 1, last));                      // one VIMNMX (the select was a compare and a SEL)
      auto const first_slot = static_cast<std::int32_t>(jc * size);  // the same for the whole warp
      // The forces on the two j particles, +f (x_j - x_i): the i particle's is minus their sum, the
      // j particles' reactions are added as summed (no negation per entry).
      Real react[2][3];
      bool hit = false;
      // Both j particles read before either is used: the two loads are in flight together (read
      // where each is used, behind a branch, the second waited for the first's pair: H100, 2026-12-06).
      staged_particle<Real> sjs[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        sjs[h] = load_staged(lane_j[h] + jc * size);
      }
      // Per pair: its separation and test (geometry), then the law and the sums (evaluate).
      Real d[2][3], rr[2], reach2[2];
      bool in_reach[2];
      auto const geometry = [&](int h) {
        staged_particle<Real> const& sj = sjs[h];
        bool const other = Half ? first_slot > below[h] : first_slot != below[h];  // not i itself, each pair once
        Real d0 = sj.x - si.x, d1 = sj.y - si.y, d2 = sj.z - si.z;
        bool close = true;  // no empty slot in the pair (the interior: the distance says so)
        if constexpr (Wrap) {
          close = staged_close(d0);
          d0 = wrapped(d0, box.length[0], box.inverse[0]);
          d1 = wrapped(d1, box.length[1], box.inverse[1]);
          d2 = wrapped(d2, box.length[2], box.inverse[2]);
        }
        d[h][0] = d0, d[h][1] = d1, d[h][2] = d2;
        rr[h] = d0 * d0 + d1 * d1 + d2 * d2;
        auto const tj = static_cast<std::size_t>(sj.type);
        reach2[h] = cutoff2_in<Real>(table, ti, tj);
        in_reach[h] = other && rr[h] < reach2[h] && close;  // an empty slot: far, not in reach
        if constexpr (excludes_pairs<Exclusions>) {
          std::uint32_t const slot = jc * size + jg + 4 * q[h];
          if (in_reach[h] && excluded.contains(list.slots[slot])) in_reach[h] = false;
        }
        // The flag from the predicate, before the law (set inside a branch, it lived in a byte
        // register with three byte moves per entry).
        hit = hit || in_reach[h];
      };
      auto const evaluate = [&](int h) {
        auto const tj = static_cast<std::size_t>(sjs[h].type);
        Real const d0 = d[h][0], d1 = d[h][1], d2 = d[h][2];
        // Out of reach the force is zero, and so is its product with the (finite) difference: the
        // force alone is masked, not each product.
        Real f = Real(0);
        if constexpr (branch_free_law<Evaluator>) {  // every slot evaluated, the value kept in reach
          // Out of reach: evaluated at half the cutoff squared, where every law is finite and a
          // tabulated one in range (the CPU's SIMD loop does the same for its masked lanes).
          pair_value<Real> const p = law(in_reach[h] ? rr[h] : Real(0.5) * reach2[h], table.param(ti, tj));
          f = in_reach[h] ? p.force_over_r : Real(0);
          if constexpr (Energy) row_energy += in_reach[h] ? p.energy : Real(0);
          if constexpr (Virial) row_virial += in_reach[h] ? f * rr[h] : Real(0);  // rr: infinite to an empty slot
        } else if (in_reach[h]) {
          pair_value<Real> const p = law(rr[h], table.param(ti, tj));
          f = p.force_over_r;
          if constexpr (Energy) row_energy += p.energy;
          if constexpr (Virial) row_virial += p.force_over_r * rr[h];
        }
        react[h][0] = f * d0;
        react[h][1] = f * d1;
        react[h][2] = f * d2;
        f0 -= react[h][0];
        f1 -= react[h][1];
        f2 -= react[h][2];
      };
      // The order decides when ptxas issues the second j load (sm_90, nvcc 13.0, 40 registers):
      // with the law behind a branch, both pairs' geometry and the warp's vote first keep the two
      // loads together (pair by pair, it issued the second after the first pair's law); a
      // branch-free law, pair by pair keeps them together (and its E+V kernel in 40 registers, 45
      // the other way).
      bool any_hit;
      if constexpr (branch_free_law<Evaluator>) {
        geometry(0), evaluate(0), geometry(1), evaluate(1);
        any_hit = Half && __any_sync(0xffffffffu, hit);
      } else {
        geometry(0), geometry(1);
        any_hit = Half && __any_sync(0xffffffffu, hit);
        evaluate(0), evaluate(1);
      }
      if (!any_hit) continue;
      Real const sum = reduce_scatter_reactions(react, ii);
      if (adds_reaction && sum != Real(0)) {
        forces.add_in_cluster(jc * size, reaction_slot, axis, sum);
      }
    }
  };
  bool const near = __any_sync(0xffffffffu, has_i && box.near_a_face(si.x, si.y, si.z));
  if (near && half) {
    row(std::true_type{}, std::true_type{});
  } else if (half) {
    row(std::false_type{}, std::true_type{});
  } else if (near) {
    row(std::true_type{}, std::false_type{});
  } else {
    row(std::false_type{}, std::false_type{});
  }
  f0 = warp_sum_lanes(f0, 8u, 16u);
  f1 = warp_sum_lanes(f1, 8u, 16u);
  f2 = warp_sum_lanes(f2, 8u, 16u);
  if (jg == 0 && has_i) {
    if (half) {
      forces.add(own, f0, f1, f2);
    } else {
      forces.store(own, f0, f1, f2);
    }
  }
  if constexpr (Energy || Virial) {
    double const energy = warp_sum_lanes(share * static_cast<double>(row_energy), 1u, 16u);
    double const virial = warp_sum_lanes(share * static_cast<double>(row_virial), 1u, 16u);
    if (lane == 0) sums(energy, virial);
  }
#else
  (void)t, (void)list, (void)staged, (void)forces, (void)law, (void)table, (void)exclusions, (void)box, (void)sums;
#endif
}

}  // namespace coalesce::detail
