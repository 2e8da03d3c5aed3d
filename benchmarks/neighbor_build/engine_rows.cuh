// The pair engine's rows of neighbor_build (main.cu): coalesce::compute_pairs with a Lennard-Jones
// evaluator over padded_columns (full list, the naive format) and over cluster_pairs (half and full,
// particles sorted by the list's own keys first; the half list also through a hand-written
// cluster-pair kernel, hand_cluster_pairs.cuh, the engine loop's baseline; and with its forces
// summed as 64-bit fixed point), each timed as the library's user runs it (checks,
// zeroing, the loop, one wait), its forces held against a double-precision sum over a host cell
// list for a sample of particles. main.cu prints them beside the hand-written pipeline of the same
// run: build (sort + list) and force ratios, the step at a rebuild every 10 steps, bytes of list.
#pragma once
#include <coalesce/coalesce.hpp>

#include "hand_cluster_pairs.cuh"
#include "hand_super_clusters.cuh"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace bench_engine {

// The pair law as a user writes it once. The reciprocal is coalesce::fast_reciprocal's (one
// MUFU.RCP on the GPU): IEEE division adds a branch around its slow path to every pair.
struct lennard_jones {
  struct param_type {
    float epsilon, sigma2;
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const r2i = coalesce::fast_reciprocal(r2);
    float const s2 = q.sigma2 * r2i, s6 = s2 * s2 * s2;
    return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) * r2i, 4.f * q.epsilon * s6 * (s6 - 1.f)};
  }
};
// The same law, declared cheap and defined up to the cutoff: the cluster-pair loop evaluates it for
// every pair slot without a branch (pair_law.hpp, branch_free_law).
struct lennard_jones_branch_free : lennard_jones {
  static constexpr bool branch_free = true;
};

struct row {
  std::string name;
  double sort_ms = 0;    // the particles into the list's order (cluster_pairs: its keys and sort_by_key)
  double build_ms = 0;   // verlet_list::build
  double force_ms = 0;   // compute_pairs, forces only
  double sums_ms = 0;    // compute_pairs with energy and virial
  double bytes = 0;      // verlet_list::bytes
  double evaluated = 0;  // pairs the loop evaluates per particle (cluster_pairs: candidates)
  double error = 0;      // largest per-component force error against double precision, sampled
};

// Forces in double over every pair within the cutoff, for `sample` (indices into pos), through a
// host cell list: independent of every list the benchmark builds.
inline std::vector<std::array<double, 3>> reference_forces(std::vector<std::array<float, 3>> const& pos, float length,
                                                           float cutoff, std::vector<std::size_t> const& sample) {
  int const cells = std::max(3, static_cast<int>(length / cutoff));
  auto cell_of = [&](float x) {
    int c = static_cast<int>(x / length * cells);
    c %= cells;
    return c < 0 ? c + cells : c;
  };
  std::vector<std::vector<std::size_t>> members(static_cast<std::size_t>(cells) * cells * cells);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    members[(static_cast<std::size_t>(cell_of(pos[i][2])) * cells + cell_of(pos[i][1])) * cells + cell_of(pos[i][0])]
        .push_back(i);
  }
  double const rc2 = double(cutoff) * cutoff;
  std::vector<std::array<double, 3>> out;
  for (std::size_t i : sample) {
    double f[3] = {0, 0, 0};
    int const c[3] = {cell_of(pos[i][0]), cell_of(pos[i][1]), cell_of(pos[i][2])};
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int const x = (c[0] + dx + cells) % cells, y = (c[1] + dy + cells) % cells, z = (c[2] + dz + cells) % cells;
          for (std::size_t j : members[(static_cast<std::size_t>(z) * cells + y) * cells + x]) {
            if (j == i) continue;
            double d[3];
            for (int a = 0; a < 3; ++a) {
              d[a] = double(pos[i][a]) - pos[j][a];
              d[a] -= length * std::nearbyint(d[a] / length);
            }
            double const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if (r2 >= rc2) continue;
            double const r2i = 1 / r2, r6i = r2i * r2i * r2i, s = 48 * r6i * (r6i - 0.5) * r2i;
            for (int a = 0; a < 3; ++a) f[a] += s * d[a];
          }
        }
    out.push_back({f[0], f[1], f[2]});
  }
  return out;
}

template <class Atom, class Layout, class Median>
std::vector<row> run_engine_rows(coalesce::device_vector<Atom, Layout>& d, coalesce::box const& domain, float length,
                                 float cutoff, float skin, Median&& median_ms) {
  coalesce::pair_table<lennard_jones::param_type> table(1);
  table.set(0, 0, {1.f, 1.f}, cutoff);
  std::size_t const n = d.size();
  std::vector<std::size_t> sample;
  for (std::size_t s = 0; s < 4096 && s < n; ++s) sample.push_back((s * 2654435761u) % n);
  auto const error_of = [&](auto const& particles) {  // d, or the same particles in another layout
    std::vector<Atom> host(n);
    particles.copy_to(std::span<Atom>(host));
    std::vector<std::array<float, 3>> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[i] = {host[i].pos.x, host[i].pos.y, host[i].pos.z};
    auto const ref = reference_forces(pos, length, cutoff, sample);
    double worst = 0;
    for (std::size_t s = 0; s < sample.size(); ++s) {
      auto const& f = host[sample[s]].force;
      double const got[3] = {f.x, f.y, f.z};
      for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(got[a] - ref[s][a]));
    }
    return worst;
  };
  auto const error_now = [&] { return error_of(d); };
  std::vector<row> rows;
  auto measure = [&](auto& list, char const* name, double sort_ms, auto law) {
    row r;
    r.name = name;
    r.sort_ms = sort_ms;
    r.build_ms = median_ms([&] { list.build(d, &Atom::pos, domain); });
    auto const view = list.view(d);
    r.force_ms =
        median_ms([&] { (void)coalesce::compute_pairs<&Atom::pos, &Atom::force>(d, view, domain, law, table); });
    r.error = error_now();
    r.sums_ms = median_ms([&] {
      (void)coalesce::compute_pairs<&Atom::pos, &Atom::force>(d, view, domain, law, table,
                                                              {.energy = true, .virial = true});
    });
    r.bytes = static_cast<double>(list.bytes());
    if constexpr (coalesce::detail::list_format_ops<
                      typename std::remove_cvref_t<decltype(list)>::format_type>::tests_candidates) {
      r.evaluated = static_cast<double>(list.candidates()) / static_cast<double>(n);
    } else {
      r.evaluated = static_cast<double>(list.entries()) / static_cast<double>(n);
    }
    rows.push_back(r);
  };
  coalesce::verlet_list<coalesce::padded_columns> padded({.cutoff = cutoff, .skin = skin});
  measure(padded, "engine padded_columns (full)", 0.0, lennard_jones{});
  // The cluster order: the list's own keys, then its builds sort nothing.
  coalesce::verlet_list<coalesce::cluster_pairs> half({.cutoff = cutoff, .skin = skin, .half = true});
  coalesce::verlet_list<coalesce::cluster_pairs> full({.cutoff = cutoff, .skin = skin});
  coalesce::reorder_plan plan;
  double const sort_ms =
      median_ms([&] { coalesce::sort_by_key(d, half.cell_keys(d, &Atom::pos, domain, plan), plan); });
  measure(half, "engine cluster_pairs (half), branch-free law", sort_ms, lennard_jones_branch_free{});
  measure(half, "engine cluster_pairs (half)", sort_ms, lennard_jones{});
  {  // the same list through a hand-written kernel for this one law (hand_cluster_pairs.cuh)
    row r = rows.back();
    r.name = "hand-written cluster-pair kernel (half)";
    r.sums_ms = 0;  // forces only
    auto const view = half.view(d);
    float4* xq = nullptr;
    float* slot_forces = nullptr;
    cudaMalloc(&xq, view.clusters * 8 * sizeof(float4));
    cudaMalloc(&slot_forces, view.clusters * 8 * sizeof(float4));
    r.force_ms = median_ms([&] { hand_cluster_pair_step(d, view, xq, slot_forces, length, cutoff * cutoff); });
    r.error = error_now();
    rows.push_back(r);
    // The experiment of hand_super_clusters.cuh: stacks of 4 and 8 clusters sharing their rows.
    auto const stacks = [&](auto size) {
      constexpr unsigned S = decltype(size)::value;
      super_rows super = make_super_rows<S>(view);
      row q = r;
      char name[96];
      std::snprintf(name, sizeof name, "hand-written stacks of %u clusters (%.2f bits/entry)", S, super.bits_per_entry);
      q.name = name;
      q.force_ms =
          median_ms([&] { hand_super_cluster_step<S>(d, view, super, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      free_super_rows(super);
      return q;
    };
    rows.push_back(stacks(std::integral_constant<unsigned, 4>{}));
    rows.push_back(stacks(std::integral_constant<unsigned, 8>{}));
    {  // GROMACS's shape: 8 clusters of a cell twice their spacing (2 x 2 x 2), not 8 along a column
      super_rows super = make_super_rows<8>(view, compact_members<8>(view, xq, length));
      row q = r;
      char name[96];
      std::snprintf(name, sizeof name, "hand-written super-clusters 2x2x2 (%.2f bits/entry)", super.bits_per_entry);
      q.name = name;
      q.force_ms =
          median_ms([&] { hand_super_cluster_step<8>(d, view, super, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      rows.push_back(q);
      q.name = std::string(name) + ", positions in shared memory";
      q.force_ms = median_ms([&] { hand_group_step<8>(d, view, super, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      rows.push_back(q);
      free_super_rows(super);
      super = make_super_rows<4>(view, compact_members<4>(view, xq, length));
      std::snprintf(name, sizeof name, "hand-written groups of 4 nearby (%.2f bits/entry), shared memory",
                    super.bits_per_entry);
      q.name = name;
      q.force_ms = median_ms([&] { hand_group_step<4>(d, view, super, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      rows.push_back(q);
      free_super_rows(super);
    }
    // The same stacks merged in the kernel from the list's own rows (no list of their own).
    auto const merged = [&](auto size) {
      constexpr unsigned S = decltype(size)::value;
      row q = r;
      q.name = "hand-written stacks of " + std::to_string(S) + ", merged in the kernel";
      super_rows const none{};
      q.force_ms =
          median_ms([&] { hand_super_cluster_step<S>(d, view, none, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      return q;
    };
    rows.push_back(merged(std::integral_constant<unsigned, 4>{}));
    rows.push_back(merged(std::integral_constant<unsigned, 8>{}));
    {  // the pruning experiment: the rows kept to entries with a pair within the cutoff + 0.1
      pruned_rows pruned = prune_rows(view, xq, length, cutoff + 0.1f);
      row q = r;
      char name[96];
      std::snprintf(name, sizeof name, "hand-written, rows pruned at rc + 0.1 (%.1f of %.1f entries)",
                    pruned.entries_per_cluster, pruned.outer_per_cluster);
      q.name = name;
      q.force_ms = median_ms([&] { hand_cluster_pair_step(d, pruned.view, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      rows.push_back(q);
      super_rows super = make_super_rows<8>(pruned.view);
      std::snprintf(name, sizeof name, "hand-written stacks of 8, pruned (%.2f bits/entry)", super.bits_per_entry);
      q.name = name;
      q.force_ms = median_ms(
          [&] { hand_super_cluster_step<8>(d, pruned.view, super, xq, slot_forces, length, cutoff * cutoff); });
      q.error = error_now();
      rows.push_back(q);
      free_super_rows(super);
      cudaFree(pruned.offsets), cudaFree(pruned.entries);
    }
    cudaFree(xq);
    cudaFree(slot_forces);
  }
  measure(full, "engine cluster_pairs (full)", sort_ms, lennard_jones{});
  {  // The half list's forces summed as 64-bit fixed point (deterministic: the same bits run to run),
     // the same particles in the same order; its ratio against the float half row is the price.
    using fixed_layout =
        coalesce::stored_as<Layout, coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;
    std::vector<Atom> host(n);
    d.copy_to(std::span<Atom>(host));
    coalesce::device_vector<Atom, fixed_layout> e(host);
    half.build(e, &Atom::pos, domain);
    auto const view = half.view(e);
    auto const forces_once = [&] {
      (void)coalesce::compute_pairs<&Atom::pos, &Atom::force>(e, view, domain, lennard_jones{}, table);
      std::vector<Atom> got(n);
      e.copy_to(std::span<Atom>(got));
      std::vector<float> f(3 * n);
      for (std::size_t i = 0; i < n; ++i)
        f[3 * i] = got[i].force.x, f[3 * i + 1] = got[i].force.y, f[3 * i + 2] = got[i].force.z;
      return f;
    };
    std::vector<float> const first = forces_once();
    row r;  // the float half row's list and build
    for (auto const& q : rows) {
      if (q.name == "engine cluster_pairs (half)") r = q;
    }
    r.name = forces_once() == first ? "engine cluster_pairs (half), int64 forces"
                                    : "engine cluster_pairs (half), int64 forces NOT REPEATABLE";
    r.force_ms = median_ms(
        [&] { (void)coalesce::compute_pairs<&Atom::pos, &Atom::force>(e, view, domain, lennard_jones{}, table); });
    r.sums_ms = 0;
    r.error = error_of(e);  // the timed passes' forces: the same bits as the first
    rows.push_back(r);
  }
  return rows;
}

}  // namespace bench_engine
