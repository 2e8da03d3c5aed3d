// Members stored in another number format (coalesce::stored_as) on the GPU: proxies in kernels
// convert exactly as the host does (the GPU's cvt instructions against libcoalesce's software
// rounding), conversions in GPU memory give the host's bytes and report what does not fit, and
// half-list Lennard-Jones forces summed through atomic_add into 64-bit fixed point are
// bit-identical run to run and between random and Hilbert order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

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
template <class V> std::vector<Particle> records_of(V const& v) {
  std::vector<Particle> out(v.size());
  v.copy_to(out);
  return out;
}
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

TEST_CASE_TEMPLATE("a kernel through a stored layout's proxies gives the host's bits", L, lean, lean_split) {
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

TEST_CASE("conversions in GPU memory report the first value a format cannot hold") {
  auto records = random_particles(5000, 2);
  records[4321].vel.z = 1e7f;
  coalesce::device_vector<Particle> plain{std::span<Particle const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Particle, lean>(plain)),
                       doctest::Contains("element 4321's leaf 5 (member 1.2) cannot be stored as half"),
                       coalesce::error);
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
