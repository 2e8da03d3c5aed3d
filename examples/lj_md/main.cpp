// lj_md: Lennard-Jones molecular dynamics as a user writes it on coalesce. LAMMPS's bench/in.lj
// state: an fcc lattice at reduced density 0.8442, velocities for temperature 1.44, cutoff 2.5,
// skin 0.3, time step 0.005, NVE velocity Verlet. The library builds the neighbour list (any format),
// sorts the particles into the list's order at each rebuild, decides rebuilds by the displacement
// criterion (skin / 2), and runs the pair loop over the user's pair law (compute_pairs). Thermo
// output (temperature, potential, total energy, pressure) every --thermo steps; at the end the time
// per step and its parts, and the energy drift. GPU memory when built with CUDA, host memory otherwise
// (or with --host).
//   usage: lj_md [--cells C] [--steps S] [--thermo T] [--format cluster_pairs|padded_columns] [--host]
//                [--max-drift D]
// Exit status 1 when the total energy drifts by more than --max-drift per particle (default 5e-3 in
// units of epsilon) from the first thermo step to the last, or goes NaN; 77 when a GPU build finds no GPU.
#include <coalesce/coalesce.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace {

struct vec3 {
  float x, y, z;
};
struct Atom {
  vec3 pos;
  vec3 vel;
  vec3 force;
};

// The pair law, written once (the engine runs it on every list format, host and GPU).
struct lennard_jones {
  struct param_type {
    float epsilon, sigma2;
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const r2i = coalesce::fast_reciprocal(r2);  // one instruction, no branch around a slow path
    float const s2 = q.sigma2 * r2i, s6 = s2 * s2 * s2;
    return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) * r2i, 4.f * q.epsilon * s6 * (s6 - 1.f)};
  }
};

struct options {
  int cells = 10;  // fcc unit cells per side: 4 cells^3 atoms
  int steps = 1000;
  int thermo = 100;
  std::string format = "cluster_pairs";
  bool host = !coalesce::device_is_gpu;
  double max_drift = 5e-3;
};

options parse(int argc, char** argv) {
  options o;
  for (int a = 1; a < argc; ++a) {
    std::string const arg = argv[a];
    auto value = [&] {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "lj_md: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::string(argv[++a]);
    };
    if (arg == "--cells")
      o.cells = std::stoi(value());
    else if (arg == "--steps")
      o.steps = std::stoi(value());
    else if (arg == "--thermo")
      o.thermo = std::stoi(value());
    else if (arg == "--format")
      o.format = value();
    else if (arg == "--host")
      o.host = true;
    else if (arg == "--max-drift")
      o.max_drift = std::stod(value());
    else {
      std::fprintf(stderr, "lj_md: unknown option %s (see the usage at the top of main.cpp)\n", arg.c_str());
      std::exit(2);
    }
  }
  if (o.cells < 3 || o.steps < 1 || o.thermo < 1 || (o.format != "cluster_pairs" && o.format != "padded_columns")) {
    std::fprintf(stderr,
                 "lj_md: --cells >= 3 (the box must hold twice the reach), --steps and --thermo >= 1, "
                 "--format cluster_pairs or padded_columns\n");
    std::exit(2);
  }
  return o;
}

// The fcc lattice at density 0.8442 and Maxwell-Boltzmann velocities at temperature 1.44, no net momentum.
std::vector<Atom> lattice(int cells, float& length) {
  double const a = std::cbrt(4.0 / 0.8442);
  length = static_cast<float>(cells * a);
  double const basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
  std::vector<Atom> atoms;
  std::mt19937 rng(12345);
  std::normal_distribution<double> gauss(0, 1);
  for (int z = 0; z < cells; ++z)
    for (int y = 0; y < cells; ++y)
      for (int x = 0; x < cells; ++x)
        for (auto const& b : basis) {
          Atom at{};
          at.pos = {static_cast<float>((x + b[0]) * a), static_cast<float>((y + b[1]) * a),
                    static_cast<float>((z + b[2]) * a)};
          at.vel = {static_cast<float>(gauss(rng)), static_cast<float>(gauss(rng)), static_cast<float>(gauss(rng))};
          atoms.push_back(at);
        }
  double momentum[3] = {0, 0, 0}, twice_kinetic = 0;
  for (auto const& at : atoms) momentum[0] += at.vel.x, momentum[1] += at.vel.y, momentum[2] += at.vel.z;
  for (auto& at : atoms) {
    at.vel.x -= static_cast<float>(momentum[0] / atoms.size());
    at.vel.y -= static_cast<float>(momentum[1] / atoms.size());
    at.vel.z -= static_cast<float>(momentum[2] / atoms.size());
    twice_kinetic += double(at.vel.x) * at.vel.x + double(at.vel.y) * at.vel.y + double(at.vel.z) * at.vel.z;
  }
  double const scale = std::sqrt(1.44 * 3.0 * (atoms.size() - 1) / twice_kinetic);
  for (auto& at : atoms) at.vel = {float(at.vel.x * scale), float(at.vel.y * scale), float(at.vel.z * scale)};
  return atoms;
}

struct thermo_state {
  double kinetic = 0, temperature = 0;
};

template <class Particles> thermo_state kinetic_of(Particles const& d) {
  std::vector<Atom> host(d.size());
  d.copy_to(std::span<Atom>(host));
  thermo_state t;
  for (auto const& at : host)
    t.kinetic += 0.5 * (double(at.vel.x) * at.vel.x + double(at.vel.y) * at.vel.y + double(at.vel.z) * at.vel.z);
  t.temperature = 2.0 * t.kinetic / (3.0 * (static_cast<double>(host.size()) - 1));
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class Format, class Space> int run(options const& o) {
  float length = 0;
  std::vector<Atom> const atoms = lattice(o.cells, length);
  std::size_t const n = atoms.size();
  coalesce::box const domain{.lo = {0, 0, 0}, .hi = {length, length, length}, .edges = coalesce::boundary::periodic};
  float const cutoff = 2.5f, skin = 0.3f, dt = 0.005f;
  coalesce::vector<Atom, coalesce::soa, Space> d(atoms);
  bool const half = std::is_same_v<Format, coalesce::cluster_pairs>;  // Newton's third law where the engine sums it
  coalesce::verlet_list<Format, Space> list({.cutoff = cutoff, .skin = skin, .half = half});
  coalesce::pair_table<lennard_jones::param_type> table(1);
  table.set(0, 0, {1.f, 1.f}, cutoff);
  coalesce::reorder_plan plan;
  auto rebuild = [&] {
    coalesce::sort_by_key(d, list.cell_keys(d, &Atom::pos, domain, plan), plan);
    list.build(d, &Atom::pos, domain);
  };
  std::printf(
      "lj_md: %zu atoms (fcc, density 0.8442, T 1.44), box %.3f, cutoff %.1f + skin %.1f, dt %.3f, %s list "
      "(%s), %s memory\n",
      n, length, cutoff, skin, dt, half ? "cluster_pairs" : "padded_columns", half ? "half" : "full",
      std::is_same_v<Space, coalesce::host> ? "host" : "GPU");
  rebuild();
  auto const volume = double(length) * length * length;
  coalesce::pair_totals sums = coalesce::compute_pairs<&Atom::pos, &Atom::force>(
      d, list.view(d), domain, lennard_jones{}, table, {.energy = true, .virial = true});
  auto thermo_line = [&](int step) {
    thermo_state const t = kinetic_of(d);
    double const pressure = (2.0 * t.kinetic + sums.virial) / (3.0 * volume);
    double const total = (t.kinetic + sums.energy) / static_cast<double>(n);
    std::printf("step %7d  temp %.5f  pe %.6f  etotal %.6f  press %.5f\n", step, t.temperature,
                sums.energy / static_cast<double>(n), total, pressure);
    return total;
  };
  std::printf("%12s  %10s  %10s  %10s  %10s\n", "", "T", "pe/atom", "e/atom", "P");
  double const e0 = thermo_line(0);
  // The drift is measured from the first thermo step on: from the perfect lattice the energy first
  // settles by a few 1e-3 per atom while pairs cross the (unshifted) cutoff, in LAMMPS's log too.
  double e_first = e0, e_last = e0;
  double t_force = 0, t_integrate = 0, t_rebuild = 0;
  int rebuilds = 0;
  auto v = d.view();
  auto const start = std::chrono::steady_clock::now();
  for (int step = 1; step <= o.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    // first half kick and drift; positions wrapped into the box
    coalesce::for_each_index(Space{}, n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
      auto a = v[i];
      vec3 vel = a[&Atom::vel], f = a[&Atom::force], x = a[&Atom::pos];
      vel = {vel.x + 0.5f * dt * f.x, vel.y + 0.5f * dt * f.y, vel.z + 0.5f * dt * f.z};
      x = {x.x + dt * vel.x, x.y + dt * vel.y, x.z + dt * vel.z};
      x.x -= length * floorf(x.x / length);
      x.y -= length * floorf(x.y / length);
      x.z -= length * floorf(x.z / length);
      a[&Atom::vel] = vel;
      a[&Atom::pos] = x;
    });
    coalesce::synchronize(coalesce::default_stream);
    t_integrate += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    if (list.needs_rebuild(d, &Atom::pos)) {
      rebuild();
      v = d.view();
      ++rebuilds;
    }
    t_rebuild += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    bool const report = step % o.thermo == 0 || step == o.steps;
    sums = coalesce::compute_pairs<&Atom::pos, &Atom::force>(d, list.view(d), domain, lennard_jones{}, table,
                                                             {.energy = report, .virial = report});
    t_force += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    coalesce::for_each_index(Space{}, n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
      auto a = v[i];
      vec3 vel = a[&Atom::vel], f = a[&Atom::force];
      a[&Atom::vel] = vec3{vel.x + 0.5f * dt * f.x, vel.y + 0.5f * dt * f.y, vel.z + 0.5f * dt * f.z};
    });
    coalesce::synchronize(coalesce::default_stream);
    t_integrate += seconds_since(t0);
    if (report) e_last = thermo_line(step);
    if (report && step == o.thermo) e_first = e_last;
  }
  double const total_s = seconds_since(start);
  double const drift = e_last - e_first;
  std::printf(
      "time per step %.4f ms: force %.4f, integrate %.4f, rebuild check + rebuilds %.4f (%d rebuilds, one "
      "per %.1f steps); thermo output in the rest\n",
      1e3 * total_s / o.steps, 1e3 * t_force / o.steps, 1e3 * t_integrate / o.steps, 1e3 * t_rebuild / o.steps,
      rebuilds, rebuilds ? double(o.steps) / rebuilds : 0.0);
  std::printf("energy drift from step %d to %d: %.3e per atom (%.6f to %.6f); list %.1f bytes per atom\n",
              std::min(o.thermo, o.steps), o.steps, drift, e_first, e_last, double(list.bytes()) / n);
  if (!std::isfinite(drift) || std::abs(drift) > o.max_drift) {
    std::printf("FAILED: the total energy drifted by more than %.1e per atom\n", o.max_drift);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options const o = parse(argc, argv);
  try {
    if (o.host) {
      return o.format == "cluster_pairs" ? run<coalesce::cluster_pairs, coalesce::host>(o)
                                         : run<coalesce::padded_columns, coalesce::host>(o);
    }
#if COALESCE_WITH_CUDA
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      std::printf("SKIPPED: no GPU visible (run with --host for the host-memory run)\n");
      return 77;
    }
#endif
    return o.format == "cluster_pairs" ? run<coalesce::cluster_pairs, coalesce::device>(o)
                                       : run<coalesce::padded_columns, coalesce::device>(o);
  } catch (coalesce::error const& e) {
    std::fprintf(stderr, "lj_md: %s\n", e.what());
    return 1;
  }
}
