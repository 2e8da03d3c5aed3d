// The cluster format's warp-tiled traversal (coalesce/neighbors/cluster_tile.hpp) on the GPU: the
// same neighbours in the same order as the per-thread traversal on the GPU, for every way a kernel can call
// it (whole warps, lanes that skip the call, warps whose lanes span clusters, blocks larger than
// the tile covers, the two sides of a branch that both call it), float and double positions; count(i)
// and neighbor(i, k) in a kernel agree with it; its shared-memory accesses free of bank conflicts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/analysis/analysis.hpp>
#include <coalesce/coalesce.hpp>

namespace {

struct fvec3 {
  float x, y, z;
};
struct dvec3 {
  double x, y, z;
};
template <class Vec> struct Atom {
  Vec pos;
  float mass;
};
using FloatAtom = Atom<fvec3>;
using DoubleAtom = Atom<dvec3>;

template <class A> std::vector<A> liquid(std::size_t n, double side, unsigned seed) {
  using real = decltype(A{}.pos.x);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<real> u(real(0), static_cast<real>(side));
  std::vector<A> out(n);
  for (auto& a : out) {
    a.pos.x = u(rng);
    a.pos.y = u(rng);
    a.pos.z = u(rng);
    a.mass = 1.0f;
  }
  return out;
}

// Per particle: how many neighbours, and an order-sensitive digest of them.
struct row_digest {
  std::uint32_t count = 0;
  std::uint64_t digest = 0;
  bool operator==(row_digest const&) const = default;
};
COALESCE_HOST_DEVICE inline void add(row_digest& d, std::uint32_t j) {
  ++d.count;
  d.digest = d.digest * 1000003u + j + 1u;
}

enum class shape { whole_warps, some_lanes_skip, lanes_span_clusters, blocks_of_1024, two_branches };

template <class List> __global__ void __launch_bounds__(1024)
    rows_kernel(List nl, std::size_t n, shape how, row_digest* out) {
  std::size_t t = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n) return;
  std::size_t i = t;
  if (how == shape::lanes_span_clusters) i = (t * 7919) % n;  // n is not a multiple of 7919
  if (how == shape::some_lanes_skip && t % 3 == 1) return;    // these lanes never call it
  row_digest d;
  if (how == shape::two_branches && (t * 2654435761u) % 5 < 2) {
    // Both sides of a branch traverse: two groups of one warp's lanes, which independent thread
    // scheduling may interleave (a shared tile per warp would be taken by both).
    for (int spin = 0; spin < static_cast<int>(t % 3); ++spin) __nanosleep(32);
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { add(d, j); });
  } else {
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { add(d, j); });
  }
  out[i] = d;
}

template <class List> std::vector<row_digest> gpu_rows(List const& nl, std::size_t n, shape how) {
  coalesce::device_array<row_digest> rows{std::vector<row_digest>(n)};
  unsigned const threads = how == shape::blocks_of_1024 ? 1024 : 256;
  rows_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads>>>(nl, n, how, rows.data());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return rows.to_host();
}

template <class A> void check_every_shape(double side, bool periodic) {
  std::size_t const n = 20011;  // not a multiple of 32: the last cluster is partial
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side, side, side}};
  coalesce::device_vector<A> atoms(liquid<A>(n, side, 7));
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(atoms, coalesce::hilbert_keys(atoms, &A::pos, b, plan), plan);
  std::array<bool, 3> const axes{periodic, periodic, periodic};
  for (bool half : {false, true}) {
    CAPTURE(half);
    coalesce::verlet_list<coalesce::clusters> list({.cutoff = 1.2, .skin = 0.3, .half = half});
    list.build(atoms, &A::pos, b, axes);
    // The reference: the per-thread traversal on the GPU (the same rounding as the tile's; the
    // host's products are not fused), which a warp whose lanes span clusters takes.
    auto const expected = gpu_rows(list.view(), n, shape::lanes_span_clusters);
    std::size_t pairs = 0;
    for (auto const& r : expected) pairs += r.count;
    CHECK(pairs == list.entries());
    CHECK(pairs > n);  // the check has pairs to compare
    for (shape how : {shape::whole_warps, shape::some_lanes_skip, shape::lanes_span_clusters, shape::blocks_of_1024,
                      shape::two_branches}) {
      CAPTURE(static_cast<int>(how));
      auto const got = gpu_rows(list.view(), n, how);
      std::size_t differing = 0;
      for (std::size_t i = 0; i < n; ++i) {
        bool const called = how != shape::some_lanes_skip || i % 3 != 1;
        differing += called ? got[i] != expected[i] : got[i] != row_digest{};
      }
      CHECK(differing == 0);
    }
  }
}

}  // namespace

TEST_CASE("the warp-tiled cluster traversal visits the per-thread traversal's neighbours in its order") {
  // Periodic with room for one image choice per cluster, periodic in a box so small that each test
  // picks its own image (reach = 0.375 of the box), and open.
  SUBCASE("float, periodic") { check_every_shape<FloatAtom>(28.0, true); }
  SUBCASE("float, small periodic box") { check_every_shape<FloatAtom>(4.0, true); }
  SUBCASE("float, open") { check_every_shape<FloatAtom>(28.0, false); }
  SUBCASE("double, periodic") { check_every_shape<DoubleAtom>(28.0, true); }
}

TEST_CASE("the cluster tile is written and read without bank conflicts") {
  namespace ca = coalesce::analysis;
  using coalesce::detail::cluster_tile_offset;
  for (unsigned warp : {0u, 5u, 31u}) {
    std::vector<std::uint64_t> write(32), read(32);
    for (unsigned lane = 0; lane < 32; ++lane) {
      write[lane] = cluster_tile_offset<float>(warp, lane);  // lane k stores candidate k
      read[lane] = cluster_tile_offset<float>(warp, 9);      // every lane reads candidate 9
    }
    auto const stored = ca::bank_conflicts(write, 16);
    CHECK(stored.wavefronts == stored.ideal_wavefronts);  // 512 consecutive bytes
    CHECK(stored.degree == 1);
    auto const broadcast = ca::bank_conflicts(read, 16);
    CHECK(broadcast.wavefronts == 1);
  }
  // double positions (rare on the GPU): 32-byte points
  std::vector<std::uint64_t> low(32);
  for (unsigned lane = 0; lane < 32; ++lane) low[lane] = cluster_tile_offset<double>(3, lane);
  CHECK(ca::bank_conflicts(low, 16).degree == 2);  // 32-byte points: the stores are two-way; reads broadcast
  CHECK(coalesce::detail::cluster_tile_warps<float> == 13);
  CHECK(coalesce::detail::cluster_tile_warps<double> == 8);  // for_each_index's 256-thread blocks
  // The bodies read indices: lanes at different candidates of one chunk, no conflict.
  std::vector<std::uint64_t> indices(32);
  for (unsigned lane = 0; lane < 32; ++lane)
    indices[lane] = coalesce::detail::cluster_tile_index_offset<float>(7, 32 + (lane * 5) % 32);
  CHECK(ca::bank_conflicts(indices, 4).degree == 1);
}
