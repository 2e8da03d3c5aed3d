// How long the layout advisor takes (a CPU benchmark: the advisor runs on the host). A neighbour-force
// kernel counted over every thread of a system (threads = n, no window), through a padded
// column-major list, in random particle order and after a Hilbert reorder: the case a user brings
// (an unsorted code first). Prints seconds for the count and for advise(), accesses, threads and the
// recommendation, so that a change to the cache model's replay is timed on the same input.
//
//   advisor_time [--n 73728] [--density 18.6] [--slots 128] [--json FILE]   (FILE: both advices, whole)
// Defaults: 73,728 threads, ~78 neighbours within the cutoff in a 128-slot list: 28.7M accesses.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_reorder/host_system.hpp"

namespace ca = coalesce::analysis;
using neighbor_reorder::Particle;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 73728, slots = 128;
  double density = 18.6;
  std::string json;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--n"))
      n = std::strtoull(argv[a + 1], nullptr, 10);
    else if (!std::strcmp(argv[a], "--slots"))
      slots = std::strtoull(argv[a + 1], nullptr, 10);
    else if (!std::strcmp(argv[a], "--density"))
      density = std::strtod(argv[a + 1], nullptr);
    else if (!std::strcmp(argv[a], "--json"))
      json = argv[a + 1];
    else {
      std::fprintf(stderr, "usage: advisor_time [--n N] [--density D] [--slots S] [--json FILE]\n");
      return 2;
    }
  }
  auto const random = neighbor_reorder::make_host_system(n, 5, density, slots);
  auto const sorted = neighbor_reorder::hilbert_ordered(random);
  std::printf("advisor time: %zu threads, %zu-slot column-major list, density %.2f, %u hardware threads\n", n, slots,
              density, std::max(1u, std::thread::hardware_concurrency()));
  std::printf("%-16s %12s %10s %10s  %s\n", "order", "accesses", "count s", "advise s", "recommended");
  std::string all = "[";
  for (auto const* s : {&random, &sorted}) {
    ca::counted<std::uint32_t> const list(s->list, "neighbour list"), counts(s->counts, "counts");
    auto const t0 = std::chrono::steady_clock::now();
    auto trace = ca::count_accesses<Particle>(
        "forces", std::span<Particle const>(s->particles),
        [&](auto v, std::size_t i) { (void)neighbor_reorder::pair_force(v, list, counts, s->n, s->box, i); }, s->n);
    double const count_s = seconds_since(t0);
    trace.system_elements = 4'194'304;
    auto const t1 = std::chrono::steady_clock::now();
    auto const advice = ca::advise<Particle>({{trace, 1.0}});
    double const advise_s = seconds_since(t1);
    std::printf("%-16s %12zu %10.2f %10.2f  %s\n", s == &random ? "random" : "Hilbert", trace.accesses.size(), count_s,
                advise_s, advice.best().cpp_type.c_str());
    all += (s == &random ? "" : ", ") + ca::to_json(advice);
  }
  if (!json.empty()) {
    std::FILE* f = std::fopen(json.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "advisor_time: cannot write %s\n", json.c_str());
      return 1;
    }
    std::fprintf(f, "%s]\n", all.c_str());
    std::fclose(f);
  }
  return 0;
}
