// migrate_gpu: coalesce::mpi's migration on GPU memory, in the steady state of a time-stepping
// code, against the hand-written CUDA code a competent programmer writes and against the raw
// exchange of the same bytes (the floor), all in the same process (issue 51's GPU rows).
//   mpiexec -n 2 migrate_gpu [--n-per-rank N] [--steps S] [--warmup W] [--leaving F]
//
// Each rank owns N particles (32 bytes: position, velocity, mass, id) in its slab of a box split
// along x, periodic along x. Every step a fraction F (10 %) of the particles crosses into the next
// slab (x += slab width, wrapped), chosen by a hash of the id and the step, so every side (the
// library on each layout, the hand-written code) moves the same particles whatever order it keeps
// them in; the sizes stay near N step after step, on the same arrays, never reset. Each side finds
// its leavers from the positions (a migration by position, on the GPU). The contenders of a step
// run one after the other in an order that rotates from step to step, each timed alone (a barrier
// and a device synchronisation before it, the wall clock until its data is in place). A figure is
// the slowest rank's median over S steps after W warm-up steps.
//
// The hand-written side keeps one device array per field (SoA) with room for 2N, as a CUDA code
// without a library does: one kernel finds each particle's category (stays, goes right, goes
// left) and counts them, one scan ranks every particle within its category, one kernel packs the
// leavers as records into a send buffer and either closes up the stayers into the other set of
// arrays (order kept) or, unordered, records which slots are holes below the kept count and which
// stayers past it fill them, and a last kernel fills the holes (about the leavers' share of the
// elements moves). Counts go by MPI_Alltoall, messages through page-locked host memory (the
// library's staged transport: MPI here takes host pointers), arrivals are unpacked after the
// kept particles. The floor: the same bytes copied to the host, exchanged by Isend/Irecv and
// copied back, nothing packed.
//
// Every step checks that every side holds the same particles on each rank (count and two sums
// over the ids, computed on the GPU) and that no particle was lost or duplicated over the ranks.
// Ranks take GPU (local rank mod GPU count); two ranks on one GPU share it alike on every side.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <cub/device/device_scan.cuh>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

#include "common/mpi_probe.hpp"
#include "common/particle.hpp"

using bench::Particle;
using bench::vec3;
using steady = std::chrono::steady_clock;

namespace {

void check(cudaError_t status, char const* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#define CHECK_CUDA(call) check((call), #call)

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double slowest_rank(double mine) {
  double slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// ---------------------------------------------------------------------------------------------
// Who leaves in a step, the same on every side: a hash of the id and the step.
__host__ __device__ std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct moving_rule {
  int step = 0;
  std::uint64_t threshold = 0;  // a particle leaves when its hash is below: fraction * 2^64
  float slab = 0, length = 0;   // the slab's width along x, the box's
  __device__ bool leaves(std::uint32_t id) const {
    return mix(id ^ (static_cast<std::uint64_t>(step) << 32)) < threshold;
  }
  __device__ float moved(float x) const {  // into the next slab, wrapped
    float y = x + slab;
    return y >= length ? y - length : y;
  }
};

std::uint64_t threshold_of(double fraction) {
  if (fraction <= 0) return 0;
  if (fraction >= 1) return ~0ull;
  return static_cast<std::uint64_t>(std::ldexp(fraction, 64));
}

// What a side holds on a rank, order aside.
struct census {
  unsigned long long count = 0, id_sum = 0, id_hash_sum = 0;
  bool operator==(census const&) const = default;
};

// Moves this step's leavers into the next slab and sums the census: ids(i) and x(i) of slot i.
template <class Ids, class MoveX>
__global__ void move_and_count(std::size_t n, moving_rule rule, Ids ids, MoveX move_x, census* out) {
  census local;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t const id = ids(i);
    if (rule.threshold != 0 && rule.leaves(id)) move_x(i, rule);
    local.count += 1, local.id_sum += id, local.id_hash_sum += mix(id);
  }
  atomicAdd(&out->count, local.count);
  atomicAdd(&out->id_sum, local.id_sum);
  atomicAdd(&out->id_hash_sum, local.id_hash_sum);
}

template <class Ids, class MoveX> census prepare_step(std::size_t n, moving_rule rule, Ids ids, MoveX move_x) {
  static census* sums = nullptr;
  if (sums == nullptr) CHECK_CUDA(cudaMalloc(&sums, sizeof(census)));
  CHECK_CUDA(cudaMemset(sums, 0, sizeof(census)));
  if (n > 0) move_and_count<<<264, 256>>>(n, rule, ids, move_x, sums);
  census c;
  CHECK_CUDA(cudaMemcpy(&c, sums, sizeof c, cudaMemcpyDeviceToHost));
  return c;
}

// ---------------------------------------------------------------------------------------------
// Page-locked host memory that grows (never shrinks): the staging of the messages.
struct pinned {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  std::byte* at_least(std::size_t b) {
    if (b > bytes) {
      if (data != nullptr) CHECK_CUDA(cudaFreeHost(data));
      CHECK_CUDA(cudaMallocHost(&data, b));
      bytes = b;
    }
    return data;
  }
};
template <class T> struct device_buffer {  // device memory that grows (never shrinks)
  T* data = nullptr;
  std::size_t count = 0;
  T* at_least(std::size_t c) {
    if (c > count) {
      if (data != nullptr) CHECK_CUDA(cudaFree(data));
      CHECK_CUDA(cudaMalloc(&data, c * sizeof(T)));
      count = c;
    }
    return data;
  }
};

// ---------------------------------------------------------------------------------------------
// The hand-written side: one device array per field, room for `capacity` particles.
struct soa_columns {
  float *x, *y, *z, *vx, *vy, *vz, *mass;
  std::uint32_t* id;
  __device__ Particle record(std::size_t i) const {
    return {{x[i], y[i], z[i]}, {vx[i], vy[i], vz[i]}, mass[i], id[i]};
  }
  __device__ void set(std::size_t i, Particle const& p) const {
    x[i] = p.pos.x, y[i] = p.pos.y, z[i] = p.pos.z;
    vx[i] = p.vel.x, vy[i] = p.vel.y, vz[i] = p.vel.z;
    mass[i] = p.mass, id[i] = p.id;
  }
  __device__ void move(std::size_t to, std::size_t from) const {
    x[to] = x[from], y[to] = y[from], z[to] = z[from];
    vx[to] = vx[from], vy[to] = vy[from], vz[to] = vz[from];
    mass[to] = mass[from], id[to] = id[from];
  }
};

soa_columns allocate_columns(std::size_t capacity) {
  soa_columns c{};
  for (float** f : {&c.x, &c.y, &c.z, &c.vx, &c.vy, &c.vz, &c.mass})
    CHECK_CUDA(cudaMalloc(f, capacity * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c.id, capacity * sizeof(std::uint32_t)));
  return c;
}

// Categories: 0 stays, 1 goes to the right neighbour, 2 to the left one (a slab decomposition: a
// particle crosses at most one face per step). Each particle adds 1 << (21 * category) to a 64-bit
// sum, so one exclusive scan ranks every particle within its category (up to 2^21 per rank).
constexpr int category_bits = 21;
constexpr std::uint64_t category_mask = (std::uint64_t{1} << category_bits) - 1;

struct slab_geometry {
  float lo = 0, slab = 0;  // this rank's slab starts at lo; every slab is `slab` wide
  float length = 0;        // the box along x (periodic)
};

__global__ void categorize(soa_columns c, std::size_t n, slab_geometry g, std::uint64_t* one_hot,
                           unsigned long long* counts) {
  __shared__ unsigned long long block_counts[3];
  if (threadIdx.x < 3) block_counts[threadIdx.x] = 0;
  __syncthreads();
  std::size_t const i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < n) {
    float const dx = c.x[i] - g.lo;  // inside [0, slab) when it stays
    int const category = dx < 0 ? (dx < -0.5f * g.length ? 1 : 2) : dx >= g.slab ? (dx >= 0.5f * g.length ? 2 : 1) : 0;
    one_hot[i] = std::uint64_t{1} << (category_bits * category);
    atomicAdd(&block_counts[category], 1ull);
  }
  __syncthreads();
  if (threadIdx.x < 3 && block_counts[threadIdx.x] != 0) atomicAdd(&counts[threadIdx.x], block_counts[threadIdx.x]);
}

__device__ int category_of(std::uint64_t one_hot) { return one_hot == 1 ? 0 : one_hot >> category_bits == 1 ? 1 : 2; }
__device__ std::uint64_t rank_in(std::uint64_t scanned, int category) {
  return (scanned >> (category_bits * category)) & category_mask;
}

// Order kept: the stayers close up into the other set of arrays, the leavers are packed.
__global__ void pack_and_close_up(soa_columns from, soa_columns to, std::size_t n, std::uint64_t const* one_hot,
                                  std::uint64_t const* scanned, Particle* send, std::size_t left_start) {
  std::size_t const i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  int const category = category_of(one_hot[i]);
  std::uint64_t const r = rank_in(scanned[i], category);
  if (category == 0) {
    to.set(r, from.record(i));
  } else {
    send[(category == 1 ? 0 : left_start) + r] = from.record(i);
  }
}

// Unordered: the leavers are packed; a leaver below the kept count is the h-th hole (h: leavers
// before it), a stayer at or past it the h-th filler (h: stayers before it that are at or past
// the kept count); fill_holes then moves filler h into hole h.
__global__ void pack_and_list_holes(soa_columns c, std::size_t n, std::size_t kept, std::uint64_t const* one_hot,
                                    std::uint64_t const* scanned, Particle* send, std::size_t left_start,
                                    std::uint32_t* holes, std::uint32_t* fillers, std::size_t stayers_below_kept) {
  std::size_t const i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  int const category = category_of(one_hot[i]);
  std::uint64_t const s = scanned[i];
  if (category == 0) {
    if (i >= kept) fillers[rank_in(s, 0) - stayers_below_kept] = static_cast<std::uint32_t>(i);
    return;
  }
  send[(category == 1 ? 0 : left_start) + rank_in(s, category)] = c.record(i);
  if (i < kept) holes[i - rank_in(s, 0)] = static_cast<std::uint32_t>(i);
}

__global__ void fill_holes(soa_columns c, std::size_t count, std::uint32_t const* holes, std::uint32_t const* fillers) {
  std::size_t const h = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (h < count) c.move(holes[h], fillers[h]);
}

__global__ void unpack_records(soa_columns c, std::size_t first, std::size_t count, Particle const* received) {
  std::size_t const k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (k < count) c.set(first + k, received[k]);
}

// The number of stayers below `kept` (the scan's stayer rank at kept, from the device).
__global__ void stayers_below(std::size_t kept, std::uint64_t const* one_hot, std::uint64_t const* scanned,
                              unsigned long long* out) {
  *out = kept == 0 ? 0 : rank_in(scanned[kept - 1], 0) + (one_hot[kept - 1] == 1 ? 1 : 0);
}

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + 255) / 256); }

// Phases of a hand-written step, as the library's are split from outside (below).
enum phase : std::size_t { grouping, pack_and_move, counts, messages, arrivals, phase_count };
constexpr char const* phase_names[phase_count] = {"grouping", "pack+moves", "counts", "messages", "arrivals"};
using phase_times = std::array<double, phase_count>;

class hand_migration {
 public:
  hand_migration(std::vector<Particle> const& records, int rank, int size, slab_geometry g)
      : rank_(rank), size_(size), geometry_(g), capacity_(2 * records.size() + 1024) {
    a_ = allocate_columns(capacity_), b_ = allocate_columns(capacity_);
    n_ = records.size();
    device_buffer<Particle> staging;
    Particle* d = staging.at_least(std::max<std::size_t>(n_, 1));
    CHECK_CUDA(cudaMemcpy(d, records.data(), n_ * sizeof(Particle), cudaMemcpyHostToDevice));
    if (n_ > 0) unpack_records<<<blocks_for(n_), 256>>>(a_, 0, n_, d);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaMalloc(&counts_, 4 * sizeof(unsigned long long)));
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  std::size_t size() const { return n_; }
  soa_columns columns() const { return a_; }
  std::size_t last_sent() const { return last_sent_; }  // records sent in the last step

  phase_times step(bool keep_order) {
    auto const t0 = steady::now();
    std::size_t const n = n_;
    std::uint64_t* const one_hot = one_hot_.at_least(std::max<std::size_t>(n, 1));
    CHECK_CUDA(cudaMemsetAsync(counts_, 0, 4 * sizeof(unsigned long long), stream_));
    if (n > 0) categorize<<<blocks_for(n), 256, 0, stream_>>>(a_, n, geometry_, one_hot, counts_);
    std::array<unsigned long long, 4> count{};
    CHECK_CUDA(cudaMemcpyAsync(count.data(), counts_, sizeof count, cudaMemcpyDeviceToHost, stream_));
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    std::size_t const kept = count[0], right = count[1], left = count[2];
    last_sent_ = right + left;
    // Per destination rank (right and left are one rank when there are two).
    int const right_rank = (rank_ + 1) % size_, left_rank = (rank_ + size_ - 1) % size_;
    auto const t1 = steady::now();
    Particle* send = nullptr;
    if (kept != n) {
      send = send_.at_least(right + left);
      std::uint64_t* const scanned = scanned_.at_least(n);
      std::size_t temp_bytes = 0;
      CHECK_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, one_hot, scanned, n, stream_));
      CHECK_CUDA(cub::DeviceScan::ExclusiveSum(temp_.at_least(temp_bytes), temp_bytes, one_hot, scanned, n, stream_));
      if (keep_order) {
        pack_and_close_up<<<blocks_for(n), 256, 0, stream_>>>(a_, b_, n, one_hot, scanned, send, right);
        std::swap(a_, b_);
      } else {
        stayers_below<<<1, 1, 0, stream_>>>(kept, one_hot, scanned, counts_ + 3);
        unsigned long long below = 0;
        CHECK_CUDA(cudaMemcpyAsync(&below, counts_ + 3, sizeof below, cudaMemcpyDeviceToHost, stream_));
        CHECK_CUDA(cudaStreamSynchronize(stream_));
        std::size_t const holes = kept - below;
        std::uint32_t* const hole = holes_.at_least(std::max<std::size_t>(holes, 1));
        std::uint32_t* const filler = fillers_.at_least(std::max<std::size_t>(holes, 1));
        pack_and_list_holes<<<blocks_for(n), 256, 0, stream_>>>(a_, n, kept, one_hot, scanned, send, right, hole,
                                                                filler, below);
        if (holes > 0) fill_holes<<<blocks_for(holes), 256, 0, stream_>>>(a_, holes, hole, filler);
      }
      out_staging_.at_least((right + left) * sizeof(Particle));
      CHECK_CUDA(
          cudaMemcpyAsync(out_staging_.data, send, (right + left) * sizeof(Particle), cudaMemcpyDeviceToHost, stream_));
      CHECK_CUDA(cudaStreamSynchronize(stream_));
    }
    auto const t2 = steady::now();
    // Counts per rank (the right and left neighbours may be one rank).
    std::vector<unsigned long long> out(static_cast<std::size_t>(size_), 0), in(out.size());
    out[static_cast<std::size_t>(right_rank)] += right;
    out[static_cast<std::size_t>(left_rank)] += left;
    out[static_cast<std::size_t>(rank_)] = 0;
    MPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    std::size_t arriving = 0;
    for (auto c : in) arriving += c;
    auto const t3 = steady::now();
    std::byte* const incoming = in_staging_.at_least(std::max<std::size_t>(arriving, 1) * sizeof(Particle));
    std::vector<MPI_Request> requests;
    std::size_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      auto const c = in[static_cast<std::size_t>(r)];
      if (c == 0) continue;
      requests.emplace_back();
      MPI_Irecv(incoming + offset * sizeof(Particle), static_cast<int>(c * sizeof(Particle)), MPI_BYTE, r, 9,
                MPI_COMM_WORLD, &requests.back());
      offset += c;
    }
    if (right_rank == left_rank) {
      if (right + left > 0) {
        requests.emplace_back();
        MPI_Isend(out_staging_.data, static_cast<int>((right + left) * sizeof(Particle)), MPI_BYTE, right_rank, 9,
                  MPI_COMM_WORLD, &requests.back());
      }
    } else {
      if (right > 0) {
        requests.emplace_back();
        MPI_Isend(out_staging_.data, static_cast<int>(right * sizeof(Particle)), MPI_BYTE, right_rank, 9,
                  MPI_COMM_WORLD, &requests.back());
      }
      if (left > 0) {
        requests.emplace_back();
        MPI_Isend(out_staging_.data + right * sizeof(Particle), static_cast<int>(left * sizeof(Particle)), MPI_BYTE,
                  left_rank, 9, MPI_COMM_WORLD, &requests.back());
      }
    }
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    auto const t4 = steady::now();
    if (kept + arriving > capacity_) {
      std::fprintf(stderr, "migrate_gpu: the hand-written side's %zu slots cannot hold %zu particles\n", capacity_,
                   kept + arriving);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (arriving > 0) {
      Particle* const received = received_.at_least(arriving);
      CHECK_CUDA(cudaMemcpyAsync(received, incoming, arriving * sizeof(Particle), cudaMemcpyHostToDevice, stream_));
      unpack_records<<<blocks_for(arriving), 256, 0, stream_>>>(a_, kept, arriving, received);
    }
    n_ = kept + arriving;
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    auto const t5 = steady::now();
    return {ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, t3), ms_between(t3, t4), ms_between(t4, t5)};
  }

 private:
  int rank_, size_;
  slab_geometry geometry_;
  std::size_t capacity_, n_ = 0, last_sent_ = 0;
  soa_columns a_{}, b_{};
  unsigned long long* counts_ = nullptr;
  cudaStream_t stream_{};
  device_buffer<std::uint64_t> one_hot_, scanned_;
  device_buffer<std::uint32_t> holes_, fillers_;
  device_buffer<Particle> send_, received_;
  device_buffer<std::byte> temp_;
  pinned out_staging_, in_staging_;
};

// ---------------------------------------------------------------------------------------------
// The contenders: each prepares a step (moves this step's leavers, sums its census: untimed) and
// then runs it (timed).
struct contender {
  std::string name;
  std::function<census(moving_rule const&)> prepare;
  std::function<phase_times()> run;
  std::vector<double> total;
  std::array<std::vector<double>, phase_count> phases;
};

template <class Layout> struct library_state { coalesce::device_vector<Particle, Layout> particles; };

template <class V> struct view_ids {
  V v;
  __device__ std::uint32_t operator()(std::size_t i) const { return v[i][&Particle::id]; }
};
template <class V> struct view_move_x {
  V v;
  __device__ void operator()(std::size_t i, moving_rule const& rule) const {
    float const old = v[i][&Particle::pos][&vec3::x];
    v[i][&Particle::pos][&vec3::x] = rule.moved(old);  // through the view (a copy of the proxy would be a value)
  }
};

template <class Layout> contender library_contender(std::string name, bool keep_order,
                                                    coalesce::mpi::decomposition const& d,
                                                    std::vector<Particle> const& records) {
  auto s = std::make_shared<library_state<Layout>>(
      library_state<Layout>{coalesce::device_vector<Particle, Layout>(records)});
  contender c{std::move(name), {}, {}, {}, {}};
  c.prepare = [s](moving_rule const& rule) {
    auto const v = s->particles.view();
    using V = std::remove_const_t<decltype(v)>;
    return prepare_step(s->particles.size(), rule, view_ids<V>{v}, view_move_x<V>{v});
  };
  c.run = [s, keep_order, &d] {
    mpi_probe::arm();
    auto const start = steady::now();
    if (keep_order) {
      (void)coalesce::mpi::migrate(d, s->particles, &Particle::pos);
    } else {
      (void)coalesce::mpi::migrate(coalesce::mpi::unordered, d, s->particles, &Particle::pos);
    }
    auto const end = steady::now();
    // The split at the count exchange and the messages (common/mpi_probe.hpp).
    using namespace mpi_probe;
    disarm();
    if (!seen_alltoall) return phase_times{};
    auto const messages = seen_message ? message_begin : waitall_end;
    return phase_times{ms_between(start, alltoall_begin), ms_between(alltoall_end, messages),
                       ms_between(alltoall_begin, alltoall_end), ms_between(messages, waitall_end),
                       ms_between(waitall_end, end)};
  };
  return c;
}

struct hand_ids {
  std::uint32_t const* id;
  __device__ std::uint32_t operator()(std::size_t i) const { return id[i]; }
};
struct hand_move_x {
  float* x;
  __device__ void operator()(std::size_t i, moving_rule const& rule) const { x[i] = rule.moved(x[i]); }
};

contender hand_contender(std::string name, bool keep_order, std::shared_ptr<hand_migration> h) {
  contender c{std::move(name), {}, {}, {}, {}};
  c.prepare = [h](moving_rule const& rule) {
    soa_columns const col = h->columns();
    return prepare_step(h->size(), rule, hand_ids{col.id}, hand_move_x{col.x});
  };
  c.run = [h, keep_order] { return h->step(keep_order); };
  return c;
}

// The floor: the bytes the hand-written side (order kept) sent in its last step, copied to the
// host, exchanged with the same peers and copied back to the GPU, nothing packed.
struct floor_state {
  std::size_t out = 0, in = 0;  // records to the next rank and from the previous one
  device_buffer<Particle> device_out, device_in;
  pinned host_out, host_in;
};

contender floor_contender(std::shared_ptr<floor_state> f, int rank, int size) {
  contender c{"floor: staged exchange of the bytes", {}, {}, {}, {}};
  c.prepare = [](moving_rule const&) { return census{}; };
  c.run = [f, rank, size] {
    auto const bytes_out = f->out * sizeof(Particle), bytes_in = f->in * sizeof(Particle);
    Particle* const dout = f->device_out.at_least(f->out + 1);
    Particle* const din = f->device_in.at_least(f->in + 1);
    std::byte* const hout = f->host_out.at_least(bytes_out + 1);
    std::byte* const hin = f->host_in.at_least(bytes_in + 1);
    CHECK_CUDA(cudaMemcpy(hout, dout, bytes_out, cudaMemcpyDeviceToHost));
    MPI_Request requests[2];
    MPI_Irecv(hin, static_cast<int>(bytes_in), MPI_BYTE, (rank + size - 1) % size, 3, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(hout, static_cast<int>(bytes_out), MPI_BYTE, (rank + 1) % size, 3, MPI_COMM_WORLD, &requests[1]);
    PMPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    CHECK_CUDA(cudaMemcpy(din, hin, bytes_in, cudaMemcpyHostToDevice));
    return phase_times{};
  };
  return c;
}

// Fails the run on every rank when a side's particles over all ranks are not those the run started
// with, or when the sides hold different particles on a rank; says which side and what it holds.
void check_census(std::vector<contender> const& sides, std::vector<census> const& got, census const& global_start,
                  int step) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bool failed = false;
  census const* reference = nullptr;
  for (std::size_t k = 0; k < sides.size(); ++k) {
    if (sides[k].name.rfind("floor", 0) == 0) continue;  // the floor holds nothing
    census total{};
    MPI_Allreduce(&got[k], &total, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    int differs = reference != nullptr && !(got[k] == *reference), any_differs = 0;
    MPI_Allreduce(&differs, &any_differs, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (reference == nullptr) reference = &got[k];
    if (!(total == global_start) || any_differs) {
      failed = true;
      std::fprintf(stderr, "migrate_gpu: step %d, rank %d: side '%s' holds %llu particles (id sum %llu)%s%s\n", step,
                   rank, sides[k].name.c_str(), got[k].count, got[k].id_sum,
                   total == global_start ? "" : "; over all ranks not the particles the run started with",
                   any_differs ? "; other particles than the first side on some rank" : "");
    }
  }
  if (failed) MPI_Abort(MPI_COMM_WORLD, 1);
}

struct options {
  std::size_t n_per_rank = 1u << 20;
  int steps = 21, warmup = 4;
  double leaving = 0.10;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto next = [&]() -> char const* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "migrate_gpu: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--n-per-rank")
      o.n_per_rank = std::stoull(next());
    else if (a == "--steps")
      o.steps = std::stoi(next());
    else if (a == "--warmup")
      o.warmup = std::stoi(next());
    else if (a == "--leaving")
      o.leaving = std::stod(next());
    else {
      std::fprintf(stderr, "migrate_gpu: unknown option %s (--n-per-rank, --steps, --warmup, --leaving)\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Runs warmup + steps steps of every contender; contender k of step s runs (k + s)-th.
void run_steps(std::vector<contender>& sides, options const& o, double fraction, slab_geometry g,
               census const& global_start, std::shared_ptr<floor_state> const& floor,
               std::shared_ptr<hand_migration> const& floor_source, int first_step) {
  std::vector<census> got(sides.size());
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    moving_rule const rule{first_step + step, threshold_of(fraction), g.slab, g.length};
    for (std::size_t k = 0; k < sides.size(); ++k) got[k] = sides[k].prepare(rule);
    for (std::size_t j = 0; j < sides.size(); ++j) {
      auto& side = sides[(j + static_cast<std::size_t>(step)) % sides.size()];
      if (floor && floor_source && side.name.rfind("floor", 0) == 0) {
        // The floor sends what the hand-written side moved last: its leavers this step.
        floor->out = floor_source->last_sent();
        unsigned long long out = floor->out, in = 0;
        int rank = 0, size = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Sendrecv(&out, 1, MPI_UNSIGNED_LONG_LONG, (rank + 1) % size, 4, &in, 1, MPI_UNSIGNED_LONG_LONG,
                     (rank + size - 1) % size, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        floor->in = in;
      }
      MPI_Barrier(MPI_COMM_WORLD);
      CHECK_CUDA(cudaDeviceSynchronize());
      auto const start = steady::now();
      phase_times const p = side.run();
      CHECK_CUDA(cudaDeviceSynchronize());
      double const ms = ms_between(start, steady::now());
      if (step >= o.warmup) {
        side.total.push_back(ms);
        for (std::size_t k = 0; k < phase_count; ++k) side.phases[k].push_back(p[k]);
      }
    }
    check_census(sides, got, global_start, first_step + step);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options const o = parse(argc, argv);
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    if (rank == 0) std::fprintf(stderr, "migrate_gpu: SKIPPED: no GPU visible (it measures GPU memory)\n");
    MPI_Finalize();
    return 0;
  }
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  CHECK_CUDA(cudaSetDevice(local_rank % gpus));
  {
    float const slab = 10.0f, width = 10.0f;
    float const length = slab * static_cast<float>(size);
    coalesce::box const box{
        .lo = {0, 0, 0},
        .hi = {length, width, width},
        .edges = {coalesce::boundary::periodic, coalesce::boundary::open, coalesce::boundary::open}};
    coalesce::mpi::decomposition d(MPI_COMM_WORLD, box, 3, {size, 1, 1});
    slab_geometry const g{slab * static_cast<float>(rank), slab, length};
    std::vector<Particle> records(o.n_per_rank);
    std::mt19937 rng(17u + static_cast<unsigned>(rank));
    std::uniform_real_distribution<float> ux(g.lo, g.lo + slab * 0.9999f), u(0.0f, width * 0.9999f);
    for (std::size_t i = 0; i < records.size(); ++i) {
      records[i] = {{ux(rng), u(rng), u(rng)},
                    {0.1f, 0.2f, 0.3f},
                    1.0f,
                    static_cast<std::uint32_t>(static_cast<std::size_t>(rank) * o.n_per_rank + i)};
    }
    census start{};
    for (auto const& p : records) start.count += 1, start.id_sum += p.id, start.id_hash_sum += mix(p.id);
    census global_start{};
    MPI_Allreduce(&start, &global_start, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
      cudaDeviceProp prop{};
      CHECK_CUDA(cudaGetDeviceProperties(&prop, local_rank % gpus));
      std::printf(
          "migrate_gpu: %d rank(s) on %d GPU(s) (%s), %zu particles per rank, %.0f%% leaving per step, "
          "%d steps after %d warm-up, transport %s\n",
          size, gpus, prop.name, o.n_per_rank, o.leaving * 100, o.steps, o.warmup,
          d.transport() == coalesce::mpi::transport::staged ? "staged" : "device pointers");
    }
    using blocked = coalesce::aosoa<16>;
    using split_layout =
        coalesce::split<coalesce::fields<&Particle::pos, &Particle::mass>, coalesce::aos, coalesce::soa>;
    auto hand_kept = std::make_shared<hand_migration>(records, rank, size, g);
    auto hand_free = std::make_shared<hand_migration>(records, rank, size, g);
    auto floor = std::make_shared<floor_state>();
    std::vector<contender> sides;
    sides.push_back(library_contender<coalesce::soa>("coalesce soa, order kept", true, d, records));
    sides.push_back(library_contender<coalesce::soa>("coalesce soa, unordered", false, d, records));
    sides.push_back(library_contender<blocked>("coalesce aosoa<16>, order kept", true, d, records));
    sides.push_back(library_contender<blocked>("coalesce aosoa<16>, unordered", false, d, records));
    sides.push_back(library_contender<split_layout>("coalesce split, order kept", true, d, records));
    sides.push_back(hand_contender("hand-written, order kept", true, hand_kept));
    sides.push_back(hand_contender("hand-written, unordered", false, hand_free));
    sides.push_back(floor_contender(floor, rank, size));
    run_steps(sides, o, o.leaving, g, global_start, floor, hand_kept, 1);

    std::vector<double> t;
    for (auto const& s : sides) t.push_back(slowest_rank(median(s.total)));
    std::vector<phase_times> ph;
    for (auto const& s : sides) {
      phase_times p{};
      for (std::size_t k = 0; k < phase_count; ++k) p[k] = slowest_rank(median(s.phases[k]));
      ph.push_back(p);
    }

    // Nobody leaving: the common step (the floor: the count exchange).
    std::vector<contender> still;
    still.push_back(std::move(sides[0]));
    still.push_back(std::move(sides[5]));
    for (auto& s : still) s.total.clear();
    contender counts{"floor: the count exchange", {}, {}, {}, {}};
    counts.prepare = [](moving_rule const&) { return census{}; };
    counts.run = [size] {
      std::vector<unsigned long long> out(static_cast<std::size_t>(size), 0), in(out.size());
      PMPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
      return phase_times{};
    };
    still.push_back(std::move(counts));
    run_steps(still, o, 0.0, g, global_start, nullptr, nullptr, 1000);
    double const still_lib = slowest_rank(median(still[0].total)), still_hand = slowest_rank(median(still[1].total)),
                 still_floor = slowest_rank(median(still[2].total));

    if (rank == 0) {
      int const pct = static_cast<int>(std::lround(o.leaving * 100));
      std::printf("\n| row | coalesce (ms) | hand-written (ms) | ratio | floor (ms) |\n|---|---:|---:|---:|---:|\n");
      struct line {
        char const* what;
        double lib, hand;
      };
      line const lines[] = {{"soa, order kept", t[0], t[5]},
                            {"soa, unordered", t[1], t[6]},
                            {"aosoa<16>, order kept", t[2], t[5]},
                            {"aosoa<16>, unordered", t[3], t[6]},
                            {"split, order kept", t[4], t[5]}};
      for (auto const& l : lines)
        std::printf("| migrate %d%%, %s | %.3f | %.3f | %.2fx | %.3f |\n", pct, l.what, l.lib, l.hand, l.lib / l.hand,
                    t[7]);
      std::printf("| migrate, nobody leaving, soa | %.3f | %.3f | %.2fx | %.3f |\n", still_lib, still_hand,
                  still_lib / still_hand, still_floor);
      std::printf("\nphases (ms, slowest rank's medians; the library's split at its count exchange and messages):\n");
      std::printf("%-24s", "");
      for (auto const* name : phase_names) std::printf(" %10s", name);
      std::printf("\n");
      char const* const who[] = {"coalesce soa, kept",         "coalesce soa, unordered", "coalesce aosoa<16>, kept",
                                 "coalesce aosoa<16>, unord.", "coalesce split, kept",    "hand-written, kept",
                                 "hand-written, unordered"};
      for (std::size_t k = 0; k < 7; ++k) {
        std::printf("%-24s", who[k]);
        for (double v : ph[k]) std::printf(" %10.3f", v);
        std::printf("\n");
      }
    }
  }
  MPI_Finalize();
  return 0;
}
