// An experiment on the cluster-pair force pass: GROMACS's super-clusters, hand-written, over the
// library's half cluster_pairs list regrouped on the host. S consecutive clusters (a stack along
// one of the list's grid columns) share one row of (j cluster, mask) entries, bit k of the mask
// saying that cluster k of the stack lists that j cluster. A warp takes a stack: lane l holds i
// particle l % 8 of each of the S clusters (positions and force sums in registers) and j particles
// l / 8 and l / 8 + 4 of each listed cluster; per entry the j particles are read once, the pairs
// with every masked i cluster evaluated, and the reactions reduced and added once (the per-entry
// work of hand_cluster_pairs.cuh, its ~40 instructions, divided by the mask's bits). The question
// it answers: does the library's list format pay to carry super-cluster rows (it would then build
// them on the GPU; here the regrouping is host work, untimed).
#pragma once
#include <coalesce/coalesce.hpp>

#include "../common/cluster_sharing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace bench_engine {

struct super_rows {
  std::uint32_t* members = nullptr;  // cluster k of stack s: members[S s + k] (none: no cluster); null: S s + k
  std::uint32_t* offsets = nullptr;  // stack s: entries [offsets[s], offsets[s + 1])
  std::uint32_t* entries = nullptr;  // j cluster
  std::uint32_t* masks = nullptr;    // bit k: cluster S s + k lists it
  std::size_t stacks = 0;
  double bits_per_entry = 0;
  double entries_per_cluster = 0;
};

inline constexpr std::uint32_t no_cluster = 0xffffffffu;

// The half list's rows regrouped by stacks of S clusters (the list copied to the host and back):
// S consecutive clusters, or the groups of `members` (S per stack, no_cluster where a group has fewer).
template <unsigned S> super_rows make_super_rows(coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list,
                                                 std::vector<std::uint32_t> const& members = {}) {
  std::size_t const clusters = list.clusters;
  std::vector<std::uint32_t> offsets(clusters + 1);
  cudaMemcpy(offsets.data(), list.row_offsets, offsets.size() * 4, cudaMemcpyDeviceToHost);
  std::vector<std::uint32_t> entries(offsets.back());
  cudaMemcpy(entries.data(), list.entries, entries.size() * 4, cudaMemcpyDeviceToHost);
  super_rows out;
  out.stacks = members.empty() ? (clusters + S - 1) / S : members.size() / S;
  std::vector<std::uint32_t> so(out.stacks + 1, 0), se, sm;
  std::vector<std::uint32_t> seen(clusters, 0xffffffffu), mask(clusters, 0);  // per j cluster: stack, mask
  double bits = 0;
  for (std::size_t s = 0; s < out.stacks; ++s) {
    std::size_t const first = se.size();
    for (unsigned k = 0; k < S; ++k) {
      std::size_t const c = members.empty() ? s * S + k : members[s * S + k];
      if (c >= clusters) continue;
      for (std::uint32_t e = offsets[c]; e < offsets[c + 1]; ++e) {
        std::uint32_t const jc = entries[e];
        if (seen[jc] != s) {
          seen[jc] = static_cast<std::uint32_t>(s);
          mask[jc] = 0;
          se.push_back(jc);
        }
        mask[jc] |= 1u << k;
        bits += 1;
      }
    }
    for (std::size_t e = first; e < se.size(); ++e) sm.push_back(mask[se[e]]);
    so[s + 1] = static_cast<std::uint32_t>(se.size());
  }
  out.bits_per_entry = se.empty() ? 0 : bits / static_cast<double>(se.size());
  out.entries_per_cluster = clusters ? static_cast<double>(se.size()) / static_cast<double>(clusters) : 0;
  if (!members.empty()) {
    cudaMalloc(&out.members, members.size() * 4);
    cudaMemcpy(out.members, members.data(), members.size() * 4, cudaMemcpyHostToDevice);
  }
  cudaMalloc(&out.offsets, so.size() * 4);
  cudaMalloc(&out.entries, (se.size() + 1) * 4);
  cudaMalloc(&out.masks, (sm.size() + 1) * 4);
  cudaMemcpy(out.offsets, so.data(), so.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(out.entries, se.data(), se.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(out.masks, sm.data(), sm.size() * 4, cudaMemcpyHostToDevice);
  return out;
}

// GROMACS's dynamic pruning, its best case: the rows kept to the entries with a pair within
// `reach` (the cutoff and a small inner skin) at this moment, found on the host from the staged
// positions (xq, slot order, w = 0 for an empty slot). A pruned list's force pass, against the
// outer list's, bounds what a prune every few steps could gain (its own cost and the inner skin's
// growth between prunes not counted).
struct pruned_rows {
  coalesce::verlet_list_ref<coalesce::cluster_pairs> view;
  std::uint32_t* offsets = nullptr;
  std::uint32_t* entries = nullptr;
  double entries_per_cluster = 0, outer_per_cluster = 0;
};

inline pruned_rows prune_rows(coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, float4 const* xq,
                              float length, float reach) {
  std::size_t const clusters = list.clusters;
  std::vector<std::uint32_t> offsets(clusters + 1);
  cudaMemcpy(offsets.data(), list.row_offsets, offsets.size() * 4, cudaMemcpyDeviceToHost);
  std::vector<std::uint32_t> entries(offsets.back());
  cudaMemcpy(entries.data(), list.entries, entries.size() * 4, cudaMemcpyDeviceToHost);
  std::vector<float4> x(clusters * 8);
  cudaMemcpy(x.data(), xq, x.size() * sizeof(float4), cudaMemcpyDeviceToHost);
  float const reach2 = reach * reach;
  auto const image = [&](float d) { return d - length * std::rint(d / length); };
  std::vector<std::uint32_t> po(clusters + 1, 0), pe;
  for (std::size_t c = 0; c < clusters; ++c) {
    for (std::uint32_t e = offsets[c]; e < offsets[c + 1]; ++e) {
      std::uint32_t const jc = entries[e];
      bool keep = false;
      for (int i = 0; i < 8 && !keep; ++i) {
        float4 const a = x[c * 8 + i];
        if (a.w == 0.f) continue;
        for (int j = 0; j < 8 && !keep; ++j) {
          float4 const b = x[jc * 8 + j];
          if (b.w == 0.f || (jc == c && j <= i)) continue;
          float const dx = image(a.x - b.x), dy = image(a.y - b.y), dz = image(a.z - b.z);
          keep = dx * dx + dy * dy + dz * dz < reach2;
        }
      }
      if (keep) pe.push_back(jc);
    }
    po[c + 1] = static_cast<std::uint32_t>(pe.size());
  }
  pruned_rows out;
  out.entries_per_cluster = clusters ? static_cast<double>(pe.size()) / static_cast<double>(clusters) : 0;
  out.outer_per_cluster = clusters ? static_cast<double>(entries.size()) / static_cast<double>(clusters) : 0;
  cudaMalloc(&out.offsets, po.size() * 4);
  cudaMalloc(&out.entries, (pe.size() + 1) * 4);
  cudaMemcpy(out.offsets, po.data(), po.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(out.entries, pe.data(), pe.size() * 4, cudaMemcpyHostToDevice);
  out.view = list;
  out.view.row_offsets = out.offsets;
  out.view.entries = out.entries;
  return out;
}

// GROMACS's super-cluster shape from the list's clusters: 8 clusters of one cell twice their mean
// spacing (bench::cluster_groups, benchmarks/common/cluster_sharing.hpp), from the staged positions.
template <unsigned S>
std::vector<std::uint32_t> compact_members(coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list,
                                           float4 const* xq, float length) {
  std::vector<float4> x(list.clusters * 8);
  cudaMemcpy(x.data(), xq, x.size() * sizeof(float4), cudaMemcpyDeviceToHost);
  auto const at = [&](std::size_t s, double(&p)[3]) {
    if (x[s].w == 0.f) return false;
    p[0] = x[s].x, p[1] = x[s].y, p[2] = x[s].z;
    return true;
  };
  return bench::cluster_groups(list.clusters, at, length, S, true);
}

inline void free_super_rows(super_rows& r) {
  cudaFree(r.members), cudaFree(r.offsets), cudaFree(r.entries), cudaFree(r.masks);
  r = {};
}

// One (j cluster, mask) entry of stack s: the j particles read once, the pairs with each masked i
// cluster of the stack, the reactions reduced and added once.
template <unsigned S, bool Wrap>
__device__ __forceinline__ void stack_entry(std::uint32_t const (&ci)[S], std::uint32_t jc, std::uint32_t mask,
                                            float4 const* xq, float* slot_forces, float4 const (&xi)[S], float3 length,
                                            float3 inverse, float rc2, float (&fi)[S][3]) {
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8;
  float4 xj[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) xj[h] = xq[jc * 8 + jg + 4 * h];
  float v[6] = {0, 0, 0, 0, 0, 0};
  bool hit = false;
#pragma unroll
  for (unsigned k = 0; k < S; ++k) {
    if (!(mask & (1u << k))) continue;  // the same for the whole warp
    std::uint32_t const c = ci[k], own = c * 8 + ii;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t const slot = jc * 8 + jg + 4 * h;
      float dx = xi[k].x - xj[h].x, dy = xi[k].y - xj[h].y, dz = xi[k].z - xj[h].z;
      if (Wrap) {
        dx -= length.x * rintf(dx * inverse.x);
        dy -= length.y * rintf(dy * inverse.y);
        dz -= length.z * rintf(dz * inverse.z);
      }
      float const r2 = dx * dx + dy * dy + dz * dz;
      bool const pair = xi[k].w != 0.f && xj[h].w != 0.f && (jc != c || slot > own) && r2 < rc2;
      float const r2i = coalesce::fast_reciprocal(r2), s6 = r2i * r2i * r2i;
      float const fr = pair ? 24.f * s6 * (2.f * s6 - 1.f) * r2i : 0.f;
      fi[k][0] += fr * dx, fi[k][1] += fr * dy, fi[k][2] += fr * dz;
      v[3 * h + 0] -= fr * dx, v[3 * h + 1] -= fr * dy, v[3 * h + 2] -= fr * dz;
      hit = hit || pair;
    }
  }
  if (!__any_sync(0xffffffffu, hit)) return;
  add_reactions(v, ii, jc, jg, slot_forces);
}

template <unsigned S, bool Wrap>
__device__ __forceinline__ void super_row(std::uint32_t const (&ci)[S], std::uint32_t begin, std::uint32_t end,
                                          super_rows const rows, float4 const* xq, float* slot_forces,
                                          float4 const (&xi)[S], float3 length, float3 inverse, float rc2,
                                          float (&fi)[S][3]) {
  for (std::uint32_t e = begin; e < end; ++e) {
    stack_entry<S, Wrap>(ci, rows.entries[e], rows.masks[e], xq, slot_forces, xi, length, inverse, rc2, fi);
  }
}

// The same stack's entries merged in the kernel from its clusters' own rows (no list of its own):
// lane k < S walks cluster k's row; each step takes the least j cluster at the rows' heads (one
// warp reduction), its mask the lanes holding it (a ballot), and those lanes step on. Rows are in
// ascending j order but where the search wrapped a periodic face; any order is merged correctly
// (each entry taken once), a sorted one into the fewest entries.
template <unsigned S, bool Wrap>
__device__ __forceinline__ void merged_row(std::uint32_t const (&ci)[S], std::uint32_t pos, std::uint32_t end,
                                           std::uint32_t const* entries, float4 const* xq, float* slot_forces,
                                           float4 const (&xi)[S], float3 length, float3 inverse, float rc2,
                                           float (&fi)[S][3]) {
  constexpr std::uint32_t none = 0xffffffffu;
  std::uint32_t head = pos < end ? entries[pos] : none;
  for (;;) {
    std::uint32_t const jc = __reduce_min_sync(0xffffffffu, head);
    if (jc == none) break;
    std::uint32_t const mask = __ballot_sync(0xffffffffu, head == jc);
    if (head == jc) head = ++pos < end ? entries[pos] : none;  // read while the entry is evaluated
    stack_entry<S, Wrap>(ci, jc, mask, xq, slot_forces, xi, length, inverse, rc2, fi);
  }
}

// A warp per stack: its S clusters' i particles and force sums in registers, then the stack's
// entries from its own rows (Merged: merged_row, the list's rows merged in the kernel) or from
// `rows` (super_row), then each i cluster's sums over the warp's four j groups.
template <unsigned S, bool Merged>
__global__ void hand_stack_force(super_rows const rows, std::uint32_t clusters, std::uint32_t const* row_offsets,
                                 std::uint32_t const* entries, float4 const* xq, float* slot_forces, float3 length,
                                 float3 inverse, float rc2) {
  std::uint32_t const s = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (rows.stacks ? s >= rows.stacks : s * S >= clusters) return;  // whole warps
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8;
  float4 xi[S];
  float fi[S][3];
  std::uint32_t ci[S];
  float const rc = sqrtf(rc2) * 1.0001f;
  bool near = false;
#pragma unroll
  for (unsigned k = 0; k < S; ++k) {
    std::uint32_t const c = rows.members ? rows.members[s * S + k] : s * S + k;
    ci[k] = c;
    xi[k] = c < clusters ? xq[c * 8 + ii] : float4{0.f, 0.f, 0.f, 0.f};
    fi[k][0] = fi[k][1] = fi[k][2] = 0.f;
    near = near || (xi[k].w != 0.f && (xi[k].x < rc || xi[k].x > length.x - rc || xi[k].y < rc ||
                                       xi[k].y > length.y - rc || xi[k].z < rc || xi[k].z > length.z - rc));
  }
  bool const wrap = __any_sync(0xffffffffu, near);
  if constexpr (Merged) {
    std::uint32_t const mine = s * S + lane;
    std::uint32_t pos = 0, end = 0;
    if (lane < S && mine < clusters) pos = row_offsets[mine], end = row_offsets[mine + 1];
    if (wrap) {
      merged_row<S, true>(ci, pos, end, entries, xq, slot_forces, xi, length, inverse, rc2, fi);
    } else {
      merged_row<S, false>(ci, pos, end, entries, xq, slot_forces, xi, length, inverse, rc2, fi);
    }
  } else {
    if (wrap) {
      super_row<S, true>(ci, rows.offsets[s], rows.offsets[s + 1], rows, xq, slot_forces, xi, length, inverse, rc2, fi);
    } else {
      super_row<S, false>(ci, rows.offsets[s], rows.offsets[s + 1], rows, xq, slot_forces, xi, length, inverse, rc2,
                          fi);
    }
  }
#pragma unroll
  for (unsigned k = 0; k < S; ++k) {
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      fi[k][d] += __shfl_xor_sync(0xffffffffu, fi[k][d], 8);
      fi[k][d] += __shfl_xor_sync(0xffffffffu, fi[k][d], 16);
    }
    if (jg == 0 && xi[k].w != 0.f) {
      std::uint32_t const own = ci[k] * 8 + ii;
      atomicAdd(slot_forces + 4 * own + 0, fi[k][0]);
      atomicAdd(slot_forces + 4 * own + 1, fi[k][1]);
      atomicAdd(slot_forces + 4 * own + 2, fi[k][2]);
    }
  }
}

// GROMACS's register budget for the same work: hand_stack_force keeps its S clusters' positions and
// ids in registers (119 registers at S = 8: two blocks of 256 per SM, a quarter of the warps, and
// this loop waits on each entry's loads); here the positions sit in shared memory, read per masked
// cluster, and the diagonal pair rule finds which cluster of the group the entry's j cluster is
// (if any) with one ballot per entry. Only the i force sums stay in registers (3 S).
template <unsigned S, bool Wrap>
__device__ __forceinline__ void group_entry(float4 const* xs, std::uint32_t self, std::uint32_t jc, std::uint32_t mask,
                                            float4 const* xq, float* slot_forces, float3 length, float3 inverse,
                                            float rc2, float (&fi)[S][3]) {
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8;
  float4 xj[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) xj[h] = xq[jc * 8 + jg + 4 * h];
  float v[6] = {0, 0, 0, 0, 0, 0};
  bool hit = false;
#pragma unroll
  for (unsigned k = 0; k < S; ++k) {
    if (!(mask & (1u << k))) continue;  // the same for the whole warp
    float4 const xi = xs[k * 8 + ii];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float dx = xi.x - xj[h].x, dy = xi.y - xj[h].y, dz = xi.z - xj[h].z;
      if (Wrap) {
        dx -= length.x * rintf(dx * inverse.x);
        dy -= length.y * rintf(dy * inverse.y);
        dz -= length.z * rintf(dz * inverse.z);
      }
      float const r2 = dx * dx + dy * dy + dz * dz;
      bool const pair = xi.w != 0.f && xj[h].w != 0.f && (k != self || jg + 4 * h > ii) && r2 < rc2;
      float const r2i = coalesce::fast_reciprocal(r2), s6 = r2i * r2i * r2i;
      float const fr = pair ? 24.f * s6 * (2.f * s6 - 1.f) * r2i : 0.f;
      fi[k][0] += fr * dx, fi[k][1] += fr * dy, fi[k][2] += fr * dz;
      v[3 * h + 0] -= fr * dx, v[3 * h + 1] -= fr * dy, v[3 * h + 2] -= fr * dz;
      hit = hit || pair;
    }
  }
  if (!__any_sync(0xffffffffu, hit)) return;
  add_reactions(v, ii, jc, jg, slot_forces);
}

template <unsigned S, bool Wrap>
__device__ __forceinline__ void group_row(float4 const* xs, std::uint32_t my_cluster, std::uint32_t begin,
                                          std::uint32_t end, super_rows const rows, float4 const* xq,
                                          float* slot_forces, float3 length, float3 inverse, float rc2,
                                          float (&fi)[S][3]) {
  std::uint32_t const lane = threadIdx.x % 32;
  for (std::uint32_t e = begin; e < end; ++e) {
    std::uint32_t const jc = rows.entries[e], mask = rows.masks[e];
    unsigned const is_member = __ballot_sync(0xffffffffu, lane < S && my_cluster == jc);
    std::uint32_t const self = is_member ? __ffs(is_member) - 1 : S;
    group_entry<S, Wrap>(xs, self, jc, mask, xq, slot_forces, length, inverse, rc2, fi);
  }
}

// A warp per group of S clusters (rows.members, or S consecutive ones), its positions in shared memory.
template <unsigned S> __global__ void __launch_bounds__(256, 4)
    hand_group_force(super_rows const rows, std::uint32_t clusters, float4 const* xq, float* slot_forces, float3 length,
                     float3 inverse, float rc2) {
  __shared__ float4 staged[256 / 32][S * 8];
  std::uint32_t const s = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (s >= rows.stacks) return;  // whole warps
  std::uint32_t const lane = threadIdx.x % 32, ii = lane % 8, jg = lane / 8;
  float4* const xs = staged[threadIdx.x / 32];
  float const rc = sqrtf(rc2) * 1.0001f;
  bool near = false;
  for (unsigned k = lane / 8; k < S; k += 4) {  // lane: particle ii of clusters jg, jg + 4, ...
    std::uint32_t const c = rows.members ? rows.members[s * S + k] : s * S + k;
    float4 const x = c < clusters ? xq[c * 8 + ii] : float4{0.f, 0.f, 0.f, 0.f};
    xs[k * 8 + ii] = x;
    near = near || (x.w != 0.f && (x.x < rc || x.x > length.x - rc || x.y < rc || x.y > length.y - rc || x.z < rc ||
                                   x.z > length.z - rc));
  }
  std::uint32_t const my_cluster =
      lane < S ? (rows.members ? rows.members[s * S + lane] : s * S + lane) : no_cluster;  // for the diagonal
  __syncwarp();
  float fi[S][3];
#pragma unroll
  for (unsigned k = 0; k < S; ++k) fi[k][0] = fi[k][1] = fi[k][2] = 0.f;
  if (__any_sync(0xffffffffu, near)) {
    group_row<S, true>(xs, my_cluster, rows.offsets[s], rows.offsets[s + 1], rows, xq, slot_forces, length, inverse,
                       rc2, fi);
  } else {
    group_row<S, false>(xs, my_cluster, rows.offsets[s], rows.offsets[s + 1], rows, xq, slot_forces, length, inverse,
                        rc2, fi);
  }
#pragma unroll
  for (unsigned k = 0; k < S; ++k) {
#pragma unroll
    for (int d = 0; d < 3; ++d) {
      fi[k][d] += __shfl_xor_sync(0xffffffffu, fi[k][d], 8);
      fi[k][d] += __shfl_xor_sync(0xffffffffu, fi[k][d], 16);
    }
    std::uint32_t const c = __shfl_sync(0xffffffffu, my_cluster, k);
    if (jg == 0 && c < clusters && xs[k * 8 + ii].w != 0.f) {
      std::uint32_t const own = c * 8 + ii;
      atomicAdd(slot_forces + 4 * own + 0, fi[k][0]);
      atomicAdd(slot_forces + 4 * own + 1, fi[k][1]);
      atomicAdd(slot_forces + 4 * own + 2, fi[k][2]);
    }
  }
}

template <unsigned S, class Atom, class Layout>
void hand_group_step(coalesce::device_vector<Atom, Layout>& d,
                     coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, super_rows const& rows, float4* xq,
                     float* slot_forces, float length, float rc2) {
  stage_cluster_slots(d, list, xq, slot_forces, length);
  float const inv = 1.f / length;
  unsigned const block = 256, blocks = static_cast<unsigned>((rows.stacks * 32 + block - 1) / block);
  hand_group_force<S><<<blocks, block>>>(rows, static_cast<std::uint32_t>(list.clusters), xq, slot_forces,
                                         float3{length, length, length}, float3{inv, inv, inv}, rc2);
  store_cluster_forces(d, list, slot_forces);
}

// The step of hand_cluster_pair_step with the super-cluster kernel (the same staging and store);
// rows.stacks == 0: the stacks merged in the kernel from the list's own rows (hand_merged_stack_force).
template <unsigned S, class Atom, class Layout>
void hand_super_cluster_step(coalesce::device_vector<Atom, Layout>& d,
                             coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list, super_rows const& rows,
                             float4* xq, float* slot_forces, float length, float rc2) {
  stage_cluster_slots(d, list, xq, slot_forces, length);
  float const inv = 1.f / length;
  std::size_t const stacks = rows.stacks ? rows.stacks : (list.clusters + S - 1) / S;
  unsigned const block = 256, blocks = static_cast<unsigned>((stacks * 32 + block - 1) / block);
  auto const clusters = static_cast<std::uint32_t>(list.clusters);
  float3 const l3{length, length, length}, i3{inv, inv, inv};
  if (rows.stacks == 0) {
    hand_stack_force<S, true>
        <<<blocks, block>>>(rows, clusters, list.row_offsets, list.entries, xq, slot_forces, l3, i3, rc2);
  } else {
    hand_stack_force<S, false>
        <<<blocks, block>>>(rows, clusters, list.row_offsets, list.entries, xq, slot_forces, l3, i3, rc2);
  }
  store_cluster_forces(d, list, slot_forces);
}

}  // namespace bench_engine
