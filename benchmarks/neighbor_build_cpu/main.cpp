// neighbor_build_cpu: the library's neighbour-list build on the CPU (OpenMP, host memory) against
// a hand-written OpenMP cell-list build of the same list, on the Lennard-Jones liquid of
// benchmarks/neighbor_build (reduced density 0.8442, cutoff 2.5, skin 0.3; Hilbert order).
//   - hand-written: cell of each particle, counts, prefix sum and scatter (serial: O(n)), the
//     positions copied in cell order, then `omp parallel for` over particles, each over its 27
//     cells, writing a padded row-major list of the library's width;
//   - the library: verlet_list<padded_rows | padded_columns | csr>::build (the device system of
//     a CPU build: OpenMP over host memory);
//   - one sort for both: particles sorted by verlet_list::cell_keys (the build skips its sort);
//   - the LJ force kernel over padded_rows, the library's (for_each_neighbor) against a hand-written
//     OpenMP loop over the hand-written list (check_asm.py compares their machine code);
//   - the pair engine (compute_pairs, the same LJ law as an evaluator) over padded_columns and
//     padded_rows (the generic loop) and over cluster_pairs, half and full (the SIMD loop of
//     cluster_pair_loop_host.hpp), each against the same hand-written loop, forces compared;
//   - an EAM potential from tables (a funcfl-style table set made here, LAMMPS's splines):
//     compute_many_body's three passes over padded_columns and cluster_pairs (full lists) against a
//     hand-written OpenMP EAM of three passes over the hand-written padded list.
// Both lists must hold the same pairs (each row compared as a set); exit status 1 otherwise.
//   usage: neighbor_build_cpu [--n N] [--runs R] [--cutoff C] [--density D]
#include <coalesce/coalesce.hpp>

#include "../common/cluster_sharing.hpp"
#include "../common/lj_lattice.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

struct vec3 {
  float x, y, z;
};
struct Atom {
  vec3 pos;
  vec3 force;
};
using atom_layout = coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>;
// The same with the force kept as 64-bit fixed point (sums the same bits whatever the threads).
using fixed_force_layout =
    coalesce::stored_as<atom_layout, coalesce::store<&Atom::force, coalesce::fixed_point<std::int64_t, 32>>>;
// The LJ liquid by default; --cutoff and --density for other states.
float cutoff = 2.5f, skin = 0.3f, density = 0.8442f;

// Medians of `runs` rounds, each round timing every variant once in turn: on a shared 2-core
// machine the load drifts over seconds, and interleaving puts every variant under the same drift.
std::vector<double> interleaved_medians(int runs, std::vector<std::function<void()>> const& variants) {
  for (auto const& f : variants) f();  // warm-up: first-touch of every buffer, the lists' widths
  std::vector<std::vector<double>> t(variants.size());
  for (int r = 0; r < runs; ++r) {
    for (std::size_t v = 0; v < variants.size(); ++v) {
      auto const a = std::chrono::steady_clock::now();
      variants[v]();
      t[v].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
  }
  std::vector<double> out;
  for (auto& times : t) {
    std::sort(times.begin(), times.end());
    out.push_back(times[times.size() / 2]);
  }
  return out;
}

// Minimum image along a periodic axis of length `length`.
inline float min_image(float d, float length) { return d - length * std::nearbyint(d / length); }

// The force kernels: the library's (for_each_index over a verlet_list view, for_each_neighbor, the
// particles through their view) and a hand-written one over the hand-written padded row-major list
// and plain arrays. Out of line and named, so check_asm.py finds each one's machine code.
// The pair arithmetic is spelled out in each, as a code writes it: a shared helper taking the sum by
// reference made g++ keep the hand-written sum in memory (3x slower), which is no baseline.
template <class List, class View>
__attribute__((noinline)) void library_force_cpu(List nl, View v, float length, float rc2) {
  coalesce::for_each_index(coalesce::device{}, v.size(), [=](std::size_t i) {
    vec3 const p = v[i][&Atom::pos];
    float fx = 0, fy = 0, fz = 0;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) {
      vec3 const q = v[j][&Atom::pos];
      float const dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length),
                  dz = min_image(p.z - q.z, length);
      float const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < rc2) {
        float const r2i = 1.0f / r2, r6i = r2i * r2i * r2i, s = 48.0f * r6i * (r6i - 0.5f) * r2i;
        fx += s * dx;
        fy += s * dy;
        fz += s * dz;
      }
    });
    v[i][&Atom::force] = vec3{fx, fy, fz};
  });
}
__attribute__((noinline)) void hand_force_cpu(int n, vec3 const* pos, std::uint32_t const* list,
                                              std::uint32_t const* nn, int width, float length, float rc2,
                                              vec3* force) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    vec3 const p = pos[i];
    float fx = 0, fy = 0, fz = 0;
    std::uint32_t const* row = list + static_cast<std::size_t>(i) * width;
    for (std::uint32_t k = 0; k < nn[i]; ++k) {
      vec3 const q = pos[row[k]];
      float const dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length),
                  dz = min_image(p.z - q.z, length);
      float const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < rc2) {
        float const r2i = 1.0f / r2, r6i = r2i * r2i * r2i, s = 48.0f * r6i * (r6i - 0.5f) * r2i;
        fx += s * dx;
        fy += s * dy;
        fz += s * dz;
      }
    }
    force[i] = {fx, fy, fz};
  }
}

// The same LJ law as the pair engine's evaluator (one type: no parameters).
struct lj_law {
  struct param_type {
    float unused;
  };
  coalesce::pair_value<float> operator()(float r2, param_type const&) const {
    float const r2i = 1.0f / r2, r6i = r2i * r2i * r2i;
    return {48.0f * r6i * (r6i - 0.5f) * r2i, 4.0f * r6i * (r6i - 1.0f)};
  }
};

// EAM tables for this liquid (one element, cutoff 2.5): rho(r) = (rc - r)^2 / 4, F(rho) = -sqrt(rho),
// r phi(r) = r (rc - r)^4 / 10, on LAMMPS-sized grids (funcfl files have 500-10000 points).
coalesce::eam_file eam_tables_here() {
  coalesce::eam_file f;
  f.elements = {""};
  f.masses = {1.0};
  f.rho_points = 2000;
  f.rho_step = 0.01;
  f.r_points = 2000;
  f.cutoff = cutoff;
  f.r_step = cutoff / 1999.0;
  std::vector<double> embedding(f.rho_points), density(f.r_points), r_phi(f.r_points);
  for (std::size_t k = 0; k < f.rho_points; ++k) embedding[k] = -std::sqrt(k * f.rho_step);
  for (std::size_t k = 0; k < f.r_points; ++k) {
    double const r = k * f.r_step, s = cutoff - r;
    density[k] = 0.25 * s * s;
    r_phi[k] = 0.1 * r * s * s * s * s;
  }
  f.embedding = {embedding};
  f.density = {density};
  f.r_phi = {r_phi};
  return f;
}

// The hand-written EAM a code writes for itself (LAMMPS's pair_eam in OpenMP form): the splines'
// coefficients in plain arrays, read as LAMMPS reads them, three passes over a full padded list.
struct hand_spline {
  std::vector<float> c;  // 7 per point
  std::size_t points;
  float inverse_step;
  void at(float x, float& value, float& slope) const {
    float p = x * inverse_step + 1.0f;
    std::size_t m = p > 1.0f ? static_cast<std::size_t>(p) : 1;
    m = std::min(m, points - 1);
    p -= static_cast<float>(m);
    p = std::min(p, 1.0f);
    float const* k = c.data() + 7 * (m - 1);
    value = ((k[3] * p + k[4]) * p + k[5]) * p + k[6];
    slope = (k[0] * p + k[1]) * p + k[2];
  }
};
hand_spline hand_spline_of(std::vector<double> const& f, double step) {
  std::vector<double> const c = coalesce::detail::eam_spline(f, step);
  return {std::vector<float>(c.begin(), c.end()), f.size(), static_cast<float>(1.0 / step)};
}
__attribute__((noinline)) void hand_eam_cpu(int n, vec3 const* pos, std::uint32_t const* list, std::uint32_t const* nn,
                                            int width, float length, float rc2, hand_spline const& embedding,
                                            hand_spline const& density, hand_spline const& r_phi, float* rho, float* fp,
                                            vec3* force) {
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int i = 0; i < n; ++i) {
      vec3 const p = pos[i];
      float sum = 0;
      std::uint32_t const* row = list + static_cast<std::size_t>(i) * width;
      for (std::uint32_t k = 0; k < nn[i]; ++k) {
        vec3 const q = pos[row[k]];
        float const dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length),
                    dz = min_image(p.z - q.z, length);
        float const r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < rc2) {
          float value, slope;
          density.at(std::sqrt(r2), value, slope);
          sum += value;
        }
      }
      rho[i] = sum;
    }
#pragma omp for schedule(static)
    for (int i = 0; i < n; ++i) {
      float value, slope;
      embedding.at(rho[i], value, slope);
      fp[i] = slope;
    }
#pragma omp for schedule(static)
    for (int i = 0; i < n; ++i) {
      vec3 const p = pos[i];
      float fx = 0, fy = 0, fz = 0;
      std::uint32_t const* row = list + static_cast<std::size_t>(i) * width;
      for (std::uint32_t k = 0; k < nn[i]; ++k) {
        std::uint32_t const j = row[k];
        vec3 const q = pos[j];
        float const dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length),
                    dz = min_image(p.z - q.z, length);
        float const r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < rc2) {
          float const r = std::sqrt(r2), inverse = 1.0f / r;
          float rho_value, rho_slope, z, z_slope;
          density.at(r, rho_value, rho_slope);
          r_phi.at(r, z, z_slope);
          float const phi = z * inverse, dphi = z_slope * inverse - phi * inverse;
          float const s = -((fp[i] + fp[j]) * rho_slope + dphi) * inverse;  // one element: rho_i' = rho_j'
          fx += s * dx;
          fy += s * dy;
          fz += s * dz;
        }
      }
      force[i] = {fx, fy, fz};
    }
  }
}

// The hand-written build: what a particle code writes for itself with OpenMP.
struct hand_lists {
  int cells = 0;
  float length = 0, cells_per_length = 0;
  std::vector<int> cell, counts, start, members;
  struct point {
    float x, y, z, pad;
  };
  std::vector<point> sorted;  // positions in cell order
  std::vector<std::uint32_t> list, nn;

  void build(std::vector<vec3> const& pos, int width, float reach2) {
    int const n = static_cast<int>(pos.size());
    int const cell_count = cells * cells * cells;
    auto const axis_cell = [&](float v) {
      return std::min(cells - 1, std::max(0, static_cast<int>(v * cells_per_length)));
    };
    cell.resize(n);
    counts.assign(cell_count, 0);
    start.resize(cell_count + 1);
    members.resize(n);
    sorted.resize(n);
    list.resize(static_cast<std::size_t>(n) * width);
    nn.resize(n);
    for (int i = 0; i < n; ++i) {
      cell[i] = (axis_cell(pos[i].z) * cells + axis_cell(pos[i].y)) * cells + axis_cell(pos[i].x);
      ++counts[cell[i]];
    }
    start[0] = 0;
    for (int c = 0; c < cell_count; ++c) start[c + 1] = start[c] + counts[c];
    std::vector<int> cursor(start.begin(), start.end() - 1);
    for (int i = 0; i < n; ++i) {
      int const k = cursor[cell[i]]++;
      members[k] = i;
      sorted[k] = {pos[i].x, pos[i].y, pos[i].z, 0};
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) {
      int const cx = axis_cell(pos[i].x), cy = axis_cell(pos[i].y), cz = axis_cell(pos[i].z);
      std::uint32_t c = 0;
      std::uint32_t* row = list.data() + static_cast<std::size_t>(i) * width;
      for (int dz = -1; dz <= 1; ++dz) {
        int z = cz + dz;
        float sz = 0;
        if (z < 0) z += cells, sz = -length;
        if (z >= cells) z -= cells, sz = length;
        for (int dy = -1; dy <= 1; ++dy) {
          int y = cy + dy;
          float sy = 0;
          if (y < 0) y += cells, sy = -length;
          if (y >= cells) y -= cells, sy = length;
          for (int dx = -1; dx <= 1; ++dx) {
            int x = cx + dx;
            float sx = 0;
            if (x < 0) x += cells, sx = -length;
            if (x >= cells) x -= cells, sx = length;
            int const nc = (z * cells + y) * cells + x;
            for (int k = start[nc]; k < start[nc + 1]; ++k) {
              int const j = members[k];
              if (j == i) continue;
              float const ex = pos[i].x - (sorted[k].x + sx), ey = pos[i].y - (sorted[k].y + sy),
                          ez = pos[i].z - (sorted[k].z + sz);
              if (ex * ex + ey * ey + ez * ez < reach2 && c < static_cast<std::uint32_t>(width)) row[c++] = j;
            }
          }
        }
      }
      nn[i] = c;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = std::size_t{1} << 20;
  int runs = 5;
  for (int a = 1; a < argc; ++a) {
    std::string const arg = argv[a];
    if (arg == "--n" && a + 1 < argc) {
      n = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--runs" && a + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++a]));
    } else if (arg == "--cutoff" && a + 1 < argc) {
      cutoff = std::strtof(argv[++a], nullptr);
    } else if (arg == "--density" && a + 1 < argc) {
      density = std::strtof(argv[++a], nullptr);
    } else {
      std::fprintf(stderr, "usage: neighbor_build_cpu [--n N] [--runs R] [--cutoff C] [--density D]\n");
      return 2;
    }
  }
  // The LJ liquid in a random order (benchmarks/common/lj_lattice.hpp), then Hilbert-sorted below.
  bench::lj_lattice const lattice = bench::make_lj_lattice(n, density);
  float const length = lattice.length;
  std::vector<Atom> atoms(n);
  for (std::size_t i = 0; i < n; ++i) {
    atoms[i].pos = {lattice.positions[i][0], lattice.positions[i][1], lattice.positions[i][2]};
  }
  coalesce::box const domain{.lo = {0, 0, 0}, .hi = {length, length, length}};
  coalesce::device_vector<Atom, atom_layout> h(atoms);  // CPU builds: the OpenMP device system, host memory
  {
    coalesce::reorder_plan plan;
    auto const keys = coalesce::hilbert_keys(h, &Atom::pos, domain, plan);
    coalesce::sort_by_key(h, keys, plan);
  }
  h.copy_to(std::span<Atom>(atoms));
  std::vector<vec3> pos(n);
  for (std::size_t i = 0; i < n; ++i) pos[i] = atoms[i].pos;

  coalesce::verlet_list<coalesce::padded_rows> rows({.cutoff = cutoff, .skin = skin});
  coalesce::verlet_list<coalesce::padded_columns> columns({.cutoff = cutoff, .skin = skin});
  coalesce::verlet_list<coalesce::csr> packed({.cutoff = cutoff, .skin = skin});
  hand_lists hand;
  hand.cells = std::max(3, static_cast<int>(length / (cutoff + skin)));
  hand.length = length;
  hand.cells_per_length = hand.cells / length;
  float const reach2 = (cutoff + skin) * (cutoff + skin);
  rows.build(h, &Atom::pos, domain);  // the width the hand-written list takes
  int const width = static_cast<int>(rows.width());
  // One sort for particles and list: a copy sorted by the list's own cells (verlet_list::cell_keys),
  // whose build skips its sort; the hand-written build runs on the same order too.
  coalesce::device_vector<Atom, atom_layout> by_cell = h;
  coalesce::verlet_list<coalesce::padded_rows> cell_rows({.cutoff = cutoff, .skin = skin});
  {
    coalesce::reorder_plan plan;
    coalesce::sort_by_key(by_cell, cell_rows.cell_keys(by_cell, &Atom::pos, domain, plan), plan);
  }
  std::vector<Atom> in_cells(n);
  by_cell.copy_to(std::span<Atom>(in_cells));
  std::vector<vec3> pos_cell(n);
  for (std::size_t i = 0; i < n; ++i) pos_cell[i] = in_cells[i].pos;
  hand_lists hand_cell = hand;
  auto const ms = interleaved_medians(
      runs, {[&] { hand.build(pos, width, reach2); }, [&] { rows.build(h, &Atom::pos, domain); },
             [&] { columns.build(h, &Atom::pos, domain); }, [&] { packed.build(h, &Atom::pos, domain); },
             [&] { hand_cell.build(pos_cell, width, reach2); }, [&] { cell_rows.build(by_cell, &Atom::pos, domain); }});
  double const hand_ms = ms[0], rows_ms = ms[1], columns_ms = ms[2], csr_ms = ms[3], hand_cell_ms = ms[4],
               cell_rows_ms = ms[5];
  bool const one_sort = cell_rows.cell_sorts() == 0 && cell_rows.entries() == rows.entries();

  // The force kernel over the padded row-major lists (the same pairs; the library's over its own
  // list and the particles' split view, the hand-written one over its list and a vec3 array).
  float const rc2 = cutoff * cutoff;
  std::vector<vec3> hand_force(n);
  auto const view = h.view();
  auto const row_view = rows.view();
  auto const force_ms =
      interleaved_medians(runs, {[&] {
                                   hand_force_cpu(static_cast<int>(n), pos.data(), hand.list.data(), hand.nn.data(),
                                                  width, length, rc2, hand_force.data());
                                 },
                                 [&] { library_force_cpu(row_view, view, length, rc2); }});
  std::vector<Atom> library_atoms(n);
  h.copy_to(std::span<Atom>(library_atoms));
  double force_diff = 0, force_scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float const a[3] = {library_atoms[i].force.x, library_atoms[i].force.y, library_atoms[i].force.z};
    float const b[3] = {hand_force[i].x, hand_force[i].y, hand_force[i].z};
    for (int c = 0; c < 3; ++c) {
      force_diff = std::max(force_diff, static_cast<double>(std::fabs(a[c] - b[c])));
      force_scale = std::max(force_scale, static_cast<double>(std::fabs(b[c])));
    }
  }
  // The same pairs in another order within a row (the library's cells, the hand-written cells'
  // atomic-free scatter): sums agree to float rounding.
  bool const forces_agree = force_diff <= 1e-4 * std::max(1.0, force_scale);

  // The pair engine over the same particles: padded_columns and padded_rows (the generic loop, a
  // thread per row) and
  // cluster_pairs half and full (the SIMD loop over clusters of 8), each into its own copy.
  coalesce::pair_table<lj_law::param_type> lj_table(1);
  lj_table.set(0, 0, {0.f}, cutoff);
  coalesce::verlet_list<coalesce::cluster_pairs> pairs_half({.cutoff = cutoff, .skin = skin, .half = true});
  coalesce::verlet_list<coalesce::cluster_pairs> pairs_full({.cutoff = cutoff, .skin = skin, .half = false});
  coalesce::device_vector<Atom, atom_layout> e_columns = h, e_rows = h, e_half = h, e_full = h, e_sums = h;
  coalesce::device_vector<Atom, fixed_force_layout> e_fixed(atoms);  // the same particles in the same order
  coalesce::verlet_list<coalesce::cluster_pairs> pairs_fixed({.cutoff = cutoff, .skin = skin, .half = true});
  pairs_fixed.build(e_fixed, &Atom::pos, domain);
  pairs_half.build(e_half, &Atom::pos, domain);
  pairs_full.build(e_full, &Atom::pos, domain);
  coalesce::pair_totals sums_got;
  auto const engine_ms = interleaved_medians(
      runs,
      {[&] {
         hand_force_cpu(static_cast<int>(n), pos.data(), hand.list.data(), hand.nn.data(), width, length, rc2,
                        hand_force.data());
       },
       [&] {
         coalesce::compute_pairs<&Atom::pos, &Atom::force>(e_columns, columns.view(e_columns), domain, lj_law{},
                                                           lj_table);
       },
       [&] {
         coalesce::compute_pairs<&Atom::pos, &Atom::force>(e_rows, rows.view(e_rows), domain, lj_law{}, lj_table);
       },
       [&] {
         coalesce::compute_pairs<&Atom::pos, &Atom::force>(e_half, pairs_half.view(e_half), domain, lj_law{}, lj_table);
       },
       [&] {
         coalesce::compute_pairs<&Atom::pos, &Atom::force>(e_full, pairs_full.view(e_full), domain, lj_law{}, lj_table);
       },
       [&] {
         sums_got = coalesce::compute_pairs<&Atom::pos, &Atom::force>(e_sums, pairs_half.view(e_sums), domain, lj_law{},
                                                                      lj_table, {.energy = true, .virial = true});
       },
       [&] {
         coalesce::compute_pairs<&Atom::pos, &Atom::force>(e_fixed, pairs_fixed.view(e_fixed), domain, lj_law{},
                                                           lj_table);
       }});
  // Largest difference from a hand-written run's forces, relative to their largest component.
  auto const relative_error = [&](auto const& e, std::vector<vec3> const& hand) {
    std::vector<Atom> got(n);
    e.copy_to(std::span<Atom>(got));
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
      float const a[3] = {got[i].force.x, got[i].force.y, got[i].force.z};
      float const b[3] = {hand[i].x, hand[i].y, hand[i].z};
      for (int c = 0; c < 3; ++c) {
        diff = std::max(diff, static_cast<double>(std::fabs(a[c] - b[c])));
        scale = std::max(scale, static_cast<double>(std::fabs(b[c])));
      }
    }
    return diff / std::max(1e-30, scale);
  };
  auto const engine_error = [&](auto const& e) { return relative_error(e, hand_force); };
  double const engine_errors[6] = {engine_error(e_columns), engine_error(e_rows), engine_error(e_half),
                                   engine_error(e_full),    engine_error(e_sums), engine_error(e_fixed)};
  // Energy against a double sum over the hand-written list (each pair twice there).
  double energy_ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t k = 0; k < hand.nn[i]; ++k) {
      vec3 const q = pos[hand.list[i * width + k]];
      double const dx = min_image(pos[i].x - q.x, length), dy = min_image(pos[i].y - q.y, length),
                   dz = min_image(pos[i].z - q.z, length);
      double const r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < rc2) energy_ref += 0.5 * 4.0 * (std::pow(r2, -6.0) - std::pow(r2, -3.0));
    }
  }
  bool const engine_agrees = *std::max_element(std::begin(engine_errors), std::end(engine_errors)) <= 1e-4 &&
                             std::fabs(sums_got.energy - energy_ref) <= 1e-5 * std::fabs(energy_ref);

  // EAM: compute_many_body over padded_columns and cluster_pairs (full lists: the engine's loop a
  // thread per row for these passes) against the hand-written three passes, forces compared.
  coalesce::eam_file const eam_file = eam_tables_here();
  coalesce::eam_tables<float, coalesce::device> const eam(eam_file);
  hand_spline const hand_embedding = hand_spline_of(eam_file.embedding[0], eam_file.rho_step);
  hand_spline const hand_density = hand_spline_of(eam_file.density[0], eam_file.r_step);
  hand_spline const hand_r_phi = hand_spline_of(eam_file.r_phi[0], eam_file.r_step);
  std::vector<float> hand_rho(n), hand_fp(n);
  std::vector<vec3> hand_eam_force(n);
  coalesce::device_vector<Atom, atom_layout> m_columns = h, m_pairs = h, m_rows = h;
  auto const eam_ms = interleaved_medians(
      runs,
      {[&] {
         hand_eam_cpu(static_cast<int>(n), pos.data(), hand.list.data(), hand.nn.data(), width, length, rc2,
                      hand_embedding, hand_density, hand_r_phi, hand_rho.data(), hand_fp.data(), hand_eam_force.data());
       },
       [&] {
         coalesce::compute_many_body<&Atom::pos, &Atom::force>(m_columns, columns.view(m_columns), domain, eam.law());
       },
       [&] {
         coalesce::compute_many_body<&Atom::pos, &Atom::force>(m_pairs, pairs_full.view(m_pairs), domain, eam.law());
       },
       [&] { coalesce::compute_many_body<&Atom::pos, &Atom::force>(m_rows, rows.view(m_rows), domain, eam.law()); }});
  auto const eam_error = [&](coalesce::device_vector<Atom, atom_layout> const& e) {
    return relative_error(e, hand_eam_force);
  };
  double const eam_errors[3] = {eam_error(m_columns), eam_error(m_pairs), eam_error(m_rows)};
  bool const eam_agrees = *std::max_element(std::begin(eam_errors), std::end(eam_errors)) <= 1e-4;

  // The same pairs: each row as a set. A pair the two builds disagree on must lie at the reach
  // within float rounding (the hand-written test squares a float reach; the library its own).
  // The three library lists must hold the same rows entry for entry (one build body).
  auto const library_rows = rows.rows_on_host();
  std::size_t wrong = 0, at_reach = 0, entries = 0;
  if (columns.rows_on_host() != library_rows || packed.rows_on_host() != library_rows) {
    std::fprintf(stderr, "the library's padded_rows, padded_columns and csr lists differ\n");
    ++wrong;
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::uint32_t> a = library_rows[i];
    std::vector<std::uint32_t> b(hand.list.begin() + static_cast<std::ptrdiff_t>(i * width),
                                 hand.list.begin() + static_cast<std::ptrdiff_t>(i * width + hand.nn[i]));
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    entries += b.size();
    if (a == b) continue;
    std::vector<std::uint32_t> diff;
    std::set_symmetric_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(diff));
    for (auto const j : diff) {
      double d2 = 0;
      double const pi[3] = {pos[i].x, pos[i].y, pos[i].z}, pj[3] = {pos[j].x, pos[j].y, pos[j].z};
      for (int ax = 0; ax < 3; ++ax) {
        double d = pi[ax] - pj[ax];
        d -= length * std::nearbyint(d / length);
        d2 += d * d;
      }
      if (std::fabs(std::sqrt(d2) - (cutoff + skin)) < 1e-5) {
        ++at_reach;
      } else if (wrong++ == 0) {
        std::fprintf(stderr, "row %zu: the builds disagree on %u at distance %.9f\n", i, j, std::sqrt(d2));
      }
    }
  }
#if defined(_OPENMP)
  int const threads = omp_get_max_threads();
#else
  int const threads = 1;
#endif
  std::printf(
      "neighbor_build_cpu: %zu particles, %d threads, %.1f neighbours per particle, width %d, %d runs (median)\n", n,
      threads, static_cast<double>(entries) / static_cast<double>(n), width, runs);
  std::printf("%-32s %10s %10s\n", "build", "ms", "x hand");
  std::printf("%-32s %10.2f %10.2f\n", "hand-written (OpenMP, rows)", hand_ms, 1.0);
  std::printf("%-32s %10.2f %10.2f\n", "library padded_rows", rows_ms, rows_ms / hand_ms);
  std::printf("%-32s %10.2f %10.2f\n", "library padded_columns", columns_ms, columns_ms / hand_ms);
  std::printf("%-32s %10.2f %10.2f\n", "library csr", csr_ms, csr_ms / hand_ms);
  std::printf(
      "one sort for particles and list (padded_rows, cell_keys order): library %.2f ms = %.2f x hand-written in "
      "that order (%.2f ms), %.2f x the library's in Hilbert order; sorts by the list: %s\n",
      cell_rows_ms, cell_rows_ms / hand_cell_ms, hand_cell_ms, cell_rows_ms / rows_ms, one_sort ? "none" : "SOME");
  std::printf(
      "force kernel over padded_rows (LJ, cutoff %.1f): hand-written %.2f ms, library (for_each_neighbor over a split "
      "view) %.2f ms = %.2f x; largest difference %.2e (forces up to %.2e)%s\n",
      cutoff, force_ms[0], force_ms[1], force_ms[1] / force_ms[0], force_diff, force_scale,
      forces_agree ? "" : "  DIFFERENT");
  std::printf(
      "pair engine (compute_pairs, LJ evaluator, forces only unless said), x the hand-written padded loop (%.2f ms "
      "in this round); relative error = largest |difference| / largest force:\n",
      engine_ms[0]);
  std::printf("%-44s %10s %10s %12s\n", "engine", "ms", "x hand", "rel. error");
  char const* const engine_names[6] = {"padded_columns (generic loop)",       "padded_rows (generic loop)",
                                       "cluster_pairs half (SIMD loop)",      "cluster_pairs full (SIMD loop)",
                                       "cluster_pairs half + energy, virial", "cluster_pairs half, fixed-point force"};
  for (int k = 0; k < 6; ++k) {
    std::printf("%-44s %10.2f %10.2f %12.2e\n", engine_names[k], engine_ms[k + 1], engine_ms[k + 1] / engine_ms[0],
                engine_errors[k]);
  }
  std::printf(
      "cluster_pairs: %.2f candidate pairs per pair in reach (half), energy %.6e vs %.6e (double over the list)%s\n",
      1.0 / pairs_half.fill(), sums_got.energy, energy_ref, engine_agrees ? "" : "  DIFFERENT");
  {  // what super-clusters could share at this state (benchmarks/common/cluster_sharing.hpp)
    auto const view = pairs_half.view(e_half);
    auto const hv = e_half.view();
    auto const where = [&](auto const& list) {  // slot s's position, false for an empty slot
      return [&](std::size_t s, double(&x)[3]) {
        std::uint32_t const p = list.slots[s];
        if (p == coalesce::cluster_pairs::empty_slot) return false;
        auto const& r = hv[p][&Atom::pos];
        x[0] = r[&vec3::x], x[1] = r[&vec3::y], x[2] = r[&vec3::z];
        return true;
      };
    };
    std::printf(
        "cluster_pairs half: %.2f entries per cluster; rows merged by groups of 8 clusters, mask bits per entry:",
        double(view.row_offsets[view.clusters]) / double(view.clusters));
    for (bool compact : {false, true}) {
      auto const s = bench::sharing_of(view, bench::cluster_groups(view.clusters, where(view), length, 8, compact), 8);
      std::printf(" %s %.2f", compact ? "2x2x2 cells" : "stacks along a column", s.bits_per_entry);
    }
    auto const full = pairs_full.view(e_full);  // the same particles, the same clusters
    auto const s = bench::sharing_of(full, bench::cluster_groups(full.clusters, where(full), length, 8, true), 8, true);
    std::printf("; 2x2x2 cells halved by group (GROMACS) %.2f\n", s.bits_per_entry);
  }
  std::printf(
      "EAM from tables (compute_many_body, three passes, full lists), x the hand-written three passes over the padded "
      "list (%.2f ms in this round):\n",
      eam_ms[0]);
  char const* const eam_names[3] = {"padded_columns (generic loop)", "cluster_pairs full (generic loop)",
                                    "padded_rows (generic loop)"};
  for (int k = 0; k < 3; ++k) {
    std::printf("%-44s %10.2f %10.2f %12.2e%s\n", eam_names[k], eam_ms[k + 1], eam_ms[k + 1] / eam_ms[0], eam_errors[k],
                eam_errors[k] <= 1e-4 ? "" : "  DIFFERENT");
  }
  std::printf("lists identical: %s (%zu pairs at the reach within float rounding)\n", wrong == 0 ? "yes" : "NO",
              at_reach);
  return wrong == 0 && one_sort && forces_agree && engine_agrees && eam_agrees ? 0 : 1;
}
