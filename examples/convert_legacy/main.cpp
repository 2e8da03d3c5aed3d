// convert_legacy: a legacy AoS particle code (steps/step0_legacy.hpp) migrated to coalesce in
// small steps, each in its own file. Every step runs the same simulation; the program checks
// that each gives bit-identical particles and energy to the legacy code, times every kernel of
// every step, and counts the lines each step changed. The step files repeat one another on
// purpose: each is the whole program after its step, so the difference between neighbours is
// exactly what a user edits (a shared helper would hide it).
//
//   convert_legacy [--side s] [--steps k] [--json file]      (side^3 particles)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/bench_timer.hpp"
#include "common/kernel_timer.hpp"
#include "line_diff.hpp"
#include "steps/step0_legacy.hpp"
#include "steps/step1_wrap_aos_view.hpp"
#include "steps/step2_port_kernels.hpp"
#include "steps/step3_own_the_data.hpp"
#include "steps/step4_flip_to_soa.hpp"
#include "steps/step5_reorder.hpp"
#include "steps/step6_split_positions.hpp"

namespace {

struct step_info {
  char const* file;
  char const* what;
  std::function<legacy::result(legacy::world const&, int, float, bench::kernel_timer&)> run;
};

std::vector<step_info> const steps = {
    {"step0_legacy.hpp", "legacy AoS code, raw pointers", step0::run},
    {"step1_wrap_aos_view.hpp", "wrap the array as an aos view, port 1 kernel", step1::run},
    {"step2_port_kernels.hpp", "port every kernel to the view (still AoS)", step2::run},
    {"step3_own_the_data.hpp", "device_vector<..., aos> owns it; AoS at the edges", step3::run},
    {"step4_flip_to_soa.hpp", "flip the layout to soa (one type)", step4::run},
    {"step5_reorder.hpp", "sort along a Hilbert curve, remap the neighbour list", step5::run},
    {"step6_split_positions.hpp", "split: packed positions, other fields as columns", step6::run},
};

char const* const kernels[] = {"forces (gather)", "integrate", "boundary", "kinetic energy"};

// Same particles, compared by id (a reorder changes the storage order, nothing else), and the
// same kinetic energy: bit for bit in storage order; for a reordered run, the double-precision
// sum of the same per-particle floats in another order, within 1e-12.
bool identical(legacy::result const& a, legacy::result const& b) {
  if (a.particles.size() != b.particles.size()) return false;
  auto by_id = [](std::vector<legacy::Particle> p) {
    std::sort(p.begin(), p.end(), [](auto const& x, auto const& y) { return x.id < y.id; });
    return p;
  };
  bool const same_order =
      std::memcmp(a.particles.data(), b.particles.data(), a.particles.size() * sizeof(legacy::Particle)) == 0;
  if (same_order) return a.kinetic_energy == b.kinetic_energy;
  auto const x = by_id(a.particles), y = by_id(b.particles);
  return std::memcmp(x.data(), y.data(), x.size() * sizeof(legacy::Particle)) == 0 &&
         std::abs(a.kinetic_energy - b.kinetic_energy) <= 1e-12 * std::abs(b.kinetic_energy);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t side = coalesce::device_is_gpu ? 160 : 40;
  int sim_steps = 10;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string const arg = argv[i];
    if (i + 1 < argc && arg == "--side") {
      side = std::stoul(argv[++i]);
    } else if (i + 1 < argc && arg == "--steps") {
      sim_steps = std::stoi(argv[++i]);
    } else if (i + 1 < argc && arg == "--json") {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: convert_legacy [--side s] [--steps k] [--json file]\n");
      return 2;
    }
  }
  if (side < 3 || sim_steps < 1) {
    std::fprintf(stderr, "--side must be at least 3 and --steps at least 1\n");
    return 2;
  }
  if (bench::gpu_missing()) return bench::skipped;

  auto const w = legacy::make_world(side);
  float const dt = 0.001f;
  std::printf("convert_legacy on %s: %zu particles (48-byte records), 26 neighbours each, %d steps\n",
              bench::device_name(), w.particles.size(), sim_steps);

  std::vector<bench::kernel_timer> timers(steps.size());
  std::vector<legacy::result> results;
  int failures = 0;
  try {
    for (std::size_t s = 0; s < steps.size(); ++s) {
      results.push_back(steps[s].run(w, sim_steps, dt, timers[s]));
      bool const same = identical(results[s], results[0]);
      failures += !same;
      std::printf("  step %zu: %-52s %s\n", s, steps[s].what,
                  s == 0 ? "(reference)"
                  : same ? "same particles"
                         : "DIFFERENT");
    }
  } catch (coalesce::error const& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }

  std::printf("\nlines changed from the previous step (ignoring the step's title and namespace):\n");
  std::vector<convert_legacy::line_changes> changed(steps.size());
  for (std::size_t s = 1; s < steps.size(); ++s) {
    changed[s] = convert_legacy::changed_lines(std::string(COALESCE_STEPS_DIR) + "/" + steps[s - 1].file,
                                               std::string(COALESCE_STEPS_DIR) + "/" + steps[s].file);
    std::printf("  step %zu: -%zu +%zu lines\n", s, changed[s].removed, changed[s].added);
  }

  std::printf("\nmedian ms per call (ratio to the legacy step 0 in brackets):\n%-18s", "kernel");
  for (std::size_t s = 0; s < steps.size(); ++s) std::printf("   step %zu        ", s);
  std::printf("\n");
  for (char const* k : kernels) {
    std::printf("%-18s", k);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      std::printf(" %8.3f (%5.2f) ", timers[s].median(k), timers[s].median(k) / timers[0].median(k));
    }
    std::printf("\n");
  }
  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\n  \"device\": \"" << bench::device_name() << "\",\n  \"particles\": " << w.particles.size()
        << ",\n  \"steps\": [\n";
    for (std::size_t s = 0; s < steps.size(); ++s) {
      out << "    {\"step\": " << s << ", \"what\": \"" << steps[s].what
          << "\", \"lines_removed\": " << changed[s].removed << ", \"lines_added\": " << changed[s].added
          << ", \"identical\": " << (identical(results[s], results[0]) ? "true" : "false") << ", \"ms\": {";
      for (std::size_t k = 0; k < std::size(kernels); ++k) {
        out << (k ? ", " : "") << "\"" << kernels[k] << "\": " << timers[s].median(kernels[k]);
      }
      out << "}}" << (s + 1 < steps.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
  }
  if (failures) {
    std::printf("FAILED: %d steps differ from the legacy code\n", failures);
    return 1;
  }
  return 0;
}
