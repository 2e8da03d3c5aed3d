// verlet_list<clusters>::refill, the cluster-format rebuild a CUDA graph can hold: the build's
// steps queued into the memory the build left (twice the candidates and runs it found),
// nothing read back or allocated. Exact rows after moves, and what check() reports: more
// candidates than that memory holds (particles shuffled since the build: clusters lose candidates,
// never read or write past it), a position that is not finite. In host memory refill is build().
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

// Particles along a Hilbert curve (a clusters build refuses a random order).
std::vector<Particle> hilbert_ordered(std::vector<Particle> p, coalesce::box const& b) {
  coalesce::host_vector<Particle> v(p);
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, coalesce::hilbert_keys(v, &Particle::pos, b, plan), plan);
  v.copy_to(p);
  return p;
}

// Every row of `cut` holds only neighbours its row in `full` holds.
bool within(rows_t const& cut, rows_t const& full) {
  if (cut.size() != full.size()) return false;
  auto const a = sorted_rows(cut), f = sorted_rows(full);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::includes(f[i].begin(), f[i].end(), a[i].begin(), a[i].end())) return false;
  }
  return true;
}

}  // namespace

TEST_CASE_TEMPLATE("clusters refill: exact rows after moves; check() reports a full memory and bad positions", Space,
                   coalesce::host, coalesce::device) {
  bool const deferred = coalesce::device_is_gpu && std::is_same_v<Space, coalesce::device>;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {14, 14, 14}};
  std::array<bool, 3> const all{true, true, true};
  coalesce::list_params const params{.cutoff = 1.0, .skin = 0.3};
  auto const start = hilbert_ordered(random_particles(2300, 0.0f, 14.0f, 91), b);  // 72 clusters, the last short
  coalesce::vector<Particle, coalesce::soa, Space> v(start);
  coalesce::verlet_list<coalesce::clusters, Space> list(params);
  CHECK_THROWS_WITH_AS(list.refill(v, &Particle::pos, b), doctest::Contains("needs a build()"), coalesce::error);
  list.build(v, &Particle::pos, b);
  std::uint64_t const allocations = list.allocations();

  // Every particle moves a little (less than the skin), some across the periodic faces: a fresh
  // build's rows. (A particle that jumps across the box makes its cluster span it: a build's work.)
  auto moved = start;
  for (std::size_t i = 0; i < moved.size(); ++i) {
    moved[i].pos.x += 0.1f * std::sin(static_cast<float>(i));
    moved[i].pos.z -= 0.08f * std::cos(static_cast<float>(5 * i));
  }
  coalesce::vector<Particle, coalesce::soa, Space> w(moved);
  list.refill(w, &Particle::pos, b);
  CHECK_NOTHROW(list.check());
  CHECK(list.allocations() == allocations);
  coalesce::verlet_list<coalesce::clusters, Space> fresh(params);
  fresh.build(w, &Particle::pos, b);
  CHECK(list.rows_on_host() == fresh.rows_on_host());  // entry for entry
  CHECK(list.entries() == fresh.entries());
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(moved, b, all, 1.3, false));
  CHECK_FALSE(list.needs_rebuild(w, &Particle::pos));
  // The same particles in a random order: every cluster spans the box, far more candidates than
  // the build left room for (a build refuses such an order). Clusters past the room lose
  // candidates (their rows hold fewer neighbours, never others); check() says so.
  auto const shuffled = random_particles(2300, 0.0f, 14.0f, 91);
  coalesce::vector<Particle, coalesce::soa, Space> d(shuffled);
  auto const shuffled_rows = brute_force(shuffled, b, all, 1.3, false);
  if (deferred) {
    list.refill(d, &Particle::pos, b);
    CHECK_THROWS_WITH_AS(list.check(), doctest::Contains("candidates"), coalesce::error);
    CHECK_THROWS_WITH_AS((void)list.view(d), doctest::Contains("cut"), coalesce::error);
    CHECK_THROWS_AS(list.refill(d, &Particle::pos, b), coalesce::error);
    auto const cut = list.rows_on_host();
    CHECK(within(cut, shuffled_rows));
    CHECK(entries_of(cut) < entries_of(shuffled_rows));
    CHECK(list.allocations() == allocations);
  } else {  // host memory: refill is build(), which refuses the order
    CHECK_THROWS_WITH_AS(list.refill(d, &Particle::pos, b), doctest::Contains("not in a spatial order"),
                         coalesce::error);
  }
  list.build(w, &Particle::pos, b);  // usable again
  CHECK(list.rows_on_host() == fresh.rows_on_host());

  // A position that is not finite: named by check() (GPU memory) or by refill itself.
  auto bad = moved;
  bad[1500].pos.z = std::numeric_limits<float>::infinity();
  coalesce::vector<Particle, coalesce::soa, Space> inf(bad);
  if (deferred) {
    list.refill(inf, &Particle::pos, b);
    CHECK_THROWS_WITH_AS(list.check(), doctest::Contains("particle 1500"), coalesce::error);
  } else {
    CHECK_THROWS_WITH_AS(list.refill(inf, &Particle::pos, b), doctest::Contains("particle 1500"), coalesce::error);
  }
}

namespace {
struct dvec3 {
  double x, y, z;
};
struct Atom64 {
  dvec3 pos;
  float mass;
};
}  // namespace

TEST_CASE_TEMPLATE("clusters refill: a half list, double positions, another position type refused", Space,
                   coalesce::host, coalesce::device) {
  bool const deferred = coalesce::device_is_gpu && std::is_same_v<Space, coalesce::device>;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {12, 12, 12}};
  std::array<bool, 3> const all{true, true, true};
  auto const start = hilbert_ordered(random_particles(1500, 0.0f, 12.0f, 93), b);
  auto moved = start;
  for (std::size_t i = 0; i < moved.size(); ++i) moved[i].pos.y += 0.1f * std::cos(static_cast<float>(3 * i));

  coalesce::verlet_list<coalesce::clusters, Space> half({.cutoff = 1.0, .skin = 0.3, .half = true});
  coalesce::vector<Particle, coalesce::soa, Space> v(start), w(moved);
  half.build(v, &Particle::pos, b);
  half.refill(w, &Particle::pos, b);
  CHECK_NOTHROW(half.check());
  CHECK(sorted_rows(half.rows_on_host()) == brute_force(moved, b, all, 1.3, true));

  // The same particles with double positions: the rows of the float ones (none lies near the reach).
  auto const as_double = [](std::vector<Particle> const& p) {
    std::vector<Atom64> out(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) out[i] = {{p[i].pos.x, p[i].pos.y, p[i].pos.z}, 1.0f};
    return out;
  };
  coalesce::vector<Atom64, coalesce::soa, Space> v64(as_double(start)), w64(as_double(moved));
  coalesce::verlet_list<coalesce::clusters, Space> list64({.cutoff = 1.0, .skin = 0.3});
  list64.build(v64, &Atom64::pos, b);
  std::uint64_t const allocations = list64.allocations();
  list64.refill(w64, &Atom64::pos, b);
  CHECK_NOTHROW(list64.check());
  CHECK(list64.allocations() == allocations);
  coalesce::verlet_list<coalesce::clusters, Space> fresh64({.cutoff = 1.0, .skin = 0.3});
  fresh64.build(w64, &Atom64::pos, b);
  CHECK(list64.rows_on_host() == fresh64.rows_on_host());

  // Built from double positions, refilled from float ones: the list's points are another size.
  if (deferred) {
    CHECK_THROWS_WITH_AS(list64.refill(w, &Particle::pos, b), doctest::Contains("build() it from these"),
                         coalesce::error);
  }
}

TEST_CASE_TEMPLATE("clusters refill after later builds: the latest build's room, refused builds change nothing", Space,
                   coalesce::host, coalesce::device) {
  bool const deferred = coalesce::device_is_gpu && std::is_same_v<Space, coalesce::device>;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {14, 14, 14}};
  std::array<bool, 3> const all{true, true, true};
  coalesce::list_params const params{.cutoff = 1.0, .skin = 0.3};
  // A second build with about twice the candidates of the first (twice the particles): the room a
  // refill writes into is twice that build's, not what the first build left (which would be
  // about the second build's own: a refill after small moves would be cut).
  auto const sparse = hilbert_ordered(random_particles(1200, 0.0f, 14.0f, 95), b);
  auto const dense = hilbert_ordered(random_particles(2300, 0.0f, 14.0f, 96), b);
  coalesce::vector<Particle, coalesce::soa, Space> v(sparse), w(dense);
  coalesce::verlet_list<coalesce::clusters, Space> list(params);
  list.build(v, &Particle::pos, b);
  std::size_t const first_candidates = list.candidates();
  list.build(w, &Particle::pos, b);
  CHECK(list.candidates() > first_candidates * 3 / 2);
  auto moved = dense;
  for (std::size_t i = 0; i < moved.size(); ++i) {
    moved[i].pos.x += 0.25f * std::sin(static_cast<float>(i));
    moved[i].pos.y -= 0.2f * std::cos(static_cast<float>(3 * i));
  }
  coalesce::vector<Particle, coalesce::soa, Space> m(moved);
  list.refill(m, &Particle::pos, b);
  CHECK_NOTHROW(list.check());
  coalesce::verlet_list<coalesce::clusters, Space> fresh(params);
  fresh.build(m, &Particle::pos, b);
  CHECK(list.rows_on_host() == fresh.rows_on_host());
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(moved, b, all, 1.3, false));
  // After check() the counts are the refill's: its entries against the particles its rows test.
  CHECK(list.entries() == fresh.entries());
  CHECK(list.candidates() == fresh.candidates());
  CHECK(list.fill() == doctest::Approx(fresh.fill()));

  // Builds that refuse (a position not finite; particles out of a spatial order) leave the list
  // and what check() reads of its refills as they were.
  auto const rows = list.rows_on_host();
  auto bad = moved;
  bad[1500].pos.y = std::numeric_limits<float>::quiet_NaN();
  coalesce::vector<Particle, coalesce::soa, Space> nan(bad);
  CHECK_THROWS_WITH_AS(list.build(nan, &Particle::pos, b), doctest::Contains("particle 1500"), coalesce::error);
  coalesce::vector<Particle, coalesce::soa, Space> shuffled(random_particles(2300, 0.0f, 14.0f, 95));
  CHECK_THROWS_WITH_AS(list.build(shuffled, &Particle::pos, b), doctest::Contains("not in a spatial order"),
                       coalesce::error);
  CHECK_NOTHROW(list.check());
  CHECK(list.rows_on_host() == rows);
  CHECK_NOTHROW((void)list.view(m));
  if (deferred) {  // and a refill after them still refills the list (the buffers did not move)
    list.refill(m, &Particle::pos, b);
    CHECK_NOTHROW(list.check());
    CHECK(list.rows_on_host() == rows);
  }
}
