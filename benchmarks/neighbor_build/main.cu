// neighbor_build: the library's neighbour-list builds and force traversals against hand-written
// ones, on a Lennard-Jones liquid (reduced density 0.8442, cutoff 2.5 sigma, skin 0.3 sigma: the
// LAMMPS/HOOMD benchmark state), particles in Hilbert order. In the same run:
//   - ceiling: cudaMemset of the padded column-major list's bytes (writing the list once)
//   - hand-written build: cell of each particle, atomic counts per cell, CUB scan, scatter, then
//     one thread per particle over its 27 cells writing a padded column-major list
//   - hand-written force: one thread per particle over that list, positions as float4
//   - the library: verlet_list<padded_columns | padded_rows | csr | clusters>, full lists, built
//     and then traversed with for_each_neighbor over a split view (positions packed in 16-byte
//     slots); clusters: runs of candidates per 32 particles, filtered as they are read
//   - one sort for both: particles sorted by the list's cells (verlet_list::cell_keys), so the
//     build sorts nothing; sort, build and force against the Hilbert order's
// Each force is checked against a double-precision sum over the same pairs for 4096 particles:
// the largest per-component error of every variant, beside the hand-written kernel's. Exit status
// 1 when a list misses or adds a pair or a force is off by more than 2x the hand-written error.
//   usage: neighbor_build [--n N] [--runs R] [--cutoff C] [--skin S] [--density D]
#include <coalesce/coalesce.hpp>

#include "../common/lj_lattice.hpp"
#include "engine_rows.cuh"

#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct vec3 {
  float x, y, z;
};
struct Atom {
  vec3 pos;
  vec3 force;
};
using atom_layout = coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>;

// The state: the LJ liquid by default; --cutoff, --skin and --density for others (which list
// format pays depends on how many neighbours a cluster of 8 has).
float cutoff = 2.5f, skin = 0.3f, density = 0.8442f;

#define CHECK_CUDA(call)                                                     \
  do {                                                                       \
    cudaError_t e = (call);                                                  \
    if (e != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(2);                                                          \
    }                                                                        \
  } while (0)

template <class F> double median_ms(int runs, F&& f) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  f();  // warm-up
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    CHECK_CUDA(cudaEventRecord(a));
    f();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// ---- hand-written build ----
struct grid_info {
  int cells;  // per axis
  float length, cells_per_length;
};
__device__ int cell_of(grid_info g, float x) {
  int c = static_cast<int>(x * g.cells_per_length);
  return c < 0 ? 0 : c >= g.cells ? g.cells - 1 : c;
}
__global__ void count_cells(int n, float4 const* pos, grid_info g, int* cell, int* counts) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 p = pos[i];
  int c = (cell_of(g, p.z) * g.cells + cell_of(g, p.y)) * g.cells + cell_of(g, p.x);
  cell[i] = c;
  atomicAdd(&counts[c], 1);
}
__global__ void scatter_cells(int n, int const* cell, int* cursor, int* members) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  members[atomicAdd(&cursor[cell[i]], 1)] = i;
}
__global__ void build_padded(int n, float4 const* pos, grid_info g, int const* start, int const* counts,
                             int const* members, float reach2, int width, unsigned* list, unsigned* nn) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 p = pos[i];
  int cx = cell_of(g, p.x), cy = cell_of(g, p.y), cz = cell_of(g, p.z);
  int k = 0;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        int x = cx + dx, y = cy + dy, z = cz + dz;
        float sx = 0, sy = 0, sz = 0;
        if (x < 0) {
          x += g.cells;
          sx = -g.length;
        } else if (x >= g.cells) {
          x -= g.cells;
          sx = g.length;
        }
        if (y < 0) {
          y += g.cells;
          sy = -g.length;
        } else if (y >= g.cells) {
          y -= g.cells;
          sy = g.length;
        }
        if (z < 0) {
          z += g.cells;
          sz = -g.length;
        } else if (z >= g.cells) {
          z -= g.cells;
          sz = g.length;
        }
        int c = (z * g.cells + y) * g.cells + x;
        for (int m = start[c], e = start[c] + counts[c]; m < e; ++m) {
          int j = members[m];
          if (j == i) continue;
          float4 q = pos[j];
          float ex = p.x - (q.x + sx), ey = p.y - (q.y + sy), ez = p.z - (q.z + sz);
          if (ex * ex + ey * ey + ez * ez < reach2) {
            if (k < width) list[static_cast<size_t>(k) * n + i] = j;
            ++k;
          }
        }
      }
  nn[i] = k;
}

// ---- hand-written force ----
__device__ inline float min_image(float d, float length) { return d - length * rintf(d / length); }
// Fast: the reciprocal as one instruction (coalesce::fast_reciprocal), the naive kernel's stronger
// form, reported beside it: the issue's baseline divides (`1.0f / r2`).
template <bool Fast = false> __global__ void force_float4(int n, float4 const* pos, unsigned const* list,
                                                          unsigned const* nn, float length, float rc2, float4* f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 p = pos[i];
  float fx = 0, fy = 0, fz = 0;
  int count = nn[i];
  for (int k = 0; k < count; ++k) {
    float4 q = pos[list[static_cast<size_t>(k) * n + i]];
    float dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length), dz = min_image(p.z - q.z, length);
    float r2 = dx * dx + dy * dy + dz * dz;
    if (r2 < rc2) {
      float r2i = Fast ? coalesce::fast_reciprocal(r2) : 1.0f / r2, r6i = r2i * r2i * r2i,
            s = 48.0f * r6i * (r6i - 0.5f) * r2i;
      fx += s * dx;
      fy += s * dy;
      fz += s * dz;
    }
  }
  f[i] = make_float4(fx, fy, fz, 0);
}

// The library's force kernel: written once, run on every format.
template <class List, class View> void library_force(List nl, View v, float length, float rc2) {
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] __device__(std::size_t i) {
    vec3 const p = v[i][&Atom::pos];
    float fx = 0, fy = 0, fz = 0;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) {
      vec3 const q = v[j][&Atom::pos];
      float dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length), dz = min_image(p.z - q.z, length);
      float r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < rc2) {
        float r2i = 1.0f / r2, r6i = r2i * r2i * r2i, s = 48.0f * r6i * (r6i - 0.5f) * r2i;
        fx += s * dx;
        fy += s * dy;
        fz += s * dz;
      }
    });
    v[i][&Atom::force] = vec3{fx, fy, fz};
  });
}

// The same force kernel for positions stored as box_fixed<wrap>: the minimum image straight from
// the stored 32-bit fractions (coalesce::periodic_difference), no image arithmetic.
template <class List, class View> void library_force_boxed(List nl, View v, float rc2) {
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] __device__(std::size_t i) {
    auto const p = v[i][&Atom::pos];
    float fx = 0, fy = 0, fz = 0;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) {
      vec3 const d = coalesce::periodic_difference(p, v[j][&Atom::pos]);
      float r2 = d.x * d.x + d.y * d.y + d.z * d.z;
      if (r2 < rc2) {
        float r2i = 1.0f / r2, r6i = r2i * r2i * r2i, s = 48.0f * r6i * (r6i - 0.5f) * r2i;
        fx += s * d.x;
        fy += s * d.y;
        fz += s * d.z;
      }
    });
    v[i][&Atom::force] = vec3{fx, fy, fz};
  });
}

// Half lists (each pair once) scatter the reaction to j: with float atomics the sums depend on the
// order of the adds; into a force stored as 64-bit fixed point (coalesce::stored_as), with each
// particle's own pairs summed in a coalesce::fixed_sum, they do not.
using fixed_format = coalesce::fixed_point<std::int64_t, 32>;
using fixed_force_layout = coalesce::stored_as<atom_layout, coalesce::store<&Atom::force, fixed_format>>;
struct float_sum {  // what a float kernel keeps in registers
  vec3 v{0, 0, 0};
  __device__ float_sum& operator+=(vec3 const& a) {
    v.x += a.x, v.y += a.y, v.z += a.z;
    return *this;
  }
};
__device__ inline vec3 const& total(float_sum const& s) { return s.v; }
__device__ inline coalesce::fixed_sum<vec3, fixed_format> const& total(
    coalesce::fixed_sum<vec3, fixed_format> const& s) {
  return s;
}
template <class Sum, class List, class View> void library_half_force(List nl, View v, float length, float rc2) {
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] __device__(std::size_t i) {
    v[i][&Atom::force] = vec3{0, 0, 0};
  });
  coalesce::for_each_index(coalesce::device{}, v.size(), [=] __device__(std::size_t i) {
    vec3 const p = v[i][&Atom::pos];
    Sum fi;
    coalesce::for_each_neighbor(nl, i, [&](std::uint32_t j) {
      vec3 const q = v[j][&Atom::pos];
      float dx = min_image(p.x - q.x, length), dy = min_image(p.y - q.y, length), dz = min_image(p.z - q.z, length);
      float r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < rc2) {
        float r2i = 1.0f / r2, r6i = r2i * r2i * r2i, s = 48.0f * r6i * (r6i - 0.5f) * r2i;
        fi += vec3{s * dx, s * dy, s * dz};
        coalesce::atomic_add(v[j][&Atom::force], vec3{-s * dx, -s * dy, -s * dz});
      }
    });
    coalesce::atomic_add(v[i][&Atom::force], total(fi));
  });
}

struct result {
  std::string name;
  double build_ms = 0, force_ms = 0, bytes = 0, fill = 1, error = 0;
  std::size_t width = 0;
};

}  // namespace

// Rebuild times of a list (any format) in a CUDA graph (verlet_list::refill, coalesce/memory/graph.hpp).
struct graph_rebuild {
  double refill_ms = 0, replay_ms = 0, unmoved_ms = 0;
};
template <class List, class Particles>
graph_rebuild time_graph_rebuild(List& list, Particles& d, coalesce::box const& domain, int runs) {
  graph_rebuild out;
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreate(&s));  // blocking: the timing events on the default stream order with it
  out.refill_ms = median_ms(runs, [&] { list.refill(d, &Atom::pos, domain); });
  std::vector<cudaGraph_t> graphs;  // kept until their executable graphs are gone (coalesce/memory/graph.hpp)
  auto capture = [&](auto&& queue) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    queue();
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    graphs.push_back(graph);
    return exec;
  };
  cudaGraphExec_t const rebuild = capture([&] { list.refill(d, &Atom::pos, domain, s); });
  out.replay_ms = median_ms(runs, [&] { CHECK_CUDA(cudaGraphLaunch(rebuild, s)); });
  cudaGraphExec_t const when_moved = capture([&] {
    coalesce::graph_condition const moved = coalesce::make_graph_condition(s);
    list.set_rebuild_condition(d, &Atom::pos, moved, s);
    coalesce::capture_if(s, moved, [&] { list.refill(d, &Atom::pos, domain, s); });
  });
  out.unmoved_ms = median_ms(runs, [&] { CHECK_CUDA(cudaGraphLaunch(when_moved, s)); });
  CHECK_CUDA(cudaStreamSynchronize(s));
  list.check();  // no row outgrew the width, no bad position
  CHECK_CUDA(cudaGraphExecDestroy(rebuild));
  CHECK_CUDA(cudaGraphExecDestroy(when_moved));
  for (cudaGraph_t g : graphs) CHECK_CUDA(cudaGraphDestroy(g));
  CHECK_CUDA(cudaStreamDestroy(s));
  return out;
}

// The force time of the engine table's row `name` (0 when there is none).
template <class Rows> double engine_force_ms(Rows const& rows, char const* name) {
  for (auto const& r : rows) {
    if (r.name == name) return r.force_ms;
  }
  return 0;
}

int main(int argc, char** argv) {
  std::size_t n = 4194304;
  int runs = 10;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--n")) n = std::strtoull(argv[a + 1], nullptr, 10);
    if (!std::strcmp(argv[a], "--runs")) runs = std::atoi(argv[a + 1]);
    if (!std::strcmp(argv[a], "--cutoff")) cutoff = std::strtof(argv[a + 1], nullptr);
    if (!std::strcmp(argv[a], "--skin")) skin = std::strtof(argv[a + 1], nullptr);
    if (!std::strcmp(argv[a], "--density")) density = std::strtof(argv[a + 1], nullptr);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no GPU visible\n");
    return 77;
  }
  // The LJ liquid in a random order (benchmarks/common/lj_lattice.hpp), then Hilbert-sorted below.
  bench::lj_lattice const lattice = bench::make_lj_lattice(n, density);
  float const length = lattice.length;
  std::vector<Atom> atoms(n);
  for (std::size_t i = 0; i < n; ++i) {
    atoms[i].pos = {lattice.positions[i][0], lattice.positions[i][1], lattice.positions[i][2]};
  }
  coalesce::box const domain{.lo = {0, 0, 0}, .hi = {length, length, length}};
  coalesce::device_vector<Atom, atom_layout> d(atoms);
  {
    coalesce::reorder_plan plan;
    auto const keys = coalesce::hilbert_keys(d, &Atom::pos, domain, plan);
    coalesce::sort_by_key(d, keys, plan);
  }
  d.copy_to(std::span<Atom>(atoms));
  int const ni = static_cast<int>(n);
  float const reach2 = (cutoff + skin) * (cutoff + skin), rc2 = cutoff * cutoff;

  // Positions as float4 for the hand-written kernels.
  std::vector<float4> p4(n);
  for (std::size_t i = 0; i < n; ++i) p4[i] = make_float4(atoms[i].pos.x, atoms[i].pos.y, atoms[i].pos.z, 0);
  float4 *pos = nullptr, *f4 = nullptr;
  CHECK_CUDA(cudaMalloc(&pos, n * sizeof(float4)));
  CHECK_CUDA(cudaMalloc(&f4, n * sizeof(float4)));
  CHECK_CUDA(cudaMemcpy(pos, p4.data(), n * sizeof(float4), cudaMemcpyHostToDevice));

  // The library's lists (built first: the hand-written list takes the padded list's width).
  coalesce::verlet_list<coalesce::padded_columns> columns({.cutoff = cutoff, .skin = skin});
  coalesce::verlet_list<coalesce::padded_rows> rows({.cutoff = cutoff, .skin = skin});
  coalesce::verlet_list<coalesce::csr> packed({.cutoff = cutoff, .skin = skin});
  coalesce::verlet_list<coalesce::clusters> clustered({.cutoff = cutoff, .skin = skin});
  std::vector<result> results;
  auto v = d.view();
  auto run_library = [&](auto& list, char const* name) {
    result r;
    r.name = name;
    r.build_ms = median_ms(runs, [&] { list.build(d, &Atom::pos, domain); });
    auto const nl = list.view(d);
    r.force_ms = median_ms(runs, [&] { library_force(nl, v, length, rc2); });
    r.bytes = static_cast<double>(list.bytes());
    r.fill = list.fill();
    r.width = list.width();
    results.push_back(r);
  };
  run_library(columns, "library padded_columns");
  int const width = static_cast<int>(columns.width());

  // The same rebuild for CUDA graphs (refill: nothing read back), eager and as a graph replay, and
  // the replay of a step whose displacement condition is false (the displacement pass only).
  double const build_ms = results.back().build_ms;
  graph_rebuild const in_graph = time_graph_rebuild(columns, d, domain, runs);

  // Hand-written build.
  grid_info g{};
  g.cells = std::max(3, static_cast<int>(length / (cutoff + skin)));
  g.length = length;
  g.cells_per_length = g.cells / length;
  int const cell_count = g.cells * g.cells * g.cells;
  int *cell = nullptr, *counts = nullptr, *start = nullptr, *cursor = nullptr, *members = nullptr;
  unsigned *list = nullptr, *nn = nullptr;
  CHECK_CUDA(cudaMalloc(&cell, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&members, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&counts, cell_count * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&start, cell_count * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&cursor, cell_count * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&list, n * width * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&nn, n * sizeof(unsigned)));
  void* temp = nullptr;
  std::size_t temp_bytes = 0;
  CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, counts, start, cell_count));
  CHECK_CUDA(cudaMalloc(&temp, temp_bytes));
  unsigned const blocks = static_cast<unsigned>((n + 255) / 256);
  auto hand_build = [&] {
    cudaMemsetAsync(counts, 0, cell_count * sizeof(int));
    count_cells<<<blocks, 256>>>(ni, pos, g, cell, counts);
    std::size_t tb = temp_bytes;
    cub::DeviceScan::ExclusiveSum(temp, tb, counts, start, cell_count);
    cudaMemcpyAsync(cursor, start, cell_count * sizeof(int), cudaMemcpyDeviceToDevice);
    scatter_cells<<<blocks, 256>>>(ni, cell, cursor, members);
    build_padded<<<blocks, 256>>>(ni, pos, g, start, counts, members, reach2, width, list, nn);
  };
  result hand;
  hand.name = "hand-written (float4, padded columns)";
  hand.build_ms = median_ms(runs, hand_build);
  CHECK_CUDA(cudaGetLastError());
  hand.force_ms = median_ms(runs, [&] { force_float4<<<blocks, 256>>>(ni, pos, list, nn, length, rc2, f4); });
  double const naive_fast_ms =
      median_ms(runs, [&] { force_float4<true><<<blocks, 256>>>(ni, pos, list, nn, length, rc2, f4); });
  hand.bytes = static_cast<double>(n) * width * 4 + n * 4.0;
  hand.width = static_cast<std::size_t>(width);
  double const write_floor = median_ms(runs, [&] { cudaMemsetAsync(list, 0xff, n * width * sizeof(unsigned)); });
  hand_build();  // the list again (the memset above overwrote it)
  CHECK_CUDA(cudaDeviceSynchronize());

  // Accuracy: a double-precision sum over the same pairs for a sample of particles.
  std::vector<unsigned> h_nn(n);
  CHECK_CUDA(cudaMemcpy(h_nn.data(), nn, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<float4> h_f4(n);
  force_float4<<<blocks, 256>>>(ni, pos, list, nn, length, rc2, f4);
  CHECK_CUDA(cudaMemcpy(h_f4.data(), f4, n * sizeof(float4), cudaMemcpyDeviceToHost));
  auto const reference_rows = columns.rows_on_host();
  std::vector<std::size_t> sample;
  for (std::size_t s = 0; s < 4096 && s < n; ++s) sample.push_back((s * 2654435761u) % n);
  auto reference_force = [&](std::size_t i) {
    double f[3] = {0, 0, 0};
    for (auto j : reference_rows[i]) {
      double d[3] = {double(atoms[i].pos.x) - atoms[j].pos.x, double(atoms[i].pos.y) - atoms[j].pos.y,
                     double(atoms[i].pos.z) - atoms[j].pos.z};
      for (double& c : d) c -= length * std::nearbyint(c / length);
      double const r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 < double(rc2)) {
        double const r2i = 1 / r2, r6i = r2i * r2i * r2i, s = 48 * r6i * (r6i - 0.5) * r2i;
        for (int a = 0; a < 3; ++a) f[a] += s * d[a];
      }
    }
    return std::array<double, 3>{f[0], f[1], f[2]};
  };
  std::vector<std::array<double, 3>> ref(sample.size());
  for (std::size_t s = 0; s < sample.size(); ++s) ref[s] = reference_force(sample[s]);
  auto max_error = [&](auto const& force_of) {
    double e = 0;
    for (std::size_t s = 0; s < sample.size(); ++s) {
      auto const f = force_of(sample[s]);
      for (int a = 0; a < 3; ++a) e = std::max(e, std::abs(f[a] - ref[s][a]));
    }
    return e;
  };
  hand.error = max_error([&](std::size_t i) { return std::array<double, 3>{h_f4[i].x, h_f4[i].y, h_f4[i].z}; });

  run_library(rows, "library padded_rows");
  run_library(packed, "library csr");
  double const csr_build_ms = results.back().build_ms;
  graph_rebuild const csr_in_graph = time_graph_rebuild(packed, d, domain, runs);
  run_library(clustered, "library clusters");
  double const clusters_build_ms = results.back().build_ms;
  graph_rebuild const clusters_in_graph = time_graph_rebuild(clustered, d, domain, runs);
  bool ok = true;
  // Every library list holds the pairs the hand-written list holds (as sets per row).
  {
    std::vector<unsigned> h_list(n * width);
    CHECK_CUDA(cudaMemcpy(h_list.data(), list, h_list.size() * 4, cudaMemcpyDeviceToHost));
    for (auto const* other : {&reference_rows}) {
      for (std::size_t s = 0; s < sample.size() && ok; ++s) {
        std::size_t const i = sample[s];
        std::vector<unsigned> a((*other)[i].begin(), (*other)[i].end()), b;
        for (unsigned k = 0; k < h_nn[i]; ++k) b.push_back(h_list[std::size_t(k) * n + i]);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        if (a != b) {
          std::printf("DIFFERENT: particle %zu has %zu library neighbours, %zu hand-written\n", i, a.size(), b.size());
          ok = false;
        }
      }
    }
    ok = ok && rows.rows_on_host() == reference_rows && packed.rows_on_host() == reference_rows;
    // Clusters hold the same pairs in ascending index order.
    auto sorted = [](std::vector<std::vector<std::uint32_t>> r) {
      for (auto& row : r) std::sort(row.begin(), row.end());
      return r;
    };
    ok = ok && sorted(clustered.rows_on_host()) == sorted(reference_rows);
    if (!ok) std::printf("DIFFERENT: the formats hold different lists\n");
  }
  auto library_error = [&](auto& lst) {
    library_force(lst.view(), v, length, rc2);
    std::vector<Atom> out(n);
    d.copy_to(std::span<Atom>(out));
    return max_error([&](std::size_t i) {
      return std::array<double, 3>{out[i].force.x, out[i].force.y, out[i].force.z};
    });
  };
  results[0].error = library_error(columns);
  results[1].error = library_error(rows);
  results[2].error = library_error(packed);
  results[3].error = library_error(clustered);
  // Run to run, every format's forces are the same bits (a fixed order of neighbours).
  auto forces_of = [&](auto& lst) {
    library_force(lst.view(), v, length, rc2);
    std::vector<Atom> out(n);
    d.copy_to(std::span<Atom>(out));
    return out;
  };
  auto same_bits = [&](auto& lst) {
    auto const a = forces_of(lst), b = forces_of(lst);
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(Atom)) == 0;
  };
  bool const reproducible = same_bits(columns) && same_bits(rows) && same_bits(packed) && same_bits(clustered);
  if (!reproducible) std::printf("DIFFERENT: a format's forces changed between two runs\n");
  ok = ok && reproducible;
  results.insert(results.begin(), hand);

  // Positions stored as 32-bit fixed point (stored_as; 2^-23 steps: any coordinate of a box up to 256
  // long, finer than float's steps above 2), in the packed slot (padded to 16 bytes, as the float
  // slot is) and unpadded (12 bytes: what a gather moves). The same list, the same kernel source;
  // errors against the same double-precision reference.
  constexpr int fraction_bits = 23;
  using fixed_position = coalesce::fixed_point<std::int32_t, fraction_bits>;
  double const fixed_range = std::ldexp(1.0, 31 - fraction_bits);  // |coordinate| below it
  using fixed_position_layout = coalesce::stored_as<atom_layout, coalesce::store<&Atom::pos, fixed_position>>;
  using fixed_position_12 = coalesce::stored_as<
      coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa, coalesce::unpadded>,
      coalesce::store<&Atom::pos, fixed_position>>;
  struct position_variant {
    char const* name;
    double force_ms = 0, error = 0;
  };
  std::vector<position_variant> position_variants;
  auto const column_nl = columns.view();
  auto time_positions = [&](char const* name, auto& particles, auto force) {
    auto const pv = particles.view();
    position_variant out{name};
    out.force_ms = median_ms(runs, [&] { force(column_nl, pv); });
    std::vector<Atom> f(n);
    particles.copy_to(std::span<Atom>(f));
    out.error = max_error([&](std::size_t i) {
      return std::array<double, 3>{f[i].force.x, f[i].force.y, f[i].force.z};
    });
    position_variants.push_back(out);
  };
  auto const image_force = [&](auto nl, auto pv) { library_force(nl, pv, length, rc2); };
  time_positions("float, packed slot (16 B)", d, image_force);
  if (length < fixed_range) {  // the library refuses a coordinate past the format's range
    {
      coalesce::device_vector<Atom, fixed_position_layout> fixed16(atoms);
      time_positions("fixed_point<int32, 23>, packed slot (16 B)", fixed16, image_force);
    }
    {
      coalesce::device_vector<Atom, fixed_position_12> fixed12(atoms);
      time_positions("fixed_point<int32, 23>, unpadded (12 B)", fixed12, image_force);
    }
  } else {
    std::printf("positions as fixed_point<int32, 23>: skipped, the box (%.1f long) is past the format's range (%.0f)\n",
                static_cast<double>(length), fixed_range);
  }
  // Box-relative: 32-bit fractions of the box (box_fixed<wrap>), unpadded 12-byte slot. Through the
  // float the member reads (the image arithmetic as for float), and as periodic_difference.
  using boxed_position_12 = coalesce::stored_as<
      coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa, coalesce::unpadded>,
      coalesce::store<&Atom::pos, coalesce::box_fixed<coalesce::wrap>>>;
  double boxed_build_ms = 0;
  std::size_t boxed_entries = 0;
  {
    coalesce::device_vector<Atom, boxed_position_12> boxed12(domain);
    boxed12.assign(d);
    time_positions("box_fixed<wrap>, unpadded (12 B), read as float", boxed12, image_force);
    time_positions("box_fixed<wrap>, unpadded (12 B), periodic_difference", boxed12,
                   [&](auto nl, auto pv) { library_force_boxed(nl, pv, rc2); });
    // A list built from the box positions: its build time against the float positions' build.
    coalesce::verlet_list<coalesce::padded_columns> boxed_list({.cutoff = cutoff, .skin = skin});
    boxed_build_ms = median_ms(runs, [&] { boxed_list.build(boxed12, &Atom::pos, domain); });
    boxed_entries = boxed_list.entries();
  }

  // Half list, forces scattered with atomics: float against 64-bit fixed point (the time includes
  // zeroing the forces, in both).
  coalesce::verlet_list<coalesce::padded_columns> half_list({.cutoff = cutoff, .skin = skin, .half = true});
  half_list.build(d, &Atom::pos, domain);
  coalesce::device_vector<Atom, fixed_force_layout> fixed_d(atoms);
  auto const half_nl = half_list.view(d);
  auto const fixed_v = fixed_d.view();
  using fixed_accumulator = coalesce::fixed_sum<vec3, fixed_format>;
  double const half_float_ms = median_ms(runs, [&] { library_half_force<float_sum>(half_nl, v, length, rc2); });
  double const half_fixed_ms =
      median_ms(runs, [&] { library_half_force<fixed_accumulator>(half_nl, fixed_v, length, rc2); });
  auto half_forces = [&]<class Sum>(Sum, auto& vec) {
    library_half_force<Sum>(half_nl, vec.view(), length, rc2);
    std::vector<Atom> out(n);
    vec.copy_to(std::span<Atom>(out));
    return out;
  };
  auto const fixed_a = half_forces(fixed_accumulator{}, fixed_d), fixed_b = half_forces(fixed_accumulator{}, fixed_d);
  auto const float_a = half_forces(float_sum{}, d), float_b = half_forces(float_sum{}, d);
  bool const fixed_identical = std::memcmp(fixed_a.data(), fixed_b.data(), n * sizeof(Atom)) == 0;
  std::size_t float_differ = 0;
  for (std::size_t i = 0; i < n; ++i) float_differ += std::memcmp(&float_a[i], &float_b[i], sizeof(Atom)) != 0;
  auto error_of = [&](std::vector<Atom> const& f) {
    return max_error([&](std::size_t i) { return std::array<double, 3>{f[i].force.x, f[i].force.y, f[i].force.z}; });
  };
  double const fixed_error = error_of(fixed_a), float_error = error_of(float_a);
  if (!fixed_identical) std::printf("DIFFERENT: half-list forces in 64-bit fixed point changed between two runs\n");
  ok = ok && fixed_identical;

  // One sort for the particles and the list (verlet_list::cell_keys): particles sorted by the
  // list's own cells, so its build sorts nothing, against the Hilbert order (the build sorts by
  // cell itself). Each order on a copy; every timed sort re-sorts particles already in that order
  // (both near the identity, as in a simulation's re-sort). The hand-written build and force run on
  // the cell-ordered positions too: the order's locality is theirs as well.
  coalesce::device_vector<Atom, atom_layout> by_hilbert = d, by_cell = d;
  coalesce::verlet_list<coalesce::padded_columns> cell_list({.cutoff = cutoff, .skin = skin});
  coalesce::reorder_plan sort_plan;
  double const hilbert_sort_ms = median_ms(runs, [&] {
    coalesce::sort_by_key(by_hilbert, coalesce::hilbert_keys(by_hilbert, &Atom::pos, domain, sort_plan), sort_plan);
  });
  double const cell_sort_ms = median_ms(runs, [&] {
    coalesce::sort_by_key(by_cell, cell_list.cell_keys(by_cell, &Atom::pos, domain, sort_plan), sort_plan);
  });
  double const cell_build_ms = median_ms(runs, [&] { cell_list.build(by_cell, &Atom::pos, domain); });
  auto const cell_view = by_cell.view();
  double const cell_force_ms = median_ms(runs, [&] { library_force(cell_list.view(by_cell), cell_view, length, rc2); });
  bool const one_sort = cell_list.cell_sorts() == 0 && cell_list.entries() == columns.entries();
  if (!one_sort) std::printf("DIFFERENT: the list sorted particles in its cell order, or holds other pairs\n");
  ok = ok && one_sort;
  {
    std::vector<Atom> in_cells(n);
    by_cell.copy_to(std::span<Atom>(in_cells));
    for (std::size_t i = 0; i < n; ++i) p4[i] = make_float4(in_cells[i].pos.x, in_cells[i].pos.y, in_cells[i].pos.z, 0);
  }
  float4* const hilbert_pos = pos;
  CHECK_CUDA(cudaMalloc(&pos, n * sizeof(float4)));  // hand_build reads `pos`
  CHECK_CUDA(cudaMemcpy(pos, p4.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
  double const hand_cell_build_ms = median_ms(runs, hand_build);
  double const hand_cell_force_ms =
      median_ms(runs, [&] { force_float4<<<blocks, 256>>>(ni, pos, list, nn, length, rc2, f4); });
  CHECK_CUDA(cudaFree(pos));
  pos = hilbert_pos;
  double const hilbert_force_ms = results[1].force_ms;  // library padded_columns, after the hand-written row

  std::printf("neighbor_build: %zu particles, density %.4f, cutoff %.2f + skin %.2f, Hilbert order, %d runs (median)\n",
              n, density, cutoff, skin, runs);
  std::printf("ceiling: writing the padded list once (cudaMemset of %.1f MB): %.3f ms\n", double(n) * width * 4 / 1e6,
              write_floor);
  std::printf("%-38s %9s %8s %8s %9s %8s %6s %6s %10s %8s\n", "list", "build ms", "x hand", "x floor", "force ms",
              "x hand", "width", "fill", "B/particle", "error");
  for (auto const& r : results) {
    double const error_ratio = hand.error > 0 ? r.error / hand.error : 1.0;
    std::printf("%-38s %9.3f %8.2f %8.2f %9.3f %8.2f %6zu %6.2f %10.1f %8.2e%s\n", r.name.c_str(), r.build_ms,
                r.build_ms / hand.build_ms, r.build_ms / write_floor, r.force_ms, r.force_ms / hand.force_ms, r.width,
                r.fill, r.bytes / n, r.error, error_ratio > 2.0 ? "  ERROR > 2x hand-written" : "");
    ok = ok && error_ratio <= 2.0;
  }
  std::printf(
      "rebuild for CUDA graphs (padded_columns): build() %.3f ms, refill %.3f ms = %.2f x build, graph replay %.3f "
      "ms = %.2f x build; step whose condition is false (displacement only) %.3f ms\n",
      build_ms, in_graph.refill_ms, in_graph.refill_ms / build_ms, in_graph.replay_ms, in_graph.replay_ms / build_ms,
      in_graph.unmoved_ms);
  std::printf(
      "rebuild for CUDA graphs (csr): build() %.3f ms, refill %.3f ms = %.2f x build, graph replay %.3f ms = %.2f x "
      "build\n",
      csr_build_ms, csr_in_graph.refill_ms, csr_in_graph.refill_ms / csr_build_ms, csr_in_graph.replay_ms,
      csr_in_graph.replay_ms / csr_build_ms);
  std::printf(
      "rebuild for CUDA graphs (clusters): build() %.3f ms, refill %.3f ms = %.2f x build, graph replay %.3f ms = "
      "%.2f x build\n",
      clusters_build_ms, clusters_in_graph.refill_ms, clusters_in_graph.refill_ms / clusters_build_ms,
      clusters_in_graph.replay_ms, clusters_in_graph.replay_ms / clusters_build_ms);
  std::printf(
      "one sort for particles and list (padded_columns, verlet_list::cell_keys): sort %.3f ms (Hilbert sort %.3f "
      "ms); build %.3f ms = %.2f x the hand-written build in cell order (%.3f ms), %.2f x the build in Hilbert order; "
      "sort + build %.2f x Hilbert's; force %.3f ms = %.2f x hand-written in cell order, %.2f x the library's in "
      "Hilbert order\n",
      cell_sort_ms, hilbert_sort_ms, cell_build_ms, cell_build_ms / hand_cell_build_ms, hand_cell_build_ms,
      cell_build_ms / build_ms, (cell_sort_ms + cell_build_ms) / (hilbert_sort_ms + build_ms), cell_force_ms,
      cell_force_ms / hand_cell_force_ms, cell_force_ms / hilbert_force_ms);
  std::printf("entries per particle (full list): %.1f; widest row %zu\n", double(columns.entries()) / n,
              columns.widest());
  std::printf("clusters: %.1f candidates tested per particle (fill %.2f), %.2f runs per cluster of 32\n",
              double(clustered.candidates()) / n, clustered.fill(), clustered.bytes() / 8.0 / ((n + 31) / 32));
  std::printf(
      "half list (padded_columns), reaction scattered with atomic_add: float atomics %.3f ms, 64-bit fixed point "
      "%.3f ms = %.2f x float (target <= 1.2)\n",
      half_float_ms, half_fixed_ms, half_fixed_ms / half_float_ms);
  std::printf(
      "  error vs double: fixed point %.2e, float atomics %.2e, hand-written full list %.2e (target: fixed <= "
      "hand-written)\n  run to run: fixed point %s; float atomics: %zu of %zu atoms' forces differ\n",
      fixed_error, float_error, hand.error, fixed_identical ? "bit-identical" : "DIFFERENT", float_differ, n);
  std::printf("positions stored as (force kernel over padded_columns, time x float packed, error vs double):\n");
  for (auto const& p : position_variants) {
    std::printf("  positions %-44s %8.3f ms %6.2f x float %9.2e\n", p.name, p.force_ms,
                p.force_ms / position_variants.front().force_ms, p.error);
  }
  std::printf(
      "list build from box_fixed positions (padded_columns): %.3f ms = %.2f x the build from float positions; "
      "%.4f entries per particle (float: %.4f)\n",
      boxed_build_ms, boxed_build_ms / build_ms, double(boxed_entries) / n, double(columns.entries()) / n);
  // The pair engine (last: it sorts the particles into the cluster order).
  auto const engine =
      bench_engine::run_engine_rows(d, domain, length, cutoff, skin, [&](auto&& f) { return median_ms(runs, f); });
  double const naive_rebuild = hand.build_ms, naive_force = hand.force_ms;
  std::printf(
      "pair engine (compute_pairs, LJ evaluator, forces into the particles; against the hand-written pipeline: "
      "build %.3f ms, force %.3f ms, error %.2e; step = force + (sort + build) / 10, integration left out):\n",
      naive_rebuild, naive_force, hand.error);
  std::printf("%-46s %8s %9s %8s %9s %8s %9s %8s %8s %10s %9s %8s\n", "engine", "sort ms", "build ms", "x hand",
              "force ms", "x hand", "+sums ms", "x force", "step x", "B/particle", "pairs/p", "error");
  for (auto const& r : engine) {
    double const rebuild = r.sort_ms + r.build_ms;
    double const error_ratio = hand.error > 0 ? r.error / hand.error : 1.0;
    std::printf("%-46s %8.3f %9.3f %8.2f %9.3f %8.2f %9.3f %8.2f %8.2f %10.1f %9.1f %8.2e%s\n", r.name.c_str(),
                r.sort_ms, r.build_ms, rebuild / naive_rebuild, r.force_ms, r.force_ms / naive_force, r.sums_ms,
                r.sums_ms > 0 ? r.sums_ms / r.force_ms : 0.0,
                (r.force_ms + rebuild / 10) / (naive_force + naive_rebuild / 10), r.bytes / n, r.evaluated, r.error,
                error_ratio > 2.0 ? "  ERROR > 2x hand-written" : "");
    ok = ok && error_ratio <= 2.0;
  }
  std::printf(
      "naive force kernel with coalesce::fast_reciprocal instead of 1.0f / r2: %.3f ms = %.2f x the dividing one; "
      "against it: engine cluster_pairs (half) %.2f x, hand-written cluster-pair kernel %.2f x\n",
      naive_fast_ms, naive_fast_ms / naive_force,
      engine_force_ms(engine, "engine cluster_pairs (half)") / naive_fast_ms,
      engine_force_ms(engine, "hand-written cluster-pair kernel (half)") / naive_fast_ms);
  {  // The cluster-pair list's rebuild for CUDA graphs. The particles are in its cluster order now
     // (run_engine_rows sorted them), so build() sorts nothing; a refill reads nothing back, so it
     // always sorts, and its rows must be the build's.
    coalesce::verlet_list<coalesce::cluster_pairs> pairs({.cutoff = cutoff, .skin = skin, .half = true});
    double const pairs_build_ms = median_ms(runs, [&] { pairs.build(d, &Atom::pos, domain); });
    auto const arrays = [&] {  // offsets, entries and slots, as the list holds them
      auto const v = pairs.view(d);
      std::vector<std::uint32_t> out(v.clusters + 1);
      CHECK_CUDA(cudaMemcpy(out.data(), v.row_offsets, out.size() * 4, cudaMemcpyDeviceToHost));
      std::size_t const entries = out.back(), slots = v.clusters * coalesce::cluster_pairs::cluster_size;
      out.resize(v.clusters + 1 + entries + slots);
      CHECK_CUDA(cudaMemcpy(out.data() + v.clusters + 1, v.entries, entries * 4, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(out.data() + v.clusters + 1 + entries, v.slots, slots * 4, cudaMemcpyDeviceToHost));
      return out;
    };
    auto const built = arrays();
    graph_rebuild const pairs_in_graph = time_graph_rebuild(pairs, d, domain, runs);
    bool const same = arrays() == built;
    std::printf(
        "rebuild for CUDA graphs (cluster_pairs, half): build() %.3f ms, refill %.3f ms = %.2f x build, graph replay "
        "%.3f ms = %.2f x build; rows after the refills %s\n",
        pairs_build_ms, pairs_in_graph.refill_ms, pairs_in_graph.refill_ms / pairs_build_ms, pairs_in_graph.replay_ms,
        pairs_in_graph.replay_ms / pairs_build_ms, same ? "the build's" : "DIFFER FROM THE BUILD'S");
    ok = ok && same;
  }
  cudaFree(pos), cudaFree(f4), cudaFree(cell), cudaFree(members), cudaFree(counts), cudaFree(start), cudaFree(cursor),
      cudaFree(list), cudaFree(nn), cudaFree(temp);
  std::printf("%s\n", ok ? "lists identical, forces within 2x the hand-written error" : "FAILED");
  return ok ? 0 : 1;
}
