// coalesce::read_setfl / read_funcfl and eam_tables (neighbors/eam_tables.hpp): files written here
// from known functions read back as written; the splines pass through the tables' points and
// follow the functions between them; compute_many_body with a two-element setfl law against an
// O(N^2) double-precision run of the same tables; bad files throw and say what was wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

constexpr double cutoff = 2.4;
constexpr std::size_t rho_points = 400, r_points = 500;
constexpr double rho_step = 0.05, r_step = cutoff / (r_points - 1);

// Element e's functions: F(rho) = -B_e sqrt(rho), rho_e(r) = A_e (rc - r)^2, r phi_ab = r C_ab (rc - r)^4.
double embedding_of(std::size_t e, double rho) { return -(e == 0 ? 1.0 : 1.7) * std::sqrt(rho); }
double density_of(std::size_t e, double r) { return (e == 0 ? 1.0 : 0.6) * (cutoff - r) * (cutoff - r); }
double r_phi_of(std::size_t a, std::size_t b, double r) {
  double const c = a == b ? (a == 0 ? 0.05 : 0.03) : 0.08;
  return r * c * std::pow(cutoff - r, 4);
}

void write_values(std::ofstream& out, std::size_t n, double step, std::function<double(double)> const& f) {
  for (std::size_t k = 0; k < n; ++k) out << f(static_cast<double>(k) * step) << (k % 5 == 4 ? "\n" : " ");
  out << "\n";
}

std::filesystem::path temporary(std::string const& name) { return std::filesystem::temp_directory_path() / name; }

std::filesystem::path write_setfl() {
  auto const path = temporary("coalesce_test.eam.alloy");
  std::ofstream out(path);
  out.precision(17);
  out << "two made-up elements\nwritten by eam_tables_test\nfor the reader\n";
  out << "2 Aa Bb\n" << rho_points << " " << rho_step << " " << r_points << " " << r_step << " " << cutoff << "\n";
  for (std::size_t e = 0; e < 2; ++e) {
    out << (e == 0 ? "29 63.55 3.615 fcc\n" : "47 107.87 4.09 fcc\n");
    write_values(out, rho_points, rho_step, [&](double rho) { return embedding_of(e, rho); });
    write_values(out, r_points, r_step, [&](double r) { return density_of(e, r); });
  }
  for (std::size_t a = 0; a < 2; ++a) {
    for (std::size_t b = 0; b <= a; ++b)
      write_values(out, r_points, r_step, [&](double r) { return r_phi_of(a, b, r); });
  }
  return path;
}

std::filesystem::path write_funcfl() {
  auto const path = temporary("coalesce_test.eam");
  std::ofstream out(path);
  out.precision(17);
  out << "one made-up element\n29 63.55 3.615 fcc\n";
  out << rho_points << " " << rho_step << " " << r_points << " " << r_step << " " << cutoff << "\n";
  write_values(out, rho_points, rho_step, [](double rho) { return embedding_of(0, rho); });
  write_values(out, r_points, r_step, [](double r) { return 0.1 * (cutoff - r); });  // Z(r)
  write_values(out, r_points, r_step, [](double r) { return density_of(0, r); });
  return path;
}

}  // namespace

TEST_CASE("read_setfl and read_funcfl read back what was written") {
  coalesce::eam_file const alloy = coalesce::read_setfl(write_setfl().string());
  REQUIRE(alloy.elements == std::vector<std::string>{"Aa", "Bb"});
  CHECK(alloy.masses == std::vector<double>{63.55, 107.87});
  CHECK(alloy.rho_points == rho_points);
  CHECK(alloy.r_points == r_points);
  CHECK(alloy.cutoff == cutoff);
  REQUIRE(alloy.r_phi.size() == 3);
  CHECK(alloy.density[1][10] == doctest::Approx(density_of(1, 10 * r_step)).epsilon(1e-15));
  CHECK(alloy.r_phi[1][20] == doctest::Approx(r_phi_of(1, 0, 20 * r_step)).epsilon(1e-15));  // pair (1, 0)
  CHECK(alloy.embedding[1][7] == doctest::Approx(embedding_of(1, 7 * rho_step)).epsilon(1e-15));
  coalesce::eam_file const one = coalesce::read_funcfl(write_funcfl().string());
  REQUIRE(one.elements.size() == 1);
  double const z = 0.1 * (cutoff - 30 * r_step);
  CHECK(one.r_phi[0][30] == doctest::Approx(27.2 * 0.529 * z * z).epsilon(1e-14));
}

TEST_CASE("eam_tables: the splines pass through the tables' points and follow the functions between them") {
  coalesce::eam_tables<double, coalesce::host> const tables(coalesce::read_setfl(write_setfl().string()));
  auto const law = tables.law();
  for (std::size_t k : {3u, 100u, 250u, 497u}) {
    double const r = static_cast<double>(k) * r_step;
    CHECK(law.density_of[1].at(r).value == doctest::Approx(density_of(1, r)).epsilon(1e-12));
  }
  double worst_value = 0, worst_slope = 0;
  for (double r = 0.3; r < cutoff - 0.1; r += 0.0137) {
    auto const got = law.density_of[0].at(r);
    worst_value = std::max(worst_value, std::abs(got.value - density_of(0, r)));
    worst_slope = std::max(worst_slope, std::abs(got.derivative + 2.0 * (cutoff - r)));
  }
  CHECK(worst_value < 1e-8);
  CHECK(worst_slope < 1e-5);
  // the embedding at a density between points, F' of -sqrt
  double const rho = 3.21;
  CHECK(law.embed(rho, 1).value == doctest::Approx(embedding_of(1, rho)).epsilon(1e-6));
  CHECK(law.embed(rho, 1).derivative == doctest::Approx(-1.7 / (2 * std::sqrt(rho))).epsilon(1e-4));
}

TEST_CASE("compute_many_body with a two-element setfl law: every format, full and half, against O(N^2) in double") {
  coalesce::eam_file const file = coalesce::read_setfl(write_setfl().string());
  coalesce::eam_tables<float, coalesce::host> const tables(file);
  coalesce::eam_tables<double, coalesce::host> const exact(file);
  auto const p = liquid(300, 8.f, 21);
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {8, 8, 8}};
  // the reference: every pair once, the double tables
  auto const law = exact.law();
  std::size_t const n = p.size();
  auto const separation = [&](std::size_t i, std::size_t j) {
    std::array<double, 3> d = {double(p[i].pos.x) - p[j].pos.x, double(p[i].pos.y) - p[j].pos.y,
                               double(p[i].pos.z) - p[j].pos.z};
    for (double& x : d) x -= 8.0 * std::round(x / 8.0);
    return d;
  };
  std::vector<double> rho(n, 0.0), dF(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      auto const d = separation(i, j);
      double const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (!(r2 < cutoff * cutoff)) continue;
      rho[i] += law.density(r2, p[i].id, p[j].id);
      rho[j] += law.density(r2, p[j].id, p[i].id);
    }
  }
  double energy = 0;
  std::vector<std::array<double, 3>> force(n, {0, 0, 0});
  for (std::size_t i = 0; i < n; ++i) {
    energy += law.embed(rho[i], p[i].id).value;
    dF[i] = law.embed(rho[i], p[i].id).derivative;
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      auto const d = separation(i, j);
      double const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (!(r2 < cutoff * cutoff)) continue;
      auto const q = law.pair(r2, p[i].id, p[j].id, dF[i], dF[j]);
      for (int a = 0; a < 3; ++a) force[i][a] += q.force_over_r * d[a], force[j][a] -= q.force_over_r * d[a];
      energy += q.energy;
    }
  }
  double largest = 0;
  for (auto const& f : force)
    for (double x : f) largest = std::max(largest, std::abs(x));
  REQUIRE(largest > 0.1);
  auto const check = [&]<class Format>(bool half) {
    CAPTURE(half);
    coalesce::host_vector<Particle> v(p);
    coalesce::verlet_list<Format, coalesce::host> list({.cutoff = cutoff, .skin = 0.3, .half = half});
    list.build(v, &Particle::pos, box);
    auto const sums = coalesce::compute_many_body<&Particle::pos, &Particle::vel, &Particle::id>(
        v, list.view(v), box, tables.law(), {.energy = true});
    std::vector<Particle> got(n);
    v.copy_to(std::span<Particle>(got));
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
      for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - force[i][a]));
    }
    CHECK(worst <= 1e-5 * largest + 1e-5);
    CHECK(sums.energy == doctest::Approx(energy).epsilon(1e-5));
  };
  for (bool const half : {false, true}) {
    check.operator()<coalesce::padded_columns>(half);
    check.operator()<coalesce::csr>(half);
    check.operator()<coalesce::cluster_pairs>(half);
  }
}

TEST_CASE("eam_tables: a particle of a type past the file's elements is refused, nothing written") {
  coalesce::eam_tables<float, coalesce::host> const tables(coalesce::read_setfl(write_setfl().string()));
  CHECK(tables.law().types() == 2);
  auto p = liquid(100, 6.f, 4);
  p[17].id = 2;
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {6, 6, 6}};
  coalesce::host_vector<Particle> v(p);
  coalesce::verlet_list<coalesce::padded_rows, coalesce::host> list({.cutoff = cutoff, .skin = 0.3});
  list.build(v, &Particle::pos, box);
  CHECK_THROWS_WITH_AS(
      (coalesce::compute_many_body<&Particle::pos, &Particle::vel, &Particle::id>(v, list.view(v), box, tables.law())),
      doctest::Contains("particle 17 has type 2, outside the law's 2 types"), coalesce::error);
  std::vector<Particle> after(p.size());
  v.copy_to(std::span<Particle>(after));
  CHECK(after[0].vel.x == 7.f);
}

TEST_CASE("read_funcfl reads a header line without a lattice name, as LAMMPS does") {
  auto const path = temporary("coalesce_test_bare.eam");
  {
    std::ofstream out(path);
    out.precision(17);
    out << "no lattice below\n29 63.55\n"
        << rho_points << " " << rho_step << " " << r_points << " " << r_step << " " << cutoff << "\n";
    write_values(out, rho_points, rho_step, [](double rho) { return embedding_of(0, rho); });
    write_values(out, r_points, r_step, [](double r) { return 0.1 * (cutoff - r); });
    write_values(out, r_points, r_step, [](double r) { return density_of(0, r); });
  }
  coalesce::eam_file const f = coalesce::read_funcfl(path.string());
  CHECK(f.masses == std::vector<double>{63.55});
  CHECK(f.density[0][3] == doctest::Approx(density_of(0, 3 * r_step)).epsilon(1e-15));
}

TEST_CASE("read_setfl and read_funcfl refuse a missing file, a short table and a bad grid, saying which") {
  CHECK_THROWS_WITH_AS(coalesce::read_setfl("/nonexistent/coalesce.eam.alloy"),
                       doctest::Contains("/nonexistent/coalesce.eam.alloy cannot be read"), coalesce::error);
  auto const short_file = temporary("coalesce_test_short.eam");
  {
    std::ofstream out(short_file);
    out << "comment\n29 63.55 3.615 fcc\n10 0.1 10 0.2 1.8\n1 2 3\n";
  }
  CHECK_THROWS_WITH_AS(coalesce::read_funcfl(short_file.string()),
                       doctest::Contains("ends before an embedding energy F(rho)"), coalesce::error);
  auto const bad_grid = temporary("coalesce_test_grid.eam");
  {
    std::ofstream out(bad_grid);
    out << "comment\n29 63.55 3.615 fcc\n10 0 10 0.2 1.8\n";
  }
  CHECK_THROWS_WITH_AS(coalesce::read_funcfl(bad_grid.string()), doctest::Contains("positive steps"), coalesce::error);
  auto const words = temporary("coalesce_test_words.eam.alloy");
  {
    std::ofstream out(words);
    out << "a\nb\nc\n1 Cu\n10 0.1 10 0.2 1.8\n29 63.55 3.615 fcc\n0 0 zero\n";
  }
  CHECK_THROWS_WITH_AS(coalesce::read_setfl(words.string()), doctest::Contains("has 'zero' where"), coalesce::error);
}
