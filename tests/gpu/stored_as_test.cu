// Members stored in another number format (coalesce::stored_as) on the GPU: proxies in kernels
// convert exactly as the host does (the GPU's cvt instructions against libcoalesce's software
// rounding), conversions in GPU memory give the host's bytes and report what does not fit, and
// half-list Lennard-Jones forces summed through atomic_add into 64-bit fixed point are
// bit-identical run to run and between random and Hilbert order.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace {
struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};
using lean = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::half>,
                                 coalesce::store<&Particle::mass, coalesce::bfloat16>,
                                 coalesce::store<&Particle::id, std::uint64_t>>;
// CUDA's own types as the format tags: the same formats as coalesce::half and coalesce::bfloat16.
using lean_cuda_types =
    coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, __half>,
                        coalesce::store<&Particle::mass, __nv_bfloat16>, coalesce::store<&Particle::id, std::uint64_t>>;
static_assert(coalesce::detail::format_of<__half>::value == coalesce::detail::format_of<coalesce::half>::value);
static_assert(coalesce::detail::format_of<__nv_bfloat16>::value ==
              coalesce::detail::format_of<coalesce::bfloat16>::value);
using lean_split = coalesce::stored_as<coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>,
                                       coalesce::store<&Particle::vel, coalesce::fixed_point<std::int32_t, 16>>>;

std::vector<Particle> random_particles(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {u(rng), u(rng), u(rng)}, u(rng) + 101.0f, static_cast<std::uint32_t>(i)};
  return out;
}
using coalesce_test::records_of;
bool same_bytes(std::vector<Particle> const& a, std::vector<Particle> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Particle)) == 0;
}

// Only additions and one multiplication per value, never a product added (the GPU would fuse it
// into an FMA and round once where the host rounds twice): the bits may differ only by the
// formats' conversions, which is what the test compares.
template <class R> COALESCE_HOST_DEVICE inline void step_one(R r, float dt) {
  auto [pos, vel, mass, id] = r;
  auto [x, y, z] = pos;
  auto [vx, vy, vz] = vel;
  vx += dt;
  vy -= dt;
  x += vx;
  y -= vy;
  z += vz;
  mass *= 1.0009765625f;
  id += 3u;
}
template <class V> void step(V v, float dt) {
  coalesce::for_each_index(coalesce::device{}, v.size(),
                           [=] COALESCE_HOST_DEVICE(std::size_t i) { step_one(v[i], dt); });
  coalesce::synchronize(coalesce::device{});
}
template <class V> void step_on_host(V v, float dt) {
  for (std::size_t i = 0; i < v.size(); ++i) step_one(v[i], dt);
}
}  // namespace

TEST_CASE_TEMPLATE("a kernel through a stored layout's proxies gives the host's bits", L, lean, lean_cuda_types,
                   lean_split) {
  auto const records = random_particles(100003, 1);
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, L> d = plain;  // converted on the GPU
  coalesce::host_vector<Particle, L> h = plain;    // converted on the host
  CHECK(same_bytes(records_of(d), records_of(h)));
  for (int s = 0; s < 3; ++s) {
    step(d.view(), 0.01f);
    step_on_host(h.view(), 0.01f);
  }
  CHECK(same_bytes(records_of(d), records_of(h)));
}

TEST_CASE("positions stored relative to a periodic box: kernels wrap them as the host does, bit for bit") {
  // The step moves particles by up to 100 in a box of 200: many cross a face each step.
  using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>,
                                    coalesce::store<&Particle::vel, coalesce::half>>;
  coalesce::box const b{.lo = {-100.0, -100.0, -100.0}, .hi = {100.0, 100.0, 100.0}};
  auto const records = random_particles(100003, 5);
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, boxed> d(b);
  d.assign(plain);  // converted on the GPU
  coalesce::host_vector<Particle, boxed> h(b);
  h.assign(plain);  // converted on the host
  CHECK(same_bytes(records_of(d), records_of(h)));
  for (int s = 0; s < 3; ++s) {
    step(d.view(), 0.01f);
    step_on_host(h.view(), 0.01f);
  }
  auto const got = records_of(d);
  CHECK(same_bytes(got, records_of(h)));
  bool inside = true;
  for (auto const& p : got) inside = inside && p.pos.x >= -100.0f && p.pos.x <= 100.0f && p.pos.y >= -100.0f;
  CHECK(inside);
  // Into another box on the GPU and back: the coordinates are kept (within the finer box's step).
  coalesce::box const wide{.lo = {-400.0, -400.0, -400.0}, .hi = {400.0, 400.0, 400.0}};
  coalesce::device_vector<Particle, boxed> w(wide);
  w.assign(d);
  auto const moved = records_of(w);
  float worst = 0.0f;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(moved[i].pos.x - got[i].pos.x));
  CHECK(worst <= 1e-4f);
}

// pos: in[i] - in[i + 1], vel: in[i] - in[i + n / 2]: minimum images (Periodic, periodic_difference)
// or as stored, never wrapped (box_difference).
template <class Space, bool Periodic, class In, class Out> void differences(In in, Out out) {
  std::size_t const n = in.size();
  coalesce::for_each_index(Space{}, n, [=] __host__ __device__(std::size_t i) {
    auto const difference = [](auto a, auto b) {
      if constexpr (Periodic) {
        return coalesce::periodic_difference(a, b);
      } else {
        return coalesce::box_difference(a, b);
      }
    };
    out[i][&Particle::pos] = difference(in[i][&Particle::pos], in[(i + 1) % n][&Particle::pos]);
    out[i][&Particle::vel] = difference(in[i][&Particle::pos], in[(i + n / 2) % n][&Particle::pos]);
  });
}

// periodic_difference in a kernel: the host's minimum images, bit for bit (i against i + 1 and
// i + n / 2, so pairs far apart across the faces too).
TEST_CASE("periodic_difference in a kernel gives the host's minimum images, bit for bit") {
  using boxed = coalesce::stored_as<
      coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa, coalesce::unpadded>,
      coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
  coalesce::box const b{.lo = {-100.0, -60.0, -100.0}, .hi = {100.0, 73.5, 100.0}};
  auto const records = random_particles(100003, 7);
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, boxed> d(b);
  d.assign(plain);
  coalesce::host_vector<Particle, boxed> h(b);
  h.assign(plain);
  std::size_t const n = records.size();
  coalesce::device_vector<Particle> out_d(n);
  coalesce::host_vector<Particle> out_h(n);
  differences<coalesce::device, true>(d.view(), out_d.view());
  differences<coalesce::host, true>(h.view(), out_h.view());
  coalesce::synchronize(coalesce::device{});
  auto const got = records_of(out_d), want = records_of(out_h);
  CHECK(same_bytes(got, want));
  bool images = true;  // and they are minimum images: at most half the box on each axis
  for (auto const& p : got) images = images && std::abs(p.vel.x) <= 100.0f && std::abs(p.vel.y) <= 66.75f;
  CHECK(images);
}

// box_difference in a kernel (box_fixed<> positions in a box wider than the particles', as for a
// halo's ghosts): the host's differences bit for bit, and the decoded coordinates' difference
// within the box's steps and float's rounding.
TEST_CASE("box_difference in a kernel gives the host's differences, bit for bit, never wrapped") {
  using boxed = coalesce::stored_as<coalesce::aosoa<32>, coalesce::store<&Particle::pos, coalesce::box_fixed<>>>;
  coalesce::box const b{.lo = {-128.0, -128.0, -128.0}, .hi = {128.0, 128.0, 128.0}};
  auto const records = random_particles(100003, 9);
  coalesce::host_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, boxed> d(b);
  d.assign(plain);
  coalesce::host_vector<Particle, boxed> h(b);
  h.assign(plain);
  std::size_t const n = records.size();
  coalesce::device_vector<Particle> out_d(n);
  coalesce::host_vector<Particle> out_h(n);
  differences<coalesce::device, false>(d.view(), out_d.view());
  differences<coalesce::host, false>(h.view(), out_h.view());
  coalesce::synchronize(coalesce::device{});
  auto const got = records_of(out_d), want = records_of(out_h);
  CHECK(same_bytes(got, want));
  double worst = 0;  // positions in [-100, 100): a power-of-two box holds them exactly
  for (std::size_t i = 0; i < n; ++i) {
    Particle const& far = records[(i + n / 2) % n];
    worst = std::max(worst, std::abs(static_cast<double>(got[i].vel.x) -
                                     (static_cast<double>(records[i].pos.x) - static_cast<double>(far.pos.x))));
  }
  CHECK(worst <= 1.6e-5);  // float's rounding of differences up to 200
}

TEST_CASE("__half and __nv_bfloat16 as format tags store what coalesce::half and coalesce::bfloat16 store") {
  auto const records = random_particles(4099, 5);
  coalesce::device_vector<Particle> plain{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, lean> ours = plain;
  coalesce::device_vector<Particle, lean_cuda_types> cudas = plain;
  CHECK(same_bytes(records_of(ours), records_of(cudas)));
  CHECK(lean_cuda_types::name() == lean::name());  // the analysis tables name them alike
}

TEST_CASE("conversions in GPU memory report the first value a format cannot hold") {
  auto records = random_particles(5000, 2);
  records[4321].vel.z = 1e7f;
  coalesce::device_vector<Particle> plain{std::span<Particle const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Particle, lean>(plain)),
                       doctest::Contains("element 4321's leaf 5 (member 1.2) cannot be stored as half"),
                       coalesce::error);
}

TEST_CASE("GPU conversions into and out of half columns: the elements past the last quad too") {
  // Contiguous float <-> half columns move four elements per thread; n % 4 elements are left for
  // one thread, one by one: their values and their failures count as much as the others'.
  for (std::size_t n : {1u, 3u, 5003u, 70002u}) {
    INFO("n = " << n);
    auto records = random_particles(n, 5);
    coalesce::device_vector<Particle> plain{std::span<Particle const>(records)};
    coalesce::device_vector<Particle, lean> stored(plain);                              // plain -> stored
    coalesce::host_vector<Particle, lean> on_host{std::span<Particle const>(records)};  // the host's rounding
    coalesce::device_vector<Particle> back(stored);                                     // stored -> plain
    CHECK(same_bytes(records_of(back), records_of(on_host)));
    records[n - 1].vel.x = -1e6f;  // the last element: in the tail unless n % 4 == 0
    coalesce::device_vector<Particle> bad{std::span<Particle const>(records)};
    std::string const expected = "element " + std::to_string(n - 1) + "'s leaf 3";
    CHECK_THROWS_WITH_AS((coalesce::device_vector<Particle, lean>(bad)), doctest::Contains(expected.c_str()),
                         coalesce::error);
  }
}

namespace {
// std::array members stored in another format: a kernel reads and writes element k through the
// converting array proxy, conversions in GPU memory move each sub-column's stored bytes.
struct Spectrum {
  vec3 pos;
  std::array<float, 6> bins;
  std::array<std::int32_t, 3> counts;
};
template <class Inner> using lean_spectrum =
    coalesce::stored_as<Inner, coalesce::store<&Spectrum::bins, coalesce::half>,
                        coalesce::store<&Spectrum::counts, std::int16_t>>;
std::vector<Spectrum> spectra(std::size_t n) {
  std::vector<Spectrum> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].pos = {static_cast<float>(i), 1.0f, 2.0f};
    for (std::size_t k = 0; k < 6; ++k) out[i].bins[k] = 0.125f * static_cast<float>((i + k) % 512);
    for (std::size_t k = 0; k < 3; ++k) out[i].counts[k] = static_cast<std::int32_t>((i * 5 + k) % 30000) - 15000;
  }
  return out;
}
template <class R> COALESCE_HOST_DEVICE inline void bump_spectrum(R r) {
  auto bins = r[&Spectrum::bins];
  for (std::size_t k = 0; k < 6; ++k) bins[k] += 0.5f;
  r[&Spectrum::counts][1] += 2;
}
}  // namespace

TEST_CASE_TEMPLATE("std::array members stored as half and int16: kernels and GPU conversions give the host's bits", L,
                   lean_spectrum<coalesce::soa>, lean_spectrum<coalesce::aos>, lean_spectrum<coalesce::aosoa<8>>) {
  auto const records = spectra(70001);
  coalesce::host_vector<Spectrum> plain{std::span<Spectrum const>(records)};
  coalesce::device_vector<Spectrum, L> d = plain;  // converted on the GPU
  coalesce::host_vector<Spectrum, L> h = plain;    // converted on the host
  auto v = d.view();
  coalesce::for_each_index(coalesce::device{}, v.size(),
                           [=] COALESCE_HOST_DEVICE(std::size_t i) { bump_spectrum(v[i]); });
  coalesce::synchronize(coalesce::device{});
  auto hv = h.view();
  for (std::size_t i = 0; i < hv.size(); ++i) bump_spectrum(hv[i]);
  std::vector<Spectrum> from_gpu(records.size()), from_host(records.size());
  d.copy_to(from_gpu);
  h.copy_to(from_host);
  CHECK(std::memcmp(from_gpu.data(), from_host.data(), records.size() * sizeof(Spectrum)) == 0);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    Spectrum want = records[i];
    for (auto& b : want.bins) b += 0.5f;  // exact in half below 512
    want.counts[1] += 2;
    wrong += std::memcmp(&want, &from_gpu[i], sizeof(Spectrum)) != 0;
  }
  CHECK(wrong == 0);
  coalesce::device_vector<Spectrum, coalesce::aosoa<32>> plain_blocks = d;  // stored -> plain on the GPU
  coalesce::device_vector<Spectrum, L> back = plain_blocks;                 // plain -> stored on the GPU
  back.copy_to(from_gpu);
  CHECK(std::memcmp(from_gpu.data(), from_host.data(), records.size() * sizeof(Spectrum)) == 0);
}

namespace {
struct Atom {
  vec3 pos;
  vec3 force;
  std::uint32_t id;
};
using fixed_forces = coalesce::stored_as<coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>,
                                         coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;
using float_forces = coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>;

// Half-list LJ: each pair once, the reaction scattered to j with atomic_add; a particle's own
// pairs summed in `Sum` (a coalesce::fixed_sum: integers, so the order of its pairs does not
// matter; or a vec3 of floats).
using fixed_format = coalesce::fixed_point<std::int64_t, 32>;
struct float_sum {
  vec3 v{0, 0, 0};
  COALESCE_HOST_DEVICE float_sum& operator+=(vec3 const& a) {
    v.x += a.x, v.y += a.y, v.z += a.z;
    return *this;
  }
};
COALESCE_HOST_DEVICE inline vec3 total(float_sum const& s) { return s.v; }
COALESCE_HOST_DEVICE inline coalesce::fixed_sum<vec3, fixed_format> const& total(
    coalesce::fixed_sum<vec3, fixed_format> const& s) {
  return s;
}
COALESCE_HOST_DEVICE inline float min_image(float d, float length) { return d - length * rintf(d / length); }
template <class Sum, class V, class List> void lj_half(V atoms, List nl, float length, float cutoff2) {
  coalesce::for_each_index(coalesce::device{}, atoms.size(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    vec3 const pi = atoms[i][&Atom::pos];
    Sum fi;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) {
      vec3 const pj = atoms[j][&Atom::pos];
      float const dx = min_image(pi.x - pj.x, length), dy = min_image(pi.y - pj.y, length),
                  dz = min_image(pi.z - pj.z, length);
      float const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 >= cutoff2) return;
      float const s2 = 1.0f / r2, s6 = s2 * s2 * s2, f = 24.0f * s2 * s6 * (2.0f * s6 - 1.0f);
      fi += vec3{f * dx, f * dy, f * dz};
      coalesce::atomic_add(atoms[j][&Atom::force], vec3{-f * dx, -f * dy, -f * dz});
    });
    coalesce::atomic_add(atoms[i][&Atom::force], total(fi));
  });
  coalesce::synchronize(coalesce::device{});
}

// Forces per atom id after one half-list force evaluation of `atoms` in their current order.
template <class L, class Sum> std::vector<vec3> forces_by_id(std::vector<Atom> const& atoms, double side) {
  coalesce::device_vector<Atom, L> d{std::span<Atom const>(atoms)};
  coalesce::box const domain{{0, 0, 0}, {side, side, side}};
  coalesce::verlet_list<coalesce::padded_columns> list({.cutoff = 2.5, .skin = 0.0, .half = true});
  list.build(d, &Atom::pos, domain);
  lj_half<Sum>(d.view(), list.view(), static_cast<float>(side), 2.5f * 2.5f);
  std::vector<Atom> out(d.size());
  d.copy_to(out);
  std::vector<vec3> by_id(out.size());
  for (auto const& a : out) by_id[a.id] = a.force;
  return by_id;
}
}  // namespace

namespace {
struct Tagged {
  float x;
  std::uint32_t type;
  bool ghost;
  std::int32_t charge;
  std::uint8_t flags;
};
// type, ghost, charge and flags share one 32-bit word per element.
using tagged_bits = coalesce::stored_as<coalesce::soa, coalesce::store<&Tagged::type, coalesce::bits<3>>,
                                        coalesce::store<&Tagged::ghost, coalesce::bits<1>>,
                                        coalesce::store<&Tagged::charge, coalesce::signed_bits<4>>,
                                        coalesce::store<&Tagged::flags, coalesce::bits<5>>>;
}  // namespace

TEST_CASE("bit-packed fields of one word written by different threads at once keep every write") {
  std::size_t const n = 100'003;
  std::vector<Tagged> start(n);
  for (std::size_t i = 0; i < n; ++i) start[i] = {static_cast<float>(i), 0u, false, 0, 0};
  coalesce::device_vector<Tagged, tagged_bits> d{std::span<Tagged const>(start)};
  auto v = d.view();
  // Four threads per element, each writing one field of the element's word, neighbouring lanes.
  coalesce::for_each_index(coalesce::device{}, 4 * n, [=] __device__(std::size_t t) {
    std::size_t const i = t / 4;
    switch (t % 4) {
      case 0:
        v[i][&Tagged::type] = static_cast<std::uint32_t>(i % 8);
        break;
      case 1:
        v[i][&Tagged::ghost] = i % 3 == 0;
        break;
      case 2:
        v[i][&Tagged::charge] = static_cast<std::int32_t>(i % 16) - 8;
        break;
      default:
        v[i][&Tagged::flags] = static_cast<std::uint8_t>((i * 7) % 32);
    }
  });
  coalesce::synchronize(coalesce::device{});
  std::vector<Tagged> got(n);
  d.copy_to(got);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Tagged const& g = got[i];
    bool const right = g.x == static_cast<float>(i) && g.type == i % 8 && g.ghost == (i % 3 == 0) &&
                       g.charge == static_cast<std::int32_t>(i % 16) - 8 && g.flags == (i * 7) % 32;
    wrong += right ? 0 : 1;
  }
  CHECK(wrong == 0);
  // The host's proxies read what the kernel wrote; a host vector converted from it holds the same.
  coalesce::host_vector<Tagged, tagged_bits> h = d;
  Tagged const last = h.view()[n - 1];
  CHECK(last.charge == static_cast<std::int32_t>((n - 1) % 16) - 8);
}

TEST_CASE("half-list forces summed in 64-bit fixed point are bit-identical run to run and after a Hilbert sort") {
  // One atom per cell of a 22^3 grid, jittered: a liquid-like density (~0.77) whose atoms stay
  // apart (r > 0.89), so the forces stay far inside the fixed-point range.
  double const side = 24.0;
  std::size_t const grid = 22, n = grid * grid * grid;
  float const cell = static_cast<float>(side / grid);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> jitter(-0.1f, 0.1f);
  std::vector<Atom> random_order(n);
  for (std::size_t g = 0; g < n; ++g) {
    random_order[g] = {{(static_cast<float>(g % grid) + 0.5f) * cell + jitter(rng),
                        (static_cast<float>(g / grid % grid) + 0.5f) * cell + jitter(rng),
                        (static_cast<float>(g / grid / grid) + 0.5f) * cell + jitter(rng)},
                       {0, 0, 0},
                       static_cast<std::uint32_t>(g)};
  }
  std::shuffle(random_order.begin(), random_order.end(), rng);

  // The same atoms in Hilbert order.
  coalesce::device_vector<Atom> sorted{std::span<Atom const>(random_order)};
  coalesce::reorder_plan plan;
  coalesce::box const domain{{0, 0, 0}, {side, side, side}};
  auto keys = coalesce::hilbert_keys(sorted, &Atom::pos, domain, plan);
  coalesce::sort_by_key(sorted, keys, plan);
  std::vector<Atom> hilbert_order(n);
  sorted.copy_to(hilbert_order);

  auto const first = forces_by_id<fixed_forces, coalesce::fixed_sum<vec3, fixed_format>>(random_order, side);
  for (int run = 0; run < 10; ++run) {
    auto const again = forces_by_id<fixed_forces, coalesce::fixed_sum<vec3, fixed_format>>(
        run % 2 == 0 ? random_order : hilbert_order, side);
    CHECK(std::memcmp(again.data(), first.data(), n * sizeof(vec3)) == 0);
  }
  // Float atomics: the same forces to rounding, but not the same bits (printed, not required).
  auto const float_random = forces_by_id<float_forces, float_sum>(random_order, side);
  auto const float_sorted = forces_by_id<float_forces, float_sum>(hilbert_order, side);
  double largest = 0, scale = 0;
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) {
    largest = std::max(largest, static_cast<double>(std::fabs(first[i].x - float_random[i].x)));
    scale = std::max(scale, static_cast<double>(std::fabs(first[i].x)));
    differ += std::memcmp(&float_random[i], &float_sorted[i], sizeof(vec3)) != 0;
  }
  CHECK(largest <= 1e-4 * scale);
  MESSAGE("float atomics: " << differ << " of " << n << " atoms' forces differ in bits between random and Hilbert "
                            << "order; fixed point: none");
}
