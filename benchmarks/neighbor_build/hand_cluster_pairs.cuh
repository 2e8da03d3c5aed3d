// A hand-written cluster-pair LJ force pass over the library's half cluster_pairs list, in the style
// of GROMACS's nbnxm GPU kernel: what a competent CUDA programmer writes for one pair law with the
// list in hand, the baseline of the engine's cluster-pair loop in the same run (engine_rows.cuh).
// Per step, as GROMACS does: positions into cluster order as float4 (w: 1 for a particle, 0 for an
// empty slot), the kernel (a warp per cluster, lane l: i particle l % 8 against j particles l / 8
// and l / 8 + 4 of each listed cluster, one cutoff, the reactions reduced and scattered by shuffles
// and added by one atomic per component, the i sums by shuffles; a warp whose particles all lie a
// cutoff from every face takes no nearest image), then the forces back into the particles.
// With the tricks the library's loop uses (cluster_pair_loop.hpp), as a hand-writer who knew them
// would write it: empty slots staged far away (no test of w per pair), odd lanes reading their two
// j particles in the other order (the reduce-scatter's first step needs no select), x_j - x_i (the
// reactions added as summed), a pointer per lane with __ldg and red.global.add (one wide
// multiply-add per address), the row's bounds from lane 0 and the next entry read ahead without a
// guard. SASS per list entry (sm_90, nvcc 13.0; interior rows / rows near a face): 108 / 129 -> 89 / 109.
#pragma once
#include <coalesce/coalesce.hpp>

#include <cstdint>

namespace bench_engine {

// The 6 reaction components v[3 h + d] of j particles jg and jg + 4 over the 8 lanes ii that hold
// them, reduced and scattered as GROMACS's reduce_force_j_warp_shfl does for 3: keep one of each
// two values and send the other (3, then 2, then 1 shuffles), then 6 lanes add one component each
// (one atomic instruction). The super-cluster kernels' (hand_super_clusters.cuh).
__device__ __forceinline__ void add_reactions(float const (&v)[6], std::uint32_t ii, std::uint32_t jc, std::uint32_t jg,
                                              float* slot_forces) {
  bool const b0 = ii & 1u, b1 = ii & 2u, b2 = ii & 4u;
  float w[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    w[k] = (b0 ? v[2 * k + 1] : v[2 * k]) + __shfl_xor_sync(0xffffffffu, b0 ? v[2 * k] : v[2 * k + 1], 1);
  }
  float const u0 = (b1 ? w[1] : w[0]) + __shfl_xor_sync(0xffffffffu, b1 ? w[0] : w[1], 2);
  float const u1 = w[2] + __shfl_xor_sync(0xffffffffu, w[2], 2);
  float const sum = (b2 ? u1 : u0) + __shfl_xor_sync(0xffffffffu, b2 ? u0 : u1, 4);
  std::uint32_t const which = b2 ? 4u + (ii & 1u) : (ii & 3u);  // v[which] summed over the 8 lanes
  if (!(b2 && b1) && sum != 0.f) atomicAdd(slot_forces + 4 * (jc * 8 + jg + 4 * (which / 3)) + which % 3, sum);
}

// Empty slots are staged far away (hand_far; w = 0 still) and an empty i lane sits at -hand_far:
// a pair with either is out of reach by its distance (r2 overflows to infinity), and its
// separation stays finite, so a force masked to zero makes zero products (no test of w per pair).
inline constexpr float hand_far = 1e20f;

// A lane's pointer the compiler keeps as it is (it does not fold the lane's offset into each
// entry's index: one wide multiply-add per address instead of four instructions).
template <class T> __device__ __forceinline__ T* lane_pointer(T* p) {
  std::uint64_t out;
  asm("mov.b64 %0, %1;" : "=l"(out) : "l"(reinterpret_cast<std::uint64_t>(p)));
  return reinterpret_cast<T*>(out);
}

// The 6 reaction components v[h][d] of the lane's two j particles over the 8 lanes ii that hold
// them, reduced and scattered as GROMACS's reduce_force_j_warp_shfl does for 3: keep one of each
// two values and send the other (3, then 2, then 1 shuffles). Lane ii's v[0] is j particle
// jg + 4 (ii & 1) (odd lanes read their two j particles in the other order), so the first step
// needs no select. The lane ends with component (ii & 4 ? 2 : (ii & 2) / 2) of particle
// jg + 4 (ii & 1); lanes 6 and 7 hold a copy of 4 and 5's.
__device__ __forceinline__ float reduce_reactions(float const (&v)[2][3], std::uint32_t ii) {
  bool const b1 = ii & 2u, b2 = ii & 4u;
  float w[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) w[k] = v[0][k] + __shfl_xor_sync(0xffffffffu, v[1][k], 1);
  float const u0 = (b1 ? w[1] : w[0]) + __shfl_xor_sync(0xffffffffu, b1 ? w[0] : w[1], 2);
  float const u1 = w[2] + __shfl_xor_sync(0xffffffffu, w[2], 2);
  return (b2 ? u1 : u0) + __shfl_xor_sync(0xffffffffu, b2 ? u0 : u1, 4);
}

// One warp's row [begin, end) (the same in every lane); Wrap: the nearest image per pair, or not
// (every i particle of the warp at least a cutoff from each face: the positions are staged into
// [0, L), so a plain difference is the image).
template <bool Wrap>
__device__ __forceinline__ void hand_cluster_pair_row(std::uint32_t c, std::uint32_t begin, std::uint32_t end,
                                                      std::uint32_t const* entries, float4 const* xq,
                                                      float* slot_forces, float4 xi, float3 length, float3 inverse,
                                                      float rc2, float& fx, float& fy, float& fz) {
  if (begin == end) return;
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8, own = c * 8 + ii;
  std::uint32_t const q0 = ii & 1u;  // the j particle read first: jg + 4 q0
  float4 const* const lane_j0 = lane_pointer(xq + (jg + 4 * q0));
  float4 const* const lane_j1 = lane_pointer(xq + (jg + 4 * (1u - q0)));
  // The lane's reaction component (reduce_reactions), of slot jg + 4 q0 of each listed cluster.
  float* const lane_reaction = lane_pointer(slot_forces + (4 * (jg + 4 * q0) + ((ii & 4u) ? 2u : (ii & 2u) >> 1)));
  bool const adds = (ii & 6u) != 6u;
  // In the row's own cluster a pair once (the higher slot's): jc * 8 + j > own, as jc * 8 > own - j
  // (a half list lists no cluster below its row's).
  std::int32_t const below0 = static_cast<std::int32_t>(own) - static_cast<std::int32_t>(jg + 4 * q0);
  std::int32_t const below1 = static_cast<std::int32_t>(own) - static_cast<std::int32_t>(jg + 4 * (1u - q0));
  std::uint32_t const last = end - 1;
  std::uint32_t next = __ldg(entries + begin);
  for (std::uint32_t e = begin; e < end; ++e) {
    std::uint32_t const jc = next;
    next = __ldg(entries + min(e + 1, last));  // the next entry, read ahead without a guard
    auto const first = static_cast<std::int32_t>(jc * 8);
    float4 const xj[2] = {__ldg(lane_j0 + jc * 8), __ldg(lane_j1 + jc * 8)};
    float react[2][3];
    bool hit = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float dx = xj[h].x - xi.x, dy = xj[h].y - xi.y, dz = xj[h].z - xi.z;  // x_j - x_i
      bool close = true;
      if (Wrap) {
        close = fabsf(dx) < 1e19f;  // an empty slot: the image would fold it back into the box
        dx -= length.x * rintf(dx * inverse.x);
        dy -= length.y * rintf(dy * inverse.y);
        dz -= length.z * rintf(dz * inverse.z);
      }
      float const r2 = dx * dx + dy * dy + dz * dz;
      bool const pair = first > (h == 0 ? below0 : below1) && r2 < rc2 && close;
      float const r2i = coalesce::fast_reciprocal(r2), s6 = r2i * r2i * r2i;
      float const fr = pair ? 24.f * s6 * (2.f * s6 - 1.f) * r2i : 0.f;
      react[h][0] = fr * dx, react[h][1] = fr * dy, react[h][2] = fr * dz;  // on the j particle
      fx -= react[h][0], fy -= react[h][1], fz -= react[h][2];
      hit = hit || pair;
    }
    if (!__any_sync(0xffffffffu, hit)) continue;
    float const sum = reduce_reactions(react, ii);
    if (adds && sum != 0.f) {
      asm volatile("red.global.add.f32 [%0], %1;" ::"l"(lane_reaction + jc * 32), "f"(sum) : "memory");
    }
  }
}

__global__ void hand_cluster_pair_force(std::uint32_t clusters, std::uint32_t const* row_offsets,
                                        std::uint32_t const* entries, float4 const* xq, float* slot_forces,
                                        float3 length, float3 inverse, float rc2) {
  std::uint32_t const c = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (c >= clusters) return;  // whole warps: the block is a multiple of 32 threads
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8, own = c * 8 + ii;
  float4 xi = xq[own];
  bool const has_i = xi.w != 0.f;
  if (!has_i) xi.x = xi.y = xi.z = -hand_far;  // apart from every slot, an empty one too
  float fx = 0.f, fy = 0.f, fz = 0.f;
  float const rc = sqrtf(rc2) * 1.0001f;
  bool const near = has_i && (xi.x < rc || xi.x > length.x - rc || xi.y < rc || xi.y > length.y - rc || xi.z < rc ||
                              xi.z > length.z - rc);
  // The row's bounds from lane 0: the same in every lane by construction (the loop's branches are
  // then uniform to the compiler: no convergence checks before the shuffles).
  std::uint32_t const begin = __shfl_sync(0xffffffffu, row_offsets[c], 0);
  std::uint32_t const end = __shfl_sync(0xffffffffu, row_offsets[c + 1], 0);
  if (__any_sync(0xffffffffu, near)) {
    hand_cluster_pair_row<true>(c, begin, end, entries, xq, slot_forces, xi, length, inverse, rc2, fx, fy, fz);
  } else {
    hand_cluster_pair_row<false>(c, begin, end, entries, xq, slot_forces, xi, length, inverse, rc2, fx, fy, fz);
  }
  for (unsigned step = 8; step <= 16; step <<= 1) {
    fx += __shfl_xor_sync(0xffffffffu, fx, step);
    fy += __shfl_xor_sync(0xffffffffu, fy, step);
    fz += __shfl_xor_sync(0xffffffffu, fz, step);
  }
  if (jg == 0 && has_i) {
    atomicAdd(slot_forces + 4 * own + 0, fx);
    atomicAdd(slot_forces + 4 * own + 1, fy);
    atomicAdd(slot_forces + 4 * own + 2, fz);
  }
}

// Positions into cluster order as float4 (w: 1 for a particle, 0 for an empty slot), brought into
// [0, L) (the interior rows take no image), and the slot forces zeroed.
// far: an empty slot's position (w = 0 either way); the cluster-pair kernel above stages them at
// hand_far, the other kernels (hand_super_clusters.cuh) at 0.
template <class Atom, class Layout>
void stage_cluster_slots(coalesce::device_vector<Atom, Layout>& d,
                         coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, float4* xq, float* slot_forces,
                         float length, float far = 0.f) {
  auto v = d.view();
  std::uint32_t const* slot_particle = list.slots;
  float const inv = 1.f / length;
  coalesce::for_each_index(coalesce::device{}, list.clusters * 8, [=] COALESCE_HOST_DEVICE(std::size_t k) {
    std::uint32_t const p = slot_particle[k];
    float4 x{far, far, far, 0.f};
    if (p != coalesce::cluster_pairs::empty_slot) {
      float const r[3] = {v[p][&Atom::pos][&decltype(Atom::pos)::x], v[p][&Atom::pos][&decltype(Atom::pos)::y],
                          v[p][&Atom::pos][&decltype(Atom::pos)::z]};
      float in[3];
      for (int a = 0; a < 3; ++a) in[a] = r[a] - length * floorf(r[a] * inv);
      x = float4{in[0], in[1], in[2], 1.f};
    }
    xq[k] = x;
    reinterpret_cast<float4*>(slot_forces)[k] = float4{0.f, 0.f, 0.f, 0.f};
  });
}

// The slot forces back into the particles' force member; waits for the step.
template <class Atom, class Layout>
void store_cluster_forces(coalesce::device_vector<Atom, Layout>& d,
                          coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, float const* slot_forces) {
  auto v = d.view();
  std::uint32_t const* slot_particle = list.slots;
  coalesce::for_each_index(coalesce::device{}, list.clusters * 8, [=] COALESCE_HOST_DEVICE(std::size_t k) {
    std::uint32_t const p = slot_particle[k];
    if (p == coalesce::cluster_pairs::empty_slot) return;
    float4 const f = reinterpret_cast<float4 const*>(slot_forces)[k];
    v[p][&Atom::force][&decltype(Atom::force)::x] = f.x;
    v[p][&Atom::force][&decltype(Atom::force)::y] = f.y;
    v[p][&Atom::force][&decltype(Atom::force)::z] = f.z;
  });
  cudaDeviceSynchronize();
}

// Positions into cluster order, the force pass, forces back: one step's force work. The list is a
// half list; xq and slot_forces hold 16 bytes per slot (the caller's, allocated once).
template <class Atom, class Layout>
void hand_cluster_pair_step(coalesce::device_vector<Atom, Layout>& d,
                            coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, float4* xq,
                            float* slot_forces, float length, float rc2) {
  stage_cluster_slots(d, list, xq, slot_forces, length, hand_far);
  float const inv = 1.f / length;
  unsigned const block = 256, blocks = static_cast<unsigned>((list.clusters * 32 + block - 1) / block);
  hand_cluster_pair_force<<<blocks, block>>>(static_cast<std::uint32_t>(list.clusters), list.row_offsets, list.entries,
                                             xq, slot_forces, float3{length, length, length}, float3{inv, inv, inv},
                                             rc2);
  store_cluster_forces(d, list, slot_forces);
}

}  // namespace bench_engine
