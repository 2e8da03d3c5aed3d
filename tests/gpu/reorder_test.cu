// Reorder on the GPU (CUB path): large sizes, 32- and 64-bit keys, every layout, and the GPU
// results equal to the host path's (keys bit for bit, orders element for element).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

namespace {

std::vector<Particle> random_particles(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 16.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {u(rng), u(rng), u(rng)}, u(rng), static_cast<std::uint32_t>(i)};
  return out;
}

using coalesce_test::records_of;

template <class U> std::vector<U> download(std::span<U const> s) {
  std::vector<U> out(s.size());
  coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, out.data(), coalesce::detail::memory_kind::device,
                               s.data(), s.size() * sizeof(U));
  return out;
}

template <class Key, class V, class P>
coalesce::key_array<Key, typename V::space_type> keys_of(int curve, V const& v, P& plan) {
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {16, 16, 16}};
  if (curve == 0) return coalesce::cell_keys<Key>(v, &Particle::pos, box, 0.25, plan);
  if (curve == 1) return coalesce::morton_keys<Key>(v, &Particle::pos, box, plan);
  return coalesce::hilbert_keys<Key>(v, &Particle::pos, box, plan);
}

}  // namespace

#define GPU_LAYOUTS COALESCE_ALL_LAYOUTS, coalesce::aosoa<32>

TEST_CASE_TEMPLATE("GPU sort_by_key equals the host path: keys, permutation and records", Layout, GPU_LAYOUTS) {
  for (std::size_t n : {1u, 33u, 100003u, 1000003u}) {  // the host reference is sequential in a CUDA build
    auto const records = random_particles(n, static_cast<unsigned>(n));
    for (int curve = 0; curve < 3; ++curve) {
      for (bool wide : {false, true}) {
        coalesce::device_vector<Particle, Layout> d(records);
        coalesce::host_vector<Particle, Layout> h(records);
        coalesce::reorder_plan gpu_plan, cpu_plan;
        std::vector<Particle> got(n), want(n);
        std::vector<std::uint32_t> gpu_perm, cpu_perm;
        if (wide) {
          auto const dk = keys_of<std::uint64_t>(curve, d, gpu_plan);
          auto const hk = keys_of<std::uint64_t>(curve, h, cpu_plan);
          CHECK(download(std::span<std::uint64_t const>(dk.data, n)) ==
                std::vector<std::uint64_t>(hk.data, hk.data + n));
          coalesce::sort_by_key(d, dk, gpu_plan);
          coalesce::sort_by_key(h, hk, cpu_plan);
        } else {
          auto const dk = keys_of<std::uint32_t>(curve, d, gpu_plan);
          auto const hk = keys_of<std::uint32_t>(curve, h, cpu_plan);
          CHECK(download(std::span<std::uint32_t const>(dk.data, n)) ==
                std::vector<std::uint32_t>(hk.data, hk.data + n));
          coalesce::sort_by_key(d, dk, gpu_plan);
          coalesce::sort_by_key(h, hk, cpu_plan);
        }
        INFO("n = " << n << ", curve = " << curve << ", 64-bit = " << wide);
        CHECK(download(gpu_plan.permutation()) ==
              std::vector<std::uint32_t>(cpu_plan.permutation().begin(), cpu_plan.permutation().end()));
        d.copy_to(got);
        h.copy_to(want);
        std::size_t mismatches = 0;
        for (std::size_t i = 0; i < n; ++i) mismatches += !same_bytes(got[i], want[i]);
        CHECK(mismatches == 0);
      }
    }
  }
}

// Columns larger than half of L2 are gathered over several launches, as many columns per launch as
// fill half of L2 (reorder_cuda.cu): a re-sort of nearly sorted particles, local shuffles plus long
// jumps, moves every element of every column once, on every layout.
TEST_CASE_TEMPLATE("GPU sort_by_key past L2: near and far sources, every column moved once", Layout, GPU_LAYOUTS) {
  std::size_t const n = std::size_t{1} << 24;  // 64 MB per 4-byte column: one column per far launch
  std::vector<std::uint32_t> key(n);
  std::iota(key.begin(), key.end(), 0u);
  std::mt19937 rng(7);
  for (std::size_t w = 0; w + 64 <= n; w += 64) std::shuffle(key.begin() + w, key.begin() + w + 64, rng);
  std::uniform_int_distribution<std::size_t> any(0, n - 1);
  for (std::size_t k = 0; k < n / 50; ++k) std::swap(key[any(rng)], key[any(rng)]);  // 4 % far
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto const f = static_cast<float>(i);
    records[i] = {{f, f + 0.25f, f + 0.5f}, {-f, -f - 0.25f, -f - 0.5f}, f * 2, static_cast<std::uint32_t>(i)};
  }
  coalesce::device_vector<Particle, Layout> d(records);
  std::uint32_t* keys = nullptr;
  REQUIRE(cudaMalloc(&keys, n * 4) == cudaSuccess);
  REQUIRE(cudaMemcpy(keys, key.data(), n * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(d, coalesce::key_array<std::uint32_t, coalesce::device>{.data = keys, .size = n, .end_bit = 24},
                        plan);
  cudaFree(keys);
  std::vector<Particle> got(n);
  d.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) mismatches += got[key[i]].id != i || !same_bytes(got[key[i]], records[i]);
  CHECK(mismatches == 0);
}

TEST_CASE("GPU steady state: no allocation, kernels keep working through remapped neighbour lists") {
  std::size_t const n = 1 << 20, max = 8;
  auto const records = random_particles(n, 5);
  coalesce::device_vector<Particle> d(records);
  std::vector<std::uint32_t> nbr(n * max), counts(n, max);
  std::mt19937 rng(9);
  for (auto& j : nbr) j = std::uniform_int_distribution<std::uint32_t>(0, n - 1)(rng);
  coalesce::detail::buffer d_nbr(coalesce::detail::memory_kind::device, nbr.size() * 4);
  coalesce::detail::copy_bytes(coalesce::detail::memory_kind::device, d_nbr.data(), coalesce::detail::memory_kind::host,
                               nbr.data(), nbr.size() * 4);
  coalesce::device_neighbor_list<std::uint32_t> list{reinterpret_cast<std::uint32_t*>(d_nbr.data()), n, max,
                                                     coalesce::neighbor_order::column_major, nullptr};
  // A kernel that sums neighbour ids for each particle, before and after the reorder.
  coalesce::detail::buffer sums(coalesce::detail::memory_kind::device, n * 8);
  auto run = [&] {
    auto v = d.const_view();
    auto* out = reinterpret_cast<std::uint64_t*>(sums.data());
    auto const* idx = list.indices;
    coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
      std::uint64_t s = 0;
      for (std::size_t k = 0; k < max; ++k) s += v[idx[k * n + i]][&Particle::id];
      out[i] = s + (std::uint64_t{v[i][&Particle::id]} << 40);
    });
    std::vector<std::uint64_t> host(n);
    coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, host.data(),
                                 coalesce::detail::memory_kind::device, sums.data(), n * 8);
    std::sort(host.begin(), host.end());
    return host;
  };
  auto const before = run();
  coalesce::reorder_plan plan;
  double const locality_before = coalesce::neighbor_locality(list, plan);
  std::size_t allocations = 0;
  for (int step = 0; step < 4; ++step) {
    auto const keys = coalesce::hilbert_keys(d, &Particle::pos, coalesce::box{.hi = {16, 16, 16}}, plan);
    coalesce::sort_by_key(d, keys, plan);
    coalesce::remap(list, plan);
    if (step == 1) allocations = plan.allocations();
  }
  CHECK(plan.allocations() == allocations);
  CHECK(run() == before);  // same per-particle results, in another order
  // Random neighbours stay random after a reorder: the measure is computed, and comparable.
  CHECK(coalesce::neighbor_locality(list, plan) > 0.1 * locality_before);
}

TEST_CASE("GPU errors name the element and change nothing") {
  auto records = random_particles(1000, 3);
  records[777].pos.x = -1.0f;
  coalesce::device_vector<Particle, coalesce::aosoa<32>> d(records);
  coalesce::reorder_plan plan;
  coalesce::box box{.hi = {16, 16, 16}, .edges = coalesce::boundary::open};
  CHECK_THROWS_WITH_AS((void)coalesce::morton_keys(d, &Particle::pos, box, plan),
                       doctest::Contains("element 777 has position (-1"), coalesce::error);
  std::vector<Particle> got(1000);
  d.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < 1000; ++i) mismatches += !same_bytes(got[i], records[i]);
  CHECK(mismatches == 0);
}

TEST_CASE("GPU: a list or span that names the wrong memory space is an error, not a crash or a silent result") {
  std::size_t const n = 64, max = 4;
  auto const records = random_particles(n, 11);
  coalesce::device_vector<Particle> d(records);
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(d, coalesce::hilbert_keys(d, &Particle::pos, coalesce::box{.hi = {16, 16, 16}}, plan), plan);
  std::vector<std::uint32_t> host_nbr(n * max, 1);
  coalesce::detail::buffer gpu_nbr(coalesce::detail::memory_kind::device, n * max * 4);
  auto* gpu = reinterpret_cast<std::uint32_t*>(gpu_nbr.data());
  // Host memory declared as device memory, and GPU memory declared as host memory (the default).
  CHECK_THROWS_WITH_AS(
      coalesce::remap(
          coalesce::device_neighbor_list<std::uint32_t>{host_nbr.data(), n, max, coalesce::neighbor_order::row_major},
          plan),
      doctest::Contains("points to host memory"), coalesce::error);
  CHECK_THROWS_WITH_AS(
      coalesce::remap(coalesce::neighbor_list<std::uint32_t>{gpu, n, max, coalesce::neighbor_order::row_major}, plan),
      doctest::Contains("points to GPU memory"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::remap(coalesce::host_span<std::uint32_t>{gpu, n}, plan),
                       doctest::Contains("points to GPU memory"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::apply(plan, coalesce::device_span<std::uint32_t>{host_nbr.data(), n}),
                       doctest::Contains("points to host memory"), coalesce::error);
  CHECK(host_nbr == std::vector<std::uint32_t>(n * max, 1));  // nothing was touched
}
