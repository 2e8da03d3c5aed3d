// coalesce/analysis/counted_list.hpp - a library neighbour list (verlet_list, every format) read
// inside analysis::count_accesses: its arrays' loads are counted beside the particles', so the
// advisor predicts what a traversal moves per format (list bytes + gathered bytes) and ranks
// formats (rank_formats below).
//
//   namespace ca = coalesce::analysis;
//   std::vector<Particle> const& sample = legacy;                      // a sample, in its order
//   coalesce::host_vector<Particle> particles(sample);
//   coalesce::verlet_list<coalesce::csr, coalesce::host> list({.cutoff = 1.0, .skin = 0.2});
//   list.build(particles, &Particle::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}});
//   ca::counted_list<coalesce::csr> const nl(list);
//   auto t = ca::count_accesses<Particle>("forces", sample, [&](auto v, std::size_t i) {
//     coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) { float m = v[j][&Particle::mass]; (void)m; });
//   });
//
// What is counted is what the GPU traversal of the format loads: a padded row's count and slots,
// a CSR row's two offsets and entries; for clusters, what the warp tile (neighbors/cluster_tile.hpp)
// loads: each lane one candidate's point per chunk of 32 and the runs it walks, plus the distance
// tests, which are compute and are timed as such (access_trace::pair_tests,
// device_model::pair_tests_per_ns). The neighbours visited are the list's own.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../neighbors/clusters.hpp"
#include "../neighbors/verlet_list.hpp"
#include "advisor.hpp"

namespace coalesce::analysis {

template <class Format> class counted_list {
 public:
  explicit counted_list(verlet_list<Format, host> const& list) : ref_(list.view()) {
    std::size_t const n = ref_.size();
    if constexpr (std::is_same_v<Format, csr>) {
      offsets_ = counted<std::uint32_t>(std::span(ref_.offsets, n + 1), "list offsets");
      indices_ = counted<std::uint32_t>(std::span(ref_.indices, ref_.offsets[n]), "list entries");
    } else if constexpr (std::is_same_v<Format, clusters>) {
      std::size_t const c = detail::cluster_count_of(n);
      offsets_ = counted<std::uint32_t>(std::span(ref_.run_offsets, c + 1), "cluster run offsets");
      indices_ = counted<std::uint32_t>(std::span(ref_.runs, 2 * std::size_t{ref_.run_offsets[c]}), "cluster runs");
      if (ref_.points32 == nullptr) {
        detail::throw_error("analysis::counted_list<clusters>: the list holds double positions; count with float ones");
      }
      points_ = counted<detail::point4<float>>(std::span(ref_.points32, n), "cluster points");
    } else {
      offsets_ = counted<std::uint32_t>(std::span(ref_.counts, n), "list counts");
      indices_ = counted<std::uint32_t>(std::span(ref_.indices, n * ref_.width), "list slots");
    }
  }
  std::size_t size() const { return ref_.size(); }
  verlet_list_ref<Format> const& ref() const { return ref_; }
  counted<std::uint32_t> const& offsets() const { return offsets_; }  // counts, offsets or run offsets
  counted<std::uint32_t> const& indices() const { return indices_; }  // slots, entries or runs
  counted<detail::point4<float>> const& points() const { return points_; }

 private:
  verlet_list_ref<Format> ref_;
  counted<std::uint32_t> offsets_{std::span<std::uint32_t const>{}, ""};
  counted<std::uint32_t> indices_{std::span<std::uint32_t const>{}, ""};
  counted<detail::point4<float>> points_{std::span<detail::point4<float> const>{}, ""};
};

// One neighbour-list format's prediction: the same kernel counted over that format's counted_list.
struct format_prediction {
  std::string format;
  layout_prediction prediction;
};
struct format_use {
  std::string format;
  access_trace const* trace = nullptr;
};

// Ranks list formats for one element layout, the fastest predicted time first (ties keep the
// order given). A format's time is the slowest of its bytes at each cache level and its tests.
template <class T, class Layout>
std::vector<format_prediction> rank_formats(std::vector<format_use> const& uses,
                                            device_model const& model = device_model::hopper()) {
  std::vector<format_prediction> out;
  for (auto const& u : uses) {
    if (u.trace == nullptr) detail::throw_error("rank_formats: format '" + u.format + "' has no counted kernel");
    kernel_use const use(*u.trace);
    out.push_back({u.format, predict<T, Layout>(std::span<kernel_use const>(&use, 1), model)});
  }
  std::stable_sort(out.begin(), out.end(), [](format_prediction const& a, format_prediction const& b) {
    return a.prediction.weighted_time_ps < b.prediction.weighted_time_ps;
  });
  return out;
}

}  // namespace coalesce::analysis

namespace coalesce::detail {
// The cluster format as the warp tile loads it: lane i % 32 loads candidate i % 32 of every chunk
// of the cluster's candidate stream (walking the runs from the chunk's start); the bodies of the
// neighbours in a chunk follow its load.
template <class Body>
void count_cluster_traversal(analysis::counted_list<clusters> const& list, std::size_t i, Body& body) {
  auto const& ref = list.ref();
  std::vector<std::uint32_t> hits;  // the list's own neighbours of i, ascending
  auto collect = [&](std::uint32_t j) { hits.push_back(j); };
  ref.visit(i, collect);
  std::size_t const c = i / clusters::cluster_size, lane = i % clusters::cluster_size;
  std::uint32_t r = list.offsets()[c];
  std::uint32_t const last_run = list.offsets()[c + 1];
  auto const first = [&](std::uint32_t k) -> std::size_t { return list.indices()[2 * std::size_t{k}]; };
  auto const end = [&](std::uint32_t k) -> std::size_t { return list.indices()[2 * std::size_t{k} + 1]; };
  std::size_t o = 0;
  if (ref.half) {
    std::size_t const cluster_begin = c * clusters::cluster_size;
    while (r < last_run && end(r) <= cluster_begin) ++r;
    if (r < last_run && first(r) < cluster_begin) o = cluster_begin - first(r);
  }
  std::size_t next_hit = 0;
  std::uint64_t tests = 0;
  while (r < last_run) {
    std::uint32_t rr = r;
    std::size_t at = o + lane;
    while (rr < last_run && at >= end(rr) - first(rr)) {
      at -= end(rr) - first(rr);
      ++rr;
    }
    if (rr < last_run) (void)list.points()[first(rr) + at];  // this lane's load of the chunk
    tests += clusters::cluster_size;
    // The chunk's last candidate: its position in the stream is o + 31.
    std::uint32_t lr = r;
    std::size_t last_at = o + clusters::cluster_size - 1;
    while (lr < last_run && last_at >= end(lr) - first(lr)) {
      last_at -= end(lr) - first(lr);
      ++lr;
    }
    std::size_t const chunk_last = lr < last_run ? first(lr) + last_at : SIZE_MAX;
    while (next_hit < hits.size() && hits[next_hit] <= chunk_last) body(hits[next_hit++]);
    o += clusters::cluster_size;
    while (r < last_run && o >= end(r) - first(r)) {
      o -= end(r) - first(r);
      ++r;
    }
  }
  if (counting_state* const state = current_counting()) state->record_pair_tests(tests);
}
}  // namespace coalesce::detail

namespace coalesce {
// The traversal a kernel writes, over a counted list: the same neighbours in the same order as
// for_each_neighbor over the list's view, with the list's loads recorded.
template <class Format, class Body>
void for_each_neighbor(analysis::counted_list<Format> const& list, std::size_t i, Body&& body) {
  if constexpr (std::is_same_v<Format, clusters>) {
    detail::count_cluster_traversal(list, i, body);
  } else if constexpr (std::is_same_v<Format, csr>) {
    std::uint32_t const begin = list.offsets()[i], end = list.offsets()[i + 1];
    for (std::uint32_t e = begin; e < end; ++e) body(list.indices()[e]);
  } else {
    std::uint32_t const n = list.offsets()[i];
    std::size_t const particles = list.size(), width = list.ref().width;
    for (std::uint32_t k = 0; k < n; ++k) {
      body(list.indices()[std::is_same_v<Format, padded_columns> ? k * particles + i : i * width + k]);
    }
  }
}
}  // namespace coalesce
