// Kernels on views of every layout, on the GPU: same source, bit-identical results.
#include <array>
#include <vector>

#include <doctest/doctest.h>
#include <vector_types.h>
#include <thrust/count.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>

#include <algorithm>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

#define GPU_LAYOUTS COALESCE_ALL_LAYOUTS, coalesce::aosoa<32>

template <class Space, class View> void integrate(View v, float dt) {
  coalesce::for_each_index(Space{}, v.size(), [=] __host__ __device__(std::size_t i) {
    auto [pos, vel, mass, id] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
    y += vy * dt;
    z += vz * dt;
    mass *= 0.5f;
    v[i][&Particle::id] += 1u;
  });
}

TEST_CASE_TEMPLATE("the same kernel source gives the same particles on every layout", Layout, GPU_LAYOUTS) {
  for (std::size_t n : {1u, 31u, 33u, 1000007u}) {
    std::vector<Particle> records(n);
    for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
    coalesce::host_vector<Particle, Layout> h(records);
    integrate<coalesce::host>(h.view(), 0.25f);  // reference result: the same loop on the host
    coalesce::device_vector<Particle, Layout> d(records);
    integrate<coalesce::device>(d.view(), 0.25f);
    coalesce::synchronize(coalesce::device{});
    std::vector<Particle> want(n), got(n);
    h.copy_to(want);
    d.copy_to(got);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) mismatches += !same_bytes(want[i], got[i]);
    INFO("n = " << n);
    CHECK(mismatches == 0);
  }
}

// The loop over a view, kernels taking coalesce::element_index (blocked on the CPU; one thread
// per element here): the host's blocked loop and the GPU give the same particles.
template <class Space, class View> void integrate_over_view(View v, float dt) {
  coalesce::for_each_index(Space{}, v, [=] __host__ __device__(coalesce::element_index i) {
    auto [pos, vel, mass, id] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
    mass *= 0.5f;
    id += static_cast<unsigned>(i % 7);
  });
}

// A view passed to a __global__ kernel by value: the device reads the bytes the host wrote as the
// same members (a [[no_unique_address]] member once moved size() on the device: every kernel read
// 0). Its size and the address of the last element's members, as the device sees them.
template <class View> __global__ void view_as_seen_on_device(View v, std::size_t* size, void const** last) {
  *size = v.size();
  auto const e = v[v.size() - 1];
  last[0] = &static_cast<float const&>(e[&Particle::mass]);
  last[1] = &static_cast<std::uint32_t const&>(e[&Particle::id]);
}

TEST_CASE_TEMPLATE("a view passed by value to a kernel is the view the host made", Layout, GPU_LAYOUTS) {
  std::size_t const n = 1001;
  coalesce::device_vector<Particle, Layout> d(n);
  auto const v = d.view();
  std::size_t* size = nullptr;
  void const** last = nullptr;
  REQUIRE(cudaMallocManaged(&size, sizeof(std::size_t)) == cudaSuccess);
  REQUIRE(cudaMallocManaged(&last, 2 * sizeof(void*)) == cudaSuccess);
  view_as_seen_on_device<<<1, 1>>>(v, size, last);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(*size == n);
  auto const e = v[n - 1];
  CHECK(last[0] == &static_cast<float const&>(e[&Particle::mass]));
  CHECK(last[1] == &static_cast<std::uint32_t const&>(e[&Particle::id]));
  cudaFree(size);
  cudaFree(last);
}

TEST_CASE_TEMPLATE("for_each_index over a view gives the host's blocked loop's particles", Layout, GPU_LAYOUTS) {
  for (std::size_t n : {0u, 1u, 31u, 33u, 100003u}) {
    std::vector<Particle> records(n);
    for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
    coalesce::host_vector<Particle, Layout> h(records);
    integrate_over_view<coalesce::host>(h.view(), 0.25f);
    coalesce::device_vector<Particle, Layout> d(records);
    integrate_over_view<coalesce::device>(d.view(), 0.25f);
    coalesce::synchronize(coalesce::device{});
    std::vector<Particle> want(n), got(n);
    h.copy_to(want);
    d.copy_to(got);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) {
      mismatches += !same_bytes(want[i], got[i]) || got[i].id != records[i].id + static_cast<unsigned>(i % 7);
    }
    INFO("n = " << n);
    CHECK(mismatches == 0);
  }
}

TEST_CASE_TEMPLATE("whole-record loads and stores in a kernel", Layout, GPU_LAYOUTS) {
  std::size_t const n = 4099;
  std::vector<Mixed> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_mixed(i);
  coalesce::device_vector<Mixed, Layout> src(records);
  coalesce::device_vector<Mixed, Layout> dst(n);
  auto s = src.const_view();
  auto d = dst.view();
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
    Mixed m = s[n - 1 - i];
    d[i] = m;
  });
  std::vector<Mixed> got(n);
  dst.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) mismatches += !same_bytes(got[i], records[n - 1 - i]);
  CHECK(mismatches == 0);
}

struct cuda_types {
  float3 pos;
  double2 span;
  int4 cell;
};

TEST_CASE("CUDA's float3, double2 and int4 flatten like user structs") {
  static_assert(coalesce::reflect::leaf_count_v<cuda_types> == 3 + 2 + 4);
  CHECK(coalesce::reflect::leaf_t<cuda_types, 3>::offset == offsetof(cuda_types, span));
  std::vector<cuda_types> records(100);
  for (int i = 0; i < 100; ++i)
    records[i] = {make_float3(i, -i, 2 * i), make_double2(0.5 * i, i), make_int4(i, i, -i, 7)};
  coalesce::device_vector<cuda_types> d(records);
  coalesce::device_vector<cuda_types, coalesce::aosoa<16>> b = d;
  std::vector<cuda_types> back(100);
  b.copy_to(back);
  CHECK(std::memcmp(back.data(), records.data(), sizeof(cuda_types) * 100) == 0);
}

TEST_CASE_TEMPLATE("columns in kernels", Layout, GPU_LAYOUTS) {
  std::size_t const n = 777;
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
  coalesce::device_vector<Particle, Layout> d(records);
  auto xs = d.view().column(&Particle::pos, &vec3::x);
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) { xs[i] = 2.0f * xs[i]; });
  std::vector<Particle> got(n);
  d.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Particle want = records[i];
    want.pos.x *= 2.0f;
    mismatches += !same_bytes(got[i], want);
  }
  CHECK(mismatches == 0);
}

TEST_CASE("allocation failures throw coalesce::error saying how much was asked") {
  CHECK_THROWS_WITH_AS(coalesce::device_vector<Particle>(std::size_t{1} << 45), doctest::Contains("GPU memory"),
                       coalesce::error);
  coalesce::device_vector<Particle> still_usable(10);  // the failed allocation left no sticky error
  CHECK(still_usable.size() == 10);
}

TEST_CASE("copying some columns into aos records leaves the other members untouched") {
  std::size_t const n = 1000;
  std::vector<Particle> old_records(n), new_records(n);
  for (std::size_t i = 0; i < n; ++i) {
    old_records[i] = make_particle(i);
    new_records[i] = make_particle(i + 5000);
  }
  coalesce::device_vector<Particle, coalesce::aos> dst(old_records);
  coalesce::device_vector<Particle> src(new_records);
  std::vector<coalesce::detail::column_copy> pos_only;
  for (std::size_t leaf = 0; leaf < 3; ++leaf)
    pos_only.push_back({dst.storage().column(leaf, 0), src.storage().column(leaf, 0), 4});
  coalesce::detail::copy_columns(coalesce::detail::memory_kind::device, pos_only.data(), pos_only.size(), n);
  std::vector<Particle> got(n);
  dst.copy_to(got);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Particle want = old_records[i];
    want.pos = new_records[i].pos;
    mismatches += !same_bytes(got[i], want);
  }
  CHECK(mismatches == 0);
}

TEST_CASE("view iterators work with Thrust algorithms on the device") {
  std::size_t const n = 10000;
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
  coalesce::device_vector<Particle> d(records);
  auto v = d.view();
  auto const heavy = thrust::count_if(thrust::device, v.begin(), v.end(),
                                      [] __device__(Particle const& p) { return p.mass > 500.0f; });
  std::size_t expected = 0;
  for (auto const& p : records) expected += p.mass > 500.0f;
  CHECK(static_cast<std::size_t>(heavy) == expected);
  thrust::for_each(thrust::device, v.begin(), v.end(), [] __device__(auto r) { r[&Particle::mass] = 2.0f; });
  std::vector<Particle> got(n);
  d.copy_to(got);
  CHECK(std::all_of(got.begin(), got.end(), [](Particle const& p) { return p.mass == 2.0f; }));
}

TEST_CASE("GPU: an error that coalesce reported is cleared, so it does not resurface at the next check") {
  std::uint32_t host_words[4] = {1, 2, 3, 4};
  // A copy to an address that is not GPU memory fails with a non-sticky error.
  CHECK_THROWS_AS(coalesce::detail::copy_bytes(coalesce::detail::memory_kind::device, reinterpret_cast<void*>(0x10),
                                               coalesce::detail::memory_kind::host, host_words, sizeof host_words),
                  coalesce::error);
  CHECK(cudaGetLastError() == cudaSuccess);
  coalesce::synchronize(coalesce::device{});  // and the next synchronising call sees nothing
}

namespace {
// A record with long std::array members: its sub-columns move between aos records and columns
// as 2-D blocks (a tiled transpose), the rest as ordinary columns.
struct histogram_like {
  std::uint32_t id;
  std::array<int, 100> counts;  // 100 sub-columns: a block of more than 32
  double weight;
  std::array<float, 40> bins;
};
}  // namespace

TEST_CASE("records with long std::array members convert between every layout on the GPU, bit for bit") {
  std::size_t const n = 1037;  // not a multiple of the 32-element tile
  std::vector<histogram_like> records(n);
  for (std::size_t i = 0; i < n; ++i) {
    records[i].id = static_cast<std::uint32_t>(i);
    for (std::size_t k = 0; k < records[i].counts.size(); ++k) records[i].counts[k] = static_cast<int>(i * 131 + k);
    records[i].weight = 0.5 * static_cast<double>(i);
    for (std::size_t k = 0; k < records[i].bins.size(); ++k)
      records[i].bins[k] = static_cast<float>(i) - static_cast<float>(k) * 0.25f;
  }
  auto same = [&](std::vector<histogram_like> const& got) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      wrong += got[i].id != records[i].id || got[i].counts != records[i].counts || got[i].weight != records[i].weight ||
               got[i].bins != records[i].bins;
    }
    return wrong;
  };
  using split_id =
      coalesce::split<coalesce::fields<&histogram_like::id, &histogram_like::weight>, coalesce::aos, coalesce::soa>;
  coalesce::device_vector<histogram_like, coalesce::aos> aos(records), aos_back(n);
  coalesce::device_vector<histogram_like, coalesce::soa> soa(n);
  coalesce::device_vector<histogram_like, split_id> split(n);
  coalesce::device_vector<histogram_like, coalesce::aosoa<8>> blocked(n);
  soa = aos;    // aos -> soa: the arrays transposed
  split = soa;  // soa -> split
  blocked = split;
  aos_back = soa;  // soa -> aos: transposed back
  std::vector<histogram_like> got(n);
  auto const wrong_in = [&](auto const& v) {  // records that differ after a copy to the host
    v.copy_to(got);
    return same(got);
  };
  CHECK(wrong_in(aos_back) == 0);
  aos_back = split;
  CHECK(wrong_in(aos_back) == 0);
  aos_back = blocked;
  CHECK(wrong_in(aos_back) == 0);
  CHECK(wrong_in(soa) == 0);  // device soa -> host records (staged through device aos)
  // The runs between column layouts (one 2-D launch per array) and from aos into blocks (the tile
  // with a blocked side): soa -> aosoa<32>, aosoa<32> -> soa of another capacity, aos -> aosoa<8>.
  coalesce::device_vector<histogram_like, coalesce::aosoa<32>> wide_blocks(n);
  coalesce::device_vector<histogram_like, coalesce::soa> roomy;
  roomy.reserve(n + 300);  // sub-columns at another pitch: not one blob copy
  wide_blocks = soa;
  roomy = wide_blocks;
  CHECK(wrong_in(roomy) == 0);
  blocked = aos;
  aos_back = wide_blocks;
  CHECK(wrong_in(aos_back) == 0);
  soa = blocked;
  CHECK(wrong_in(soa) == 0);
  roomy.resize(0);
  roomy.resize(n);  // zeros, the capacity kept; then soa -> soa at another pitch
  CHECK(roomy.capacity() == n + 300);
  roomy = soa;
  CHECK(wrong_in(roomy) == 0);
}

namespace {
// Records of 64 bytes and more are read from aos through the shared-memory tile (smaller ones one
// record per thread): every size of that path, bit for bit, at counts that leave a partial tile.
struct quad {
  float x, y, z, w;
};
struct record_64 {
  std::array<float, 4> a;
  quad b, c, d;
};
struct record_80 {
  std::array<double, 2> e;
  std::array<std::int32_t, 8> f;
  std::array<float, 8> g;
};
struct record_128 {
  std::array<float, 30> h;
  std::uint32_t id, flags;
};
template <class R> R make_record(std::size_t i) {
  R r;
  auto* words = reinterpret_cast<std::uint32_t*>(&r);
  for (std::size_t w = 0; w < sizeof(R) / 4; ++w) words[w] = static_cast<std::uint32_t>(i * 977 + w * 131 + 1);
  return r;
}
template <class R> void aos_round_trip(std::size_t n) {
  std::vector<R> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_record<R>(i);
  coalesce::device_vector<R, coalesce::aos> aos(records), back(n);
  coalesce::device_vector<R, coalesce::soa> soa(n);
  coalesce::device_vector<R, coalesce::aosoa<16>> blocks(n);
  soa = aos;
  blocks = aos;
  back = soa;
  std::vector<R> got(n);
  back.copy_to(got);
  CHECK(std::memcmp(got.data(), records.data(), n * sizeof(R)) == 0);
  back = blocks;
  back.copy_to(got);
  CHECK(std::memcmp(got.data(), records.data(), n * sizeof(R)) == 0);
}
}  // namespace

TEST_CASE("records of 64 to 128 bytes convert from aos through the tile, bit for bit") {
  static_assert(sizeof(record_64) == 64 && sizeof(record_80) == 80 && sizeof(record_128) == 128);
  for (std::size_t n : {1u, 255u, 1037u, 70001u}) {
    INFO("n = " << n);
    aos_round_trip<record_64>(n);
    aos_round_trip<record_80>(n);
    aos_round_trip<record_128>(n);
  }
}

template <class Space, class View> void run_time_index_step(View v, std::size_t n) {
  coalesce::for_each_index(Space{}, n, [=] __host__ __device__(std::size_t i) {
    for (int k = 0; k < 3; ++k) v[i][&Particle::pos][k] += v[i][&Particle::vel][k] * static_cast<float>(k + 1);
  });
}

TEST_CASE_TEMPLATE("run-time member indexing in a kernel: v[i][&Particle::pos][d]", Layout, GPU_LAYOUTS) {
  std::size_t const n = 100003;
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i) records[i] = make_particle(i);
  coalesce::host_vector<Particle, Layout> h(records);
  coalesce::device_vector<Particle, Layout> d(records);
  run_time_index_step<coalesce::host>(h.view(), n);
  run_time_index_step<coalesce::device>(d.view(), n);
  coalesce::synchronize(coalesce::device{});
  std::vector<Particle> on_host(n), on_gpu(n);
  h.copy_to(on_host);
  d.copy_to(on_gpu);
  CHECK(std::memcmp(on_host.data(), on_gpu.data(), n * sizeof(Particle)) == 0);
}

namespace {
struct dvec3_gpu {
  double x, y, z;
};
struct atom_gpu {
  dvec3_gpu x;
  dvec3_gpu f;
  int type;
};
using legacy_gpu =
    coalesce::member_arrays<coalesce::member_stride<&atom_gpu::x, 32>, coalesce::member_stride<&atom_gpu::f, 32>>;
}  // namespace

TEST_CASE("member_arrays over the code's own padded GPU arrays: a kernel writes through them") {
  std::size_t const n = 50001;
  std::vector<double> x(4 * n), f(4 * n, 0.0);
  std::vector<int> type(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 4; ++d) x[4 * i + d] = d == 3 ? -1.0 : static_cast<double>(i) + d;
    type[i] = static_cast<int>(i % 5);
  }
  coalesce::device_array<double> dx(x), df(f);
  coalesce::device_array<int> dtype(type);
  auto atoms = coalesce::view<atom_gpu, legacy_gpu>::over_blobs(n, {dx.data(), df.data(), dtype.data()});
  coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) {
    for (int d = 0; d < 3; ++d) atoms[i][&atom_gpu::f][d] = atoms[i][&atom_gpu::x][d] * atoms[i][&atom_gpu::type];
  });
  coalesce::synchronize(coalesce::device{});
  auto const out = df.to_host();
  bool same = true;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) same = same && out[4 * i + d] == x[4 * i + d] * type[i];
    same = same && out[4 * i + 3] == 0.0;  // the padding slot untouched
  }
  CHECK(same);
}
