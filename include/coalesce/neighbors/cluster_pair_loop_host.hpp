// coalesce/neighbors/cluster_pair_loop_host.hpp - the pair engine's CPU loop over a cluster-pair list
// (cluster_pairs.hpp) in host memory: the 8 particles of a j cluster as 8 SIMD lanes (one AVX2
// register of floats), the user's evaluator called across the lanes, once per particle of the i
// cluster. Internal to compute_pairs (pair_engine.hpp), which calls it for a
// verlet_list<cluster_pairs> whose memory the CPU reads (host memory, or the OpenMP device system of
// a build without CUDA).
//
// Per call: the positions copied in slot order into three arrays of the evaluator's real type (an
// empty slot far away: +far on the j side, -far for an i particle, so that no pair with an empty slot
// comes within any cutoff and the lane loop tests no slot), then OpenMP threads over the i clusters
// (dynamic: rows differ in length). Per listed j cluster and per particle of the i cluster, one loop
// over the 8 j lanes computes the separation (nearest_image along periodic axes, as the generic loop;
// an open axis as a periodic one of a length no separation reaches, so the loop has no branch on the
// axis), r^2, the mask (the type pair's cutoff; inside the diagonal cluster pair j > i on a half list,
// j != i on a full one; not excluded) and the evaluator (a masked lane at half its cutoff squared,
// where every law is finite), and multiplies the force by 0 where masked: GCC vectorizes that loop
// (simdlen(8): one ymm register of floats with -mavx2, even where the tuning prefers 128-bit vectors,
// as -march=znver1 does). A test of each j particle against the cluster's bounding box before the
// lane loop was slower (0.80x: the branch mispredicts) and is not taken.
//
// Lanes over j, not over i: j's reactions then add up in its lanes (a vector per j cluster, added to
// the buffer once per cluster pair) and i's forces in an 8 x 8 block of partial sums per lane, summed
// once per row; with the lanes over i, each j particle's reaction was a sum across the 8 lanes, three
// per j particle (0.55x -> 0.48x the hand-written loop on a half list, 131,072 LJ atoms, 2026-12-05).
//
// Half lists: the reactions go into per-thread force buffers in slot order, summed after the loop and
// stored (no atomics; which thread summed which cluster follows the dynamic schedule, so float sums
// may differ in the last bits from run to run). Full lists store each cluster's forces at the end of
// its row. Either way the force member is written through the particles' view (any layout). A force
// member stored as fixed point keeps every sum across clusters as the format's integers
// (fixed_rounding below: deterministic); one stored in any other format than float or double is
// left to the generic loop by compute_pairs. Energy and virial are per-lane sums, added per cluster
// into doubles (compiled out when not asked).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/stored_types.hpp"
#include "cluster_pairs.hpp"
#include "cluster_tile.hpp"
#include "pair_exclusions.hpp"
#include "pair_law.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace coalesce::detail {

// Energy and virial of a pass (each pair once).
struct cluster_pair_sums {
  double energy = 0;
  double virial = 0;
};

// Inside an OpenMP parallel region a region of the loop's own would run nested with one thread per
// team, every thread computing every cluster: the caller then takes the generic loop.
inline bool in_parallel_region() {
#if defined(_OPENMP)
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

// A force member stored as fixed point (fixed_point<std::int64_t or std::int32_t, F>): every sum the
// loop adds across clusters is kept as the format's integers, so the forces come out the same bits
// whatever the thread count and schedule, as atomic_add gives the generic loop. Each addend (a listed
// cluster's reactions, a row's own forces: float sums in an order fixed by the list) is rounded to
// the format once. A sum the format cannot hold is reported after the loop (nothing thrown inside
// the threads).
template <class Real> struct fixed_rounding {
  stored_format format;
  Real scale;  // 2^F
  Real span;   // 2^(8 bytes - 1): the integers' range
  explicit fixed_rounding(stored_format f)
      : format(f),
        scale(static_cast<Real>(std::ldexp(1.0, f.fraction_bits))),
        span(static_cast<Real>(std::ldexp(1.0, 8 * f.bytes - 1))) {}
  // into[k] += values[k] * 2^F rounded, for the W values of a listed cluster: vector loops, the range
  // checked for all W at once (a rounding and a branch per value took a quarter of the fixed-point
  // loop); any value out of range takes the scalar rounding, which reports or saturates it.
  template <std::uint32_t W> void add(std::int64_t* into, Real const* values, bool& refused) const {
    alignas(64) Real rounded[W];
    Real largest = 0;
    for (std::uint32_t k = 0; k < W; ++k) {
      rounded[k] = std::rint(values[k] * scale);
      Real const size = std::abs(rounded[k]);
      largest = size > largest ? size : largest;
    }
    if (largest < span) {  // NaN compares false: the scalar path reports it
      for (std::uint32_t k = 0; k < W; ++k) into[k] += static_cast<std::int64_t>(rounded[k]);
    } else {
      for (std::uint32_t k = 0; k < W; ++k) into[k] += (*this)(values[k], refused);
    }
  }
  // x as the format's integer (encode: rounded, or saturated); `refused` set where the format cannot
  // hold it (or it is NaN) and does not saturate.
  std::int64_t operator()(Real x, bool& refused) const {
    alignas(8) std::byte encoded[8] = {};
    if (encode(encoded, x, format) != encode_status::ok && !format.saturates) {
      refused = true;
      return 0;
    }
    return format.bytes == 8 ? load_bytes<std::int64_t>(encoded) : load_bytes<std::int32_t>(encoded);
  }
};
// The integers of a fixed-point leaf written as they are (4 bytes: the low half, as the atomics and
// the integer sums wrap). Host and device: the generic loop's per-pair rounding (pair_engine.hpp)
// stores its row sums with it too.
template <class Leaf> COALESCE_HOST_DEVICE COALESCE_INLINE void store_fixed(Leaf const& leaf, std::int64_t raw) {
  if (leaf.format().bytes == 8) {
    memcpy(leaf.address(), &raw, 8);
  } else {
    auto const low = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(raw)));
    memcpy(leaf.address(), &low, 4);
  }
}

template <bool Energy, bool Virial, bool Half, bool Threads, bool FixedSums, class Real, class View, class Position,
          class Force, class TypeMember, class Evaluator, class Table, class Exclusions>
cluster_pair_sums cluster_pair_loop_host_run(verlet_list_ref<cluster_pairs> const& list, View const& v,
                                             Position position, Force force, TypeMember type_member,
                                             Evaluator const& law, Table const& table, Exclusions const& exclusions,
                                             double const (&length)[3], bool const (&periodic)[3],
                                             stored_format const& fixed) {
  using param = typename Evaluator::param_type;
  constexpr std::uint32_t W = cluster_pairs::cluster_size;
  constexpr bool typed = !std::is_same_v<TypeMember, no_type_member>;
  std::size_t const clusters = list.clusters, slots = clusters * W;
  // Far, yet its square summed over three axes is a finite float.
  Real const far = static_cast<Real>(1e15);
  // An open axis: a period no separation reaches (finite, so no fast-math setting turns it around).
  Real const len[3] = {periodic[0] ? static_cast<Real>(length[0]) : static_cast<Real>(1e30),
                       periodic[1] ? static_cast<Real>(length[1]) : static_cast<Real>(1e30),
                       periodic[2] ? static_cast<Real>(length[2]) : static_cast<Real>(1e30)};
  std::unique_ptr<Real[]> const xyz(new Real[3 * slots]);
  Real* const sx = xyz.get();
  Real* const sy = sx + slots;
  Real* const sz = sy + slots;
  std::unique_ptr<std::uint32_t[]> const slot_type(typed ? new std::uint32_t[slots] : nullptr);
  // Each cluster's bounding box as centre and half extent per axis (x, y, z blocks of `clusters`; one
  // record per cluster, one line per entry instead of six, measured 5-10 % slower).
  std::unique_ptr<Real[]> const boxes(new Real[6 * clusters]);
  Real* const centre = boxes.get();
  Real* const extent = centre + 3 * clusters;
  // A pair of clusters takes one image shift when the shift of their centres is every pair's nearest
  // image: |centre separation| + both half extents below half the length, with room for rounding.
  // The shift of a pair of clusters multiplies by the inverse length: a division there lay on each
  // entry's chain of dependent steps before its lanes (docs/neighbors.md has the figures).
  Real const inverse_len[3] = {Real(1) / len[0], Real(1) / len[1], Real(1) / len[2]};
  Real const one_shift_limit[3] = {Real(0.499) * len[0], Real(0.499) * len[1], Real(0.499) * len[2]};
  int threads = 1;
#if defined(_OPENMP)
  if constexpr (Threads) threads = omp_get_max_threads();
#endif
  // Half lists: each thread's forces in slot order (x, y, z blocks).
  // (Fixed-point members: the format's integers.)
  using sum_type = std::conditional_t<FixedSums, std::int64_t, Real>;
  std::unique_ptr<sum_type[]> const buffers(Half ? new sum_type[static_cast<std::size_t>(threads) * 3 * slots]
                                                 : nullptr);
  [[maybe_unused]] fixed_rounding<Real> const to_fixed(fixed);
  // A sum a fixed-point member cannot hold, seen by any thread.
  [[maybe_unused]] bool refused_any = false;
  Real const one_type_cut = cutoff2_in<Real>(table, 0, 0);
  param const one_type_param = table.param(0, 0);
  alignas(64) Real one_type_cut_lanes[W], one_type_safe_lanes[W];
  for (std::uint32_t l = 0; l < W; ++l)
    one_type_cut_lanes[l] = one_type_cut, one_type_safe_lanes[l] = Real(0.5) * one_type_cut;
  double const share = Half ? 1.0 : 0.5;
  double energy_total = 0, virial_total = 0;

  auto const cluster_row = [&](std::size_t c, sum_type* bx, sum_type* by, sum_type* bz, double& energy, double& virial,
                               [[maybe_unused]] bool& refused) {
    std::uint32_t const base = static_cast<std::uint32_t>(c) * W;
    alignas(64) Real xi[W], yi[W], zi[W];
    // i's forces as W x W partial sums (i lane l, j lane k), added up once at the end of the row: the
    // lane loop runs over the j lanes, so neither i's nor j's forces need a sum across lanes per pair.
    alignas(64) Real fix[W * W], fiy[W * W], fiz[W * W], el[W], wl[W];
    [[maybe_unused]] std::uint32_t ti[W];
    [[maybe_unused]] exclusion_row excluded[W];
    bool valid_i[W];
    for (std::uint32_t l = 0; l < W; ++l) {
      valid_i[l] = list.slots[base + l] != cluster_pairs::empty_slot;
      xi[l] = valid_i[l] ? sx[base + l] : -far;
      yi[l] = valid_i[l] ? sy[base + l] : -far;
      zi[l] = valid_i[l] ? sz[base + l] : -far;
      el[l] = wl[l] = Real(0);
      if constexpr (typed) ti[l] = valid_i[l] ? slot_type[base + l] : 0;
      if constexpr (excludes_pairs<Exclusions>)
        excluded[l] = valid_i[l] ? exclusions.row(list.slots[base + l]) : exclusion_row{};
    }
    std::fill(fix, fix + W * W, Real(0));
    std::fill(fiy, fiy + W * W, Real(0));
    std::fill(fiz, fiz + W * W, Real(0));
    std::uint32_t const end = list.row_offsets[c + 1];
    for (std::uint32_t e = list.row_offsets[c]; e < end; ++e) {
      std::uint32_t const jc = list.entries[e];
      std::uint32_t const jbase = jc * W;
      bool const diagonal = jc == c;
      // One image shift for the whole pair of clusters where it is each pair's nearest image (every
      // pair of a large box): the lane loop then subtracts, instead of choosing an image per pair
      // and axis. Near half a box length (small periodic boxes) the lanes choose per pair as before.
      Real shift[3];
      bool one_shift = true;
      for (int a = 0; a < 3; ++a) {
        Real const dc = centre[a * clusters + c] - centre[a * clusters + jc];
        shift[a] = len[a] * std::rint(dc * inverse_len[a]);
        one_shift = one_shift &&
                    std::abs(dc - shift[a]) + extent[a * clusters + c] + extent[a * clusters + jc] < one_shift_limit[a];
      }
      if (!one_shift) shift[0] = shift[1] = shift[2] = Real(0);
      // j's cluster in the lanes (an empty slot stays +far: no pair with it comes within a cutoff).
      alignas(64) Real xj[W], yj[W], zj[W], gx[W], gy[W], gz[W];
      for (std::uint32_t k = 0; k < W; ++k) {
        xj[k] = sx[jbase + k] + shift[0];
        yj[k] = sy[jbase + k] + shift[1];
        zj[k] = sz[jbase + k] + shift[2];
        gx[k] = gy[k] = gz[k] = Real(0);
      }
      // The span of j's particles, against which each i lane's exclusions are tested first.
      [[maybe_unused]] std::uint32_t j_lowest = 0xffffffffu, j_highest = 0;
      if constexpr (excludes_pairs<Exclusions>) {
        for (std::uint32_t k = 0; k < W; ++k) {
          std::uint32_t const pj = list.slots[jbase + k];
          if (pj == cluster_pairs::empty_slot) continue;
          j_lowest = std::min(j_lowest, pj);
          j_highest = std::max(j_highest, pj);
        }
      }
      for (std::uint32_t l = 0; l < W; ++l) {
        if (!valid_i[l]) continue;
        // The lanes' cutoffs squared; a lane that must not pair with i (itself or an earlier slot inside
        // the diagonal cluster pair, an excluded pair) gets -1, so the loop's one test is r2 < cut.
        [[maybe_unused]] param lane_param[W];
        alignas(64) Real lane_cut[W];
        Real const* cut = one_type_cut_lanes;
        if constexpr (typed) {
          for (std::uint32_t k = 0; k < W; ++k) {
            lane_param[k] = table.param(ti[l], slot_type[jbase + k]);
            lane_cut[k] = cutoff2_in<Real>(table, ti[l], slot_type[jbase + k]);
          }
          cut = lane_cut;
        }
        // Where a lane is masked the law is evaluated at half its type pair's cutoff squared instead
        // of r2: a law is finite inside its cutoff, not necessarily at r2 = 0 (itself), at the
        // cutoff or beyond it (1 / (rc^2 - r^2) and the like); 0 x inf would be NaN.
        Real const* safe = one_type_safe_lanes;
        alignas(64) Real lane_safe[W];
        if constexpr (typed) {
          for (std::uint32_t k = 0; k < W; ++k) lane_safe[k] = Real(0.5) * lane_cut[k];
          safe = lane_safe;
        }
        if (diagonal) {
          for (std::uint32_t k = 0; k < W; ++k) lane_cut[k] = (Half ? k > l : k != l) ? cut[k] : Real(-1);
          cut = lane_cut;
        }
        if constexpr (excludes_pairs<Exclusions>) {
          exclusion_row const& row = excluded[l];
          if (row.first != row.last && *row.first <= j_highest && *(row.last - 1) >= j_lowest) {
            for (std::uint32_t k = 0; k < W; ++k) lane_cut[k] = row.contains(list.slots[jbase + k]) ? Real(-1) : cut[k];
            cut = lane_cut;
          }
        }
        Real* const fxl = fix + l * W;
        Real* const fyl = fiy + l * W;
        Real* const fzl = fiz + l * W;
        // PerPairImage: each lane's nearest image of i's partner; else j already shifted by the
        // clusters' one shift.
        auto const lanes = [&](auto per_pair_image, Real const x, Real const y, Real const z) {
#if defined(_OPENMP)
#pragma omp simd simdlen(8)
#endif
          for (std::uint32_t k = 0; k < W; ++k) {
            Real d0, d1, d2;
            if constexpr (decltype(per_pair_image)::value) {
              d0 = x - nearest_image(x, xj[k], true, len[0]);
              d1 = y - nearest_image(y, yj[k], true, len[1]);
              d2 = z - nearest_image(z, zj[k], true, len[2]);
            } else {
              d0 = x - xj[k];
              d1 = y - yj[k];
              d2 = z - zj[k];
            }
            Real const r2 = d0 * d0 + d1 * d1 + d2 * d2;
            // The law for every lane, its value used in every lane (times 0 or 1): had the force been
            // selected after the law, GCC would move the law into the selected branch, and with
            // -ftrapping-math (the default) a division there is not if-converted: no vector loop.
            bool const within = r2 < cut[k];
            Real const in = within ? Real(1) : Real(0);
            pair_value<Real> const p = law(within ? r2 : safe[k], typed ? lane_param[k] : one_type_param);
            Real const f = p.force_over_r * in;
            fxl[k] += f * d0;
            fyl[k] += f * d1;
            fzl[k] += f * d2;
            if constexpr (Half) {
              gx[k] -= f * d0;
              gy[k] -= f * d1;
              gz[k] -= f * d2;
            }
            if constexpr (Energy) el[k] += p.energy * in;
            if constexpr (Virial) wl[k] += f * r2;
          }
        };
        if (one_shift) {
          lanes(std::false_type{}, xi[l], yi[l], zi[l]);
        } else {
          lanes(std::true_type{}, xi[l], yi[l], zi[l]);
        }
      }
      if constexpr (Half && FixedSums) {
        to_fixed.template add<W>(bx + jbase, gx, refused);
        to_fixed.template add<W>(by + jbase, gy, refused);
        to_fixed.template add<W>(bz + jbase, gz, refused);
      } else if constexpr (Half) {
        for (std::uint32_t k = 0; k < W; ++k) {
          bx[jbase + k] += gx[k];
          by[jbase + k] += gy[k];
          bz[jbase + k] += gz[k];
        }
      }
    }
    Real fx[W], fy[W], fz[W];
    for (std::uint32_t l = 0; l < W; ++l) {
      fx[l] = fy[l] = fz[l] = Real(0);
      for (std::uint32_t k = 0; k < W; ++k) fx[l] += fix[l * W + k], fy[l] += fiy[l * W + k], fz[l] += fiz[l * W + k];
    }
    if constexpr (Half) {
      for (std::uint32_t l = 0; l < W; ++l) {
        if constexpr (FixedSums) {
          bx[base + l] += to_fixed(fx[l], refused);
          by[base + l] += to_fixed(fy[l], refused);
          bz[base + l] += to_fixed(fz[l], refused);
        } else {
          bx[base + l] += fx[l];
          by[base + l] += fy[l];
          bz[base + l] += fz[l];
        }
      }
    } else {
      for (std::uint32_t l = 0; l < W; ++l) {
        std::uint32_t const p = list.slots[base + l];
        if (p == cluster_pairs::empty_slot) continue;
        if constexpr (FixedSums) {
          store_fixed(v[p][force.pointer][0], to_fixed(fx[l], refused));
          store_fixed(v[p][force.pointer][1], to_fixed(fy[l], refused));
          store_fixed(v[p][force.pointer][2], to_fixed(fz[l], refused));
        } else {
          v[p][force.pointer][0] = fx[l];
          v[p][force.pointer][1] = fy[l];
          v[p][force.pointer][2] = fz[l];
        }
      }
    }
    for (std::uint32_t l = 0; l < W; ++l) {
      if constexpr (Energy) energy += share * static_cast<double>(el[l]);
      if constexpr (Virial) virial += share * static_cast<double>(wl[l]);
    }
  };

#if defined(_OPENMP)
#pragma omp parallel num_threads(threads) reduction(+ : energy_total, virial_total) reduction(|| : refused_any)
#endif
  {
    bool refused = false;
    int thread = 0;
#if defined(_OPENMP)
    thread = omp_get_thread_num();
#endif
    sum_type* const bx = Half ? buffers.get() + static_cast<std::size_t>(thread) * 3 * slots : nullptr;
    sum_type* const by = Half ? bx + slots : nullptr;
    sum_type* const bz = Half ? by + slots : nullptr;
    if constexpr (Half) std::fill(bx, bx + 3 * slots, sum_type(0));  // this thread's own (first touch)
#if defined(_OPENMP)
#pragma omp for schedule(static, 256)
#endif
    for (std::size_t s = 0; s < slots; ++s) {
      std::uint32_t const p = list.slots[s];
      if (p == cluster_pairs::empty_slot) {
        sx[s] = sy[s] = sz[s] = far;
        if constexpr (typed) slot_type[s] = 0;
        continue;
      }
      auto const x = v[p][position.pointer];
      sx[s] = coordinate<Real>(x, 0);
      sy[s] = coordinate<Real>(x, 1);
      sz[s] = coordinate<Real>(x, 2);
      if constexpr (typed) slot_type[s] = static_cast<std::uint32_t>(type_of(v[p], type_member));
    }
#if defined(_OPENMP)
#pragma omp for schedule(static, 64)
#endif
    // A cluster past the columns' own holds no particle (cluster_pairs.hpp): its box stays inverted,
    // and no row reads it (none lists it, its own row is empty).
    for (std::size_t c = 0; c < clusters; ++c) {
      Real lo[3] = {far, far, far}, hi[3] = {-far, -far, -far};
      for (std::uint32_t l = 0; l < W; ++l) {
        std::size_t const at = c * W + l;
        if (list.slots[at] == cluster_pairs::empty_slot) continue;
        Real const x[3] = {sx[at], sy[at], sz[at]};
        for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], x[a]), hi[a] = std::max(hi[a], x[a]);
      }
      for (int a = 0; a < 3; ++a) {
        centre[a * clusters + c] = Real(0.5) * (lo[a] + hi[a]);
        extent[a * clusters + c] = Real(0.5) * (hi[a] - lo[a]);
      }
    }
    double energy = 0, virial = 0;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 16)
#endif
    for (std::size_t c = 0; c < clusters; ++c) cluster_row(c, bx, by, bz, energy, virial, refused);
    energy_total += energy;
    virial_total += virial;
    if constexpr (Half) {
      // The threads' buffers summed in thread order and stored: every particle written.
#if defined(_OPENMP)
#pragma omp for schedule(static, 256)
#endif
      for (std::size_t s = 0; s < slots; ++s) {
        std::uint32_t const p = list.slots[s];
        if (p == cluster_pairs::empty_slot) continue;
        sum_type f0 = 0, f1 = 0, f2 = 0;
        for (int t = 0; t < threads; ++t) {
          sum_type const* const b = buffers.get() + static_cast<std::size_t>(t) * 3 * slots;
          f0 += b[s];
          f1 += b[slots + s];
          f2 += b[2 * slots + s];
        }
        if constexpr (FixedSums) {
          store_fixed(v[p][force.pointer][0], f0);
          store_fixed(v[p][force.pointer][1], f1);
          store_fixed(v[p][force.pointer][2], f2);
        } else {
          v[p][force.pointer][0] = f0;
          v[p][force.pointer][1] = f1;
          v[p][force.pointer][2] = f2;
        }
      }
    }
    refused_any = refused_any || refused;
  }
  if constexpr (FixedSums) {
    if (refused_any) {
      throw_error("compute_pairs: a force sum lies outside what the force member's format (" + format_name(fixed) +
                  ") holds (or is NaN); store the force with fewer fraction bits, or saturating");
    }
  }
  return {energy_total, virial_total};
}

// The pass over the whole list: forces stored into every particle of the list, the sums returned.
// Threads: OpenMP threads over the clusters (the OpenMP device system); else one thread (coalesce::host:
// a plain loop, as every host loop of the library). `fixed`: the force member's fixed-point format
// (its sums kept as the format's integers), or null for a float or double member.
template <bool Energy, bool Virial, bool Threads, class Real, class View, class Position, class Force, class TypeMember,
          class Evaluator, class Table, class Exclusions>
cluster_pair_sums cluster_pair_loop_host(verlet_list_ref<cluster_pairs> const& list, View const& v, Position position,
                                         Force force, TypeMember type_member, Evaluator const& law, Table const& table,
                                         Exclusions const& exclusions, double const (&length)[3],
                                         bool const (&periodic)[3], stored_format const* fixed) {
  if (list.clusters == 0) return {};
  auto const run = [&]<bool Half, bool FixedSums>() {
    return cluster_pair_loop_host_run<Energy, Virial, Half, Threads, FixedSums, Real>(
        list, v, position, force, type_member, law, table, exclusions, length, periodic,
        fixed != nullptr ? *fixed : stored_format{});
  };
  using force_leaf = std::remove_cvref_t<decltype(v[0][force.pointer][0])>;
  if constexpr (!std::is_arithmetic_v<force_leaf>) {  // a stored leaf: fixed point (compute_pairs checked)
    if (list.half) return run.template operator()<true, true>();
    return run.template operator()<false, true>();
  } else {
    (void)fixed;
    if (list.half) return run.template operator()<true, false>();
    return run.template operator()<false, false>();
  }
}

}  // namespace coalesce::detail
