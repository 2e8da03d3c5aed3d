// A realistic CPU translation unit: a Lennard-Jones MD code in the shape outside OpenMP codes
// have (ten kernel templates, half neighbour lists with Newton's third law and `omp atomic`
// updates of the partner's force, the whole time loop inside one `#pragma omp parallel` with
// orphaned `omp for` loops), instantiated for soa, aos, aosoa<8> and split layouts in one file.
//
// Why it exists: inlining that holds in a small file can fail in a large one. g++ stops inlining
// plain functions once a unit grows past `inline-unit-growth`; when that hit the access chain of
// v[i][&T::m], every member access became a call (4.5x slower). check_calls.py reads this
// program's machine code and fails on any call left in a kernel. Run, it also checks that every
// layout computes the same trajectory (energies equal to 1e-9 relative), so it cannot pass as
// dead code.
#include <coalesce/coalesce.hpp>


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

inline double minimum_image(double d, double length) {
  return d - length * std::nearbyint(d / length);
}

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

template <class V> LARGE_UNIT_KERNEL double potential_energy(V v, half_list const& nl, lj const& p, double length, double& shared) {
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

template <class V> LARGE_UNIT_KERNEL double max_displacement2(V v, std::vector<dvec3> const& reference, double length, double& shared) {
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
  coalesce::for_each_index(coalesce::host{}, v.size(), [=](std::size_t i) {
    v[i][&Atom::type] = v[i][&Atom::type] % 2;
  });
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
      zero_forces(v);
      lj_half_forces(v, nl, p, length);
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
  scale_types(v);
  (void)rebuild;
  return e;
}

}  // namespace large_unit

int main(int argc, char** argv) {
  using namespace large_unit;
  int const per_side = argc > 1 ? std::atoi(argv[1]) : 12;
  int const steps = argc > 2 ? std::atoi(argv[2]) : 20;
  auto const start = lattice(per_side, 1.2);
  energies const soa = run<coalesce::soa>(start, steps);
  energies const results[] = {soa, run<coalesce::aos>(start, steps), run<coalesce::aosoa<8>>(start, steps),
                              run<coalesce::split<coalesce::fields<&Atom::x, &Atom::type>, coalesce::aos, coalesce::soa>>(start, steps)};
  char const* names[] = {"soa", "aos", "aosoa<8>", "split<fields<x, type>>"};
  bool same = true;
  for (int k = 0; k < 4; ++k) {
    double const dk = std::abs(results[k].kinetic - soa.kinetic) / std::abs(soa.kinetic);
    double const dp = std::abs(results[k].potential - soa.potential) / std::abs(soa.potential);
    std::printf("%-24s kinetic %.12f potential %.12f (relative difference to soa %.1e, %.1e)\n", names[k], results[k].kinetic,
                results[k].potential, dk, dp);
    same = same && dk < 1e-9 && dp < 1e-9 && std::isfinite(results[k].kinetic) && soa.kinetic > 0;
  }
  if (!same) std::printf("FAILED: the layouts disagree\n");
  return same ? 0 : 1;
}
