// distributed_md: the neighbour-list Lennard-Jones step of benchmarks/neighbor_reorder over MPI ranks
// with coalesce::mpi, in device memory (one GPU per rank in CUDA builds, OpenMP on the host
// otherwise).
//   mpiexec -n R distributed_md [--n-per-rank N] [--steps S] [--rebuild-every K] [--check] [--no-overlap]
//
// Every K steps: migrate the particles that left (by position), sort each rank's particles along a
// Hilbert curve, build the halo (ghosts within the list cutoff, periodic images) and the neighbour
// lists (cell lists over owned + ghosts, cutoff + skin). Every step: forward the positions to the
// ghosts, forces over the list (entries within the cutoff, each row in id order), integrate. On
// the GPU the forward travels on its own stream while the forces of the rows that read no ghost
// run (--no-overlap: one after the other). The lists are built on the host from a copy.
// Checks: particles conserved (count and sum of ids) on every rebuild; with --check, rank 0 also
// runs the whole system alone and the forces per particle id must match bit for bit (both runs
// sum each particle's pairs in id order over the same periodic images). Prints a per-step time
// table: the slowest rank's time per phase.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

#include "neighbor_reorder/pair_force.hpp"

using neighbor_reorder::Particle;
using neighbor_reorder::vec3;

namespace distributed_md {  // named: CUDA extended lambdas need an enclosing function with linkage

constexpr float cutoff = 1.0f, skin = 0.3f, dt = 0.002f;
constexpr double density = 5.0;

struct options {
  std::size_t n_per_rank = 20000;
  int steps = 20;
  int rebuild_every = 5;
  bool check = false;
  bool overlap = true;  // forward the positions while the interior forces run
};

// The same global system on every rank (and in the one-rank reference): positions in the box,
// small random velocities, ids 0..n-1.
std::vector<Particle> global_system(std::size_t n, float box) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> u(0.0f, box), s(-0.5f, 0.5f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {s(rng), s(rng), s(rng)}, 1.0f, static_cast<std::uint32_t>(i)};
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Per-phase seconds, summed over the steps of this rank.
struct phase_times {
  double rebuild = 0;   // migrate, sort, halo, lists, conservation check
  double exchange = 0;  // forward + forces (one phase when the forward overlaps the interior forces)
  double integrate = 0;
  int steady_steps = 0;  // steps without a rebuild
  double steady = 0;     // their exchange + forces + integrate
};

// Index arrays and forces in device memory (GPU memory in CUDA builds, host memory otherwise).
using index_array = coalesce::device_array<std::uint32_t>;

struct rank_state {
  std::size_t owned = 0;                                       // particles[0, owned) are this rank's
  coalesce::device_vector<Particle, coalesce::soa> particles;  // owned, then ghosts
  coalesce::mpi::halo_plan halo;
  index_array offsets, neighbors;      // CSR over owned particles, each row in id order
  index_array interior, boundary;      // rows whose neighbours are all owned / that read a ghost
  coalesce::device_array<vec3> force;  // owned particles
};

// Cell list over owned + ghosts (on the host, from a copy); neighbours of owned particles within
// cutoff + skin, in id order. Rows that read no ghost are "interior": their forces need no
// forward and run while it travels.
void build_lists(rank_state& s, std::vector<Particle> const& all, coalesce::box const& sub) {
  float const reach = cutoff + skin;
  std::array<int, 3> cells{};
  std::array<double, 3> lo{};
  for (int a = 0; a < 3; ++a) {
    lo[a] = sub.lo[a] - reach;
    cells[a] = std::max(1, static_cast<int>((sub.hi[a] - sub.lo[a] + 2 * reach) / reach));
  }
  auto cell_of = [&](vec3 const& p, int a) {
    double const c[3] = {p.x, p.y, p.z};
    int const k = static_cast<int>((c[a] - lo[a]) / ((sub.hi[a] - sub.lo[a] + 2 * reach) / cells[a]));
    return std::clamp(k, 0, cells[a] - 1);
  };
  std::vector<std::vector<std::uint32_t>> grid(static_cast<std::size_t>(cells[0] * cells[1] * cells[2]));
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto const& p = all[i].pos;
    grid[static_cast<std::size_t>((cell_of(p, 2) * cells[1] + cell_of(p, 1)) * cells[0] + cell_of(p, 0))].push_back(
        static_cast<std::uint32_t>(i));
  }
  std::size_t const owned = s.halo.owned();
  std::vector<std::uint32_t> offsets(owned + 1, 0), neighbors, interior, boundary, row;
  for (std::size_t i = 0; i < owned; ++i) {
    auto const& p = all[i].pos;
    row.clear();
    int const c[3] = {cell_of(p, 0), cell_of(p, 1), cell_of(p, 2)};
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          int const x = c[0] + dx, y = c[1] + dy, z = c[2] + dz;
          if (x < 0 || y < 0 || z < 0 || x >= cells[0] || y >= cells[1] || z >= cells[2]) continue;
          for (std::uint32_t j : grid[static_cast<std::size_t>((z * cells[1] + y) * cells[0] + x)]) {
            if (j == i) continue;
            auto const& q = all[j].pos;
            float const ex = q.x - p.x, ey = q.y - p.y, ez = q.z - p.z;
            if (ex * ex + ey * ey + ez * ez < reach * reach) row.push_back(j);
          }
        }
    // Id order (then position, for two images of one particle): the same sums in any decomposition.
    std::sort(row.begin(), row.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (all[a].id != all[b].id) return all[a].id < all[b].id;
      return std::tie(all[a].pos.x, all[a].pos.y, all[a].pos.z) < std::tie(all[b].pos.x, all[b].pos.y, all[b].pos.z);
    });
    bool const reads_ghost = std::any_of(row.begin(), row.end(), [&](std::uint32_t j) { return j >= owned; });
    (reads_ghost ? boundary : interior).push_back(static_cast<std::uint32_t>(i));
    neighbors.insert(neighbors.end(), row.begin(), row.end());
    offsets[i + 1] = static_cast<std::uint32_t>(neighbors.size());
  }
  s.offsets = index_array(offsets);
  s.neighbors = index_array(neighbors);
  s.interior = index_array(interior);
  s.boundary = index_array(boundary);
  s.force = coalesce::device_array<vec3>(owned);
}

// Forces on the listed rows (entries within the cutoff, in the row's id order), queued on `on`.
void compute_forces(rank_state& s, index_array const& rows, coalesce::stream on) {
  auto const v = s.particles.const_view();
  std::uint32_t const* row = rows.data();
  std::uint32_t const* offsets = s.offsets.data();
  std::uint32_t const* neighbors = s.neighbors.data();
  vec3* force = s.force.data();
  coalesce::for_each_index(coalesce::device{on}, rows.size(), [=] COALESCE_HOST_DEVICE(std::size_t r) {
    std::uint32_t const i = row[r];
    vec3 const p = v[i][&Particle::pos];
    float fx = 0, fy = 0, fz = 0;
    for (std::uint32_t e = offsets[i]; e < offsets[i + 1]; ++e) {
      std::uint32_t const j = neighbors[e];
      vec3 const q = v[j][&Particle::pos];
      float const dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
      if (dx * dx + dy * dy + dz * dz >= cutoff * cutoff) continue;
      float const scale = neighbor_reorder::pair_scale(dx, dy, dz, v[j][&Particle::mass]);
      fx += scale * dx;
      fy += scale * dy;
      fz += scale * dz;
    }
    force[i] = {fx, fy, fz};
  });
}

void integrate(rank_state& s, coalesce::stream on) {
  auto v = s.particles.view();
  vec3 const* force = s.force.data();
  coalesce::for_each_index(coalesce::device{on}, s.halo.owned(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    vec3 u = v[i][&Particle::vel];
    float const m = v[i][&Particle::mass];
    u.x += force[i].x * dt / m;
    u.y += force[i].y * dt / m;
    u.z += force[i].z * dt / m;
    v[i][&Particle::vel] = u;
    vec3 x = v[i][&Particle::pos];
    x.x += u.x * dt;
    x.y += u.y * dt;
    x.z += u.z * dt;
    v[i][&Particle::pos] = x;
  });
}

// Periodic box: positions back into [0, L) before they pick their owner.
void wrap_positions(rank_state& s, float side, coalesce::stream on) {
  auto v = s.particles.view();
  coalesce::for_each_index(coalesce::device{on}, s.owned, [=] COALESCE_HOST_DEVICE(std::size_t i) {
    vec3 x = v[i][&Particle::pos];
    x.x -= side * ::floorf(x.x / side);
    x.y -= side * ::floorf(x.y / side);
    x.z -= side * ::floorf(x.z / side);
    v[i][&Particle::pos] = x;
  });
}

// Migrate, sort, halo, lists (the GPU work on `compute`; the halo's replays go to `comm`); returns
// the owned particles' count and id sum for the conservation check.
std::array<long long, 2> rebuild(rank_state& s, coalesce::mpi::decomposition& d, coalesce::stream compute,
                                 coalesce::stream comm) {
  s.particles.resize(s.owned);  // drop the ghosts
  wrap_positions(s, static_cast<float>(d.global().hi[0]), compute);
  d.set_stream(compute);
  (void)coalesce::mpi::migrate(d, s.particles, &Particle::pos);
  s.owned = s.particles.size();
  // Along a Hilbert curve over the subdomain (a margin covers rounding at its faces).
  coalesce::box wide{.lo = d.subdomain().lo, .hi = d.subdomain().hi, .edges = coalesce::boundary::clamped};
  for (int a = 0; a < 3; ++a) {
    wide.lo[a] -= 1.0;
    wide.hi[a] += 1.0;
  }
  coalesce::reorder_plan plan(compute);
  coalesce::sort_by_key(s.particles, coalesce::hilbert_keys(s.particles, &Particle::pos, wide, plan), plan);
  s.halo = coalesce::mpi::build_halo(d, s.particles, &Particle::pos, cutoff + skin);
  s.halo.set_stream(comm);
  std::vector<Particle> all(s.particles.size());
  s.particles.copy_to(all, compute);
  coalesce::synchronize(compute);
  build_lists(s, all, d.subdomain());
  std::array<long long, 2> count_and_ids{static_cast<long long>(s.owned), 0};
  for (std::size_t i = 0; i < s.owned; ++i) count_and_ids[1] += all[i].id;
  return count_and_ids;
}

// The GPU streams of a rank: forces and integration on one, the halo's messages on the other, so
// the forward travels while the interior forces run. On the CPU both are the default (no overlap).
struct rank_streams {
  coalesce::stream compute{}, comm{};
#ifdef __CUDACC__
  rank_streams() {
    cudaStream_t a = nullptr, b = nullptr;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    compute = a;
    comm = b;
  }
  ~rank_streams() {
    cudaStreamDestroy(compute.native());
    cudaStreamDestroy(comm.native());
  }
#else
  rank_streams() = default;
#endif
  rank_streams(rank_streams const&) = delete;
  rank_streams& operator=(rank_streams const&) = delete;
};

// Runs the simulation on `comm`; returns the final forces by id (owned particles of this rank).
std::map<std::uint32_t, vec3> run(MPI_Comm comm, options const& o, std::size_t n_total, float box_side, bool report) {
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {box_side, box_side, box_side}};
  coalesce::mpi::decomposition d(comm, box);
  rank_streams streams;
  auto const everything = global_system(n_total, box_side);
  std::vector<Particle> mine;
  for (auto const& p : everything) {
    if (d.owner({p.pos.x, p.pos.y, p.pos.z}) == d.rank()) mine.push_back(p);
  }
  rank_state s;
  s.particles = coalesce::device_vector<Particle, coalesce::soa>(mine);
  s.owned = mine.size();
  phase_times t;
  long long const ids_total = static_cast<long long>(n_total) * static_cast<long long>(n_total - 1) / 2;
  for (int step = 0; step < o.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    bool const rebuilding = step % o.rebuild_every == 0;
    if (rebuilding) {
      auto const local = rebuild(s, d, streams.compute, streams.comm);
      long long total[2] = {0, 0};
      MPI_Allreduce(local.data(), total, 2, MPI_LONG_LONG, MPI_SUM, comm);
      if (total[0] != static_cast<long long>(n_total) || total[1] != ids_total) {
        std::fprintf(stderr, "distributed_md: particles not conserved at step %d: %lld of %zu, id sum %lld of %lld\n",
                     step, total[0], n_total, total[1], ids_total);
        MPI_Abort(comm, 3);
      }
      t.rebuild += seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      compute_forces(s, s.interior, streams.compute);  // the ghosts were just placed: no forward
      compute_forces(s, s.boundary, streams.compute);
    } else if (o.overlap) {
      compute_forces(s, s.interior, streams.compute);  // queued first: runs while the forward travels
      coalesce::mpi::forward(s.halo, s.particles, &Particle::pos);
      compute_forces(s, s.boundary, streams.compute);
    } else {
      coalesce::mpi::forward(s.halo, s.particles, &Particle::pos);
      compute_forces(s, s.interior, streams.compute);
      compute_forces(s, s.boundary, streams.compute);
    }
    coalesce::synchronize(streams.compute);
    double const exchange = seconds_since(t0);
    t.exchange += exchange;
    t0 = std::chrono::steady_clock::now();
    integrate(s, streams.compute);
    coalesce::synchronize(streams.compute);
    double const integrated = seconds_since(t0);
    t.integrate += integrated;
    if (!rebuilding) {
      ++t.steady_steps;
      t.steady += exchange + integrated;
    }
  }
  double local[4] = {t.rebuild, t.exchange, t.integrate, t.steady}, slowest[4];
  MPI_Allreduce(local, slowest, 4, MPI_DOUBLE, MPI_MAX, comm);
  if (report) {
    int const rebuilds = (o.steps + o.rebuild_every - 1) / o.rebuild_every;
    double const per_step = (slowest[0] + slowest[1] + slowest[2]) / o.steps;
    std::printf(
        "%d ranks (%d x %d x %d), %zu particles (%zu per rank), %d steps, rebuild every %d, %s, forward %s the "
        "interior forces\n",
        d.size(), d.ranks_per_axis()[0], d.ranks_per_axis()[1], d.ranks_per_axis()[2], n_total,
        n_total / static_cast<std::size_t>(d.size()), o.steps, o.rebuild_every,
        coalesce::device_is_gpu ? "GPU memory" : "host memory", o.overlap ? "overlapped with" : "before");
    std::printf(
        "  ms per step (slowest rank): total %.3f | rebuild %.3f (per rebuild %.3f: migrate, sort, halo, lists on the "
        "host) |"
        " forward + forces %.3f | integrate %.3f\n",
        per_step * 1e3, slowest[0] / o.steps * 1e3, slowest[0] / rebuilds * 1e3, slowest[1] / o.steps * 1e3,
        slowest[2] / o.steps * 1e3);
    if (t.steady_steps > 0)
      std::printf("  steady step (no rebuild; forward, forces, integrate): %.4f ms\n",
                  slowest[3] / t.steady_steps * 1e3);
    std::printf("  particles conserved on every rebuild (count and sum of ids)\n");
  }
  std::map<std::uint32_t, vec3> forces;
  std::vector<Particle> owned(s.particles.size());
  s.particles.copy_to(owned);
  std::vector<vec3> const f = s.force.to_host();
  for (std::size_t i = 0; i < s.halo.owned(); ++i) forces[owned[i].id] = f[i];
  return forces;
}

}  // namespace distributed_md

using namespace distributed_md;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifdef __CUDACC__
  {  // one GPU per rank on a node
    int gpus = 0;
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
      if (rank == 0) std::fprintf(stderr, "distributed_md: SKIPPED, no GPU is visible (this is the CUDA build)\n");
      MPI_Finalize();
      return 77;
    }
    cudaSetDevice(local_rank % gpus);
  }
#endif
  options o;
  for (int a = 1; a < argc; ++a) {
    std::string const arg = argv[a];
    if (arg == "--n-per-rank" && a + 1 < argc)
      o.n_per_rank = std::stoull(argv[++a]);
    else if (arg == "--steps" && a + 1 < argc)
      o.steps = std::stoi(argv[++a]);
    else if (arg == "--rebuild-every" && a + 1 < argc)
      o.rebuild_every = std::max(1, std::stoi(argv[++a]));
    else if (arg == "--check")
      o.check = true;
    else if (arg == "--no-overlap")
      o.overlap = false;
    else {
      if (rank == 0)
        std::fprintf(
            stderr,
            "usage: distributed_md [--n-per-rank N] [--steps S] [--rebuild-every K] [--check] [--no-overlap]\n");
      MPI_Finalize();
      return 2;
    }
  }
  std::size_t const n_total = o.n_per_rank * static_cast<std::size_t>(size);
  float const box_side = static_cast<float>(std::cbrt(static_cast<double>(n_total) / density));
  int status = 0;
  try {
    auto const forces = run(MPI_COMM_WORLD, o, n_total, box_side, rank == 0);
    if (o.check) {
      // Every rank's forces by id to rank 0, against the whole system run alone there.
      std::vector<float> mine;
      for (auto const& [id, f] : forces) mine.insert(mine.end(), {static_cast<float>(id), f.x, f.y, f.z});
      int const count = static_cast<int>(mine.size());
      std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size), 0);
      MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      for (int r = 1; r < size; ++r)
        offsets[static_cast<std::size_t>(r)] =
            offsets[static_cast<std::size_t>(r - 1)] + counts[static_cast<std::size_t>(r - 1)];
      std::vector<float> all(rank == 0 ? static_cast<std::size_t>(offsets.back() + counts.back()) : 0);
      MPI_Gatherv(mine.data(), count, MPI_FLOAT, all.data(), counts.data(), offsets.data(), MPI_FLOAT, 0,
                  MPI_COMM_WORLD);
      if (rank == 0) {
        auto const alone = run(MPI_COMM_SELF, o, n_total, box_side, false);
        std::size_t same = 0, compared = 0;
        for (std::size_t k = 0; k + 3 < all.size(); k += 4) {
          auto const id = static_cast<std::uint32_t>(all[k]);
          auto const it = alone.find(id);
          ++compared;
          if (it != alone.end() && std::memcmp(&it->second.x, &all[k + 1], 4) == 0 &&
              std::memcmp(&it->second.y, &all[k + 2], 4) == 0 && std::memcmp(&it->second.z, &all[k + 3], 4) == 0) {
            ++same;
          }
        }
        std::printf("  forces per particle id against the one-rank run: %zu of %zu bit-identical\n", same, n_total);
        if (same != n_total || compared != n_total) status = 1;
      }
    }
  } catch (coalesce::error const& e) {
    std::fprintf(stderr, "distributed_md (rank %d): %s\n", rank, e.what());
    // An error on one rank only (a local check) would leave the others waiting in a collective.
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    status = 1;
  }
  int any = 0;
  MPI_Allreduce(&status, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
