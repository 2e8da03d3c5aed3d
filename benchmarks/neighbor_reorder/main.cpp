// neighbor_reorder: what sorting particles along space does for a neighbour-list pair kernel,
// and what it costs.
//
//   neighbor_reorder [--n N] [--runs R] [--bench | --layouts] [--json FILE]
//
// Particles (vec3 pos, vec3 vel, float mass, uint32 id: 8 columns) sit in a periodic box in
// random storage order. A cell list and a column-major neighbour list (32 slots, cutoff 1) are
// built on the device, and a Lennard-Jones-like pair kernel sums forces over the list. Then,
// for cell, Morton and Hilbert keys: keys + sort_by_key + remap, and the same kernel again.
// Printed: kernel time before/after, the reorder cost in pair-kernel units and in units of a
// device copy of the particle data, after how many steps a reorder pays for itself. Forces are
// checked bit-identical per particle after mapping back by id: remap keeps each row's entries
// in their order, so every particle sums the same terms in the same order.
//
// --bench (GPU) adds baselines in the same run: a device-to-device copy of the particle bytes
// (the ceiling), bare CUB SortPairs over the same bit range + one hand-written fused gather,
// and column-by-column thrust::gather; with --bench the sizes are 4M and 16M particles.
//
// --layouts runs the pair kernel on soa, aos, aosoa<32> and split layouts with packed positions
// against a hand-written kernel on float4 positions, before and after a Hilbert reorder.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "common/bench_timer.hpp"
#include "pair_force.hpp"

#if COALESCE_WITH_CUDA
#include <cub/device/device_radix_sort.cuh>
#include <thrust/execution_policy.h>
#include <thrust/gather.h>
#endif

using namespace neighbor_reorder;

namespace {

constexpr std::size_t max_neighbors = 32;
constexpr float cutoff = 1.0f;
constexpr double density = 5.0;  // particles per unit volume: ~21 neighbours within the cutoff

struct options {
  std::size_t n = coalesce::device_is_gpu ? (std::size_t{4} << 20) : 200000;
  int runs = coalesce::device_is_gpu ? 15 : 5;
  bool bench = false;
  bool layouts = false;
  std::string json;
};

// Median milliseconds of `runs` calls of work(), each after an untimed setup().
template <class Setup, class Work> double timed(int runs, Setup&& setup, Work&& work) {
  std::vector<double> ms;
  for (int r = -1; r < runs; ++r) {  // r = -1: warm-up
    setup();
    coalesce::synchronize(coalesce::device{});
    double const t = bench::median_ms([&] { work(); }, 1, 0);
    if (r >= 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Index arrays (neighbour slots, counts) in device memory.
using index_array = coalesce::device_array<std::uint32_t>;

struct world {
  std::size_t n;
  float box;
  coalesce::device_vector<Particle> particles;
  index_array neighbors;  // column-major: entry k of particle i at k * n + i
  index_array counts;
};

std::uint32_t* raw(index_array& v) { return v.data(); }

// Cell list (cell keys sorted without moving the particles) -> neighbour list, on the device.
void build_neighbors(world& w) {
  coalesce::reorder_plan plan;
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {w.box, w.box, w.box}};
  auto const keys = coalesce::cell_keys(w.particles, &Particle::pos, box, cutoff, plan);
  coalesce::sort_keys(keys, plan);
  std::uint32_t const* start = coalesce::cell_offsets(plan, keys).data();
  std::uint32_t const* order = plan.permutation().data();
  auto const g = keys.grid;
  if (g[0] < 3) {
    std::fprintf(stderr, "neighbor_reorder: need at least 3 cells per axis (n >= %d)\n",
                 static_cast<int>(27 * density) + 1);
    std::exit(2);
  }
  auto const v = w.particles.const_view();
  std::uint32_t* nbr = raw(w.neighbors);
  std::uint32_t* count = raw(w.counts);
  std::size_t const n = w.n;
  float const L = w.box;
  double const per_length = g[0] / static_cast<double>(L);
  coalesce::for_each_index(coalesce::device{}, n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
    vec3 const p = v[i][&Particle::pos];
    int c[3];
    float const xs[3] = {p.x, p.y, p.z};
    for (int a = 0; a < 3; ++a) {  // the same arithmetic as cell_keys
      double t = xs[a];
      t -= ::floor(t / L) * L;
      double const cell = t * per_length;
      c[a] = cell >= g[a] ? static_cast<int>(g[a]) - 1 : static_cast<int>(cell);
    }
    std::uint32_t found = 0;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int const x = (c[0] + dx + static_cast<int>(g[0])) % static_cast<int>(g[0]);
          int const y = (c[1] + dy + static_cast<int>(g[1])) % static_cast<int>(g[1]);
          int const z = (c[2] + dz + static_cast<int>(g[2])) % static_cast<int>(g[2]);
          std::size_t const cell = (static_cast<std::size_t>(z) * g[1] + y) * g[0] + x;
          for (std::uint32_t s = start[cell]; s < start[cell + 1]; ++s) {
            std::uint32_t const j = order[s];
            if (j == i) continue;
            vec3 const q = v[j][&Particle::pos];
            float const ddx = wrap(p.x - q.x, L), ddy = wrap(p.y - q.y, L), ddz = wrap(p.z - q.z, L);
            if (ddx * ddx + ddy * ddy + ddz * ddz < cutoff * cutoff && found < max_neighbors) {
              nbr[found * n + i] = j;
              ++found;
            }
          }
        }
    count[i] = found;
  });
  coalesce::synchronize(coalesce::device{});
}

// Lennard-Jones-like force over the neighbour list; one thread per particle. The same source
// for the particles in any layout.
template <class Particles>
void pair_kernel_on(Particles const& particles, world& w, coalesce::device_vector<vec3>& force) {
  auto const v = particles.const_view();
  auto f = force.view();
  std::uint32_t const* nbr = raw(w.neighbors);
  std::uint32_t const* count = raw(w.counts);
  std::size_t const n = w.n;
  float const L = w.box;
  coalesce::for_each_index(coalesce::device{}, n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
    f[i] = pair_force(v, nbr, count, n, L, i);  // pair_force.hpp: the body the advisor counts too
  });
}
void pair_kernel(world& w, coalesce::device_vector<vec3>& force) { pair_kernel_on(w.particles, w, force); }

// What MD codes write by hand: positions as float4 (x, y, z and the mass in w), one 16-byte load
// per neighbour. The same arithmetic in the same order as pair_kernel_on: bit-identical forces.
struct alignas(16) float4_t {
  float x, y, z, w;
};
void pair_kernel_float4(float4_t const* pos, world& w, coalesce::device_vector<vec3>& force) {
  auto f = force.view();
  std::uint32_t const* nbr = raw(w.neighbors);
  std::uint32_t const* count = raw(w.counts);
  std::size_t const n = w.n;
  float const L = w.box;
  coalesce::for_each_index(coalesce::device{}, n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
    float4_t const p = pos[i];
    float fx = 0, fy = 0, fz = 0;
    std::uint32_t const m = count[i];
    for (std::uint32_t k = 0; k < m; ++k) {
      std::uint32_t const j = nbr[k * n + i];
      float4_t const q = pos[j];
      float const dx = wrap(p.x - q.x, L), dy = wrap(p.y - q.y, L), dz = wrap(p.z - q.z, L);
      float const scale = pair_scale(dx, dy, dz, q.w);
      fx += scale * dx;
      fy += scale * dy;
      fz += scale * dz;
    }
    f[i] = vec3{fx, fy, fz};
  });
}

std::vector<Particle> make_particles(std::size_t n, float box) {
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> u(0.0f, box);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {g(rng), g(rng), g(rng)}, 1.0f, static_cast<std::uint32_t>(i)};
  return out;  // generated independently: storage order is random with respect to space
}

struct result {
  std::string ordering;
  double keys_ms, sort_ms, remap_ms, total_ms, pair_after_ms;
  bool identical;
  double locality_after;
};

struct size_report {
  std::size_t n;
  double pair_before_ms, copy_ms, locality_before;
  std::vector<result> orders;
  // --bench (GPU)
  double cub_sort_ms = -1, raw_gather_ms = -1, column_gather_ms = -1, library_sort_by_key_ms = -1,
         library_permute_ms = -1;
};

template <class Vec> std::vector<vec3> forces_by_id(Vec const& force, world const& w) {
  std::vector<vec3> f(w.n), out(w.n);
  force.copy_to(f);
  std::vector<Particle> ps(w.n);
  w.particles.copy_to(ps);
  for (std::size_t i = 0; i < w.n; ++i) out[ps[i].id] = f[i];
  return out;
}

bool same_forces(std::vector<vec3> const& a, std::vector<vec3> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(vec3)) == 0;
}

#if COALESCE_WITH_CUDA
// The hand-written equivalent of the fused permutation: 8 raw SoA columns, one kernel.
void raw_gather(std::uint32_t const* perm, std::size_t n, std::array<float const*, 8> const& src,
                std::array<float*, 8> const& dst) {
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
    std::uint32_t const p = perm[i];
#pragma unroll
    for (int c = 0; c < 8; ++c) dst[c][i] = src[c][p];
  });
}
#endif

size_report run_size(std::size_t n, options const& opt) {
  size_report rep{};
  rep.n = n;
  float const box = static_cast<float>(std::cbrt(static_cast<double>(n) / density));
  auto const records = make_particles(n, box);
  world w{n, box, coalesce::device_vector<Particle>(records), index_array(n * max_neighbors), index_array(n)};
  build_neighbors(w);
  coalesce::device_vector<vec3> force(n);
  coalesce::device_neighbor_list<std::uint32_t> list{raw(w.neighbors), n, max_neighbors,
                                                     coalesce::neighbor_order::column_major, raw(w.counts)};
  coalesce::reorder_plan plan;
  rep.locality_before = coalesce::neighbor_locality(list, plan);
  rep.pair_before_ms = bench::median_ms([&] { pair_kernel(w, force); }, opt.runs, 2);
  auto const reference = forces_by_id(force, w);

  // The ceiling: a device copy of the particle data.
  coalesce::device_vector<Particle> backup = w.particles;
  index_array neighbors_backup = w.neighbors, counts_backup = w.counts;
  std::size_t const particle_bytes = n * sizeof(Particle);
  rep.copy_ms = bench::median_ms(
      [&] {
        coalesce::detail::copy_bytes(coalesce::detail::memory_kind::device, w.particles.storage().base(),
                                     coalesce::detail::memory_kind::device, backup.storage().base(), particle_bytes);
      },
      opt.runs, 2);

  auto const restore = [&] {
    w.particles = backup;
    w.neighbors = neighbors_backup;
    w.counts = counts_backup;
    list.indices = raw(w.neighbors);
    list.counts = raw(w.counts);
  };
  coalesce::box const space{.lo = {0, 0, 0}, .hi = {box, box, box}};
  for (int order = 0; order < 3; ++order) {
    result r{};
    r.ordering = order == 0 ? "cell" : order == 1 ? "morton" : "hilbert";
    auto const keys = [&] {
      if (order == 0) return coalesce::cell_keys(w.particles, &Particle::pos, space, cutoff, plan);
      if (order == 1) return coalesce::morton_keys(w.particles, &Particle::pos, space, plan);
      return coalesce::hilbert_keys(w.particles, &Particle::pos, space, plan);
    };
    coalesce::key_array<std::uint32_t, coalesce::device> k;
    r.keys_ms = timed(opt.runs, restore, [&] { k = keys(); });
    r.sort_ms = timed(
        opt.runs,
        [&] {
          restore();
          k = keys();
        },
        [&] { coalesce::sort_by_key(w.particles, k, plan); });
    r.remap_ms = timed(
        opt.runs,
        [&] {
          restore();
          k = keys();
          coalesce::sort_by_key(w.particles, k, plan);
        },
        [&] { coalesce::remap(list, plan); });
    r.total_ms = timed(opt.runs, restore, [&] {
      k = keys();
      coalesce::sort_by_key(w.particles, k, plan);
      coalesce::remap(list, plan);
    });
    // The state now: reordered once from the random order, list remapped.
    r.pair_after_ms = bench::median_ms([&] { pair_kernel(w, force); }, opt.runs, 2);
    r.identical = same_forces(forces_by_id(force, w), reference);
    r.locality_after = coalesce::neighbor_locality(list, plan);
    rep.orders.push_back(r);
  }

#if COALESCE_WITH_CUDA
  if (opt.bench) {
    // Baselines on the Hilbert keys of the random-order particles, same bit range.
    restore();
    auto const k = coalesce::hilbert_keys(w.particles, &Particle::pos, space, plan);
    index_array keys_in(n), keys_out(n), vals_in(n), vals_out(n);
    coalesce::detail::copy_bytes(coalesce::detail::memory_kind::device, raw(keys_in),
                                 coalesce::detail::memory_kind::device, k.data, n * 4);
    std::uint32_t* vin = raw(vals_in);
    coalesce::for_each_index(coalesce::device{}, n,
                             [=] __device__(std::size_t i) { vin[i] = static_cast<std::uint32_t>(i); });
    std::size_t temp_bytes = 0;
    auto const count = static_cast<std::uint32_t>(n);
    bench::check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, raw(keys_in), raw(keys_out), raw(vals_in),
                                                      raw(vals_out), count, k.begin_bit, k.end_bit),
                      "SortPairs");
    void* temp = nullptr;
    bench::check_cuda(cudaMalloc(&temp, temp_bytes), "cudaMalloc");
    rep.cub_sort_ms = bench::median_ms(
        [&] {
          bench::check_cuda(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, raw(keys_in), raw(keys_out), raw(vals_in),
                                                            raw(vals_out), count, k.begin_bit, k.end_bit),
                            "SortPairs");
        },
        opt.runs, 2);
    std::uint32_t const* perm = raw(vals_out);
    coalesce::device_vector<Particle> target(n);
    std::array<float const*, 8> src{};
    std::array<float*, 8> dst{};
    for (int c = 0; c < 8; ++c) {
      src[c] = reinterpret_cast<float const*>(backup.storage().blobs[c]);
      dst[c] = reinterpret_cast<float*>(target.storage().blobs[c]);
    }
    rep.raw_gather_ms = bench::median_ms([&] { raw_gather(perm, n, src, dst); }, opt.runs, 2);
    rep.column_gather_ms = bench::median_ms(
        [&] {
          for (int c = 0; c < 8; ++c) thrust::gather(thrust::device, perm, perm + n, src[c], dst[c]);
        },
        opt.runs, 2);
    // The library on the same keys: sort_by_key (sort + fused permutation), and the permutation alone.
    coalesce::key_array<std::uint32_t, coalesce::device> fresh;
    rep.library_sort_by_key_ms = timed(
        opt.runs,
        [&] {
          restore();
          fresh = coalesce::hilbert_keys(w.particles, &Particle::pos, space, plan);
        },
        [&] { coalesce::sort_by_key(w.particles, fresh, plan); });
    rep.library_permute_ms = timed(opt.runs, restore, [&] { coalesce::apply(plan, w.particles); });
    bench::check_cuda(cudaFree(temp), "cudaFree");
  }
#endif
  return rep;
}

void print(size_report const& r, bool bench_mode) {
  std::printf("\n%zu particles (8 columns, %zu bytes each), %s\n", r.n, sizeof(Particle), bench::device_name());
  std::printf("  pair kernel, random order: %.3f ms;  device copy of the particle data: %.3f ms;  mean |i-j| %.0f\n",
              r.pair_before_ms, r.copy_ms, r.locality_before);
  std::printf("  %-8s %9s %9s %9s %9s %9s %9s %9s %9s %8s %s\n", "order", "keys ms", "sort ms", "remap ms", "reorder",
              "pair ms", "speedup", "cost/pair", "cost/copy", "pays off", "forces");
  for (auto const& o : r.orders) {
    double const gain = r.pair_before_ms - o.pair_after_ms;
    std::printf("  %-8s %9.3f %9.3f %9.3f %9.3f %9.3f %8.1fx %9.2f %9.2f %8s %s\n", o.ordering.c_str(), o.keys_ms,
                o.sort_ms, o.remap_ms, o.total_ms, o.pair_after_ms, r.pair_before_ms / o.pair_after_ms,
                o.total_ms / r.pair_before_ms, o.total_ms / r.copy_ms,
                gain > 0 ? std::to_string(static_cast<long>(std::ceil(o.total_ms / gain))).c_str() : "never",
                o.identical ? "identical" : "DIFFERENT");
  }
  auto const best = std::min_element(r.orders.begin(), r.orders.end(),
                                     [](auto const& a, auto const& b) { return a.pair_after_ms < b.pair_after_ms; });
  std::printf("  best ordering for the pair kernel: %s\n", best->ordering.c_str());
  if (bench_mode && r.cub_sort_ms >= 0) {
    double const bare = r.cub_sort_ms + r.raw_gather_ms;
    std::printf("  bench: bare CUB SortPairs %.3f ms + hand-written fused gather %.3f ms = %.3f ms\n", r.cub_sort_ms,
                r.raw_gather_ms, bare);
    std::printf("         sort_by_key %.3f ms -> %.2fx of bare (target <= 1.2);  with keys + remap (hilbert) %.2fx\n",
                r.library_sort_by_key_ms, r.library_sort_by_key_ms / bare, r.orders[2].total_ms / bare);
    std::printf(
        "         fused permutation %.3f ms vs column-by-column thrust::gather %.3f ms (%.2fx faster), vs "
        "hand-written %.2fx;  copy ceiling %.3f ms (permutation = %.2f copies)\n",
        r.library_permute_ms, r.column_gather_ms, r.column_gather_ms / r.library_permute_ms,
        r.library_permute_ms / r.raw_gather_ms, r.copy_ms, r.library_permute_ms / r.copy_ms);
  }
}

void write_json(std::string const& file, std::vector<size_report> const& reports) {
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", file.c_str());
    std::exit(1);
  }
  std::fprintf(f, "{\n  \"device\": \"%s\",\n  \"sizes\": [\n", bench::device_name());
  for (std::size_t s = 0; s < reports.size(); ++s) {
    auto const& r = reports[s];
    std::fprintf(f,
                 "    {\"n\": %zu, \"pair_before_ms\": %.6f, \"copy_ms\": %.6f, \"locality_before\": %.3f, "
                 "\"cub_sort_ms\": %.6f, \"raw_gather_ms\": %.6f, \"column_gather_ms\": %.6f, "
                 "\"library_sort_by_key_ms\": %.6f, \"library_permute_ms\": %.6f, \"orders\": [\n",
                 r.n, r.pair_before_ms, r.copy_ms, r.locality_before, r.cub_sort_ms, r.raw_gather_ms,
                 r.column_gather_ms, r.library_sort_by_key_ms, r.library_permute_ms);
    for (std::size_t o = 0; o < r.orders.size(); ++o) {
      auto const& x = r.orders[o];
      std::fprintf(f,
                   "      {\"ordering\": \"%s\", \"keys_ms\": %.6f, \"sort_by_key_ms\": %.6f, \"remap_ms\": %.6f, "
                   "\"reorder_ms\": %.6f, \"pair_after_ms\": %.6f, \"speedup\": %.4f, \"cost_in_pair_kernels\": %.4f, "
                   "\"cost_in_copies\": %.4f, \"locality_after\": %.3f, \"forces_identical\": %s}%s\n",
                   x.ordering.c_str(), x.keys_ms, x.sort_ms, x.remap_ms, x.total_ms, x.pair_after_ms,
                   r.pair_before_ms / x.pair_after_ms, x.total_ms / r.pair_before_ms, x.total_ms / r.copy_ms,
                   x.locality_after, x.identical ? "true" : "false", o + 1 < r.orders.size() ? "," : "");
    }
    std::fprintf(f, "    ]}%s\n", s + 1 < reports.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

// --layouts: the pair kernel on every layout against the hand-written float4 kernel in the same
// run, in random order and after a Hilbert reorder (the float4 array permuted by the same plan).
using split_pos = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
using split_pos_mass = coalesce::split<coalesce::fields<&Particle::pos, &Particle::mass>, coalesce::aos, coalesce::soa>;

struct layout_row {
  std::string phase, layout;
  double ms, ratio;
  bool identical;
};

std::vector<vec3> download(coalesce::device_vector<vec3> const& force) {
  std::vector<vec3> out(force.size());
  force.copy_to(out);
  return out;
}
std::vector<layout_row> layout_bench(std::size_t n, options const& opt) {
  float const box = static_cast<float>(std::cbrt(static_cast<double>(n) / density));
  auto const records = make_particles(n, box);
  world w{n, box, coalesce::device_vector<Particle>(records), index_array(n * max_neighbors), index_array(n)};
  build_neighbors(w);
  std::vector<float4_t> host4(n);
  for (std::size_t i = 0; i < n; ++i)
    host4[i] = {records[i].pos.x, records[i].pos.y, records[i].pos.z, records[i].mass};
  coalesce::device_array<float4_t> pos4(host4);
  coalesce::device_vector<vec3> force(n);
  std::vector<layout_row> rows;
  for (std::string const phase : {"random order", "hilbert order"}) {
    pair_kernel(w, force);
    auto const want = download(force);
    double const base = bench::median_ms([&] { pair_kernel_float4(pos4.data(), w, force); }, opt.runs);
    rows.push_back({phase, "hand-written float4", base, 1.0, same_forces(download(force), want)});
    auto time_layout = [&]<class L>(char const* name, L) {
      coalesce::device_vector<Particle, L> p = w.particles;
      double const ms = bench::median_ms([&] { pair_kernel_on(p, w, force); }, opt.runs);
      rows.push_back({phase, name, ms, ms / base, same_forces(download(force), want)});
    };
    time_layout("soa", coalesce::soa{});
    time_layout("aos", coalesce::aos{});
    time_layout("aosoa<32>", coalesce::aosoa<32>{});
    time_layout("split<fields<pos>, aos, soa>", split_pos{});
    time_layout("split<fields<pos, mass>, aos, soa>", split_pos_mass{});
    double const again = bench::median_ms([&] { pair_kernel_float4(pos4.data(), w, force); }, opt.runs);
    rows.push_back({phase, "hand-written float4 (again)", again, again / base, same_forces(download(force), want)});
    if (phase == "random order") {
      coalesce::reorder_plan plan;
      coalesce::box const space{.lo = {0, 0, 0}, .hi = {box, box, box}};
      coalesce::sort_by_key(w.particles, coalesce::hilbert_keys(w.particles, &Particle::pos, space, plan), plan);
      coalesce::remap(coalesce::device_neighbor_list<std::uint32_t>{.indices = raw(w.neighbors),
                                                                    .particles = n,
                                                                    .max_neighbors = max_neighbors,
                                                                    .order = coalesce::neighbor_order::column_major,
                                                                    .counts = raw(w.counts)},
                      plan);
      coalesce::apply(plan, pos4);  // the hand-written code's positions, reordered by the same plan
    }
  }
  std::printf(
      "\npair kernel by layout, %zu particles, %zu slots (column-major), medians of %d runs; ratio = time / "
      "hand-written float4 of the same phase\n",
      n, max_neighbors, opt.runs);
  std::printf("%-14s %-36s %10s %8s %s\n", "phase", "layout", "ms", "ratio", "forces");
  for (auto const& r : rows) {
    std::printf("%-14s %-36s %10.4f %8.3f %s\n", r.phase.c_str(), r.layout.c_str(), r.ms, r.ratio,
                r.identical ? "identical" : "DIFFERENT");
  }
  return rows;
}

void write_layout_json(std::string const& path, std::size_t n, std::vector<layout_row> const& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "{\n  \"device\": \"%s\",\n  \"particles\": %zu,\n  \"rows\": [\n", bench::device_name(), n);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto const& r = rows[i];
    std::fprintf(
        f,
        "    {\"phase\": \"%s\", \"layout\": \"%s\", \"ms\": %.6f, \"ratio_to_float4\": %.4f, \"identical\": %s}%s\n",
        r.phase.c_str(), r.layout.c_str(), r.ms, r.ratio, r.identical ? "true" : "false",
        i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  bool n_given = false;
  for (int a = 1; a < argc; ++a) {
    std::string const arg = argv[a];
    if (arg == "--n" && a + 1 < argc) {
      opt.n = std::strtoull(argv[++a], nullptr, 10);
      n_given = true;
    } else if (arg == "--runs" && a + 1 < argc) {
      opt.runs = std::max(1, std::atoi(argv[++a]));
    } else if (arg == "--json" && a + 1 < argc) {
      opt.json = argv[++a];
    } else if (arg == "--bench") {
      opt.bench = true;
    } else if (arg == "--layouts") {
      opt.layouts = true;
    } else {
      std::fprintf(stderr, "usage: %s [--n N] [--runs R] [--bench | --layouts] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  if (bench::gpu_missing()) return bench::skipped;
  if (opt.layouts) {
    auto const rows = layout_bench(opt.n, opt);
    if (!opt.json.empty()) write_layout_json(opt.json, opt.n, rows);
    bool const identical = std::all_of(rows.begin(), rows.end(), [](layout_row const& r) { return r.identical; });
    std::printf("forces on every layout: %s\n", identical ? "bit-identical to soa" : "DIFFERENT");
    return identical ? 0 : 1;
  }
  std::vector<std::size_t> sizes = {opt.n};
  if (opt.bench && coalesce::device_is_gpu && !n_given) sizes = {std::size_t{4} << 20, std::size_t{16} << 20};
  std::printf("neighbor_reorder: %d runs per figure (medians), timing with %s\n", opt.runs,
              coalesce::device_is_gpu ? "CUDA events" : "std::chrono");
  std::vector<size_report> reports;
  bool ok = true;
  for (std::size_t n : sizes) {
    reports.push_back(run_size(n, opt));
    print(reports.back(), opt.bench);
    for (auto const& o : reports.back().orders) ok = ok && o.identical;
  }
  if (!opt.json.empty()) write_json(opt.json, reports);
  std::printf(
      "\nforces after every reordering: %s (compared per particle id, bit for bit: remap keeps each row's "
      "order, so the sums are the same)\n",
      ok ? "identical" : "DIFFERENT");
  return ok ? 0 : 1;
}
