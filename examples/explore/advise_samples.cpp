// coalesce-explore --advise: the layout advisor on the samples' own kernels, counted on the CPU:
// the neighbour sample's pair force (a gather through a column-major list) on a system in random
// order and after a Hilbert reorder, and the integrator step, alone and as a mix.
#include "advise_samples.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include <coalesce/coalesce.hpp>

#include "neighbor_reorder/host_system.hpp"

namespace ca = coalesce::analysis;

namespace {

using neighbor_reorder::Particle;

std::vector<std::string> const names = {"Particle::pos", "Particle::vel", "Particle::mass", "Particle::id"};

ca::access_trace count_forces(neighbor_reorder::host_system const& s, std::string name) {
  // The list and the counts counted too: their loads share the caches with the positions.
  ca::counted<std::uint32_t> const list(s.list, "neighbour list"), counts(s.counts, "counts");
  return ca::count_accesses<Particle>(std::move(name), s.particles, [&](auto v, std::size_t i) {
    (void)neighbor_reorder::pair_force(v, list, counts, s.n, s.box, i);
  });
}

ca::access_trace count_integrate(neighbor_reorder::host_system const& s) {
  return ca::count_accesses<Particle>("integrate", s.particles,
                                      [](auto v, std::size_t i) { neighbor_reorder::integrate_one(v, i, 0.01f); });
}

}  // namespace

int advise_samples(ca::device_model const& model, bool json, std::size_t particles, std::size_t system) {
  auto const random = neighbor_reorder::make_host_system(particles);
  auto const sorted = neighbor_reorder::hilbert_ordered(random);
  // What the advisor itself costs (the system's construction above is the sample's, not its).
  using clock = std::chrono::steady_clock;
  auto const seconds = [](clock::time_point from) {
    return std::chrono::duration<double>(clock::now() - from).count();
  };
  auto const counting = clock::now();
  auto forces_random = count_forces(random, "forces (random order)");
  double const count_s = seconds(counting);
  auto forces_sorted = count_forces(sorted, "forces (Hilbert order)");
  auto integrate = count_integrate(random);
  // A sample larger than ca::window_from is counted on a window of it, standing for itself (the
  // trace says so: counted_from); a smaller one stands for `system`.
  for (auto* trace : {&forces_random, &forces_sorted, &integrate})
    if (trace->counted_from == 0) trace->system_elements = system;
  struct scenario {
    char const* title;
    ca::advice advice;
  };
  auto const advising = clock::now();
  auto first_advice = ca::advise<Particle>({{forces_random, 1.0}}, names, model);
  double const advise_s = seconds(advising);
  scenario const scenarios[] = {
      {"neighbour forces, random order", std::move(first_advice)},
      {"neighbour forces, after a Hilbert reorder", ca::advise<Particle>({{forces_sorted, 1.0}}, names, model)},
      {"integrator step alone", ca::advise<Particle>({{integrate, 1.0}}, names, model)},
      {"a step: forces once (Hilbert order), integrate twice",
       ca::advise<Particle>({{forces_sorted, 1.0}, {integrate, 2.0}}, names, model)},
  };
  if (json) {
    std::cout << "{\"particles\": " << particles << ", \"scenarios\": [";
    for (std::size_t k = 0; k < std::size(scenarios); ++k) {
      std::cout << (k ? ", " : "") << "{\"title\": \"" << scenarios[k].title
                << "\", \"advice\": " << ca::to_json(scenarios[k].advice) << "}";
    }
    std::cout << "]}\n";
    return 0;
  }
  std::printf(
      "The layout advisor on the samples' kernels (%zu threads counted on the CPU for a system of %zu;\n"
      "neighbor_reorder's pair_force and the integrator step, the same source that runs on the GPU)\n",
      forces_random.threads, forces_random.system_elements);
  std::printf("Advisor's cost here: counting the random-order forces %.2f s, advise() over its %zu candidates %.2f s\n",
              count_s, scenarios[0].advice.ranking.size(), advise_s);
  for (auto const& s : scenarios) std::cout << "\n== " << s.title << "\n" << ca::describe(s.advice);
  return 0;
}
