// coalesce/analysis/counted_list.hpp - a library neighbour list (verlet_list, every format) read
// inside analysis::count_accesses: its arrays' loads are counted beside the particles', so the
// advisor predicts what a traversal moves per format (list bytes + gathered bytes) and ranks
// formats (rank_formats below).
//
//   namespace ca = coalesce::analysis;
//   std::vector<Particle> const& sample = legacy;                      // a sample, in its order
//   coalesce::host_vector<Particle> particles(sample);
//   coalesce::verlet_list<coalesce::csr, coalesce::host> list({.cutoff = 1.0, .skin = 0.2});
//   list.build(particles, &Particle::pos, coalesce::box{.lo = {0, 0, 0}, .hi = {10, 10, 10}, .edges = coalesce::boundary::open});
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

// A host verlet_list as count_accesses sees it: the list's rows and neighbours, with the loads of
// the format's GPU traversal recorded (for_each_neighbor over it; list_traits below). It keeps the
// list's view: the list must outlive it and not be rebuilt while it is read.
template <class Format> class counted_list {
 public:
  // Over a built host list of any format; a clusters list must hold float positions (throws
  // coalesce::error otherwise).
  explicit counted_list(verlet_list<Format, host> const& list) : ref_(list.view()) {
    auto const a = detail::list_format_ops<Format>::template arrays<detail::point4<float>>(ref_);
    arrays_.offsets = counted<std::uint32_t>(a.offsets, a.offsets_name);
    arrays_.indices = counted<std::uint32_t>(a.indices, a.indices_name);
    arrays_.points = counted<detail::point4<float>>(a.points, a.points_name);
  }
  std::size_t size() const { return ref_.size(); }             // rows: the particles the list was built over
  verlet_list_ref<Format> const& ref() const { return ref_; }  // the list's own view (reads through it are not counted)
  // The format's arrays, each read through analysis::counted (list_format.hpp's list_arrays).
  struct counted_arrays {
    counted<std::uint32_t> offsets{std::span<std::uint32_t const>{}, ""};  // counts, offsets or run offsets
    counted<std::uint32_t> indices{std::span<std::uint32_t const>{}, ""};  // slots, entries or runs
    counted<detail::point4<float>> points{std::span<detail::point4<float> const>{}, ""};  // clusters: positions
  };
  counted_arrays const& arrays() const { return arrays_; }  // what the counted traversal reads

 private:
  verlet_list_ref<Format> ref_;
  counted_arrays arrays_;
};

// One neighbour-list format's prediction: the same kernel counted over that format's counted_list.
struct format_prediction {
  std::string format;            // the name format_use gave it
  layout_prediction prediction;  // the kernel over that format, under the ranked layout
};
// A format to rank: a name for it and the kernel counted over that format's counted_list.
struct format_use {
  std::string format;                   // "csr", "clusters", ...: printed as given
  access_trace const* trace = nullptr;  // not owned; rank_formats throws coalesce::error when null
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

namespace coalesce {
// A counted list is a neighbour list to the traversal (list_traits.hpp): its rows are the list's own,
// visited in the same order, and its for_each makes the loads the GPU traversal of the format makes
// (the format's counted_traversal), with the distance tests recorded as compute.
template <class Format> struct list_traits<analysis::counted_list<Format>> {
  using list = analysis::counted_list<Format>;                 // the list type these traits are for
  static std::size_t size(list const& l) { return l.size(); }  // rows
  // Neighbours of row i, read without recording a load.
  static std::uint32_t count(list const& l, std::size_t i) { return l.ref().count(i); }
  // The k-th neighbour of row i, read without recording a load.
  static std::uint32_t neighbor(list const& l, std::size_t i, std::uint32_t k) { return l.ref().neighbor(i, k); }
  // body(j) for every neighbour j of row i, recording the traversal's loads and distance tests.
  template <class Body> static void for_each(list const& l, std::size_t i, Body& body) {
    detail::list_format_ops<Format>::counted_traversal(l.ref(), l.arrays(), i, body, [](std::uint64_t tests) {
      if (detail::counting_state* const state = detail::current_counting()) state->record_pair_tests(tests);
    });
  }
};
}  // namespace coalesce
