// migrate_bench: coalesce::mpi's migration and halo on host memory against hand-written SoA code
// doing the same in the same run (the setup of the Cabana comparison in docs/distributed.md).
//   mpiexec -n 2 migrate_bench [--n-per-rank N] [--reps K]
//
// Each rank owns N particles (32 bytes: position, velocity, mass, id) in its slab of a clamped
// box split along x. Measured per call, the slowest rank's median of K:
//   migrate, none leaving   every destination is this rank;
//   migrate, 10% leaving    a random 10% go to the next rank (and as many arrive);
//   halo forward            whole records of the ghosts (5% of a rank's particles) to the neighbours;
//   halo reverse            a vec3 per ghost added into its owner;
//   halo plan               plan_halo (the faces' particles found, coordinates exchanged) against
//                           the hand-written face scan and count exchange; build_halo again over
//                           the previous ghosts; plan_halo from export lists on a communicator;
//   and the library's migration (10% leaving) and forward again on aosoa<16> records.
// The hand-written side keeps one std::vector per field (SoA), packs only the leavers, compacts
// the stayers in place and appends the arrivals: what a user writes without a library.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

#include "neighbor_reorder/pair_force.hpp"

using neighbor_reorder::Particle;
using neighbor_reorder::vec3;

namespace {

template <class F> double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto const start = std::chrono::steady_clock::now();
    f();
    double const ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r > 0 || reps == 0) t.push_back(ms);  // reps 0: a single run, no warm-up
  }
  std::sort(t.begin(), t.end());
  double mine = t[t.size() / 2], slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// The hand-written side: one vector per field.
struct soa_particles {
  std::vector<float> x, y, z, vx, vy, vz, mass;
  std::vector<std::uint32_t> id;
  std::size_t size() const { return id.size(); }
  template <class F> void each_field(F&& f) { f(x), f(y), f(z), f(vx), f(vy), f(vz), f(mass), f(id); }
};

soa_particles to_soa(std::vector<Particle> const& r) {
  soa_particles s;
  for (auto const& p : r) {
    s.x.push_back(p.pos.x), s.y.push_back(p.pos.y), s.z.push_back(p.pos.z);
    s.vx.push_back(p.vel.x), s.vy.push_back(p.vel.y), s.vz.push_back(p.vel.z);
    s.mass.push_back(p.mass), s.id.push_back(p.id);
  }
  return s;
}

// Hand-written migration: count and pack the leavers field by field per destination, exchange
// counts and messages, compact the stayers in place (stable), append the arrivals.
void hand_migrate(soa_particles& s, std::vector<int> const& dest, int rank, int size, bool keep_order = true) {
  std::size_t const n = s.size();
  std::vector<std::size_t> count(static_cast<std::size_t>(size), 0);
  for (std::size_t i = 0; i < n; ++i) count[static_cast<std::size_t>(dest[i])] += dest[i] != rank;
  std::vector<std::size_t> start(static_cast<std::size_t>(size) + 1, 0);
  for (int r = 0; r < size; ++r)
    start[static_cast<std::size_t>(r) + 1] = start[static_cast<std::size_t>(r)] + count[static_cast<std::size_t>(r)];
  std::size_t const leaving = start.back();
  std::vector<std::byte> send(leaving * sizeof(Particle)), received;
  std::vector<unsigned long long> out(static_cast<std::size_t>(size)), in(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) out[static_cast<std::size_t>(r)] = count[static_cast<std::size_t>(r)];
  if (leaving > 0) {
    // Message for rank r: each field's leavers, field after field (32 bytes per particle).
    std::vector<std::size_t> at(start.begin(), start.end() - 1);
    std::size_t field_offset = 0;
    s.each_field([&](auto& column) {
      using U = typename std::remove_reference_t<decltype(column)>::value_type;
      std::vector<std::size_t> cursor = at;
      for (std::size_t i = 0; i < n; ++i) {
        int const r = dest[i];
        if (r == rank) continue;
        std::size_t const k = cursor[static_cast<std::size_t>(r)]++;
        std::size_t const base =
            start[static_cast<std::size_t>(r)] * sizeof(Particle) + field_offset * count[static_cast<std::size_t>(r)];
        std::memcpy(send.data() + base + (k - start[static_cast<std::size_t>(r)]) * sizeof(U), &column[i], sizeof(U));
      }
      field_offset += sizeof(U);
    });
  }
  MPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  std::size_t arriving = 0;
  for (auto c : in) arriving += c;
  if (leaving == 0 && arriving == 0) return;
  received.resize(arriving * sizeof(Particle));
  std::vector<MPI_Request> requests;
  std::size_t offset = 0;
  for (int r = 0; r < size; ++r) {
    auto const c = in[static_cast<std::size_t>(r)];
    if (c > 0) {
      requests.emplace_back();
      MPI_Irecv(received.data() + offset, static_cast<int>(c * sizeof(Particle)), MPI_BYTE, r, 5, MPI_COMM_WORLD,
                &requests.back());
    }
    offset += c * sizeof(Particle);
  }
  for (int r = 0; r < size; ++r) {
    auto const c = count[static_cast<std::size_t>(r)];
    if (c > 0) {
      requests.emplace_back();
      MPI_Isend(send.data() + start[static_cast<std::size_t>(r)] * sizeof(Particle),
                static_cast<int>(c * sizeof(Particle)), MPI_BYTE, r, 5, MPI_COMM_WORLD, &requests.back());
    }
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  std::size_t const kept = n - leaving;
  // Unordered: the leavers' slots below `kept` take the stayers at or past it.
  std::vector<std::size_t> holes, fillers;
  if (!keep_order) {
    for (std::size_t i = 0; i < kept; ++i)
      if (dest[i] != rank) holes.push_back(i);
    for (std::size_t i = kept; i < n; ++i)
      if (dest[i] == rank) fillers.push_back(i);
  }
  std::size_t field_offset = 0;
  s.each_field([&](auto& column) {
    using U = typename std::remove_reference_t<decltype(column)>::value_type;
    if (keep_order) {
      std::size_t w = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (dest[i] == rank) column[w++] = column[i];
      }
    } else {
      for (std::size_t m = 0; m < holes.size(); ++m) column[holes[m]] = column[fillers[m]];
    }
    column.resize(kept + arriving);
    std::size_t first = kept, from = 0;
    for (int r = 0; r < size; ++r) {
      auto const c = in[static_cast<std::size_t>(r)];
      std::memcpy(&column[first], received.data() + from * sizeof(Particle) + field_offset * c, c * sizeof(U));
      first += c;
      from += c;
    }
    field_offset += sizeof(U);
  });
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::size_t n = 1u << 20;
  int reps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const a = argv[i];
    if (a == "--n-per-rank")
      n = std::stoull(argv[i + 1]);
    else if (a == "--reps")
      reps = std::stoi(argv[i + 1]);
  }
  {
    // Slabs 20 wide in a clamped box (no periodic images: every ghost comes from a neighbour
    // rank); a cutoff of 1 gives 5% of a neighbour's particles per face.
    double const width = 20.0, cutoff = 1.0;
    coalesce::box const box{.lo = {0, 0, 0}, .hi = {width * size, width, width}, .edges = coalesce::boundary::open};
    coalesce::mpi::decomposition d(MPI_COMM_WORLD, box, 3, {size, 1, 1});
    auto const sub = d.subdomain();
    std::mt19937 rng(5u + static_cast<unsigned>(rank));
    std::uniform_real_distribution<float> ux(static_cast<float>(sub.lo[0]), static_cast<float>(sub.hi[0]) - 1e-3f),
        u(0.0f, static_cast<float>(width) - 1e-3f);
    std::vector<Particle> records(n);
    for (std::size_t i = 0; i < n; ++i)
      records[i] = {{ux(rng), u(rng), u(rng)}, {1, 2, 3}, 1.0f, static_cast<std::uint32_t>(rank * n + i)};
    std::vector<int> stay(n, rank), some_leave(n, rank);
    std::bernoulli_distribution leave(0.1);
    for (auto& r : some_leave) r = leave(rng) ? (rank + 1) % size : rank;

    coalesce::host_vector<Particle> particles(records);
    soa_particles hand = to_soa(records);
    auto reset = [&] {
      particles = coalesce::host_vector<Particle>(records);
      hand = to_soa(records);
    };
    double const lib_none =
        median_ms(reps, [&] { (void)coalesce::mpi::migrate(d, particles, std::span<int const>(stay)); });
    double const hand_none = median_ms(reps, [&] { hand_migrate(hand, stay, rank, size); });
    // 10% leaving: every repetition starts from the same particles (the reset is not timed).
    std::vector<double> lib_t, hand_t;
    for (int r = 0; r < reps; ++r) {
      reset();
      lib_t.push_back(
          median_ms(0, [&] { (void)coalesce::mpi::migrate(d, particles, std::span<int const>(some_leave)); }));
      hand_t.push_back(median_ms(0, [&] { hand_migrate(hand, some_leave, rank, size); }));
    }
    std::sort(lib_t.begin(), lib_t.end());
    std::sort(hand_t.begin(), hand_t.end());
    double const lib_ten = lib_t[lib_t.size() / 2], hand_ten = hand_t[hand_t.size() / 2];
    // Unordered (holes filled from the tail) on both sides: the same particles in the same slots.
    std::vector<double> lib_u, hand_u;
    bool same_unordered = true;
    for (int r = 0; r < reps; ++r) {
      reset();
      lib_u.push_back(median_ms(0, [&] {
        (void)coalesce::mpi::migrate(coalesce::mpi::unordered, d, particles, std::span<int const>(some_leave));
      }));
      hand_u.push_back(median_ms(0, [&] { hand_migrate(hand, some_leave, rank, size, false); }));
      std::vector<Particle> got(particles.size());
      particles.copy_to(got);
      same_unordered = same_unordered && got.size() == hand.size();
      for (std::size_t i = 0; same_unordered && i < got.size(); ++i)
        same_unordered = got[i].id == hand.id[i] && got[i].pos.x == hand.x[i];
    }
    std::sort(lib_u.begin(), lib_u.end());
    std::sort(hand_u.begin(), hand_u.end());
    double const lib_unordered = lib_u[lib_u.size() / 2], hand_unordered = hand_u[hand_u.size() / 2];
    reset();
    (void)coalesce::mpi::migrate(d, particles, std::span<int const>(some_leave));
    hand_migrate(hand, some_leave, rank, size);
    // The same particles on both sides afterwards (order and values).
    std::vector<Particle> after(particles.size());
    particles.copy_to(after);
    bool same = after.size() == hand.size();
    for (std::size_t i = 0; same && i < after.size(); ++i)
      same = after[i].id == hand.id[i] && after[i].pos.x == hand.x[i];

    // Halo: whole records forward, a vec3 reverse; hand-written: gather, Sendrecv, write / add.
    reset();
    auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);
    coalesce::host_vector<vec3> forces(halo.owned() + halo.ghosts(), vec3{1, 1, 1});
    double const lib_forward = median_ms(reps, [&] { coalesce::mpi::forward(halo, particles); });
    double const lib_reverse = median_ms(reps, [&] { coalesce::mpi::reverse(halo, forces); });
    // Hand-written over the same send lists (x stages only: a slab decomposition).
    std::vector<std::vector<std::uint32_t>> lists(2);
    for (std::size_t i = 0; i < hand.size(); ++i) {
      if (hand.x[i] < sub.lo[0] + cutoff) lists[0].push_back(static_cast<std::uint32_t>(i));
      if (hand.x[i] >= sub.hi[0] - cutoff) lists[1].push_back(static_cast<std::uint32_t>(i));
    }
    int const below = d.neighbor(0, -1), above = d.neighbor(0, +1);
    if (below == MPI_PROC_NULL) lists[0].clear();  // nothing goes past the box's edge
    if (above == MPI_PROC_NULL) lists[1].clear();
    std::vector<Particle> out, in;
    std::vector<vec3> fout, fin;
    soa_particles ghosts;  // the hand-written ghost storage (SoA), after the owned particles
    std::size_t ghosts_in[2] = {0, 0};
    auto hand_forward = [&] {
      std::size_t written = 0;
      for (int k = 0; k < 2; ++k) {
        auto const& list = lists[static_cast<std::size_t>(k)];
        out.resize(list.size());
        for (std::size_t j = 0; j < list.size(); ++j) {
          auto const i = list[j];
          out[j] = {{hand.x[i], hand.y[i], hand.z[i]}, {hand.vx[i], hand.vy[i], hand.vz[i]}, hand.mass[i], hand.id[i]};
        }
        int const to = k == 0 ? below : above, from = k == 0 ? above : below;
        int sent = static_cast<int>(out.size()), got = 0;
        MPI_Sendrecv(&sent, 1, MPI_INT, to, 1, &got, 1, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        in.resize(static_cast<std::size_t>(got));
        MPI_Sendrecv(out.data(), sent * static_cast<int>(sizeof(Particle)), MPI_BYTE, to, 2, in.data(),
                     got * static_cast<int>(sizeof(Particle)), MPI_BYTE, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ghosts_in[k] = in.size();
        ghosts.each_field([&](auto& column) { column.resize(written + in.size()); });
        for (std::size_t j = 0; j < in.size(); ++j) {
          std::size_t const g = written + j;
          ghosts.x[g] = in[j].pos.x, ghosts.y[g] = in[j].pos.y, ghosts.z[g] = in[j].pos.z;
          ghosts.vx[g] = in[j].vel.x, ghosts.vy[g] = in[j].vel.y, ghosts.vz[g] = in[j].vel.z;
          ghosts.mass[g] = in[j].mass, ghosts.id[g] = in[j].id;
        }
        written += in.size();
      }
    };
    double const hand_forward_ms = median_ms(reps, hand_forward);
    std::vector<vec3> hforce(hand.size() + ghosts_in[0] + ghosts_in[1], vec3{1, 1, 1});
    auto hand_reverse = [&] {
      for (int k = 0; k < 2; ++k) {
        std::size_t const base = hand.size() + (k == 0 ? 0 : ghosts_in[0]);
        fout.assign(hforce.begin() + static_cast<std::ptrdiff_t>(base),
                    hforce.begin() + static_cast<std::ptrdiff_t>(base + ghosts_in[k]));
        auto const& list = lists[static_cast<std::size_t>(k)];
        fin.resize(list.size());
        int const to = k == 0 ? above : below, from = k == 0 ? below : above;
        MPI_Sendrecv(fout.data(), static_cast<int>(fout.size() * sizeof(vec3)), MPI_BYTE, to, 3, fin.data(),
                     static_cast<int>(fin.size() * sizeof(vec3)), MPI_BYTE, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (std::size_t j = 0; j < list.size(); ++j) {
          auto& f = hforce[list[j]];
          f.x += fin[j].x, f.y += fin[j].y, f.z += fin[j].z;
        }
      }
    };
    double const hand_reverse_ms = median_ms(reps, hand_reverse);

    // Plans. The library: build_halo again over particles that hold the previous ghosts
    // (options.owned), plan_halo (the same selection, only coordinates travel), and a plan from
    // the hand-written side's export lists on a plain communicator (Cabana's Halo construction
    // takes such lists). Hand-written: the face scan and the count exchange.
    coalesce::mpi::halo_options const again{.owned = halo.owned()};
    double const lib_build =
        median_ms(reps, [&] { halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff, again); });
    double const lib_plan =
        median_ms(reps, [&] { (void)coalesce::mpi::plan_halo(d, particles, &Particle::pos, cutoff, again); });
    coalesce::mpi::communicator const world(MPI_COMM_WORLD);
    std::vector<std::uint32_t> export_ids;
    std::vector<int> export_ranks;
    for (int k = 0; k < 2; ++k) {
      for (auto i : lists[static_cast<std::size_t>(k)]) {
        export_ids.push_back(i);
        export_ranks.push_back(k == 0 ? below : above);
      }
    }
    double const lib_export_plan = median_ms(reps, [&] {
      (void)coalesce::mpi::plan_halo(world, particles, std::span<std::uint32_t const>(export_ids),
                                     std::span<int const>(export_ranks), again);
    });
    std::vector<std::vector<std::uint32_t>> hand_lists(2);
    double const hand_plan_ms = median_ms(reps, [&] {
      for (auto& l : hand_lists) l.clear();
      for (std::size_t i = 0; i < hand.size(); ++i) {
        if (below != MPI_PROC_NULL && hand.x[i] < sub.lo[0] + cutoff)
          hand_lists[0].push_back(static_cast<std::uint32_t>(i));
        if (above != MPI_PROC_NULL && hand.x[i] >= sub.hi[0] - cutoff)
          hand_lists[1].push_back(static_cast<std::uint32_t>(i));
      }
      for (int k = 0; k < 2; ++k) {
        int sent = static_cast<int>(hand_lists[static_cast<std::size_t>(k)].size()), got = 0;
        MPI_Sendrecv(&sent, 1, MPI_INT, k == 0 ? below : above, 4, &got, 1, MPI_INT, k == 0 ? above : below, 4,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    });
    // The library on aosoa<16> records: the same calls, blocked columns (against the same
    // hand-written SoA code).
    using blocked_vector = coalesce::host_vector<Particle, coalesce::aosoa<16>>;
    blocked_vector blocked(records);
    std::vector<double> blocked_t;
    for (int r = 0; r < reps; ++r) {
      blocked = blocked_vector(records);
      blocked_t.push_back(
          median_ms(0, [&] { (void)coalesce::mpi::migrate(d, blocked, std::span<int const>(some_leave)); }));
    }
    std::sort(blocked_t.begin(), blocked_t.end());
    double const blocked_ten = blocked_t[blocked_t.size() / 2];
    std::vector<Particle> blocked_after(blocked.size());
    blocked.copy_to(blocked_after);
    same = same && blocked_after.size() == after.size() &&
           std::memcmp(blocked_after.data(), after.data(), after.size() * sizeof(Particle)) == 0;
    blocked = blocked_vector(records);
    auto blocked_halo = coalesce::mpi::build_halo(d, blocked, &Particle::pos, cutoff);
    double const blocked_forward = median_ms(reps, [&] { coalesce::mpi::forward(blocked_halo, blocked); });
    if (rank == 0) {
      std::printf("migrate_bench: %d ranks, %zu particles per rank (32 B), %zu ghosts on rank 0\n", size, n,
                  halo.ghosts());
      std::printf("migrate, none leaving   coalesce %8.3f ms   hand-written %8.3f ms   %.2f x\n", lib_none, hand_none,
                  lib_none / hand_none);
      std::printf(
          "migrate, 10%% leaving    coalesce %8.3f ms   hand-written %8.3f ms   %.2f x   (same particles, same order: "
          "%s)\n",
          lib_ten, hand_ten, lib_ten / hand_ten, same ? "yes" : "NO");
      std::printf(
          "migrate 10%%, unordered  coalesce %8.3f ms   hand-written %8.3f ms   %.2f x   (holes filled from the tail "
          "on both; same particles in the same slots: %s)\n",
          lib_unordered, hand_unordered, lib_unordered / hand_unordered, same_unordered ? "yes" : "NO");
      std::printf("halo forward (records)  coalesce %8.3f ms   hand-written %8.3f ms   %.2f x\n", lib_forward,
                  hand_forward_ms, lib_forward / hand_forward_ms);
      std::printf("halo reverse (vec3)     coalesce %8.3f ms   hand-written %8.3f ms   %.2f x\n", lib_reverse,
                  hand_reverse_ms, lib_reverse / hand_reverse_ms);
      std::printf("halo plan (plan_halo)   coalesce %8.3f ms   hand-written %8.3f ms   %.2f x   (face scan + counts)\n",
                  lib_plan, hand_plan_ms, lib_plan / hand_plan_ms);
      std::printf(
          "halo build (build_halo) coalesce %8.3f ms   (plan and the ghosts' records; previous ghosts dropped)\n",
          lib_build);
      std::printf(
          "halo plan, export lists coalesce %8.3f ms   (plan_halo on a communicator: lists given, counts only)\n",
          lib_export_plan);
      std::printf(
          "migrate 10%%, aosoa<16>  coalesce %8.3f ms   hand-written %8.3f ms   %.2f x   (same particles: %s)\n",
          blocked_ten, hand_ten, blocked_ten / hand_ten, same ? "yes" : "NO");
      std::printf("forward, aosoa<16>      coalesce %8.3f ms   hand-written %8.3f ms   %.2f x\n", blocked_forward,
                  hand_forward_ms, blocked_forward / hand_forward_ms);
    }
    if (!same) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
