// compute_many_body over a halo (1, 2 and 4 ranks): each rank's list has rows for its owned particles
// and neighbours among owned and ghosts; the exchange forwards the embedding derivatives to the
// ghosts. The owned particles' forces, and the energy and virial summed over the ranks, are those of
// the whole periodic system computed on every rank in double precision.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "many_body_reference.hpp"
#include "mpi_test_support.hpp"

namespace {

// A jittered cubic lattice over the whole box (no two particles closer than 0.7), made on rank 0
// and sent to the owners: the forces are smooth enough to compare. The id is the law's type (0 or
// 1); the mass, the lattice index (exact in a float), names the particle across ranks.
std::vector<Particle> lattice_on_rank_zero() {
  std::vector<Particle> out;
  if (world_rank() != 0) return out;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> jitter(-0.15f, 0.15f);
  int const side = 7;
  float const spacing = 8.0f / side;
  for (int x = 0; x < side; ++x)
    for (int y = 0; y < side; ++y)
      for (int z = 0; z < side; ++z) {
        auto const index = static_cast<std::uint32_t>(out.size());
        out.push_back({{(x + 0.5f) * spacing + jitter(rng), (y + 0.5f) * spacing + jitter(rng),
                        (z + 0.5f) * spacing + jitter(rng)},
                       {0, 0, 0},
                       static_cast<float>(index),
                       index % 2});
      }
  return out;
}

}  // namespace

TEST_CASE("compute_many_body over a halo: an exchange forwards the ghosts' derivatives, forces as the whole system's") {
  using coalesce_test::many_body::two_type_eam;
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  test_vector<Particle> particles(lattice_on_rank_zero());
  (void)cm::migrate(d, particles, &Particle::pos);
  std::vector<Particle> owned(particles.size());
  particles.copy_to(owned);
  auto const world = all_particles(owned);
  REQUIRE(world.size() == 343u);
  auto const expected = coalesce_test::many_body::brute_force(world, unit_box);

  double const cutoff = 2.4, skin = 0.3;
  auto const halo = cm::build_halo(d, particles, &Particle::pos, cutoff + skin);
  // The list over an open box around the subdomain and its ghosts (images lie outside the box).
  coalesce::box around{.lo = d.subdomain().lo, .hi = d.subdomain().hi, .edges = coalesce::boundary::open};
  for (int a = 0; a < 3; ++a) around.lo[a] -= cutoff + skin + 0.5, around.hi[a] += cutoff + skin + 0.5;
  coalesce::verlet_list<coalesce::padded_columns, test_space> list({.cutoff = cutoff, .skin = skin});
  list.build(particles, &Particle::pos, around, coalesce::list_rows{.owned = halo.owned()});
  coalesce::pair_totals const mine = coalesce::compute_many_body<&Particle::pos, &Particle::vel, &Particle::id>(
      particles, list.view(particles), around, two_type_eam<float>{}, {.energy = true, .virial = true},
      coalesce::default_stream, [&](test_array<float>& derivatives) { cm::forward(halo, derivatives); });

  std::vector<Particle> got(particles.size());
  particles.copy_to(got);
  std::map<float, std::size_t> index_of;  // lattice index -> place in `world`
  for (std::size_t i = 0; i < world.size(); ++i) index_of[world[i].mass] = i;
  double largest = 0, worst = 0;
  for (auto const& f : expected.force)
    for (double x : f) largest = std::max(largest, std::abs(x));
  for (std::size_t i = 0; i < halo.owned(); ++i) {
    auto const& want = expected.force[index_of.at(got[i].mass)];
    float const f[3] = {got[i].vel.x, got[i].vel.y, got[i].vel.z};
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(f[a] - want[a]));
  }
  CHECK(largest > 0.1);
  CHECK(worst <= 1e-5 * largest + 1e-5);
  double sums[2] = {mine.energy, mine.virial}, totals[2] = {0, 0};
  MPI_Allreduce(sums, totals, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  CHECK(totals[0] == doctest::Approx(expected.energy).epsilon(1e-5));
  CHECK(totals[1] == doctest::Approx(expected.virial).epsilon(1e-5));
}
