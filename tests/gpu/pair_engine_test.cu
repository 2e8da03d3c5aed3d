// coalesce::compute_pairs in GPU memory (neighbors/pair_engine.hpp): the same forces, energy and
// virial as in host memory (within float rounding: the sums' order differs) for every format, full
// and half lists, two layouts, with exclusions (bonded chains: the thread-per-row loop and the
// cluster-pair warp loop), and a force member stored as 64-bit fixed point gives bit-identical
// forces run to run; bad input throws and writes nothing there too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <tuple>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

// A named namespace: nvcc's extended lambdas (the engine's kernels) cannot name types of an
// anonymous one in their enclosing function's template arguments.
namespace pair_engine_gpu_test {

struct fvec3 {
  float x, y, z;
};
struct Atom {
  fvec3 pos;
  fvec3 force;
  std::uint32_t type;
};

struct lennard_jones {
  struct param_type {
    float epsilon, sigma2;
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const s2 = q.sigma2 / r2, s6 = s2 * s2 * s2;
    return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) / r2, 4.f * q.epsilon * s6 * (s6 - 1.f)};
  }
};

coalesce::pair_table<lennard_jones::param_type> two_types() {
  coalesce::pair_table<lennard_jones::param_type> t(2);
  t.set(0, 0, {1.0f, 1.0f}, 2.5);
  t.set(0, 1, {0.8f, 1.21f}, 2.2);
  t.set(1, 1, {1.3f, 0.81f}, 2.0);
  return t;
}

// A simple cubic lattice, jittered, sorted along z then y then x (the cluster build's spatial order).
std::vector<Atom> lattice(int side, float spacing, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> jitter(-0.1f, 0.1f);
  std::vector<Atom> out;
  for (int z = 0; z < side; ++z)
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x) {
        Atom a{};
        a.pos = {(x + 0.5f) * spacing + jitter(rng), (y + 0.5f) * spacing + jitter(rng),
                 (z + 0.5f) * spacing + jitter(rng)};
        a.type = static_cast<std::uint32_t>((x + y + z) % 2);
        a.force = {7, 7, 7};
        out.push_back(a);
      }
  return out;
}

// Bonded chains of 4 along x (the lattice's order: atom (x, y, z) is (z * side + y) * side + x), each
// with its two 1-3 pairs, and every fifth bond given again reversed (counted once).
std::vector<std::uint32_t> chains_along_x(int side) {
  std::vector<std::uint32_t> bonds;
  int given = 0;
  for (int row = 0; row < side * side; ++row) {
    for (int x = 0; x + 1 < side; ++x) {
      auto const i = static_cast<std::uint32_t>(row * side + x);
      if (x % 4 != 3) {
        bonds.insert(bonds.end(), {i, i + 1});
        if (++given % 5 == 0) bonds.insert(bonds.end(), {i + 1, i});
      }
      if (x % 4 < 2 && x + 2 < side) bonds.insert(bonds.end(), {i, i + 2});
    }
  }
  return bonds;
}

// Exclude: the bonds as pair_exclusions<Space>; else the form without exclusions (its own kernels:
// chosen when compiling, so that each test compiles only the kernels it runs).
template <class Format, class Layout, class Space, bool Exclude = false>
std::tuple<std::vector<Atom>, coalesce::pair_totals> run(std::vector<Atom> const& atoms, coalesce::box const& b,
                                                         bool half, std::vector<std::uint32_t> const& bonds = {}) {
  coalesce::vector<Atom, Layout, Space> v(atoms);
  coalesce::verlet_list<Format, Space> list({.cutoff = 2.5, .skin = 0.3, .half = half});
  list.build(v, &Atom::pos, b);
  // the members as template arguments: the form whose loop names them as a user's kernel does
  coalesce::pair_totals totals;
  if constexpr (!Exclude) {
    totals = coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(
        v, list.view(v), b, lennard_jones{}, two_types(), {.energy = true, .virial = true});
  } else {
    coalesce::pair_exclusions<Space> const excluded(atoms.size(), bonds);
    totals = coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(
        v, list.view(v), b, lennard_jones{}, two_types(), excluded, {.energy = true, .virial = true});
  }
  std::vector<Atom> out(atoms.size());
  v.copy_to(std::span<Atom>(out));
  return {out, totals};
}

template <class Format, class Layout, bool Exclude = false> void check_device_against_host(bool half) {
  CAPTURE(half);
  CAPTURE(Exclude);
  int const side = 12;
  float const spacing = 1.1f;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * spacing, side * spacing, side * spacing}};
  auto const atoms = lattice(side, spacing, 3);
  std::vector<std::uint32_t> const bonds = Exclude ? chains_along_x(side) : std::vector<std::uint32_t>{};
  auto const [host, host_totals] = run<Format, Layout, coalesce::host, Exclude>(atoms, b, half, bonds);
  auto const [device, device_totals] = run<Format, Layout, coalesce::device, Exclude>(atoms, b, half, bonds);
  if constexpr (Exclude) {  // the exclusions took pairs away (the host's loop is checked against O(N^2) on the CPU)
    double const all_pairs = std::get<1>(run<Format, Layout, coalesce::host>(atoms, b, half)).energy;
    CHECK(host_totals.energy != doctest::Approx(all_pairs).epsilon(1e-3));
  }
  double largest = 0, worst = 0;
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    float const h[3] = {host[i].force.x, host[i].force.y, host[i].force.z};
    float const g[3] = {device[i].force.x, device[i].force.y, device[i].force.z};
    for (int a = 0; a < 3; ++a) {
      largest = std::max(largest, static_cast<double>(std::abs(h[a])));
      worst = std::max(worst, static_cast<double>(std::abs(h[a] - g[a])));
    }
  }
  CHECK(largest > 0);
  CHECK(worst <= 1e-5 * largest + 1e-4);
  CHECK(device_totals.energy == doctest::Approx(host_totals.energy).epsilon(1e-6));
  CHECK(device_totals.virial == doctest::Approx(host_totals.virial).epsilon(1e-6));
}

}  // namespace pair_engine_gpu_test

using namespace pair_engine_gpu_test;

TEST_CASE_TEMPLATE("compute_pairs in GPU memory gives the host's forces and sums: every format, full and half", Format,
                   coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters,
                   coalesce::cluster_pairs) {
  // soa for every format, aos for the two the engine reads differently (a thread per row, a warp
  // per cluster); each combination is a set of kernels to compile: CI's time
  for (bool const half : {false, true}) {
    check_device_against_host<Format, coalesce::soa>(half);
    if constexpr (std::is_same_v<Format, coalesce::padded_columns> || std::is_same_v<Format, coalesce::cluster_pairs>)
      check_device_against_host<Format, coalesce::aos>(half);
  }
}

TEST_CASE_TEMPLATE(
    "compute_pairs in GPU memory with exclusions gives the host's forces and sums: the row loop and the warp loop, "
    "full and half",
    Format, coalesce::padded_columns, coalesce::csr, coalesce::cluster_pairs) {
  for (bool const half : {false, true}) check_device_against_host<Format, coalesce::soa, true>(half);
}

TEST_CASE_TEMPLATE("compute_pairs in GPU memory: a fixed-point force member sums bit for bit alike run to run", Format,
                   coalesce::padded_columns, coalesce::cluster_pairs) {
  using summed =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;
  int const side = 10;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * 1.1, side * 1.1, side * 1.1}};
  auto const atoms = lattice(side, 1.1f, 8);
  std::vector<Atom> first;
  for (int run_index = 0; run_index < 3; ++run_index) {
    coalesce::device_vector<Atom, summed> v(atoms);
    coalesce::verlet_list<Format> list({.cutoff = 2.5, .skin = 0.3, .half = true});
    list.build(v, &Atom::pos, b);
    (void)coalesce::compute_pairs(v, &Atom::pos, &Atom::force, &Atom::type, list.view(v), b, lennard_jones{},
                                  two_types());
    std::vector<Atom> out(atoms.size());
    v.copy_to(std::span<Atom>(out));
    if (run_index == 0) {
      first = out;
      continue;
    }
    bool same = true;
    for (std::size_t i = 0; i < out.size(); ++i) {
      same = same && out[i].force.x == first[i].force.x && out[i].force.y == first[i].force.y &&
             out[i].force.z == first[i].force.z;
    }
    CHECK(same);
  }
}

TEST_CASE(
    "compute_pairs in GPU memory refuses a type outside the table, exclusions of another count, and writes nothing") {
  auto atoms = lattice(6, 1.1f, 2);
  atoms[40].type = 5;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {6.6, 6.6, 6.6}};
  coalesce::device_vector<Atom> v(atoms);
  coalesce::verlet_list<coalesce::csr> list({.cutoff = 2.5, .skin = 0.3});
  list.build(v, &Atom::pos, b);
  CHECK_THROWS_WITH_AS(
      coalesce::compute_pairs(v, &Atom::pos, &Atom::force, &Atom::type, list.view(v), b, lennard_jones{}, two_types()),
      doctest::Contains("particle 40 has type 5"), coalesce::error);
  // exclusions built for another particle count
  atoms[40].type = 1;
  coalesce::device_vector<Atom> good(atoms);
  coalesce::pair_exclusions<> const fewer(atoms.size() - 1, std::vector<std::uint32_t>{0, 1});
  CHECK_THROWS_WITH_AS((coalesce::compute_pairs<&Atom::pos, &Atom::force, &Atom::type>(
                           good, list.view(), b, lennard_jones{}, two_types(), fewer)),
                       doctest::Contains("the exclusions were built for 215 particles"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::pair_exclusions<>(atoms.size(), std::vector<std::uint32_t>{3, 216}),
                       doctest::Contains("pair 0 (3, 216) names particle 216"), coalesce::error);
  {
    std::vector<Atom> left(atoms.size());
    good.copy_to(std::span<Atom>(left));
    bool none_written = true;
    for (auto const& a : left) none_written = none_written && a.force.x == 7 && a.force.y == 7 && a.force.z == 7;
    CHECK(none_written);
  }
  std::vector<Atom> out(atoms.size());
  v.copy_to(std::span<Atom>(out));
  bool untouched = true;
  for (auto const& a : out) untouched = untouched && a.force.x == 7 && a.force.y == 7 && a.force.z == 7;
  CHECK(untouched);
}

TEST_CASE(
    "cluster_pairs built in GPU memory is the host's list, entry for entry; sorted by its keys, both agree again") {
  int const side = 14;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side * 1.1, side * 1.1, side * 1.1}};
  auto const atoms = lattice(side, 1.1f, 4);
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::host_vector<Atom> h(atoms);
    coalesce::device_vector<Atom> d(atoms);
    coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> on_host({.cutoff = 2.5, .skin = 0.3, .half = half});
    coalesce::verlet_list<coalesce::cluster_pairs> on_device({.cutoff = 2.5, .skin = 0.3, .half = half});
    on_host.build(h, &Atom::pos, b);
    on_device.build(d, &Atom::pos, b);
    CHECK(on_device.rows_on_host() == on_host.rows_on_host());
    CHECK(on_device.entries() == on_host.entries());
    CHECK(on_device.candidates() == on_host.candidates());
    CHECK(on_device.bytes() == on_host.bytes());
    coalesce::reorder_plan plan;
    coalesce::sort_by_key(d, on_device.cell_keys(d, &Atom::pos, b, plan), plan);
    auto const sorts = on_device.cell_sorts();
    on_device.build(d, &Atom::pos, b);
    CHECK(on_device.cell_sorts() == sorts);  // in the list's order already: no sort of its own
    std::vector<Atom> sorted(atoms.size());
    d.copy_to(std::span<Atom>(sorted));
    coalesce::host_vector<Atom> hs(sorted);
    on_host.build(hs, &Atom::pos, b);
    CHECK(on_device.rows_on_host() == on_host.rows_on_host());
  }
}

TEST_CASE("cluster_pairs in GPU memory: rows longer than the counting pass keeps are searched again, the same rows") {
  // A sparse set first (short rows: the next build keeps 32 entries per row), then a dense blob
  // whose rows hold over a hundred clusters: those rows come from the filling pass's own search.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> wide(0.f, 60.f), blob(20.f, 26.f);
  std::vector<Atom> sparse(400), dense(3000);
  for (auto& a : sparse) a.pos = {wide(rng), wide(rng), wide(rng)};
  for (auto& a : dense) a.pos = {blob(rng), blob(rng), blob(rng)};
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {60, 60, 60}};
  for (bool const half : {true, false}) {
    CAPTURE(half);
    coalesce::verlet_list<coalesce::cluster_pairs> on_device({.cutoff = 2.5, .skin = 0.3, .half = half});
    coalesce::verlet_list<coalesce::cluster_pairs, coalesce::host> on_host({.cutoff = 2.5, .skin = 0.3, .half = half});
    coalesce::device_vector<Atom> first(sparse);
    on_device.build(first, &Atom::pos, b);
    coalesce::device_vector<Atom> d(dense);
    coalesce::host_vector<Atom> h(dense);
    on_device.build(d, &Atom::pos, b);
    on_host.build(h, &Atom::pos, b);
    CHECK(on_device.widest() > 32 * coalesce::cluster_pairs::cluster_size);  // rows past the kept room
    CHECK(on_device.rows_on_host() == on_host.rows_on_host());
  }
}
