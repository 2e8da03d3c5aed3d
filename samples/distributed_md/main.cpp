// distributed_md: the neighbour-list Lennard-Jones step of samples/neighbor_reorder over MPI ranks
// with coalesce::mpi (host memory).
//   mpiexec -n R distributed_md [--n-per-rank N] [--steps S] [--rebuild-every K] [--check]
//
// Every K steps: migrate the particles that left (by position), sort each rank's particles along a
// Hilbert curve, build the halo (ghosts within the list cutoff, periodic images) and the neighbour
// lists (cell lists over owned + ghosts, cutoff + skin). Every step: forward the positions to the
// ghosts, forces over the list (entries within the cutoff, each row in id order), integrate.
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

namespace {

constexpr float cutoff = 1.0f, skin = 0.3f, dt = 0.002f;
constexpr double density = 5.0;

struct options {
  std::size_t n_per_rank = 20000;
  int steps = 20;
  int rebuild_every = 5;
  bool check = false;
};

// The same global system on every rank (and in the one-rank reference): positions in the box,
// small random velocities, ids 0..n-1.
std::vector<Particle> global_system(std::size_t n, float box) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> u(0.0f, box), s(-0.5f, 0.5f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {{u(rng), u(rng), u(rng)}, {s(rng), s(rng), s(rng)}, 1.0f, static_cast<std::uint32_t>(i)};
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct phase_times {
  double rebuild = 0, forward = 0, forces = 0, integrate = 0;
};

struct rank_state {
  std::size_t owned = 0;                                      // particles[0, owned) are this rank's
  coalesce::host_vector<Particle, coalesce::soa> particles;  // owned, then ghosts
  coalesce::mpi::halo_plan halo;
  std::vector<std::uint32_t> offsets, neighbors;  // CSR over owned particles, each row in id order
  std::vector<vec3> force;                         // owned particles
};

// Cell list over owned + ghosts; neighbours of owned particles within cutoff + skin, in id order.
void build_lists(rank_state& s, coalesce::box const& sub) {
  std::vector<Particle> all(s.particles.size());
  s.particles.copy_to(all);
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
    grid[static_cast<std::size_t>((cell_of(p, 2) * cells[1] + cell_of(p, 1)) * cells[0] + cell_of(p, 0))].push_back(static_cast<std::uint32_t>(i));
  }
  std::size_t const owned = s.halo.owned();
  s.offsets.assign(owned + 1, 0);
  s.neighbors.clear();
  std::vector<std::uint32_t> row;
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
    s.neighbors.insert(s.neighbors.end(), row.begin(), row.end());
    s.offsets[i + 1] = static_cast<std::uint32_t>(s.neighbors.size());
  }
}

void compute_forces(rank_state& s) {
  auto const v = s.particles.const_view();
  std::size_t const owned = s.halo.owned();
  s.force.assign(owned, vec3{0, 0, 0});
  for (std::size_t i = 0; i < owned; ++i) {
    vec3 const p = v[i][&Particle::pos];
    float fx = 0, fy = 0, fz = 0;
    for (std::uint32_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) {
      std::uint32_t const j = s.neighbors[e];
      vec3 const q = v[j][&Particle::pos];
      float const dx = p.x - q.x, dy = p.y - q.y, dz = p.z - q.z;
      if (dx * dx + dy * dy + dz * dz >= cutoff * cutoff) continue;
      float const scale = neighbor_reorder::pair_scale(dx, dy, dz, v[j][&Particle::mass]);
      fx += scale * dx;
      fy += scale * dy;
      fz += scale * dz;
    }
    s.force[i] = {fx, fy, fz};
  }
}

void integrate(rank_state& s) {
  auto v = s.particles.view();
  for (std::size_t i = 0; i < s.halo.owned(); ++i) {
    vec3 u = v[i][&Particle::vel];
    float const m = v[i][&Particle::mass];
    u.x += s.force[i].x * dt / m;
    u.y += s.force[i].y * dt / m;
    u.z += s.force[i].z * dt / m;
    v[i][&Particle::vel] = u;
    vec3 x = v[i][&Particle::pos];
    x.x += u.x * dt;
    x.y += u.y * dt;
    x.z += u.z * dt;
    v[i][&Particle::pos] = x;
  }
}

void rebuild(rank_state& s, coalesce::mpi::decomposition const& d) {
  s.particles.resize(s.owned);  // drop the ghosts
  {
    // Periodic box: positions back into [0, L) before they pick their owner.
    auto v = s.particles.view();
    float const side = static_cast<float>(d.global().hi[0]);
    for (std::size_t i = 0; i < s.owned; ++i) {
      vec3 x = v[i][&Particle::pos];
      x.x -= side * std::floor(x.x / side);
      x.y -= side * std::floor(x.y / side);
      x.z -= side * std::floor(x.z / side);
      v[i][&Particle::pos] = x;
    }
  }
  (void)coalesce::mpi::migrate(d, s.particles, &Particle::pos);
  s.owned = s.particles.size();
  // Along a Hilbert curve over the subdomain (a margin covers rounding at its faces).
  coalesce::box wide{.lo = d.subdomain().lo, .hi = d.subdomain().hi, .edges = coalesce::boundary::clamped};
  for (int a = 0; a < 3; ++a) {
    wide.lo[a] -= 1.0;
    wide.hi[a] += 1.0;
  }
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(s.particles, coalesce::hilbert_keys(s.particles, &Particle::pos, wide, plan), plan);
  s.halo = coalesce::mpi::build_halo(d, s.particles, &Particle::pos, cutoff + skin);
  build_lists(s, d.subdomain());
}

// Runs the simulation on `comm`; returns the final forces by id (owned particles of this rank).
std::map<std::uint32_t, vec3> run(MPI_Comm comm, options const& o, std::size_t n_total, float box_side, bool report) {
  coalesce::box const box{.lo = {0, 0, 0}, .hi = {box_side, box_side, box_side}};
  coalesce::mpi::decomposition const d(comm, box);
  auto const everything = global_system(n_total, box_side);
  std::vector<Particle> mine;
  for (auto const& p : everything) {
    if (d.owner({p.pos.x, p.pos.y, p.pos.z}) == d.rank()) mine.push_back(p);
  }
  rank_state s;
  s.particles = coalesce::host_vector<Particle, coalesce::soa>(mine);
  s.owned = mine.size();
  phase_times t;
  long long const ids_total = static_cast<long long>(n_total) * static_cast<long long>(n_total - 1) / 2;
  for (int step = 0; step < o.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    if (step % o.rebuild_every == 0) {
      rebuild(s, d);
      // Conservation: count and sum of ids over all ranks.
      long long local[2] = {static_cast<long long>(s.owned), 0};
      std::vector<Particle> owned(s.particles.size());
      s.particles.copy_to(owned);
      for (std::size_t i = 0; i < s.owned; ++i) local[1] += owned[i].id;
      long long total[2] = {0, 0};
      MPI_Allreduce(local, total, 2, MPI_LONG_LONG, MPI_SUM, comm);
      if (total[0] != static_cast<long long>(n_total) || total[1] != ids_total) {
        std::fprintf(stderr, "distributed_md: particles not conserved at step %d: %lld of %zu, id sum %lld of %lld\n", step, total[0],
                     n_total, total[1], ids_total);
        MPI_Abort(comm, 3);
      }
      t.rebuild += seconds_since(t0);
    } else {
      coalesce::mpi::forward(s.halo, s.particles, &Particle::pos);
      t.forward += seconds_since(t0);
    }
    t0 = std::chrono::steady_clock::now();
    compute_forces(s);
    t.forces += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    integrate(s);
    t.integrate += seconds_since(t0);
  }
  double local[4] = {t.rebuild, t.forward, t.forces, t.integrate}, slowest[4];
  MPI_Allreduce(local, slowest, 4, MPI_DOUBLE, MPI_MAX, comm);
  if (report) {
    int const rebuilds = (o.steps + o.rebuild_every - 1) / o.rebuild_every;
    double const per_step = (slowest[0] + slowest[1] + slowest[2] + slowest[3]) / o.steps;
    std::printf("%d ranks (%d x %d x %d), %zu particles (%zu per rank), %d steps, rebuild every %d\n", d.size(), d.ranks_per_axis()[0],
                d.ranks_per_axis()[1], d.ranks_per_axis()[2], n_total, n_total / static_cast<std::size_t>(d.size()), o.steps,
                o.rebuild_every);
    std::printf("  ms per step (slowest rank): total %.3f | rebuild %.3f (per rebuild %.3f: migrate, sort, halo, lists) | forward %.3f |"
                " forces %.3f | integrate %.3f | rebuild + exchange share %.1f%%\n",
                per_step * 1e3, slowest[0] / o.steps * 1e3, slowest[0] / rebuilds * 1e3, slowest[1] / o.steps * 1e3,
                slowest[2] / o.steps * 1e3, slowest[3] / o.steps * 1e3, 100.0 * (slowest[0] + slowest[1]) / (per_step * o.steps));
    std::printf("  particles conserved on every rebuild (count and sum of ids)\n");
  }
  std::map<std::uint32_t, vec3> forces;
  std::vector<Particle> owned(s.particles.size());
  s.particles.copy_to(owned);
  for (std::size_t i = 0; i < s.halo.owned(); ++i) forces[owned[i].id] = s.force[i];
  return forces;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  options o;
  for (int a = 1; a < argc; ++a) {
    std::string const arg = argv[a];
    if (arg == "--n-per-rank" && a + 1 < argc) o.n_per_rank = std::stoull(argv[++a]);
    else if (arg == "--steps" && a + 1 < argc) o.steps = std::stoi(argv[++a]);
    else if (arg == "--rebuild-every" && a + 1 < argc) o.rebuild_every = std::max(1, std::stoi(argv[++a]));
    else if (arg == "--check") o.check = true;
    else {
      if (rank == 0) std::fprintf(stderr, "usage: distributed_md [--n-per-rank N] [--steps S] [--rebuild-every K] [--check]\n");
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
      for (int r = 1; r < size; ++r) offsets[static_cast<std::size_t>(r)] = offsets[static_cast<std::size_t>(r - 1)] + counts[static_cast<std::size_t>(r - 1)];
      std::vector<float> all(rank == 0 ? static_cast<std::size_t>(offsets.back() + counts.back()) : 0);
      MPI_Gatherv(mine.data(), count, MPI_FLOAT, all.data(), counts.data(), offsets.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        auto const alone = run(MPI_COMM_SELF, o, n_total, box_side, false);
        std::size_t same = 0, compared = 0;
        for (std::size_t k = 0; k + 3 < all.size(); k += 4) {
          auto const id = static_cast<std::uint32_t>(all[k]);
          auto const it = alone.find(id);
          ++compared;
          if (it != alone.end() && std::memcmp(&it->second.x, &all[k + 1], 4) == 0 && std::memcmp(&it->second.y, &all[k + 2], 4) == 0 &&
              std::memcmp(&it->second.z, &all[k + 3], 4) == 0) {
            ++same;
          }
        }
        std::printf("  forces per particle id against the one-rank run: %zu of %zu bit-identical\n", same, n_total);
        if (same != n_total || compared != n_total) status = 1;
      }
    }
  } catch (coalesce::error const& e) {
    std::fprintf(stderr, "distributed_md (rank %d): %s\n", rank, e.what());
    status = 1;
  }
  int any = 0;
  MPI_Allreduce(&status, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
