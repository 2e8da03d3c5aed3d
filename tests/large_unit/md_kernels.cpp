// A realistic CPU translation unit: a Lennard-Jones MD code in the shape outside OpenMP codes
// have (ten kernel templates, half neighbour lists with Newton's third law and `omp atomic`
// updates of the partner's force, the whole time loop inside one `#pragma omp parallel` with
// orphaned `omp for` loops), instantiated for soa, aos, aosoa<8> and split layouts in one file.
//
// Why it exists: inlining that holds in a small file can fail in a large one. g++ stops inlining
// plain functions once a unit grows past `inline-unit-growth`; when that hit the access chain of
// v[i][&T::m], every member access became a call (4.5x slower). check_calls.py reads this
// program's machine code and fails on any call left in a kernel. Run, it also checks that every
// layout computes the trajectory of the hand-written code it replaces (separate padded double
// arrays, in namespace raw: energies equal to 1e-9 relative), so it cannot pass as dead code,
// and prints each layout's time (whole loop and force kernels) against that code's, measured in
// the same run: the CPU benchmark of docs/performance.md
//   (OMP_NUM_THREADS=2 build/rel/tests/large_unit/coalesce_large_unit 51 100: 132,651 atoms).
#include <coalesce/coalesce.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace large_unit {

struct dvec3 {
  double x, y, z;
};
struct Atom {
  dvec3 x;
  dvec3 v;
  dvec3 f;
  int type;
  double mass;
};

struct system_box {
  double length;
};
struct half_list {  // CSR: the neighbours j > i of atom i
  std::vector<int> offsets;
  std::vector<int> neighbors;
};
struct lj {
  double cutoff2 = 2.5 * 2.5, epsilon = 1.0, sigma6 = 1.0;
};

// Kernels stay functions of their own (as in the code this is modelled on), so that the check
// sees each one's machine code apart from the time loop's bookkeeping.
#define LARGE_UNIT_KERNEL __attribute__((noinline))

inline double minimum_image(double d, double length) { return d - length * std::nearbyint(d / length); }

// --- the ten kernels, as a user writes them (orphaned `omp for` inside one parallel region) ---

template <class V> LARGE_UNIT_KERNEL void zero_forces(V v) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i][&Atom::f] = dvec3{0, 0, 0};
  }
}

template <class V> LARGE_UNIT_KERNEL void lj_half_forces(V v, half_list const& nl, lj const& p, double length) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    double const xi = v[i][&Atom::x][&dvec3::x], yi = v[i][&Atom::x][&dvec3::y], zi = v[i][&Atom::x][&dvec3::z];
    double fx = 0, fy = 0, fz = 0;
    for (int k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
      std::size_t const j = static_cast<std::size_t>(nl.neighbors[static_cast<std::size_t>(k)]);
      double const dx = minimum_image(xi - v[j][&Atom::x][&dvec3::x], length);
      double const dy = minimum_image(yi - v[j][&Atom::x][&dvec3::y], length);
      double const dz = minimum_image(zi - v[j][&Atom::x][&dvec3::z], length);
      double const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < p.cutoff2) {
        double const r2i = 1.0 / r2, r6i = r2i * r2i * r2i * p.sigma6;
        double const s = 48.0 * p.epsilon * r6i * (r6i - 0.5) * r2i;
        fx += s * dx;
        fy += s * dy;
        fz += s * dz;
#pragma omp atomic
        v[j][&Atom::f][&dvec3::x] -= s * dx;
#pragma omp atomic
        v[j][&Atom::f][&dvec3::y] -= s * dy;
#pragma omp atomic
        v[j][&Atom::f][&dvec3::z] -= s * dz;
      }
    }
#pragma omp atomic
    v[i][&Atom::f][&dvec3::x] += fx;
#pragma omp atomic
    v[i][&Atom::f][&dvec3::y] += fy;
#pragma omp atomic
    v[i][&Atom::f][&dvec3::z] += fz;
  }
}

template <class V> LARGE_UNIT_KERNEL void initial_integrate(V v, double dt) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto [x, vel, f, type, mass] = v[i];
    double const h = 0.5 * dt / mass;
    auto [vx, vy, vz] = vel;
    auto [fx, fy, fz] = f;
    vx += h * fx;
    vy += h * fy;
    vz += h * fz;
    x[&dvec3::x] += dt * vx;
    x[&dvec3::y] += dt * vy;
    x[&dvec3::z] += dt * vz;
  }
}

template <class V> LARGE_UNIT_KERNEL void final_integrate(V v, double dt) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    double const h = 0.5 * dt / v[i][&Atom::mass];
    v[i][&Atom::v][&dvec3::x] += h * v[i][&Atom::f][&dvec3::x];
    v[i][&Atom::v][&dvec3::y] += h * v[i][&Atom::f][&dvec3::y];
    v[i][&Atom::v][&dvec3::z] += h * v[i][&Atom::f][&dvec3::z];
  }
}

template <class V> LARGE_UNIT_KERNEL void wrap_positions(V v, double length) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto [x, y, z] = v[i][&Atom::x];
    x -= length * std::floor(x / length);
    y -= length * std::floor(y / length);
    z -= length * std::floor(z / length);
  }
}

template <class V> LARGE_UNIT_KERNEL double kinetic_energy(V v, double& shared) {
#pragma omp single
  shared = 0;
  double local = 0;
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    dvec3 const u = v[i][&Atom::v];
    local += 0.5 * v[i][&Atom::mass] * (u.x * u.x + u.y * u.y + u.z * u.z);
  }
#pragma omp atomic
  shared += local;
#pragma omp barrier
  return shared;
}

template <class V>
LARGE_UNIT_KERNEL double potential_energy(V v, half_list const& nl, lj const& p, double length, double& shared) {
#pragma omp single
  shared = 0;
  double local = 0;
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    for (int k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
      std::size_t const j = static_cast<std::size_t>(nl.neighbors[static_cast<std::size_t>(k)]);
      double const dx = minimum_image(v[i][&Atom::x][&dvec3::x] - v[j][&Atom::x][&dvec3::x], length);
      double const dy = minimum_image(v[i][&Atom::x][&dvec3::y] - v[j][&Atom::x][&dvec3::y], length);
      double const dz = minimum_image(v[i][&Atom::x][&dvec3::z] - v[j][&Atom::x][&dvec3::z], length);
      double const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < p.cutoff2) {
        double const r6i = p.sigma6 / (r2 * r2 * r2);
        local += 4.0 * p.epsilon * r6i * (r6i - 1.0);
      }
    }
  }
#pragma omp atomic
  shared += local;
#pragma omp barrier
  return shared;
}

template <class V>
LARGE_UNIT_KERNEL double max_displacement2(V v, std::vector<dvec3> const& reference, double length, double& shared) {
#pragma omp single
  shared = 0;
  double local = 0;
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    double const dx = minimum_image(v[i][&Atom::x][&dvec3::x] - reference[i].x, length);
    double const dy = minimum_image(v[i][&Atom::x][&dvec3::y] - reference[i].y, length);
    double const dz = minimum_image(v[i][&Atom::x][&dvec3::z] - reference[i].z, length);
    local = std::max(local, dx * dx + dy * dy + dz * dz);
  }
#pragma omp critical(large_unit_max)
  shared = std::max(shared, local);
#pragma omp barrier
  return shared;
}

template <class V> LARGE_UNIT_KERNEL void remember_positions(V v, std::vector<dvec3>& reference) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) reference[i] = v[i][&Atom::x];
}

template <class V> LARGE_UNIT_KERNEL void remove_drift(V v, dvec3 const& mean) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto vel = v[i][&Atom::v];
    vel[&dvec3::x] -= mean.x;
    vel[&dvec3::y] -= mean.y;
    vel[&dvec3::z] -= mean.z;
  }
}

template <class V> LARGE_UNIT_KERNEL void scale_types(V v) {  // a for_each_index kernel beside the omp-for ones
  coalesce::for_each_index(coalesce::host{}, v.size(),
                           [=](std::size_t i) { v[i][&Atom::type] = v[i][&Atom::type] % 2; });
}

// --- the host side: lattice, half list from cells, time loop ---

std::vector<Atom> lattice(int per_side, double spacing) {
  std::vector<Atom> out;
  unsigned state = 12345u;
  auto jitter = [&] {
    state = state * 1664525u + 1013904223u;
    return (static_cast<double>(state >> 8) / 16777216.0 - 0.5) * 0.05;
  };
  for (int a = 0; a < per_side; ++a)
    for (int b = 0; b < per_side; ++b)
      for (int c = 0; c < per_side; ++c) {
        Atom atom{};
        atom.x = {(a + 0.5) * spacing + jitter(), (b + 0.5) * spacing + jitter(), (c + 0.5) * spacing + jitter()};
        atom.v = {jitter(), jitter(), jitter()};
        atom.type = (a + b + c) % 3;
        atom.mass = 1.0;
        out.push_back(atom);
      }
  return out;
}

half_list build_half_list(std::vector<Atom> const& atoms, double length, double reach) {
  int const cells = std::max(3, static_cast<int>(length / reach));
  double const width = length / cells;
  std::vector<std::vector<int>> bins(static_cast<std::size_t>(cells * cells * cells));
  auto cell = [&](double x) { return std::min(cells - 1, std::max(0, static_cast<int>(x / width))); };
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    auto const& x = atoms[i].x;
    bins[static_cast<std::size_t>((cell(x.x) * cells + cell(x.y)) * cells + cell(x.z))].push_back(static_cast<int>(i));
  }
  half_list nl;
  nl.offsets.push_back(0);
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    auto const& x = atoms[i].x;
    int const c[3] = {cell(x.x), cell(x.y), cell(x.z)};
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          int const n[3] = {(c[0] + dx + cells) % cells, (c[1] + dy + cells) % cells, (c[2] + dz + cells) % cells};
          for (int j : bins[static_cast<std::size_t>((n[0] * cells + n[1]) * cells + n[2])]) {
            if (j <= static_cast<int>(i)) continue;
            auto const& y = atoms[static_cast<std::size_t>(j)].x;
            double const ex = minimum_image(x.x - y.x, length), ey = minimum_image(x.y - y.y, length),
                         ez = minimum_image(x.z - y.z, length);
            if (ex * ex + ey * ey + ez * ez < reach * reach) nl.neighbors.push_back(j);
          }
        }
    nl.offsets.push_back(static_cast<int>(nl.neighbors.size()));
  }
  return nl;
}

struct energies {
  double kinetic = 0, potential = 0;
  double total_seconds = 0, force_seconds = 0;  // the time loop, and its force kernels (zero + LJ)
};

template <class Layout> energies run(std::vector<Atom> const& start, int steps) {
  double const spacing = 1.2, length = spacing * std::cbrt(static_cast<double>(start.size()));
  double const dt = 0.002, skin = 0.3;
  lj const p;
  coalesce::host_vector<Atom, Layout> atoms(start);
  auto v = atoms.view();
  half_list nl = build_half_list(start, length, std::sqrt(p.cutoff2) + skin);
  std::vector<dvec3> reference(start.size());
  energies e;
  double shared_ke = 0, shared_pe = 0, shared_max = 0;
  bool rebuild = false;
  double force_seconds = 0;
  double const started = omp_get_wtime();
#pragma omp parallel
  {
    remember_positions(v, reference);
    zero_forces(v);
    lj_half_forces(v, nl, p, length);
    for (int step = 0; step < steps; ++step) {
      initial_integrate(v, dt);
      wrap_positions(v, length);
      if (max_displacement2(v, reference, length, shared_max) > 0.25 * skin * skin) {
#pragma omp single
        {
          std::vector<Atom> now(atoms.size());
          atoms.copy_to(std::span<Atom>(now));
          nl = build_half_list(now, length, std::sqrt(p.cutoff2) + skin);
          rebuild = true;
        }
        remember_positions(v, reference);
      }
      double t0 = 0;
#pragma omp master
      t0 = omp_get_wtime();
      zero_forces(v);
      lj_half_forces(v, nl, p, length);  // ends with the loop's barrier
#pragma omp master
      force_seconds += omp_get_wtime() - t0;
      final_integrate(v, dt);
    }
    remove_drift(v, dvec3{0, 0, 0});
    double const ke = kinetic_energy(v, shared_ke);
    double const pe = potential_energy(v, nl, p, length, shared_pe);
#pragma omp single
    {
      e.kinetic = ke;
      e.potential = pe;
    }
  }
  e.total_seconds = omp_get_wtime() - started;
  e.force_seconds = force_seconds;
  scale_types(v);
  (void)rebuild;
  return e;
}

// --- the hand-written code the kernels above replace: separate padded double arrays ---------
// x[i * pad + d], v and f the same, type and mass dense; the same arithmetic, the same time loop.
namespace raw {
constexpr std::size_t pad = 4;
struct arrays {
  std::vector<double> x, v, f, mass;
  std::vector<int> type;
  std::size_t n = 0;
};
arrays from(std::vector<Atom> const& atoms) {
  arrays a;
  a.n = atoms.size();
  a.x.assign(a.n * pad, 0.0), a.v.assign(a.n * pad, 0.0), a.f.assign(a.n * pad, 0.0);
  a.mass.resize(a.n), a.type.resize(a.n);
  for (std::size_t i = 0; i < a.n; ++i) {
    double const* x = &atoms[i].x.x;
    double const* v = &atoms[i].v.x;
    for (std::size_t d = 0; d < 3; ++d) a.x[i * pad + d] = x[d], a.v[i * pad + d] = v[d];
    a.mass[i] = atoms[i].mass, a.type[i] = atoms[i].type;
  }
  return a;
}
void zero_forces(double* f, std::size_t n) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) f[i * pad] = f[i * pad + 1] = f[i * pad + 2] = 0.0;
}
void lj_half_forces(double const* x, double* f, std::size_t n, half_list const& nl, lj const& p, double length) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    double const xi = x[i * pad], yi = x[i * pad + 1], zi = x[i * pad + 2];
    double fx = 0, fy = 0, fz = 0;
    for (int k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
      std::size_t const j = static_cast<std::size_t>(nl.neighbors[static_cast<std::size_t>(k)]);
      double const dx = minimum_image(xi - x[j * pad], length);
      double const dy = minimum_image(yi - x[j * pad + 1], length);
      double const dz = minimum_image(zi - x[j * pad + 2], length);
      double const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < p.cutoff2) {
        double const r2i = 1.0 / r2, r6i = r2i * r2i * r2i * p.sigma6;
        double const s = 48.0 * p.epsilon * r6i * (r6i - 0.5) * r2i;
        fx += s * dx;
        fy += s * dy;
        fz += s * dz;
#pragma omp atomic
        f[j * pad] -= s * dx;
#pragma omp atomic
        f[j * pad + 1] -= s * dy;
#pragma omp atomic
        f[j * pad + 2] -= s * dz;
      }
    }
#pragma omp atomic
    f[i * pad] += fx;
#pragma omp atomic
    f[i * pad + 1] += fy;
#pragma omp atomic
    f[i * pad + 2] += fz;
  }
}
void initial_integrate(double* x, double* v, double const* f, double const* mass, std::size_t n, double dt) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    double const h = 0.5 * dt / mass[i];
    for (std::size_t d = 0; d < 3; ++d) {
      v[i * pad + d] += h * f[i * pad + d];
      x[i * pad + d] += dt * v[i * pad + d];
    }
  }
}
void final_integrate(double* v, double const* f, double const* mass, std::size_t n, double dt) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    double const h = 0.5 * dt / mass[i];
    for (std::size_t d = 0; d < 3; ++d) v[i * pad + d] += h * f[i * pad + d];
  }
}
void wrap_positions(double* x, std::size_t n, double length) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < 3; ++d) x[i * pad + d] -= length * std::floor(x[i * pad + d] / length);
  }
}
double max_displacement2(double const* x, std::vector<dvec3> const& reference, std::size_t n, double length,
                         double& shared) {
#pragma omp single
  shared = 0;
  double local = 0;
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    double const dx = minimum_image(x[i * pad] - reference[i].x, length);
    double const dy = minimum_image(x[i * pad + 1] - reference[i].y, length);
    double const dz = minimum_image(x[i * pad + 2] - reference[i].z, length);
    local = std::max(local, dx * dx + dy * dy + dz * dz);
  }
#pragma omp critical(raw_max)
  shared = std::max(shared, local);
#pragma omp barrier
  return shared;
}
void remember_positions(double const* x, std::vector<dvec3>& reference, std::size_t n) {
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) reference[i] = {x[i * pad], x[i * pad + 1], x[i * pad + 2]};
}
double kinetic_energy(double const* v, double const* mass, std::size_t n, double& shared) {
#pragma omp single
  shared = 0;
  double local = 0;
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    local +=
        0.5 * mass[i] * (v[i * pad] * v[i * pad] + v[i * pad + 1] * v[i * pad + 1] + v[i * pad + 2] * v[i * pad + 2]);
  }
#pragma omp atomic
  shared += local;
#pragma omp barrier
  return shared;
}
double potential_energy(double const* x, std::size_t n, half_list const& nl, lj const& p, double length,
                        double& shared) {
#pragma omp single
  shared = 0;
  double local = 0;
#pragma omp for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
      std::size_t const j = static_cast<std::size_t>(nl.neighbors[static_cast<std::size_t>(k)]);
      double const dx = minimum_image(x[i * pad] - x[j * pad], length);
      double const dy = minimum_image(x[i * pad + 1] - x[j * pad + 1], length);
      double const dz = minimum_image(x[i * pad + 2] - x[j * pad + 2], length);
      double const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < p.cutoff2) {
        double const r6i = p.sigma6 / (r2 * r2 * r2);
        local += 4.0 * p.epsilon * r6i * (r6i - 1.0);
      }
    }
  }
#pragma omp atomic
  shared += local;
#pragma omp barrier
  return shared;
}

energies run(std::vector<Atom> const& start, int steps) {
  double const spacing = 1.2, length = spacing * std::cbrt(static_cast<double>(start.size()));
  double const dt = 0.002, skin = 0.3;
  lj const p;
  arrays a = from(start);
  std::size_t const n = a.n;
  double *x = a.x.data(), *v = a.v.data(), *f = a.f.data(), *mass = a.mass.data();
  half_list nl = build_half_list(start, length, std::sqrt(p.cutoff2) + skin);
  std::vector<dvec3> reference(n);
  energies e;
  double shared_ke = 0, shared_pe = 0, shared_max = 0, force_seconds = 0;
  double const started = omp_get_wtime();
#pragma omp parallel
  {
    remember_positions(x, reference, n);
    zero_forces(f, n);
    lj_half_forces(x, f, n, nl, p, length);
    for (int step = 0; step < steps; ++step) {
      initial_integrate(x, v, f, mass, n, dt);
      wrap_positions(x, n, length);
      if (max_displacement2(x, reference, n, length, shared_max) > 0.25 * skin * skin) {
#pragma omp single
        {
          std::vector<Atom> now(start);
          for (std::size_t i = 0; i < n; ++i) now[i].x = {x[i * pad], x[i * pad + 1], x[i * pad + 2]};
          nl = build_half_list(now, length, std::sqrt(p.cutoff2) + skin);
        }
        remember_positions(x, reference, n);
      }
      double t0 = 0;
#pragma omp master
      t0 = omp_get_wtime();
      zero_forces(f, n);
      lj_half_forces(x, f, n, nl, p, length);
#pragma omp master
      force_seconds += omp_get_wtime() - t0;
      final_integrate(v, f, mass, n, dt);
    }
    double const ke = kinetic_energy(v, mass, n, shared_ke);
    double const pe = potential_energy(x, n, nl, p, length, shared_pe);
#pragma omp single
    {
      e.kinetic = ke;
      e.potential = pe;
    }
  }
  e.total_seconds = omp_get_wtime() - started;
  e.force_seconds = force_seconds;
  return e;
}
}  // namespace raw
}  // namespace large_unit

namespace large_unit {
// The same half list, two ways, same run: the hand-written binned build above (serial, as the
// code it models) and the same build with OpenMP (count pass, scan, fill pass), against the
// library's verlet_list<csr, host> (OpenMP, its cells in a counting sort). Medians of 5; the
// library's rows must hold the hand-written pairs.
half_list build_half_list_omp(std::vector<Atom> const& atoms, double length, double reach) {
  int const cells = std::max(3, static_cast<int>(length / reach));
  double const width = length / cells;
  auto cell = [&](double x) { return std::min(cells - 1, std::max(0, static_cast<int>(x / width))); };
  std::size_t const n = atoms.size();
  std::vector<int> cell_of(n), count(static_cast<std::size_t>(cells * cells * cells) + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    auto const& x = atoms[i].x;
    cell_of[i] = (cell(x.x) * cells + cell(x.y)) * cells + cell(x.z);
    ++count[static_cast<std::size_t>(cell_of[i]) + 1];
  }
  for (std::size_t c = 1; c < count.size(); ++c) count[c] += count[c - 1];
  std::vector<int> members(n), cursor(count.begin(), count.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    members[static_cast<std::size_t>(cursor[static_cast<std::size_t>(cell_of[i])]++)] = static_cast<int>(i);
  half_list nl;
  nl.offsets.assign(n + 1, 0);
  auto visit = [&](std::size_t i, auto&& emit) {
    auto const& x = atoms[i].x;
    int const c[3] = {cell(x.x), cell(x.y), cell(x.z)};
    int found = 0;
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          int const m[3] = {(c[0] + dx + cells) % cells, (c[1] + dy + cells) % cells, (c[2] + dz + cells) % cells};
          std::size_t const cc = static_cast<std::size_t>((m[0] * cells + m[1]) * cells + m[2]);
          for (int k = count[cc]; k < count[cc + 1]; ++k) {
            int const j = members[static_cast<std::size_t>(k)];
            if (j <= static_cast<int>(i)) continue;
            auto const& y = atoms[static_cast<std::size_t>(j)].x;
            double const ex = minimum_image(x.x - y.x, length), ey = minimum_image(x.y - y.y, length),
                         ez = minimum_image(x.z - y.z, length);
            if (ex * ex + ey * ey + ez * ez < reach * reach) emit(found++, j);
          }
        }
    return found;
  };
  auto const n_signed = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n_signed; ++i)
    nl.offsets[static_cast<std::size_t>(i) + 1] = visit(static_cast<std::size_t>(i), [](int, int) {});
  for (std::size_t i = 0; i < n; ++i) nl.offsets[i + 1] += nl.offsets[i];
  nl.neighbors.resize(static_cast<std::size_t>(nl.offsets[n]));
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n_signed; ++i) {
    int* row = nl.neighbors.data() + nl.offsets[static_cast<std::size_t>(i)];
    visit(static_cast<std::size_t>(i), [&](int k, int j) { row[k] = j; });
  }
  return nl;
}

template <class F> double median_seconds(F&& f) {
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    double const t0 = omp_get_wtime();
    f();
    t.push_back(omp_get_wtime() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[2];
}

bool compare_list_builds(std::vector<Atom> const& atoms, double length, double reach) {
  half_list serial, parallel;
  double const serial_s = median_seconds([&] { serial = build_half_list(atoms, length, reach); });
  double const parallel_s = median_seconds([&] { parallel = build_half_list_omp(atoms, length, reach); });
  coalesce::host_vector<Atom> v(atoms);
  coalesce::verlet_list<coalesce::csr, coalesce::host> list({.cutoff = reach - 0.3, .skin = 0.3, .half = true});
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {length, length, length}};
  double const library_s = median_seconds([&] { list.build(v, &Atom::x, b); });
  auto rows = list.rows_on_host();
  bool same = rows.size() == atoms.size();
  for (std::size_t i = 0; same && i < rows.size(); ++i) {
    std::vector<int> a(serial.neighbors.begin() + serial.offsets[i], serial.neighbors.begin() + serial.offsets[i + 1]);
    std::vector<int> c(rows[i].begin(), rows[i].end());
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    same = a == c;
  }
  same = same && parallel.neighbors.size() == serial.neighbors.size();
  std::printf(
      "half-list build (%zu pairs): hand-written serial %.4f s, hand-written OpenMP %.4f s, library csr %.4f s "
      "(%.2fx the OpenMP build)%s\n",
      serial.neighbors.size(), serial_s, parallel_s, library_s, library_s / parallel_s,
      same ? "" : "  FAILED: the library's half list holds other pairs");
  return same;
}
}  // namespace large_unit

int main(int argc, char** argv) {
  using namespace large_unit;
  int const per_side = argc > 1 ? std::atoi(argv[1]) : 12;
  int const steps = argc > 2 ? std::atoi(argv[2]) : 20;
  auto const start = lattice(per_side, 1.2);
  // The hand-written code first, then every mapping (the member_arrays one is the hand-written
  // code's own shape: x, v, f padded to 4 doubles, type and mass dense).
  using legacy = coalesce::member_arrays<coalesce::member_stride<&Atom::x, 32>, coalesce::member_stride<&Atom::v, 32>,
                                         coalesce::member_stride<&Atom::f, 32>>;
  energies const hand = raw::run(start, steps);
  energies const results[] = {
      run<coalesce::soa>(start, steps), run<coalesce::aos>(start, steps), run<coalesce::aosoa<8>>(start, steps),
      run<coalesce::split<coalesce::fields<&Atom::x, &Atom::type>, coalesce::aos, coalesce::soa>>(start, steps),
      run<legacy>(start, steps)};
  char const* names[] = {"soa", "aos", "aosoa<8>", "split<fields<x, type>>", "member_arrays (x, v, f padded to 4)"};
  std::printf("%zu atoms, %d steps, %d threads; time loop in one parallel region, half list with omp atomic\n",
              start.size(), steps, omp_get_max_threads());
  std::printf("%-38s %10s %10s %8s %8s %18s %18s\n", "code", "total s", "force s", "x hand", "x force", "kinetic",
              "potential");
  std::printf("%-38s %10.4f %10.4f %8.2f %8.2f %18.12f %18.12f\n", "hand-written (padded double arrays)",
              hand.total_seconds, hand.force_seconds, 1.0, 1.0, hand.kinetic, hand.potential);
  bool same = std::isfinite(hand.kinetic) && hand.kinetic > 0;
  for (int k = 0; k < 5; ++k) {
    double const dk = std::abs(results[k].kinetic - hand.kinetic) / std::abs(hand.kinetic);
    double const dp = std::abs(results[k].potential - hand.potential) / std::abs(hand.potential);
    std::printf("%-38s %10.4f %10.4f %8.2f %8.2f %18.12f %18.12f\n", names[k], results[k].total_seconds,
                results[k].force_seconds, results[k].total_seconds / hand.total_seconds,
                results[k].force_seconds / hand.force_seconds, results[k].kinetic, results[k].potential);
    same = same && dk < 1e-9 && dp < 1e-9;
  }
  if (!same)
    std::printf("FAILED: a layout's energies differ from the hand-written code's by more than 1e-9 (relative)\n");
  bool const lists_same = compare_list_builds(start, 1.2 * per_side, std::sqrt(lj{}.cutoff2) + 0.3);
  return same && lists_same ? 0 : 1;
}
