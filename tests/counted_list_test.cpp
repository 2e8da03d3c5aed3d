// analysis::counted_list: a library neighbour list, every format, read inside count_accesses: the
// same neighbours as the list's own traversal, its arrays counted, formats ranked by the advisor.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace ca = coalesce::analysis;
using coalesce_test::Particle;

namespace {

// An LJ-like liquid (density 0.84) along a Hilbert curve, as a code that sorts would hold it.
std::vector<Particle> sorted_liquid(std::size_t n, float& side) {
  side = std::cbrt(static_cast<float>(n) / 0.84f);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, side);
  std::vector<Particle> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = {{u(rng), u(rng), u(rng)}, {0, 0, 0}, 1.0f, static_cast<std::uint32_t>(i)};
  coalesce::host_vector<Particle> v(p);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side, side, side}};
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, coalesce::hilbert_keys(v, &Particle::pos, b, plan), plan);
  v.copy_to(p);
  return p;
}

// The force kernel's shape: every neighbour's position gathered, the thread's own force written.
template <class Format> ca::access_trace count_forces(std::vector<Particle> const& sample,
                                                      coalesce::verlet_list<Format, coalesce::host> const& list,
                                                      std::vector<std::vector<std::uint32_t>>* seen = nullptr) {
  ca::counted_list<Format> const nl(list);
  if (seen != nullptr) seen->assign(sample.size(), {});
  auto t =
      ca::count_accesses<Particle>(std::string("forces/") + typeid(Format).name(), sample, [&](auto v, std::size_t i) {
        coalesce_test::vec3 const p = v[i][&Particle::pos];
        float f = 0;
        coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) {
          coalesce_test::vec3 const q = v[j][&Particle::pos];
          f += p.x - q.x;
          if (seen != nullptr) (*seen)[i].push_back(j);
        });
        v[i][&Particle::vel][&coalesce_test::vec3::x] = f;
      });
  t.system_elements = 4'194'304;  // the H200 run's size (benchmarks/neighbor_build)
  return t;
}

template <class Format>
std::vector<std::vector<std::uint32_t>> own_rows(coalesce::verlet_list<Format, coalesce::host> const& list) {
  auto const nl = list.view();
  std::vector<std::vector<std::uint32_t>> rows(nl.size());
  for (std::size_t i = 0; i < nl.size(); ++i)
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { rows[i].push_back(j); });
  return rows;
}

}  // namespace

TEST_CASE_TEMPLATE("a counted list visits the list's own neighbours in its order, and its arrays are counted", Format,
                   coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters) {
  float side = 0;
  auto const sample = sorted_liquid(3000, side);  // not a multiple of 32: a partial last cluster
  coalesce::host_vector<Particle> v(sample);
  for (bool half : {false, true}) {
    CAPTURE(half);
    coalesce::verlet_list<Format, coalesce::host> list({.cutoff = 1.2, .skin = 0.3, .half = half});
    list.build(v, &Particle::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {side, side, side}});
    std::vector<std::vector<std::uint32_t>> seen;
    auto const t = count_forces<Format>(sample, list, &seen);
    CHECK(seen == own_rows(list));
    std::size_t entries = 0;
    for (auto const& r : seen) entries += r.size();
    CHECK(entries == list.entries());
    CHECK(entries > sample.size());
    if constexpr (std::is_same_v<Format, coalesce::clusters>) {
      REQUIRE(t.arrays.size() == 3);  // run offsets, runs, points
      CHECK(t.pair_tests >= entries);
      CHECK(t.pair_tests % 32 == 0);  // whole chunks, as the warp tile tests them
    } else {
      REQUIRE(t.arrays.size() == 2);
      CHECK(t.pair_tests == 0);
      // every entry read once, from the list's own array
      CHECK(t.columns[t.element_columns + 1].reads == entries);
    }
  }
}

TEST_CASE("a device list is refused by counted_list at compile time; double positions of clusters at run time") {
  static_assert(!std::is_constructible_v<ca::counted_list<coalesce::csr>,
                                         coalesce::verlet_list<coalesce::csr, coalesce::device> const&>);
  struct dvec3 {
    double x, y, z;
  };
  struct Atom {
    dvec3 pos;
  };
  coalesce::host_vector<Atom> atoms(std::vector<Atom>(64, Atom{{1, 1, 1}}));
  coalesce::verlet_list<coalesce::clusters, coalesce::host> list({.cutoff = 1.0, .skin = 0.1});
  list.build(atoms, &Atom::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {4, 4, 4}});
  CHECK_THROWS_WITH_AS(ca::counted_list<coalesce::clusters>{list}, doctest::Contains("double positions"),
                       coalesce::error);
}

// The H200 (benchmarks/neighbor_build, 4.2M LJ particles, Hilbert order, 2026-12-02): force over
// padded_columns 1.16 ms, clusters 7.67 ms (the candidates' tests), list bytes 356 against 7.1 per
// particle.
TEST_CASE("the advisor predicts a format's list bytes and the cluster format's tests") {
  float side = 0;
  auto const sample = sorted_liquid(16384, side);
  coalesce::host_vector<Particle> v(sample);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side, side, side}};
  coalesce::list_params const params{.cutoff = 2.5, .skin = 0.3};
  coalesce::verlet_list<coalesce::padded_columns, coalesce::host> columns(params);
  coalesce::verlet_list<coalesce::clusters, coalesce::host> clustered(params);
  columns.build(v, &Particle::pos, b);
  clustered.build(v, &Particle::pos, b);
  coalesce::verlet_list<coalesce::padded_rows, coalesce::host> rows(params);
  coalesce::verlet_list<coalesce::csr, coalesce::host> packed(params);
  rows.build(v, &Particle::pos, b);
  packed.build(v, &Particle::pos, b);
  auto const rows_trace = count_forces<coalesce::padded_rows>(sample, rows);
  auto const csr_trace = count_forces<coalesce::csr>(sample, packed);
  auto const padded_trace = count_forces<coalesce::padded_columns>(sample, columns);
  auto const cluster_trace = count_forces<coalesce::clusters>(sample, clustered);
  using pos = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
  ca::kernel_use const padded_use(padded_trace), cluster_use(cluster_trace);
  auto const padded = ca::predict<Particle, pos>(std::span(&padded_use, 1));
  auto const clusters = ca::predict<Particle, pos>(std::span(&cluster_use, 1));
  auto const& pk = padded.kernels.at(0);
  auto const& ck = clusters.kernels.at(0);
  MESSAGE("padded_columns: " << pk.time_ps_per_thread << " ps/thread (" << pk.bound << "), DRAM "
                             << pk.dram_bytes_per_thread() << " B/thread; clusters: " << ck.time_ps_per_thread
                             << " ps/thread (" << ck.bound << "), DRAM " << ck.dram_bytes_per_thread() << " B/thread, "
                             << static_cast<double>(ck.pair_tests) / 16384 << " tests/thread");
  // The list's bytes: the padded list is most of the padded kernel's DRAM traffic; the clusters'
  // runs a few bytes.
  CHECK(ck.dram_bytes_per_thread() * 5 < pk.dram_bytes_per_thread());
  // The cluster kernel is bound by its tests, and predicted slower, as measured (6.6x). The ratio
  // comes out larger (about 27x on this sample): the padded kernel's time is predicted from its
  // bytes (0.35 ms at 4.2M) and measured at 1.16 ms, bound by the latency of its dependent
  // gathers, which the model does not see (docs/analysis.md).
  CHECK(ck.bound == "tests");
  double const ratio = ck.time_ps_per_thread / pk.time_ps_per_thread;
  CAPTURE(ratio);
  CHECK(ratio > 2.0);
  auto const ranked = ca::rank_formats<Particle, pos>({{"clusters", &cluster_trace},
                                                       {"padded_rows", &rows_trace},
                                                       {"csr", &csr_trace},
                                                       {"padded_columns", &padded_trace}});
  REQUIRE(ranked.size() == 4);
  for (auto const& f : ranked) MESSAGE(f.format << ": " << f.prediction.weighted_time_ps << " ps/thread");
  // The H200's order (1.16, 4.11, 4.22, 7.67 ms); rows and CSR, 3 % apart there, are a tie here.
  CHECK(ranked.front().format == "padded_columns");
  CHECK(ranked.back().format == "clusters");
  auto const without_trace = [] { return ca::rank_formats<Particle, pos>({{"csr", nullptr}}); };
  CHECK_THROWS_WITH_AS(without_trace(), doctest::Contains("no counted kernel"), coalesce::error);
}
