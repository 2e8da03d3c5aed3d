// distributed_md: the neighbour-list Lennard-Jones step of benchmarks/neighbor_reorder over MPI ranks
// with coalesce::mpi, in device memory (one GPU per rank in CUDA builds, OpenMP on the host
// otherwise).
//   mpiexec -n R distributed_md [--n-per-rank N] [--steps S] [--rebuild-every K] [--check] [--no-overlap]
//
// Every K steps (--rebuild-every 0: whenever some particle on some rank moved more than skin / 2
// since the last build, the list's own criterion): migrate the particles that left (by
// position), sort each rank's particles (those a reach from every face of the subdomain first,
// each part along a Hilbert curve), build the halo (ghosts within cutoff + skin, periodic images)
// and the neighbour list (coalesce::verlet_list over owned + ghosts, built in device memory by the
// library). Every step: forward the positions to the ghosts, the pair law over the list by the
// library's pair engine (coalesce::compute_pairs: the user writes the law, the library the loop),
// integrate. On the GPU the forward travels (its own stream, driven by a second host thread)
// while the engine computes the rows that read no ghost: the first rows, a reach from every face
// (--no-overlap: one after the other).
// Checks: particles conserved (count and sum of ids) on every rebuild; with --check, rank 0 also
// runs the whole system alone and the forces per particle id must match bit for bit: the force
// member is stored as 64-bit fixed point and the engine rounds each pair's force to it before
// summing (pair_options::round_each_pair), so the order of a row, which follows the cells of each
// decomposition, does not change a bit. Prints the slowest rank's time per phase, and each
// rebuild's parts.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

namespace distributed_md {  // named: CUDA extended lambdas need an enclosing function with linkage

struct vec3 {
  float x, y, z;
};
// The particle as the code holds it: the force is a member, written by the pair engine.
struct Particle {
  vec3 pos;
  vec3 vel;
  vec3 force;
  float mass;
  std::uint32_t id;
};
// Columns (soa), the force stored as 64-bit fixed point with 32 fraction bits: the engine sums each
// pair's rounded force as integers (the same bits on any decomposition). The code reads and
// writes it as a vec3 of floats.
using particle_layout =
    coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::force, coalesce::fixed_point<std::int64_t, 32>>>;

constexpr float cutoff = 1.0f, skin = 0.3f, dt = 0.002f;
constexpr double density = 5.0;

// The pair law of benchmarks/neighbor_reorder (its pair_scale: Lennard-Jones with sigma 0.5, the
// separation held at 0.3 or more so that no pair's force blows up), written once as an
// evaluator: the engine calls it for each pair within the cutoff.
struct soft_lennard_jones {
  struct param_type {
    float sigma6;  // sigma^6
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const inv_r2 = 1.0f / (r2 > 0.09f ? r2 : 0.09f);
    float const s6 = q.sigma6 * inv_r2 * inv_r2 * inv_r2;
    return {24.0f * s6 * (2.0f * s6 - 1.0f) * inv_r2, 4.0f * s6 * (s6 - 1.0f)};
  }
};
coalesce::pair_table<soft_lennard_jones::param_type> pair_law_table() {
  coalesce::pair_table<soft_lennard_jones::param_type> table(1);
  table.set(0, 0, {0.0156f}, cutoff);  // 0.5^6 = 0.015625
  return table;
}

struct options {
  std::size_t n_per_rank = 20000;
  int steps = 20;
  int rebuild_every = 10;  // 0: when the list says some particle moved more than skin / 2
  bool check = false;
  bool overlap = true;  // forward the positions while the interior forces run
};

// The same global system on every rank (and in the one-rank reference): n of the m^3 sites of a
// simple cubic lattice filling the box (m^3 >= n, sites chosen at random), each moved by up to
// 0.1 along every axis, small random velocities, ids 0..n-1. A liquid-like start: no two
// particles overlap, so the forces stay moderate and particles move a little per step (the
// displacement criterion, --rebuild-every 0, then rebuilds every few tens of steps).
std::vector<Particle> global_system(std::size_t n, float box) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> jitter(-0.1f, 0.1f), s(-0.5f, 0.5f);
  auto m = static_cast<std::size_t>(std::cbrt(static_cast<double>(n)));
  while (m * m * m < n) ++m;
  std::vector<std::size_t> sites(m * m * m);
  for (std::size_t k = 0; k < sites.size(); ++k) sites[k] = k;
  std::shuffle(sites.begin(), sites.end(), rng);
  float const spacing = box / static_cast<float>(m);
  auto const at = [&](std::size_t c) {
    float const x = (static_cast<float>(c) + 0.5f) * spacing + jitter(rng);
    return std::clamp(x, 0.0f, std::nextafter(box, 0.0f));
  };
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t const k = sites[i];
    out[i] = {{at(k % m), at(k / m % m), at(k / (m * m))},
              {s(rng), s(rng), s(rng)},
              {0, 0, 0},
              1.0f,
              static_cast<std::uint32_t>(i)};
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Per-phase seconds, summed over the steps of this rank.
struct rebuild_times {
  double migrate = 0, sort = 0, halo = 0, lists = 0;
  double slowest = 0;  // the longest rebuild
  int count = 0;
  double total() const { return migrate + sort + halo + lists; }
};
struct phase_times {
  rebuild_times rebuild;  // migrate, sort, halo, lists
  double criterion = 0;   // --rebuild-every 0: the displacement check of every step
  double exchange = 0;    // forward + forces (one phase when the forward overlaps the interior forces)
  double integrate = 0;
  int steady_steps = 0;  // steps without a rebuild
  double steady = 0;     // their exchange + forces + integrate
};

// The list format the engine reads: padded column-major, a full list (the ghosts get no row: their
// reactions would have to travel back), the fastest per-particle format on the H200
// (docs/neighbors.md); another format is this one type changed.
using list_format = coalesce::padded_columns;

struct rank_state {
  explicit rank_state(coalesce::stream compute) : plan(compute) {}
  std::size_t owned = 0;                                         // particles[0, owned) are this rank's
  std::size_t interior = 0;                                      // particles[0, interior): a reach from every face
  coalesce::device_vector<Particle, particle_layout> particles;  // owned, then ghosts
  coalesce::mpi::halo_plan halo;
  coalesce::verlet_list<list_format> list{{.cutoff = cutoff, .skin = skin}};  // rows: owned; neighbours: all
  coalesce::box list_box;                                                     // the open box the list covers
  coalesce::device_array<std::uint64_t> keys;                                 // the sort's keys
  coalesce::device_array<unsigned long long> count;                           // interior particles, counted
  coalesce::reorder_plan plan;  // kept: a steady-state sort allocates nothing
};

// The library's cell-list build over owned + ghosts, in device memory, in a box around the
// subdomain that holds every ghost (they lie within cutoff + skin of its faces); rows for the
// owned particles only.
void build_lists(rank_state& s, coalesce::box const& sub, coalesce::stream on) {
  double const around = cutoff + skin + 0.5;  // 0.5: rounding of shifted periodic images
  s.list_box = coalesce::box{.lo = sub.lo, .hi = sub.hi, .edges = coalesce::boundary::open};
  for (int a = 0; a < 3; ++a) {
    s.list_box.lo[a] -= around;
    s.list_box.hi[a] += around;
  }
  s.list.build(s.particles, &Particle::pos, s.list_box, coalesce::list_rows{.owned = s.owned},
               on);  // ghosts: neighbours, no rows
}

// The pair engine over the rows [first, first + count) of the list, forces into Particle::force.
// A row of the first `interior` particles reads no ghost: every particle within its reach lies
// inside the subdomain, and every ghost outside it.
void compute_forces(rank_state& s, std::size_t first, std::size_t count, coalesce::stream on) {
  if (count == 0) return;
  coalesce::compute_pairs<&Particle::pos, &Particle::force>(
      s.particles, s.list.view(s.particles), s.list_box, soft_lennard_jones{}, pair_law_table(),
      {.round_each_pair = true, .rows = {.first = first, .count = count}}, on);
}

void integrate(rank_state& s, coalesce::stream on) {
  auto v = s.particles.view();
  coalesce::for_each_index(coalesce::device{on}, s.halo.owned(), [=] COALESCE_HOST_DEVICE(std::size_t i) {
    vec3 u = v[i][&Particle::vel];
    float const m = v[i][&Particle::mass];
    vec3 const f = v[i][&Particle::force];  // the fixed-point sums, read as floats
    u.x += f.x * dt / m;
    u.y += f.y * dt / m;
    u.z += f.z * dt / m;
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

// The particles a reach (cutoff + skin, and a margin for rounding) from every face of the
// subdomain first, the others after them, each part along a Hilbert curve over the subdomain; the
// first part's size into s.interior.
void sort_interior_first(rank_state& s, coalesce::box const& sub, coalesce::stream on) {
  coalesce::box wide{.lo = sub.lo, .hi = sub.hi, .edges = coalesce::boundary::open};  // a margin covers rounding
  for (int a = 0; a < 3; ++a) {
    wide.lo[a] -= 1.0;
    wide.hi[a] += 1.0;
  }
  auto const curve = coalesce::hilbert_keys(s.particles, &Particle::pos, wide, s.plan);
  std::size_t const n = s.particles.size();
  s.keys.resize(n, on);
  s.count.resize(1, on);
  std::uint64_t* keys = s.keys.data();
  unsigned long long* count = s.count.data();
  std::uint32_t const* along = curve.data;
  auto const v = s.particles.const_view();
  float lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = static_cast<float>(sub.lo[a]) + (cutoff + skin + 0.01f);
    hi[a] = static_cast<float>(sub.hi[a]) - (cutoff + skin + 0.01f);
  }
  coalesce::for_each_index(coalesce::device{on}, 1, [=] COALESCE_HOST_DEVICE(std::size_t) { count[0] = 0; });
  coalesce::for_each_index(coalesce::device{on}, n, [=] COALESCE_HOST_DEVICE(std::size_t i) {
    vec3 const x = v[i][&Particle::pos];
    bool const inside = x.x >= lo[0] && x.x <= hi[0] && x.y >= lo[1] && x.y <= hi[1] && x.z >= lo[2] && x.z <= hi[2];
    keys[i] = (inside ? std::uint64_t{0} : std::uint64_t{1} << 32) | along[i];
    if (inside) coalesce::atomic_add(count[0], 1ull);
  });
  coalesce::sort_by_key(s.particles, std::span<std::uint64_t const>(keys, n), s.plan);
  s.interior = static_cast<std::size_t>(s.count.to_host(on)[0]);
}

// Migrate, sort, halo, lists (the GPU work on `compute`; the halo's replays go to `comm`), each
// part timed to its end on the GPU.
void rebuild(rank_state& s, coalesce::mpi::decomposition& d, coalesce::stream compute, coalesce::stream comm,
             rebuild_times& t) {
  auto const start = std::chrono::steady_clock::now();
  auto t0 = start;
  s.particles.resize(s.owned);  // drop the ghosts
  wrap_positions(s, static_cast<float>(d.global().hi[0]), compute);
  d.set_stream(compute);
  (void)coalesce::mpi::migrate(d, s.particles, &Particle::pos);
  s.owned = s.particles.size();
  coalesce::synchronize(compute);
  t.migrate += seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  sort_interior_first(s, d.subdomain(), compute);
  coalesce::synchronize(compute);
  t.sort += seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  s.halo = coalesce::mpi::build_halo(d, s.particles, &Particle::pos, cutoff + skin);
  s.halo.set_stream(comm);
  coalesce::synchronize(compute);
  t.halo += seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  build_lists(s, d.subdomain(), compute);
  coalesce::synchronize(compute);
  t.lists += seconds_since(t0);
  ++t.count;
  t.slowest = std::max(t.slowest, seconds_since(start));
}

// The owned particles' count and id sum (the conservation check; not timed: a test, not a step).
std::array<long long, 2> count_and_ids(rank_state const& s, coalesce::stream on) {
  std::vector<Particle> all(s.particles.size());
  s.particles.copy_to(all, on);
  coalesce::synchronize(on);
  std::array<long long, 2> out{static_cast<long long>(s.owned), 0};
  for (std::size_t i = 0; i < s.owned; ++i) out[1] += all[i].id;
  return out;
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

// Runs `work` on this thread while a second host thread runs the halo's forward (MPI called by one
// thread at a time: MPI_THREAD_SERIALIZED): compute_pairs returns when its rows are done, so one
// thread cannot queue the interior rows and then drive the forward. The forward writes the ghosts'
// positions only, which the interior rows do not read. An error on the second thread is thrown here.
template <class Forward, class Work> void while_forwarding(Forward const& forward, Work const& work) {
  int gpu = 0;
#ifdef __CUDACC__
  cudaGetDevice(&gpu);  // a new host thread starts on GPU 0
#endif
  std::exception_ptr failed;
  std::thread courier([&] {
    try {
#ifdef __CUDACC__
      cudaSetDevice(gpu);
#endif
      forward();
    } catch (...) {
      failed = std::current_exception();
    }
  });
  try {
    work();
  } catch (...) {
    courier.join();
    throw;
  }
  courier.join();
  if (failed) std::rethrow_exception(failed);
}

// Runs the simulation on `comm`; returns the final forces by id (owned particles of this rank).
std::map<std::uint32_t, vec3> run(MPI_Comm comm, options const& o, std::size_t n_total, float box_side, bool report) {
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {box_side, box_side, box_side}, .edges = coalesce::boundary::periodic};
  coalesce::mpi::decomposition d(comm, box);
  rank_streams streams;
  auto const everything = global_system(n_total, box_side);
  std::vector<Particle> mine;
  for (auto const& p : everything) {
    if (d.owner({p.pos.x, p.pos.y, p.pos.z}) == d.rank()) mine.push_back(p);
  }
  rank_state s(streams.compute);
  s.particles = coalesce::device_vector<Particle, particle_layout>(mine);
  s.owned = mine.size();
  phase_times t;
  long long const ids_total = static_cast<long long>(n_total) * static_cast<long long>(n_total - 1) / 2;
  auto const interior = [&] { compute_forces(s, 0, s.interior, streams.compute); };
  auto const boundary = [&] { compute_forces(s, s.interior, s.owned - s.interior, streams.compute); };
  auto const forward = [&] { coalesce::mpi::forward(s.halo, s.particles, &Particle::pos); };
  for (int step = 0; step < o.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    bool rebuilding = false;
    if (o.rebuild_every > 0) {
      rebuilding = step % o.rebuild_every == 0;
    } else {  // when some particle on some rank moved more than skin / 2 since the last build
      int const mine_moved = s.list.needs_rebuild(s.particles, &Particle::pos, streams.compute) ? 1 : 0;
      int any_moved = 0;
      MPI_Allreduce(&mine_moved, &any_moved, 1, MPI_INT, MPI_LOR, comm);
      rebuilding = any_moved != 0;
      t.criterion += seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
    }
    if (rebuilding) {
      rebuild(s, d, streams.compute, streams.comm, t.rebuild);
      auto const local = count_and_ids(s, streams.compute);
      long long total[2] = {0, 0};
      MPI_Allreduce(local.data(), total, 2, MPI_LONG_LONG, MPI_SUM, comm);
      if (total[0] != static_cast<long long>(n_total) || total[1] != ids_total) {
        std::fprintf(stderr, "distributed_md: particles not conserved at step %d: %lld of %zu, id sum %lld of %lld\n",
                     step, total[0], n_total, total[1], ids_total);
        MPI_Abort(comm, 3);
      }
      t0 = std::chrono::steady_clock::now();
      interior();  // the ghosts were just placed: no forward
      boundary();
    } else if (o.overlap && coalesce::device_is_gpu) {
      while_forwarding(forward, interior);
      boundary();
    } else {
      forward();
      interior();
      boundary();
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
    if (step == 0 && o.steps > 1) t = phase_times{};  // step 0 is the warm-up (first allocations), not timed
  }
  int const timed_steps = o.steps > 1 ? o.steps - 1 : 1;
  // Each phase's and each rebuild part's slowest rank (at several ranks the parts of a rebuild
  // need not add up to its total: each is its own rank's maximum).
  double local[9] = {t.rebuild.total(), t.exchange,     t.integrate,    t.steady,       t.criterion,
                     t.rebuild.migrate, t.rebuild.sort, t.rebuild.halo, t.rebuild.lists};
  double slowest[9];
  MPI_Allreduce(local, slowest, 9, MPI_DOUBLE, MPI_MAX, comm);
  double slowest_rebuild = 0;
  MPI_Allreduce(&t.rebuild.slowest, &slowest_rebuild, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (report) {
    int const rebuilds = std::max(1, t.rebuild.count);
    double const all_steps = slowest[0] + slowest[1] + slowest[2] + slowest[4];
    double const ms = 1e3 / timed_steps, per_rebuild = 1e3 / rebuilds;
    std::printf(
        "%d ranks (%d x %d x %d), %zu particles (%zu per rank), %d steps (%d timed: not the first), %d timed "
        "rebuilds (%s), %s, forward %s the interior forces\n",
        d.size(), d.ranks_per_axis()[0], d.ranks_per_axis()[1], d.ranks_per_axis()[2], n_total,
        n_total / static_cast<std::size_t>(d.size()), o.steps, timed_steps, t.rebuild.count,
        o.rebuild_every > 0 ? ("every " + std::to_string(o.rebuild_every) + " steps").c_str()
                            : "when a particle moved more than skin / 2",
        coalesce::device_is_gpu ? "GPU memory" : "host memory",
        o.overlap && coalesce::device_is_gpu ? "overlapped with" : "before");
    std::printf(
        "  ms per step, all timed steps (slowest rank per phase): total %.4f | rebuild %.4f (%.1f %% of the total) | "
        "rebuild check %.4f | forward + forces %.4f | integrate %.4f\n",
        all_steps * ms, slowest[0] * ms, 100.0 * slowest[0] / all_steps, slowest[4] * ms, slowest[1] * ms,
        slowest[2] * ms);
    std::printf(
        "  ms per rebuild (slowest rank; each part its own slowest): %.3f | migrate %.3f, sort %.3f, halo %.3f, "
        "lists %.3f (library cell-list build, %s, %zu slots per row, fill %.2f)\n",
        slowest[0] * per_rebuild, slowest[5] * per_rebuild, slowest[6] * per_rebuild, slowest[7] * per_rebuild,
        slowest[8] * per_rebuild, coalesce::device_is_gpu ? "GPU" : "host", s.list.width(), s.list.fill());
    if (t.steady_steps > 0)
      std::printf("  steady step (no rebuild; forward, forces, integrate): %.4f ms\n",
                  slowest[3] / t.steady_steps * 1e3);
    std::printf(
        "  forces: the pair engine (compute_pairs, each pair rounded to the fixed-point force member) over "
        "the list's rows; rank 0: %.1f %% of its rows a reach from every face (they read no ghost)\n",
        s.owned > 0 ? 100.0 * static_cast<double>(s.interior) / static_cast<double>(s.owned) : 0.0);
    std::printf("  slowest rebuild %.3f ms\n", slowest_rebuild * 1e3);
    std::printf("  particles conserved on every rebuild (count and sum of ids)\n");
  }
  std::map<std::uint32_t, vec3> forces;
  std::vector<Particle> owned(s.particles.size());
  s.particles.copy_to(owned);
  for (std::size_t i = 0; i < s.halo.owned(); ++i) forces[owned[i].id] = owned[i].force;
  return forces;
}

}  // namespace distributed_md

using namespace distributed_md;

int main(int argc, char** argv) {
  // The overlap drives the forward from a second host thread, one MPI call at a time.
  int threads_provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &threads_provided);
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
      o.rebuild_every = std::max(0, std::stoi(argv[++a]));
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
  if (o.check && o.rebuild_every == 0) {
    // The one-rank reference must rebuild (and wrap positions) at the same steps; the criterion's
    // largest displacement includes ghosts, whose shifted images round differently per decomposition.
    if (rank == 0) std::fprintf(stderr, "distributed_md: --check needs a fixed --rebuild-every K > 0\n");
    MPI_Finalize();
    return 2;
  }
  if (o.overlap && coalesce::device_is_gpu && threads_provided < MPI_THREAD_SERIALIZED) {
    if (rank == 0)
      std::printf("distributed_md: this MPI gives no MPI_THREAD_SERIALIZED; the forward runs before the forces\n");
    o.overlap = false;
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
