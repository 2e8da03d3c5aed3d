// A hand-written cluster-pair LJ force pass over the library's half cluster_pairs list, in the style
// of GROMACS's nbnxm GPU kernel: what a competent CUDA programmer writes for one pair law with the
// list in hand, the baseline of the engine's cluster-pair loop in the same run (engine_rows.cuh).
// Per step, as GROMACS does: positions into cluster order as float4 (w: 1 for a particle, 0 for an
// empty slot), the kernel (a warp per cluster, lane l: i particle l % 8 against j particles l / 8
// and l / 8 + 4 of each listed cluster, one cutoff, the reactions reduced and scattered by shuffles
// and added by one atomic per component, the i sums by shuffles; a warp whose particles all lie a
// cutoff from every face takes no nearest image), then the forces back into the particles.
#pragma once
#include <coalesce/coalesce.hpp>

#include <cstdint>

namespace bench_engine {

// The 6 reaction components v[3 h + d] of j particles jg and jg + 4 over the 8 lanes ii that hold
// them, reduced and scattered as GROMACS's reduce_force_j_warp_shfl does for 3: keep one of each
// two values and send the other (3, then 2, then 1 shuffles), then 6 lanes add one component each
// (one atomic instruction).
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

// One warp's row; Wrap: the nearest image per pair, or not (every i particle of the warp at least a
// cutoff from each face: the positions are staged into [0, L), so a plain difference is the image).
template <bool Wrap>
__device__ __forceinline__ void hand_cluster_pair_row(std::uint32_t c, std::uint32_t begin, std::uint32_t end,
                                                      std::uint32_t const* entries, float4 const* xq,
                                                      float* slot_forces, float4 xi, bool has_i, float3 length,
                                                      float3 inverse, float rc2, float& fx, float& fy, float& fz) {
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8, own = c * 8 + ii;
  for (std::uint32_t e = begin; e < end; ++e) {
    std::uint32_t const jc = entries[e];
    float rx[2], ry[2], rz[2];
    bool hit = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t const slot = jc * 8 + jg + 4 * h;
      float4 const xj = xq[slot];
      float dx = xi.x - xj.x, dy = xi.y - xj.y, dz = xi.z - xj.z;
      if (Wrap) {
        dx -= length.x * rintf(dx * inverse.x);
        dy -= length.y * rintf(dy * inverse.y);
        dz -= length.z * rintf(dz * inverse.z);
      }
      float const r2 = dx * dx + dy * dy + dz * dz;
      bool const pair = has_i && xj.w != 0.f && (jc != c || slot > own) && r2 < rc2;
      float const r2i = coalesce::fast_reciprocal(r2), s6 = r2i * r2i * r2i;
      float const fr = pair ? 24.f * s6 * (2.f * s6 - 1.f) * r2i : 0.f;
      fx += fr * dx, fy += fr * dy, fz += fr * dz;
      rx[h] = -fr * dx, ry[h] = -fr * dy, rz[h] = -fr * dz;
      hit = hit || pair;
    }
    if (!__any_sync(0xffffffffu, hit)) continue;
    float const v[6] = {rx[0], ry[0], rz[0], rx[1], ry[1], rz[1]};
    add_reactions(v, ii, jc, jg, slot_forces);
  }
}

__global__ void hand_cluster_pair_force(std::uint32_t clusters, std::uint32_t const* row_offsets,
                                        std::uint32_t const* entries, float4 const* xq, float* slot_forces,
                                        float3 length, float3 inverse, float rc2) {
  std::uint32_t const c = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (c >= clusters) return;  // whole warps: the block is a multiple of 32 threads
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8, own = c * 8 + ii;
  float4 const xi = xq[own];
  bool const has_i = xi.w != 0.f;
  float fx = 0.f, fy = 0.f, fz = 0.f;
  float const rc = sqrtf(rc2) * 1.0001f;
  bool const near = has_i && (xi.x < rc || xi.x > length.x - rc || xi.y < rc || xi.y > length.y - rc || xi.z < rc ||
                              xi.z > length.z - rc);
  if (__any_sync(0xffffffffu, near)) {
    hand_cluster_pair_row<true>(c, row_offsets[c], row_offsets[c + 1], entries, xq, slot_forces, xi, has_i, length,
                                inverse, rc2, fx, fy, fz);
  } else {
    hand_cluster_pair_row<false>(c, row_offsets[c], row_offsets[c + 1], entries, xq, slot_forces, xi, has_i, length,
                                 inverse, rc2, fx, fy, fz);
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
template <class Atom, class Layout>
void stage_cluster_slots(coalesce::device_vector<Atom, Layout>& d,
                         coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, float4* xq, float* slot_forces,
                         float length) {
  auto v = d.view();
  std::uint32_t const* slot_particle = list.slots;
  float const inv = 1.f / length;
  coalesce::for_each_index(coalesce::device{}, list.clusters * 8, [=] COALESCE_HOST_DEVICE(std::size_t k) {
    std::uint32_t const p = slot_particle[k];
    float4 x{0.f, 0.f, 0.f, 0.f};
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
  stage_cluster_slots(d, list, xq, slot_forces, length);
  float const inv = 1.f / length;
  unsigned const block = 256, blocks = static_cast<unsigned>((list.clusters * 32 + block - 1) / block);
  hand_cluster_pair_force<<<blocks, block>>>(static_cast<std::uint32_t>(list.clusters), list.row_offsets, list.entries,
                                             xq, slot_forces, float3{length, length, length}, float3{inv, inv, inv},
                                             rc2);
  store_cluster_forces(d, list, slot_forces);
}

}  // namespace bench_engine
