// reorder_streams: the reorder pieces against hand-written kernels in the same run (GPU only).
//   reorder_streams [--n N] [--neighbors K] [--runs R] [--json FILE]
//
// On N particles (default 4M, 32 bytes each) and a column-major neighbour list of K slots
// (default 128, every slot used, as an MD code's list):
// - copy: cudaMemcpy of the list (the ceiling: bytes read + written per second);
// - remap: coalesce::remap in place, into a second list, and with deferred checks, against a
//   hand-written remap kernel with the same validation (index range, one flag read back); the
//   streaming floor is the list read once and written once at the copy's bandwidth;
// - keys: cell_keys against a bare key kernel (read x, y, z, write a key), hilbert_keys against
//   a bare Hilbert key kernel;
// - keys + sort_by_key + remap against the sum of hand-written parts (bare keys, CUB SortPairs,
//   a fused gather of the 8 columns, the hand-written remap);
// - two streams: two independent reorders (keys + sort_by_key + apply of 4 arrays) on two
//   streams, against one alone;
// - graph: the steady-state loop (keys + sort_by_key + remap + apply, deferred checks) captured
//   into a CUDA graph, replay time per step and the plan's allocations during the replays.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <coalesce/coalesce.hpp>

#include "common/bench_timer.hpp"
#include "common/particle.hpp"

namespace {

using bench::Particle;
using bench::vec3;

constexpr float box_side = 64.0f;
coalesce::box const box{.lo = {0, 0, 0}, .hi = {box_side, box_side, box_side}};

template <class U> U* device_alloc(std::size_t count) {
  void* p = nullptr;
  bench::check_cuda(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(U)), "cudaMalloc");
  return static_cast<U*>(p);
}

// The hand-written remap of a column-major list: out[k * n + i] = inverse[in[k * n + perm[i]]],
// entries checked against n (the first bad slot kept with atomicMin, read back once).
__global__ void hand_remap(std::uint32_t const* in, std::uint32_t* out, std::uint32_t const* perm,
                           std::uint32_t const* inverse, std::size_t n, unsigned long long* bad) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t const k = blockIdx.y;
  if (i >= n) return;
  std::size_t const slot = k * n + perm[i];
  std::uint32_t const e = in[slot];
  if (e < n) {
    out[k * n + i] = inverse[e];
  } else {
    out[k * n + i] = e;
    atomicMin(bad, static_cast<unsigned long long>(slot));
  }
}

// The random-access floor of a remap: one lookup per entry in an n-word table (the inverse), as
// renumbering does; moving rows of a column-major list is a second random read per entry. With
// random entries both read one 32-byte sector per 4-byte word, from L2 where the column and the
// table fit in it.
__global__ void table_lookup(std::uint32_t const* in, std::uint32_t* out, std::uint32_t const* table, std::size_t n) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t const k = blockIdx.y;
  if (i < n) out[k * n + i] = table[in[k * n + i]];
}

// A bare row-major cell key on the grid cell_keys(..., box, 1.0f, plan) uses (64 cells per
// axis): read the three position columns, write one 32-bit key of 18 significant bits.
constexpr std::uint32_t cells_per_axis = 64;
constexpr int cell_key_bits = 18;
__global__ void bare_keys(float const* x, float const* y, float const* z, std::size_t n, std::uint32_t* keys) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  auto const cell = [&](float v) { return min(static_cast<std::uint32_t>(v), cells_per_axis - 1); };
  keys[i] = (cell(z[i]) * cells_per_axis + cell(y[i])) * cells_per_axis + cell(x[i]);
}

__global__ void iota_kernel(std::uint32_t* v, std::size_t n) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) v[i] = static_cast<std::uint32_t>(i);
}

// A bare Hilbert key: the same three reads and one write, 10 levels per axis, Skilling's
// transpose written out for three axes, bits interleaved by hand (the baseline for hilbert_keys;
// a cell key is far less arithmetic).
__global__ void bare_hilbert_keys(float const* px, float const* py, float const* pz, std::size_t n, float scale,
                                  std::uint32_t* keys) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  auto const cell = [&](float v) { return min(static_cast<std::uint32_t>(v * scale), 1023u); };
  std::uint32_t x[3] = {cell(px[i]), cell(py[i]), cell(pz[i])};
#pragma unroll
  for (std::uint32_t q = 512; q > 1; q >>= 1) {
    std::uint32_t const p = q - 1;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      if (x[a] & q) {
        x[0] ^= p;
      } else {
        std::uint32_t const t = (x[0] ^ x[a]) & p;
        x[0] ^= t;
        x[a] ^= t;
      }
    }
  }
  x[1] ^= x[0];
  x[2] ^= x[1];
  std::uint32_t t = 0;
#pragma unroll
  for (std::uint32_t q = 512; q > 1; q >>= 1) t ^= (x[2] & q) ? q - 1 : 0u;
  std::uint32_t key = 0;
#pragma unroll
  for (int bit = 9; bit >= 0; --bit) {
#pragma unroll
    for (int a = 2; a >= 0; --a) key = (key << 1) | (((x[a] ^ t) >> bit) & 1u);
  }
  keys[i] = key;
}

// The hand-written fused gather of the 8 four-byte columns of a soa Particle.
struct eight_columns {
  std::uint32_t const* src[8];
  std::uint32_t* dst[8];
};
__global__ void hand_gather(eight_columns c, std::uint32_t const* perm, std::size_t n) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t const from = perm[i];
#pragma unroll
  for (int k = 0; k < 8; ++k) c.dst[k][i] = c.src[k][from];
}

dim3 grid_for(std::size_t n, std::size_t rows = 1) {
  return dim3(static_cast<unsigned>((n + 255) / 256), static_cast<unsigned>(rows));
}

struct options {
  std::size_t n = std::size_t{1} << 22;
  std::size_t neighbors = 128;
  int runs = 10;
  std::string json;
};

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int a = 1; a < argc; ++a) {
    std::string const arg = argv[a];
    auto next = [&]() -> char const* {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "reorder_streams: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--n")
      opt.n = std::stoull(next());
    else if (arg == "--neighbors")
      opt.neighbors = std::stoull(next());
    else if (arg == "--runs")
      opt.runs = std::stoi(next());
    else if (arg == "--json")
      opt.json = next();
    else {
      std::fprintf(stderr, "usage: reorder_streams [--n N] [--neighbors K] [--runs R] [--json FILE]\n");
      return 2;
    }
  }
  if (bench::gpu_missing()) return bench::skipped;
  std::size_t const n = opt.n, K = opt.neighbors, slots = n * K;
  int const runs = opt.runs;
  std::printf("reorder_streams on %s: %zu particles, %zu-slot column-major list (%.2f GiB), medians of %d runs\n",
              bench::device_name(), n, K, slots * 4.0 / (1 << 30), runs);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, box_side);
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i)
    records[i] = {{u(rng), u(rng), u(rng)}, {u(rng), u(rng), u(rng)}, 1.0f, static_cast<std::uint32_t>(i)};
  std::vector<std::uint32_t> list_host(slots);
  for (auto& j : list_host) j = static_cast<std::uint32_t>(rng() % n);
  coalesce::device_vector<Particle> particles{std::span<Particle const>(records)};
  coalesce::device_vector<Particle> const original = particles;

  std::uint32_t* list = device_alloc<std::uint32_t>(slots);
  std::uint32_t* list_in = device_alloc<std::uint32_t>(slots);
  std::uint32_t* list_out = device_alloc<std::uint32_t>(slots);
  bench::check_cuda(cudaMemcpy(list_in, list_host.data(), slots * 4, cudaMemcpyHostToDevice), "upload");
  auto restore_list = [&] {
    bench::check_cuda(cudaMemcpyAsync(list, list_in, slots * 4, cudaMemcpyDeviceToDevice), "copy");
  };

  // The ceiling: a device-to-device copy of the list.
  double const copy_ms = bench::median_ms([&] { restore_list(); }, runs, 2);
  double const copy_gbs = 2.0 * slots * 4 / (copy_ms * 1e6);
  double const floor_ms = 2.0 * slots * 4 / (copy_gbs * 1e6);  // list read once, written once

  coalesce::reorder_plan plan;
  auto const sort_once = [&] {
    particles = original;
    coalesce::sort_by_key(particles, coalesce::hilbert_keys(particles, &Particle::pos, box, plan), plan);
  };
  sort_once();
  coalesce::device_neighbor_list<std::uint32_t> const nbr{list, n, K, coalesce::neighbor_order::column_major};
  coalesce::device_neighbor_list<std::uint32_t> const nbr_in{list_in, n, K, coalesce::neighbor_order::column_major};
  coalesce::device_neighbor_list<std::uint32_t> const nbr_out{list_out, n, K, coalesce::neighbor_order::column_major};
  // remap in place includes restoring the list; that copy is timed alone and subtracted.
  double const remap_in_place_ms = bench::median_ms(
                                       [&] {
                                         restore_list();
                                         coalesce::remap(nbr, plan);
                                       },
                                       runs, 2) -
                                   copy_ms;
  double const remap_into_ms = bench::median_ms([&] { coalesce::remap(nbr_in, nbr_out, plan); }, runs, 2);
  plan.set_checks(coalesce::check_policy::deferred);
  double const remap_deferred_ms = bench::median_ms([&] { coalesce::remap(nbr_in, nbr_out, plan); }, runs, 2);
  plan.check();
  plan.set_checks(coalesce::check_policy::before_writing);
  std::vector<std::uint32_t> library_result(slots);
  bench::check_cuda(cudaMemcpy(library_result.data(), list_out, slots * 4, cudaMemcpyDeviceToHost), "download");

  unsigned long long* bad = device_alloc<unsigned long long>(1);
  std::uint32_t const* perm = plan.permutation().data();
  std::uint32_t const* inverse = plan.inverse().data();
  auto const hand_remap_checked = [&] {
    bench::check_cuda(cudaMemsetAsync(bad, 0xff, 8), "memset");
    hand_remap<<<grid_for(n, K), 256>>>(list_in, list_out, perm, inverse, n, bad);
    unsigned long long first = 0;
    bench::check_cuda(cudaMemcpy(&first, bad, 8, cudaMemcpyDeviceToHost), "flag");
    if (first != ~0ull) std::exit(3);
  };
  double const hand_remap_ms = bench::median_ms(hand_remap_checked, runs, 2);
  std::vector<std::uint32_t> hand_result(slots);
  bench::check_cuda(cudaMemcpy(hand_result.data(), list_out, slots * 4, cudaMemcpyDeviceToHost), "download");
  bool const remap_same = hand_result == library_result;
  double const lookup_ms =
      bench::median_ms([&] { table_lookup<<<grid_for(n, K), 256>>>(list_in, list_out, inverse, n); }, runs, 2);

  // Keys, from the random order the hand-written kernels read too (`original`).
  double const hilbert_ms =
      bench::median_ms([&] { (void)coalesce::hilbert_keys(original, &Particle::pos, box, plan); }, runs, 2);
  double const cell_ms =
      bench::median_ms([&] { (void)coalesce::cell_keys(original, &Particle::pos, box, 1.0f, plan); }, runs, 2);
  plan.set_checks(coalesce::check_policy::deferred);
  double const cell_deferred_ms =
      bench::median_ms([&] { (void)coalesce::cell_keys(original, &Particle::pos, box, 1.0f, plan); }, runs, 2);
  double const hilbert_deferred_ms =
      bench::median_ms([&] { (void)coalesce::hilbert_keys(original, &Particle::pos, box, plan); }, runs, 2);
  plan.check();
  plan.set_checks(coalesce::check_policy::before_writing);
  // The hand-written parts start from the same random order as the library's reorder below
  // (`original`), so that their gather moves elements as far as the library's does.
  auto const cols = original.view();
  float const* px = &cols[0][&Particle::pos][&vec3::x];
  float const* py = &cols[0][&Particle::pos][&vec3::y];
  float const* pz = &cols[0][&Particle::pos][&vec3::z];
  std::uint32_t* raw_keys = device_alloc<std::uint32_t>(n);
  std::uint32_t* raw_keys_out = device_alloc<std::uint32_t>(n);
  std::uint32_t* raw_vals = device_alloc<std::uint32_t>(n);
  std::uint32_t* raw_vals_out = device_alloc<std::uint32_t>(n);
  double const bare_hilbert_ms = bench::median_ms(
      [&] { bare_hilbert_keys<<<grid_for(n), 256>>>(px, py, pz, n, 1024.0f / box_side, raw_keys_out); }, runs, 2);
  double const bare_keys_ms =
      bench::median_ms([&] { bare_keys<<<grid_for(n), 256>>>(px, py, pz, n, raw_keys); }, runs, 2);

  // The hand-written reorder: bare cell keys, CUB SortPairs over the same 18 bits as the
  // library's cell-key sort (values: the index, written first), a fused gather, the remap.
  std::size_t temp_bytes = 0;
  bench::check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, raw_keys, raw_keys_out, raw_vals, raw_vals_out,
                                                    static_cast<int>(n), 0, 30),
                    "sort size");
  void* temp = device_alloc<std::byte>(temp_bytes);
  double const cub_sort_ms = bench::median_ms(
      [&] {
        iota_kernel<<<grid_for(n), 256>>>(raw_vals, n);
        bench::check_cuda(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, raw_keys, raw_keys_out, raw_vals,
                                                          raw_vals_out, static_cast<int>(n), 0, cell_key_bits),
                          "sort");
      },
      runs, 2);
  coalesce::device_vector<Particle> target = particles;
  eight_columns c{};
  auto const src = original.view();
  auto const dst = target.view();
  c.src[0] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::pos][&vec3::x]);
  c.src[1] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::pos][&vec3::y]);
  c.src[2] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::pos][&vec3::z]);
  c.src[3] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::vel][&vec3::x]);
  c.src[4] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::vel][&vec3::y]);
  c.src[5] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::vel][&vec3::z]);
  c.src[6] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::mass]);
  c.src[7] = reinterpret_cast<std::uint32_t const*>(&src[0][&Particle::id]);
  c.dst[0] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::pos][&vec3::x]);
  c.dst[1] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::pos][&vec3::y]);
  c.dst[2] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::pos][&vec3::z]);
  c.dst[3] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::vel][&vec3::x]);
  c.dst[4] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::vel][&vec3::y]);
  c.dst[5] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::vel][&vec3::z]);
  c.dst[6] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::mass]);
  c.dst[7] = reinterpret_cast<std::uint32_t*>(&dst[0][&Particle::id]);
  double const hand_gather_ms =
      bench::median_ms([&] { hand_gather<<<grid_for(n), 256>>>(c, raw_vals_out, n); }, runs, 2);
  double const hand_total_ms = bare_keys_ms + cub_sort_ms + hand_gather_ms + hand_remap_ms;
  // The library's reorder step: the vector is restored first (timed alone, subtracted).
  double const restore_ms = bench::median_ms([&] { particles = original; }, runs, 2);
  double const library_total_ms =
      bench::median_ms(
          [&] {
            particles = original;
            coalesce::sort_by_key(particles, coalesce::cell_keys(particles, &Particle::pos, box, 1.0f, plan), plan);
            coalesce::remap(nbr_in, nbr_out, plan);
          },
          runs, 2) -
      restore_ms;
  // Both orders are the stable sort of the same cell keys: the hand-written gather must have
  // produced the library's particles.
  std::vector<Particle> library_particles(n), hand_particles(n);
  particles.copy_to(library_particles);
  target.copy_to(hand_particles);
  bool const gather_same = std::memcmp(library_particles.data(), hand_particles.data(), n * sizeof(Particle)) == 0;

  // Two independent reorders on two (blocking) streams, against one alone. Each: keys,
  // sort_by_key and apply of four arrays, on its own particles.
  std::size_t const half = n / 2;
  std::vector<Particle> half_records(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(half));
  cudaStream_t sa = nullptr, sb = nullptr;
  bench::check_cuda(cudaStreamCreate(&sa), "stream");
  bench::check_cuda(cudaStreamCreate(&sb), "stream");
  coalesce::device_vector<Particle> pa{std::span<Particle const>(half_records), sa},
      pb{std::span<Particle const>(half_records), sb};
  coalesce::device_vector<vec3> fa(half), fb(half), ga(half), gb(half);
  coalesce::reorder_plan plan_a(sa, coalesce::check_policy::deferred), plan_b(sb, coalesce::check_policy::deferred);
  auto const one_reorder = [&](coalesce::device_vector<Particle>& p, coalesce::device_vector<vec3>& f,
                               coalesce::device_vector<vec3>& g, coalesce::reorder_plan& pl) {
    coalesce::sort_by_key(p, coalesce::hilbert_keys(p, &Particle::pos, box, pl), pl);
    coalesce::apply(pl, f, g);
  };
  double const one_stream_ms = bench::median_ms([&] { one_reorder(pa, fa, ga, plan_a); }, runs, 2);
  double const two_streams_ms = bench::median_ms(
      [&] {
        one_reorder(pa, fa, ga, plan_a);
        one_reorder(pb, fb, gb, plan_b);
      },
      runs, 2);
  double const serial_ms = bench::median_ms(
      [&] {
        one_reorder(pa, fa, ga, plan_a);
        bench::check_cuda(cudaStreamSynchronize(sa), "sync");
        one_reorder(pb, fb, gb, plan_a);
        bench::check_cuda(cudaStreamSynchronize(sa), "sync");
      },
      runs, 2);
  // Where the time of one reorder goes: the host's time to queue it (returns without waiting
  // with deferred checks), against the GPU's. When queueing takes as long as running, a second
  // stream driven by the same host thread has nothing to overlap with.
  auto const host_ms = [&](auto&& queue) {
    std::vector<double> ms;
    for (int r = 0; r < runs + 2; ++r) {
      bench::check_cuda(cudaDeviceSynchronize(), "sync");
      auto const t0 = std::chrono::steady_clock::now();
      queue();
      if (r >= 2)
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    bench::check_cuda(cudaDeviceSynchronize(), "sync");
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  double const enqueue_ms = host_ms([&] { one_reorder(pa, fa, ga, plan_a); });
  // The host's share by call, and the same for the hand-written parts (bare keys, CUB
  // SortPairs with its size query, the fused gather) on the same stream and size.
  double const keys_host_ms = host_ms([&] { (void)coalesce::hilbert_keys(pa, &Particle::pos, box, plan_a); });
  double const sort_host_ms =  // keys are good for one sort: timed together, the keys' share taken off
      host_ms([&] { coalesce::sort_by_key(pa, coalesce::hilbert_keys(pa, &Particle::pos, box, plan_a), plan_a); }) -
      keys_host_ms;
  double const apply_host_ms = host_ms([&] { coalesce::apply(plan_a, fa, ga); });
  double const hand_host_ms = host_ms([&] {
    bare_hilbert_keys<<<grid_for(half), 256, 0, sa>>>(px, py, pz, half, 1024.0f / box_side, raw_keys);
    iota_kernel<<<grid_for(half), 256, 0, sa>>>(raw_vals, half);
    std::size_t bytes = 0;
    bench::check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, bytes, raw_keys, raw_keys_out, raw_vals, raw_vals_out,
                                                      static_cast<int>(half), 0, 30, sa),
                      "sort size");
    bench::check_cuda(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, raw_keys, raw_keys_out, raw_vals, raw_vals_out,
                                                      static_cast<int>(half), 0, 30, sa),
                      "sort");
    hand_gather<<<grid_for(half), 256, 0, sa>>>(c, raw_vals_out, half);
  });
  // The same two reorders, each captured once into a graph of its own and launched on its
  // stream: what the GPU overlaps when queueing costs one call per reorder.
  auto const capture = [&](cudaStream_t s, auto&& work) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    bench::check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "capture");
    work();
    bench::check_cuda(cudaStreamEndCapture(s, &g), "end capture");
    bench::check_cuda(cudaGraphInstantiate(&e, g, 0), "instantiate");
    bench::check_cuda(cudaGraphDestroy(g), "graph");
    return e;
  };
  cudaGraphExec_t const graph_a = capture(sa, [&] { one_reorder(pa, fa, ga, plan_a); });
  cudaGraphExec_t const graph_b = capture(sb, [&] { one_reorder(pb, fb, gb, plan_b); });
  double const one_graph_ms =
      bench::median_ms([&] { bench::check_cuda(cudaGraphLaunch(graph_a, sa), "launch"); }, runs, 2);
  double const two_graphs_ms = bench::median_ms(
      [&] {
        bench::check_cuda(cudaGraphLaunch(graph_a, sa), "launch");
        bench::check_cuda(cudaGraphLaunch(graph_b, sb), "launch");
      },
      runs, 2);
  cudaGraphExecDestroy(graph_a);
  cudaGraphExecDestroy(graph_b);
  plan_a.check();
  plan_b.check();

  // The steady-state loop in a CUDA graph (two steps per replay: the vector ping-pongs).
  coalesce::device_vector<Particle> gp{std::span<Particle const>(half_records), sa};
  std::vector<std::uint32_t> half_list(half * 32);
  for (auto& j : half_list) j = static_cast<std::uint32_t>(rng() % half);
  std::uint32_t* glist = device_alloc<std::uint32_t>(half_list.size());
  bench::check_cuda(cudaMemcpy(glist, half_list.data(), half_list.size() * 4, cudaMemcpyHostToDevice), "upload");
  coalesce::device_neighbor_list<std::uint32_t> const gnbr{glist, half, 32, coalesce::neighbor_order::column_major};
  coalesce::reorder_plan gplan(sa, coalesce::check_policy::deferred);
  auto const loop_step = [&] {
    coalesce::sort_by_key(gp, coalesce::hilbert_keys(gp, &Particle::pos, box, gplan), gplan);
    coalesce::remap(gnbr, gplan);
    coalesce::apply(gplan, fa, ga);
  };
  double const eager_step_ms = bench::median_ms([&] { loop_step(); }, runs, 2);
  std::size_t const allocations_before = gplan.allocations();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bench::check_cuda(cudaStreamBeginCapture(sa, cudaStreamCaptureModeGlobal), "capture");
  loop_step();
  loop_step();
  bench::check_cuda(cudaStreamEndCapture(sa, &graph), "end capture");
  bench::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  double const graph_step_ms =
      bench::median_ms([&] { bench::check_cuda(cudaGraphLaunch(exec, sa), "launch"); }, runs, 2) / 2;
  std::size_t const allocations_after = gplan.allocations();
  gplan.check();

  std::printf("\n%-52s %9s %9s\n", "what", "ms", "ratio");
  auto row = [](char const* what, double ms, double ratio, char const* of) {
    std::printf("%-52s %9.3f %9.2f  %s\n", what, ms, ratio, of);
  };
  std::printf("copy of the list: %.3f ms = %.0f GB/s (read + written); streaming floor of a remap %.3f ms\n", copy_ms,
              copy_gbs, floor_ms);
  row("remap in place (checks before writing)", remap_in_place_ms, remap_in_place_ms / hand_remap_ms,
      "x hand-written remap");
  row("remap into a second list (checks before writing)", remap_into_ms, remap_into_ms / hand_remap_ms,
      "x hand-written remap");
  row("remap into a second list (deferred checks)", remap_deferred_ms, remap_deferred_ms / hand_remap_ms,
      "x hand-written remap");
  row("hand-written remap, same validation", hand_remap_ms, hand_remap_ms / floor_ms, "x streaming floor");
  row("one table lookup per entry (random-access floor)", lookup_ms, lookup_ms / floor_ms, "x streaming floor");
  std::printf("  remap into a second list / two lookups per entry: %.2f\n", remap_into_ms / (2 * lookup_ms));
  std::printf("  remap results identical to the hand-written kernel: %s\n", remap_same ? "yes" : "NO, DIFFERENT");
  row("hilbert_keys", hilbert_ms, hilbert_ms / bare_hilbert_ms, "x bare Hilbert key kernel");
  row("hilbert_keys (deferred checks)", hilbert_deferred_ms, hilbert_deferred_ms / bare_hilbert_ms,
      "x bare Hilbert key kernel");
  row("bare Hilbert key kernel", bare_hilbert_ms, bare_hilbert_ms / bare_keys_ms, "x bare (cell) key kernel");
  row("cell_keys", cell_ms, cell_ms / bare_keys_ms, "x bare key kernel");
  row("cell_keys (deferred checks)", cell_deferred_ms, cell_deferred_ms / bare_keys_ms, "x bare key kernel");
  row("bare key kernel", bare_keys_ms, 1.0, "");
  row("cell_keys + sort_by_key + remap into", library_total_ms, library_total_ms / hand_total_ms,
      "x sum of hand-written parts");
  std::printf(
      "  hand-written parts: keys %.3f + iota and CUB SortPairs %.3f + fused gather %.3f + remap %.3f = %.3f ms\n",
      bare_keys_ms, cub_sort_ms, hand_gather_ms, hand_remap_ms, hand_total_ms);
  std::printf("  sorted particles identical to the hand-written reorder's: %s\n",
              gather_same ? "yes" : "NO, DIFFERENT");
  row("two reorders on two streams", two_streams_ms, two_streams_ms / one_stream_ms, "x one alone");
  row("two reorders one after the other", serial_ms, serial_ms / one_stream_ms, "x one alone");
  std::printf("  one reorder: %.3f ms on the GPU, %.3f ms for the host to queue it (deferred checks)\n", one_stream_ms,
              enqueue_ms);
  std::printf(
      "  host time to queue: hilbert_keys %.3f, sort_by_key %.3f, apply of 2 arrays %.3f ms; hand-written keys + CUB "
      "sort + "
      "fused gather %.3f ms\n",
      keys_host_ms, sort_host_ms, apply_host_ms, hand_host_ms);
  row("two reorders, one graph each, on two streams", two_graphs_ms, two_graphs_ms / one_graph_ms, "x one graph alone");
  std::printf("  one reorder as a graph: %.3f ms\n", one_graph_ms);
  row("steady-state step, eager (deferred checks)", eager_step_ms, 1.0, "");
  row("steady-state step, CUDA graph replay", graph_step_ms, graph_step_ms / eager_step_ms, "x eager");
  std::printf("  plan allocations during capture and replays: %zu\n", allocations_after - allocations_before);
  if (!opt.json.empty()) {
    std::ofstream out(opt.json);
    out << "{\"gpu\": \"" << bench::device_name() << "\", \"n\": " << n << ", \"neighbors\": " << K
        << ", \"copy_ms\": " << copy_ms << ", \"floor_ms\": " << floor_ms
        << ", \"remap_in_place_ms\": " << remap_in_place_ms << ", \"remap_into_ms\": " << remap_into_ms
        << ", \"remap_deferred_ms\": " << remap_deferred_ms << ", \"hand_remap_ms\": " << hand_remap_ms
        << ", \"lookup_ms\": " << lookup_ms << ", \"hilbert_keys_ms\": " << hilbert_ms
        << ", \"cell_keys_ms\": " << cell_ms << ", \"bare_keys_ms\": " << bare_keys_ms
        << ", \"bare_hilbert_ms\": " << bare_hilbert_ms << ", \"library_total_ms\": " << library_total_ms
        << ", \"hand_total_ms\": " << hand_total_ms << ", \"one_stream_ms\": " << one_stream_ms
        << ", \"two_streams_ms\": " << two_streams_ms << ", \"enqueue_ms\": " << enqueue_ms
        << ", \"one_graph_ms\": " << one_graph_ms << ", \"two_graphs_ms\": " << two_graphs_ms
        << ", \"eager_step_ms\": " << eager_step_ms << ", \"graph_step_ms\": " << graph_step_ms
        << ", \"graph_allocations\": " << (allocations_after - allocations_before)
        << ", \"remap_same\": " << (remap_same ? "true" : "false")
        << ", \"gather_same\": " << (gather_same ? "true" : "false") << "}\n";
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (void* p : {static_cast<void*>(list), static_cast<void*>(list_in), static_cast<void*>(list_out),
                  static_cast<void*>(bad), static_cast<void*>(raw_keys), static_cast<void*>(raw_keys_out),
                  static_cast<void*>(raw_vals), static_cast<void*>(raw_vals_out), temp, static_cast<void*>(glist)}) {
    cudaFree(p);
  }
  return remap_same && gather_same && allocations_after == allocations_before ? 0 : 1;
}
