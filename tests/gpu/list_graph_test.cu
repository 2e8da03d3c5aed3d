// A neighbour-list rebuild inside a CUDA graph (coalesce/memory/graph.hpp, verlet_list::refill and
// set_rebuild_condition): captured once, replayed; the list is rebuilt exactly at the replays where
// some particle has moved more than skin / 2 since the last rebuild, with the rows a fresh build
// gives, and nothing is read back or allocated (a capture in global mode refuses both). Every
// format: padded_columns, csr, clusters and cluster_pairs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

namespace {

struct fvec3 {
  float x, y, z;
};
struct Atom {
  fvec3 pos;
  float mass;
};

void check_cuda(cudaError_t e) { REQUIRE_MESSAGE(e == cudaSuccess, cudaGetErrorString(e)); }

// How far particle i moves along x at each replay, in units of `step`: particle 0 the most (1), the
// others less, some backwards, so the rows change from rebuild to rebuild.
__host__ __device__ float drift_of(std::size_t i) { return i == 0 ? 1.0f : std::sin(static_cast<float>(i) * 0.7f); }

using rows_t = std::vector<std::vector<std::uint32_t>>;
template <class Format = coalesce::padded_columns>
rows_t fresh_rows(std::vector<Atom> const& atoms, coalesce::box const& b) {
  coalesce::device_vector<Atom> v(atoms);
  coalesce::verlet_list<Format> fresh({.cutoff = 1.0, .skin = 0.4});
  if constexpr (requires { fresh.reserve_width(64); }) fresh.reserve_width(64);
  fresh.build(v, &Atom::pos, b);
  return fresh.rows_on_host();
}

}  // namespace

TEST_CASE_TEMPLATE(
    "a rebuild in a CUDA graph runs at the replays where a particle moved more than skin / 2, and only "
    "there",
    Format, coalesce::padded_columns, coalesce::csr, coalesce::clusters, coalesce::cluster_pairs) {
  std::size_t const n = 20'011;
  double const side = 20.0;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {side, side, side}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, static_cast<float>(side));
  std::vector<Atom> start(n);
  for (auto& a : start) a = {{u(rng), u(rng), u(rng)}, 1.0f};
  if constexpr (std::is_same_v<Format, coalesce::clusters>) {  // a clusters build needs a spatial order
    coalesce::device_vector<Atom> sorted(start);
    coalesce::reorder_plan plan;
    coalesce::sort_by_key(sorted, coalesce::hilbert_keys(sorted, &Atom::pos, b, plan), plan);
    sorted.copy_to(start);
  }

  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    coalesce::device_vector<Atom> d(start);
    coalesce::verlet_list<Format> list({.cutoff = 1.0, .skin = 0.4});
    if constexpr (requires { list.reserve_width(64); }) list.reserve_width(64);
    list.build(d, &Atom::pos, b, s);
    std::uint64_t const allocations = list.allocations();
    auto v = d.view();
    float const step = 0.07f;  // skin / 2 = 0.2: particle 0 passes it at every third replay

    cudaGraph_t graph = nullptr;
    check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    coalesce::for_each_index(
        coalesce::device{}, n,
        [=] __device__(std::size_t i) {
          auto [x, y, z] = v[i][&Atom::pos];
          x = x + step * drift_of(i);  // periodic box: the list wraps positions itself
        },
        s);
    coalesce::graph_condition const moved = coalesce::make_graph_condition(s);
    list.set_rebuild_condition(d, &Atom::pos, moved, s);
    coalesce::capture_if(s, moved, [&] { list.refill(d, &Atom::pos, b, s); });
    cudaError_t const ended = cudaStreamEndCapture(s, &graph);
    REQUIRE_MESSAGE(ended == cudaSuccess,
                    "a rebuild step waited or allocated during capture: ", cudaGetErrorString(ended));
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(list.allocations() == allocations);
    // A build after the capture that moves no buffer and changes no width (graph_generation the
    // same) leaves the graph valid: its refills below write where the list reads (a clusters build
    // copies its new runs into the list's buffers instead of swapping them with the scratch).
    std::uint64_t const generation = list.graph_generation();
    list.build(d, &Atom::pos, b, s);
    REQUIRE(list.graph_generation() == generation);

    std::vector<Atom> at_rebuild = start;
    for (int replay = 1; replay <= 7; ++replay) {
      check_cuda(cudaGraphLaunch(exec, s));
      check_cuda(cudaStreamSynchronize(s));
      std::vector<Atom> now(n);
      d.copy_to(now);
      bool const rebuilt = replay % 3 == 0;  // 0.21 > 0.2 at replays 3 and 6
      if (rebuilt) at_rebuild = now;
      INFO("replay ", replay);
      CHECK(std::abs(list.max_displacement(d, &Atom::pos, s) - step * static_cast<float>(replay % 3)) < 1e-4);
      CHECK(list.rows_on_host() == fresh_rows<Format>(at_rebuild, b));
      CHECK_NOTHROW(list.check(s));
    }
    CHECK(fresh_rows<Format>(at_rebuild, b) != fresh_rows<Format>(start, b));  // the rows did change
    CHECK(list.allocations() == allocations);
    check_cuda(cudaGraphExecDestroy(exec));
    check_cuda(cudaGraphDestroy(graph));
  }
  check_cuda(cudaStreamDestroy(s));
}

// Positions written by the graph from `source`, which the host changes between replays. A refill
// that outgrows the list's memory: padded and csr rows wider than the width (80 particles crowded
// around one point), clusters more candidates than the build left room for (the particles shuffled
// out of their spatial order: every cluster spans the box), cluster_pairs more pairs of clusters
// (every particle squeezed into half the box: twice the density, about twice the entries).
TEST_CASE_TEMPLATE("check() reports a row cut at any refill since the build, and a NaN that reached a replay", Format,
                   coalesce::padded_columns, coalesce::csr, coalesce::clusters, coalesce::cluster_pairs) {
  constexpr bool is_clusters = std::is_same_v<Format, coalesce::clusters>;
  constexpr bool is_pairs = std::is_same_v<Format, coalesce::cluster_pairs>;
  std::size_t const n = 20'011;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {20, 20, 20}};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 20.0f);
  std::vector<fvec3> sparse(n);
  for (auto& p : sparse) p = {u(rng), u(rng), u(rng)};
  std::vector<fvec3> crowded = sparse;
  if constexpr (is_clusters) {
    std::vector<Atom> atoms(n);  // the build's order: along a Hilbert curve
    for (std::size_t i = 0; i < n; ++i) atoms[i] = {sparse[i], 1.0f};
    coalesce::device_vector<Atom> sorted(atoms);
    coalesce::reorder_plan plan;
    coalesce::sort_by_key(sorted, coalesce::hilbert_keys(sorted, &Atom::pos, b, plan), plan);
    sorted.copy_to(atoms);
    for (std::size_t i = 0; i < n; ++i) sparse[i] = atoms[i].pos;
    crowded = sparse;
    std::shuffle(crowded.begin(), crowded.end(), rng);
  } else if constexpr (is_pairs) {
    for (auto& p : crowded) p.x *= 0.5f;
  } else {
    for (std::size_t i = 0; i < 80; ++i)
      crowded[i] = {10.0f + 0.01f * static_cast<float>(i % 7), 10.0f + 0.01f * static_cast<float>(i % 5), 10.0f};
  }
  std::vector<fvec3> with_nan = sparse;
  with_nan[77].y = std::numeric_limits<float>::quiet_NaN();

  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  fvec3* source = nullptr;
  check_cuda(cudaMalloc(&source, n * sizeof(fvec3)));
  auto const put = [&](std::vector<fvec3> const& p) {
    check_cuda(cudaMemcpyAsync(source, p.data(), n * sizeof(fvec3), cudaMemcpyHostToDevice, s));
  };
  {
    std::vector<Atom> start(n);
    for (std::size_t i = 0; i < n; ++i) start[i] = {sparse[i], 1.0f};
    coalesce::device_vector<Atom> d(start);
    coalesce::verlet_list<Format> list({.cutoff = 1.0, .skin = 0.4});
    list.build(d, &Atom::pos, b, s);
    std::size_t const width = list.width();
    auto v = d.view();
    cudaGraph_t graph = nullptr;
    auto const capture = [&] {
      check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      coalesce::for_each_index(
          coalesce::device{}, n,
          [=] __device__(std::size_t i) {
            auto [x, y, z] = v[i][&Atom::pos];
            x = source[i].x, y = source[i].y, z = source[i].z;
          },
          s);
      coalesce::graph_condition const moved = coalesce::make_graph_condition(s);
      list.set_rebuild_condition(d, &Atom::pos, moved, s);
      coalesce::capture_if(s, moved, [&] { list.refill(d, &Atom::pos, b, s); });
      check_cuda(cudaStreamEndCapture(s, &graph));
      cudaGraphExec_t exec = nullptr;
      check_cuda(cudaGraphInstantiate(&exec, graph, 0));
      return exec;
    };
    cudaGraphExec_t exec = capture();
    put(crowded);
    check_cuda(cudaGraphLaunch(exec, s));  // refills: rows cut at the width, or clusters' candidates
    check_cuda(cudaStreamSynchronize(s));
    put(sparse);
    check_cuda(cudaGraphLaunch(exec, s));  // refills again: every row fits now
    check_cuda(cudaStreamSynchronize(s));
    CHECK(list.width() == width);
    if constexpr (is_clusters) {
      CHECK_THROWS_WITH_AS(list.check(s), doctest::Contains("candidates"), coalesce::error);
    } else if constexpr (is_pairs) {
      CHECK_THROWS_WITH_AS(list.check(s), doctest::Contains("pairs of clusters"), coalesce::error);
    } else {
      CHECK_THROWS_WITH_AS(list.check(s), doctest::Contains("more than the list's width"), coalesce::error);
      CHECK(list.widest() >= 79);
    }
    CHECK_THROWS_AS((void)list.view(d), coalesce::error);
    check_cuda(cudaGraphExecDestroy(exec));
    check_cuda(cudaGraphDestroy(graph));

    list.build(d, &Atom::pos, b, s);  // usable again; the graph is captured again after a build
    CHECK_NOTHROW((void)list.view(d));
    exec = capture();
    check_cuda(cudaGraphLaunch(exec, s));  // nothing moved: no refill
    CHECK_NOTHROW(list.check(s));
    put(with_nan);
    check_cuda(cudaGraphLaunch(exec, s));  // a NaN sets the condition: the refill finds it
    CHECK_THROWS_WITH_AS(list.check(s), doctest::Contains("particle 77"), coalesce::error);
    check_cuda(cudaGraphExecDestroy(exec));
    check_cuda(cudaGraphDestroy(graph));
  }
  check_cuda(cudaFree(source));
  check_cuda(cudaStreamDestroy(s));
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

// A cluster_pairs refill outside a graph (queued, read at check()): double positions give a fresh
// build's rows after moves, a half list too; float positions given to a list built from double ones
// are refused (the list's positions are another size), and nothing is allocated.
TEST_CASE("cluster_pairs refill: double positions and a half list give a fresh build's rows; float ones refused") {
  std::size_t const n = 9'001;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {15, 15, 15}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0.0, 15.0);
  std::vector<Atom64> start(n), moved(n);
  for (auto& a : start) a = {{u(rng), u(rng), u(rng)}, 1.0f};
  for (std::size_t i = 0; i < n; ++i) {
    moved[i] = start[i];
    moved[i].pos.x += 0.12 * std::sin(static_cast<double>(i));
    moved[i].pos.z -= 0.09 * std::cos(static_cast<double>(3 * i));
  }
  for (bool const half : {false, true}) {
    CAPTURE(half);
    coalesce::device_vector<Atom64> v(start), w(moved);
    coalesce::verlet_list<coalesce::cluster_pairs> list({.cutoff = 1.2, .skin = 0.3, .half = half});
    list.build(v, &Atom64::pos, b);
    std::uint64_t const allocations = list.allocations();
    list.refill(w, &Atom64::pos, b);
    CHECK_NOTHROW(list.check());
    CHECK(list.allocations() == allocations);
    coalesce::verlet_list<coalesce::cluster_pairs> fresh({.cutoff = 1.2, .skin = 0.3, .half = half});
    fresh.build(w, &Atom64::pos, b);
    CHECK(list.rows_on_host() == fresh.rows_on_host());
    CHECK(list.entries() == fresh.entries());
    CHECK(list.candidates() == fresh.candidates());
    std::vector<Atom> as_float(n);
    for (std::size_t i = 0; i < n; ++i) {
      as_float[i] = {
          {static_cast<float>(moved[i].pos.x), static_cast<float>(moved[i].pos.y), static_cast<float>(moved[i].pos.z)},
          1.0f};
    }
    coalesce::device_vector<Atom> f(as_float);
    CHECK_THROWS_WITH_AS(list.refill(f, &Atom::pos, b), doctest::Contains("build() it from these"), coalesce::error);
  }
}

TEST_CASE("a graph condition outside a capture is refused with what to do") {
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_THROWS_WITH_AS((void)coalesce::make_graph_condition(s), doctest::Contains("cudaStreamBeginCapture"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::capture_if(s, coalesce::graph_condition{}, [] {}), doctest::Contains("not capturing"),
                       coalesce::error);
  check_cuda(cudaStreamDestroy(s));
}
