// migrate_bench: coalesce::mpi's migration and halo on host memory, in the steady state of a
// time-stepping code, against the hand-written SoA code a competent MPI programmer writes and
// against the raw MPI exchange of the same bytes (the floor), all in the same process.
//   OMP_NUM_THREADS=1 mpiexec -n 2 migrate_bench [--n-per-rank N] [--steps S] [--warmup W] [--leaving F] [--only migrate|halo]
//
// Each rank starts with N particles (32 bytes: position, velocity, mass, id) in its slab of a
// clamped box split along x. Every step, each particle leaves for the next rank (a ring) with
// probability F (10 %), decided by a hash of its id and the step: every side (the library on each
// layout, the hand-written code) moves the same particles, whatever order it keeps them in, and
// what a rank sends, the previous rank sends it, so the sizes stay near N step after step, on the
// same arrays, never reset. The contenders of a step run one after the other, in an order that
// rotates from step to step; each call is timed alone (a barrier before it). A figure is the
// slowest rank's median over S steps after W warm-up steps.
//
// Rows: migrate with F leaving (soa, aosoa<16>, order kept and unordered; split, order kept),
// migrate with nobody leaving, halo forward of whole records (soa, aosoa<16>), reverse of a vec3
// per ghost (into an array, into the particles' velocity member on soa and aosoa<16>), and the halo
// plans. Each row has the raw MPI exchange of the bytes it moves (Isend /
// Irecv of buffers that size, nothing packed; with nothing to move, the count exchange) as its
// floor. Every step checks that every side holds the same particles on each rank (count and two
// sums over the ids) and that no particle was lost or duplicated over the ranks.
//
// Where the library's time goes is measured from outside it (common/mpi_probe.hpp: MPI's profiling
// interface stamps the clock around MPI calls during a library call), which splits a migration into
// grouping, the count exchange (which carries the agreement on errors), packing and in-place
// moves, the messages, and the arrivals.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

#include "common/mpi_probe.hpp"
#include "common/particle.hpp"

using bench::Particle;
using bench::vec3;
using steady = std::chrono::steady_clock;

namespace {

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// ---------------------------------------------------------------------------------------------
// Phases of a migration. The library's come from the probe (phases_of_call); the hand-written code stamps
// its own at the same points (it calls the same MPI functions in the same order).
enum phase : std::size_t { grouping, agreement, pack_and_move, counts, messages, arrivals, phase_count };
constexpr char const* phase_names[phase_count] = {"grouping", "agree", "pack+moves", "counts", "messages", "arrivals"};
using phase_times = std::array<double, phase_count>;

// migrate's host path: the grouping, Alltoall (the counts, carrying the agreement on errors),
// packing and the in-place moves, Isend/Irecv and Waitall (messages), then the resize and
// unpacking. (Before issue 51's fixes: the grouping, Allgather (agree_on_errors), packing and
// moves, Alltoall (counts), the messages, the arrivals.) From the probe's stamps of one call.
phase_times phases_of_call(steady::time_point start, steady::time_point end) {
  using namespace mpi_probe;
  disarm();
  if (!seen_alltoall) return {};
  if (!seen_allgather) {
    auto const messages = seen_message ? message_begin : waitall_end;
    return {ms_between(start, alltoall_begin),  0.0,
            ms_between(alltoall_end, messages), ms_between(alltoall_begin, alltoall_end),
            ms_between(messages, waitall_end),  ms_between(waitall_end, end)};
  }
  return {ms_between(start, allgather_begin),        ms_between(allgather_begin, allgather_end),
          ms_between(allgather_end, alltoall_begin), ms_between(alltoall_begin, alltoall_end),
          ms_between(alltoall_end, waitall_end),     ms_between(waitall_end, end)};
}

// ---------------------------------------------------------------------------------------------
// Timing: each call alone (a barrier first, so that no rank starts while another still works),
// the median of a rank's steps, the slowest rank's median.
template <class F> double timed_ms(F&& f) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto const start = steady::now();
  f();
  return ms_between(start, steady::now());
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

struct samples {
  std::vector<double> total;
  std::array<std::vector<double>, phase_count> phases;
  void add(double ms, phase_times const& p) {
    total.push_back(ms);
    for (std::size_t k = 0; k < phase_count; ++k) phases[k].push_back(p[k]);
  }
  double slowest_median() const { return slowest_rank(median(total)); }  // collective
  phase_times slowest_phase_medians() const {                            // collective
    phase_times out{};
    for (std::size_t k = 0; k < phase_count; ++k) out[k] = slowest_rank(median(phases[k]));
    return out;
  }
};

// ---------------------------------------------------------------------------------------------
// Who leaves in a step, the same on every side: a hash of the id and the step, so the choice
// does not depend on where a side keeps the particle.
std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct leaving_rule {
  int step = 0, rank = 0, size = 1;
  std::uint64_t threshold = 0;  // a particle leaves when its hash is below: fraction * 2^64
  int destination(std::uint32_t id) const {
    bool const leaves = mix(id ^ (static_cast<std::uint64_t>(step) << 32)) < threshold;
    return leaves ? (rank + 1) % size : rank;
  }
};

std::uint64_t threshold_of(double fraction) {
  if (fraction <= 0) return 0;
  if (fraction >= 1) return ~0ull;
  return static_cast<std::uint64_t>(std::ldexp(fraction, 64));
}

// What a side holds on a rank, order aside: equal on every side after every step, and summed over
// the ranks equal to what the run started with.
struct census {
  std::uint64_t count = 0, id_sum = 0, id_hash_sum = 0;
  void add(std::uint32_t id) { ++count, id_sum += id, id_hash_sum += mix(id); }
  bool operator==(census const&) const = default;
};

// This step's destinations of a side's particles (id_of(i): the id in slot i), and its census.
template <class IdOf>
census destinations_of(leaving_rule const& rule, std::size_t n, IdOf const& id_of, std::vector<int>& dest) {
  census c;
  dest.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t const id = id_of(i);
    c.add(id);
    dest[i] = rule.destination(id);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// The floor: the raw MPI exchange of the bytes a row moves. Buffers of those sizes, Irecv all,
// Isend all, Waitall; nothing packed, no counts exchanged (they are known in advance).
class raw_exchange {
 public:
  struct message {
    int peer = MPI_PROC_NULL;
    std::size_t bytes = 0;
    int tag = 0;
  };
  void set(std::vector<message> sends, std::vector<message> receives) {
    sends_ = std::move(sends), receives_ = std::move(receives);
    out_.resize(std::max(out_.size(), total(sends_)));
    in_.resize(std::max(in_.size(), total(receives_)));
  }
  void run() {
    requests_.clear();
    std::size_t offset = 0;
    for (auto const& m : receives_) {
      requests_.emplace_back();
      MPI_Irecv(in_.data() + offset, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, MPI_COMM_WORLD,
                &requests_.back());
      offset += m.bytes;
    }
    offset = 0;
    for (auto const& m : sends_) {
      requests_.emplace_back();
      MPI_Isend(out_.data() + offset, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, MPI_COMM_WORLD,
                &requests_.back());
      offset += m.bytes;
    }
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
  std::size_t bytes_sent() const { return total(sends_); }

 private:
  static std::size_t total(std::vector<message> const& ms) {
    std::size_t t = 0;
    for (auto const& m : ms) t += m.bytes;
    return t;
  }
  std::vector<message> sends_, receives_;
  std::vector<std::byte> out_, in_;
  std::vector<MPI_Request> requests_;
};

// A migration's messages as the floor sends them: count[r] records of 32 bytes to each rank r
// with something to send, from each rank with something for this one (learnt before, untimed).
void set_migration_floor(raw_exchange& floor, std::vector<std::size_t> const& count, int rank) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<unsigned long long> out(count.begin(), count.end()), in(out.size());
  out[static_cast<std::size_t>(rank)] = 0;
  MPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  std::vector<raw_exchange::message> sends, receives;
  for (int r = 0; r < size; ++r) {
    auto const k = static_cast<std::size_t>(r);
    if (out[k] > 0) sends.push_back({r, out[k] * sizeof(Particle), 7});
    if (in[k] > 0) receives.push_back({r, in[k] * sizeof(Particle), 7});
  }
  floor.set(std::move(sends), std::move(receives));
}

// ---------------------------------------------------------------------------------------------
// The hand-written side: one std::vector per field (SoA), as a code without a library keeps them.
struct soa_particles {
  std::vector<float> x, y, z, vx, vy, vz, mass;
  std::vector<std::uint32_t> id;

  explicit soa_particles(std::vector<Particle> const& records) {
    resize(records.size());
    for (std::size_t i = 0; i < records.size(); ++i) set(i, records[i]);
  }
  std::size_t size() const { return id.size(); }
  void resize(std::size_t n) {
    for (auto* c : {&x, &y, &z, &vx, &vy, &vz, &mass}) c->resize(n);
    id.resize(n);
  }
  Particle record(std::size_t i) const { return {{x[i], y[i], z[i]}, {vx[i], vy[i], vz[i]}, mass[i], id[i]}; }
  void set(std::size_t i, Particle const& p) {
    x[i] = p.pos.x, y[i] = p.pos.y, z[i] = p.pos.z;
    vx[i] = p.vel.x, vy[i] = p.vel.y, vz[i] = p.vel.z;
    mass[i] = p.mass, id[i] = p.id;
  }
  void move(std::size_t to, std::size_t from) {
    x[to] = x[from], y[to] = y[from], z[to] = z[from];
    vx[to] = vx[from], vy[to] = vy[from], vz[to] = vz[from];
    mass[to] = mass[from], id[to] = id[from];
  }
};

// Hand-written migration, as a competent MPI programmer writes it: count the leavers per
// destination, pack them as records into one send buffer while the stayers close up (order kept)
// or while the holes below the kept count are filled from the end (unordered), exchange counts,
// Isend/Irecv, append the arrivals. Buffers kept between steps (grown, never shrunk).
class hand_migration {
 public:
  hand_migration(int rank, int size) : rank_(rank), size_(size) {}

  phase_times step(soa_particles& p, std::span<int const> dest, bool keep_order) {
    auto const t0 = steady::now();
    count_leavers(dest);
    auto const t1 = steady::now();
    if (kept_ == dest.size()) {
      // Nobody leaves this rank (the common step): nothing to pack, nothing moves.
    } else if (keep_order) {
      pack_and_close_up(p, dest);
    } else {
      pack_and_fill_from_the_end(p, dest);
    }
    auto const t2 = steady::now();
    exchange_counts();
    auto const t3 = steady::now();
    exchange_messages();
    auto const t4 = steady::now();
    append_arrivals(p);
    auto const t5 = steady::now();
    return {ms_between(t0, t1), 0, ms_between(t1, t2), ms_between(t2, t3), ms_between(t3, t4), ms_between(t4, t5)};
  }
  std::vector<std::size_t> const& send_counts() const { return count_; }

 private:
  void count_leavers(std::span<int const> dest) {
    count_.assign(static_cast<std::size_t>(size_), 0);
    for (int r : dest) ++count_[static_cast<std::size_t>(r)];
    kept_ = count_[static_cast<std::size_t>(rank_)];
    count_[static_cast<std::size_t>(rank_)] = 0;
    start_.assign(static_cast<std::size_t>(size_) + 1, 0);
    for (std::size_t r = 0; r < count_.size(); ++r) start_[r + 1] = start_[r] + count_[r];
    if (send_.size() < start_.back()) send_.resize(start_.back());
  }
  // One pass: a leaver is packed, a stayer moves down to the next free slot (nothing moves before
  // the first leaver).
  void pack_and_close_up(soa_particles& p, std::span<int const> dest) {
    std::vector<std::size_t> cursor(start_.begin(), start_.end() - 1);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < dest.size(); ++i) {
      int const r = dest[i];
      if (r == rank_) {
        if (kept != i) p.move(kept, i);
        ++kept;
      } else {
        send_[cursor[static_cast<std::size_t>(r)]++] = p.record(i);
      }
    }
  }
  // One pass: a leaver is packed, and if its slot is below the kept count the last stayer not yet
  // moved takes it (only the stayers past the kept count move).
  void pack_and_fill_from_the_end(soa_particles& p, std::span<int const> dest) {
    std::vector<std::size_t> cursor(start_.begin(), start_.end() - 1);
    std::size_t back = dest.size();
    for (std::size_t i = 0; i < dest.size(); ++i) {
      int const r = dest[i];
      if (r == rank_) continue;
      send_[cursor[static_cast<std::size_t>(r)]++] = p.record(i);
      if (i < kept_) {
        do --back;
        while (dest[back] != rank_);
        p.move(i, back);
      }
    }
  }
  void exchange_counts() {
    out_.assign(count_.begin(), count_.end());
    in_.resize(out_.size());
    MPI_Alltoall(out_.data(), 1, MPI_UNSIGNED_LONG_LONG, in_.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    arriving_ = 0;
    for (auto c : in_) arriving_ += c;
    if (received_.size() < arriving_) received_.resize(arriving_);
  }
  void exchange_messages() {
    requests_.clear();
    std::size_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      auto const c = in_[static_cast<std::size_t>(r)];
      if (c > 0) {
        requests_.emplace_back();
        MPI_Irecv(received_.data() + offset, static_cast<int>(c * sizeof(Particle)), MPI_BYTE, r, 5, MPI_COMM_WORLD,
                  &requests_.back());
      }
      offset += c;
    }
    for (int r = 0; r < size_; ++r) {
      auto const c = count_[static_cast<std::size_t>(r)];
      if (c > 0) {
        requests_.emplace_back();
        MPI_Isend(send_.data() + start_[static_cast<std::size_t>(r)], static_cast<int>(c * sizeof(Particle)), MPI_BYTE,
                  r, 5, MPI_COMM_WORLD, &requests_.back());
      }
    }
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
  void append_arrivals(soa_particles& p) {
    p.resize(kept_ + arriving_);  // shrinking keeps the capacity; only growth past the old size writes zeros
    for (std::size_t k = 0; k < arriving_; ++k) p.set(kept_ + k, received_[k]);
  }

  int rank_, size_;
  std::size_t kept_ = 0, arriving_ = 0;
  std::vector<std::size_t> count_, start_;
  std::vector<unsigned long long> out_, in_;
  std::vector<Particle> send_, received_;
  std::vector<MPI_Request> requests_;
};

// ---------------------------------------------------------------------------------------------
// The contenders of the migration rows: each prepares a step (this step's destinations of its own
// particles, and its census: untimed) and then runs it (timed).
struct contender {
  std::string name;
  std::function<census(leaving_rule const&)> prepare;
  std::function<phase_times()> run;
  samples times;
  bool is_floor = false;
};

template <class Layout> contender library_contender(std::string name, bool keep_order,
                                                    coalesce::mpi::decomposition const& d,
                                                    std::vector<Particle> const& records) {
  struct state {
    coalesce::host_vector<Particle, Layout> particles;
    std::vector<int> dest;
  };
  auto s = std::make_shared<state>(state{coalesce::host_vector<Particle, Layout>(records), {}});
  contender c{std::move(name), {}, {}, {}};
  c.prepare = [s](leaving_rule const& rule) {
    auto const v = s->particles.view();
    return destinations_of(
        rule, s->particles.size(), [&](std::size_t i) -> std::uint32_t { return v[i][&Particle::id]; }, s->dest);
  };
  c.run = [s, keep_order, &d] {
    std::span<int const> const dest(s->dest);
    mpi_probe::arm();
    auto const start = steady::now();
    if (keep_order) {
      (void)coalesce::mpi::migrate(d, s->particles, dest);
    } else {
      (void)coalesce::mpi::migrate(coalesce::mpi::unordered, d, s->particles, dest);
    }
    return phases_of_call(start, steady::now());
  };
  return c;
}

struct hand_state {
  soa_particles particles;
  std::vector<int> dest;
  hand_migration migration;
};

contender hand_contender(std::string name, bool keep_order, std::shared_ptr<hand_state> s) {
  contender c{std::move(name), {}, {}, {}};
  c.prepare = [s](leaving_rule const& rule) {
    return destinations_of(
        rule, s->particles.size(), [&](std::size_t i) { return s->particles.id[i]; }, s->dest);
  };
  c.run = [s, keep_order] { return s->migration.step(s->particles, s->dest, keep_order); };
  return c;
}

// The floor of a migration step: the bytes the hand-written side (order kept) moves in it (this
// contender comes after that side in the list, so it is prepared after it).
contender floor_contender(std::shared_ptr<hand_state const> hand, int rank, int size) {
  auto floor = std::make_shared<raw_exchange>();
  contender c{"floor: raw MPI of those bytes", {}, {}, {}, true};
  c.prepare = [floor, hand, rank, size](leaving_rule const&) {
    std::vector<std::size_t> count(static_cast<std::size_t>(size), 0);
    for (int r : hand->dest) ++count[static_cast<std::size_t>(r)];
    set_migration_floor(*floor, count, rank);
    return census{};
  };
  c.run = [floor] {
    floor->run();
    return phase_times{};
  };
  return c;
}

// Fails the run on every rank when the sides hold different particles on a rank, or when the
// particles over all ranks are not those the run started with.
void check_census(std::vector<contender> const& sides, std::vector<census> const& got, census const& global_start,
                  int step) {
  bool ok = true;
  census const* first = nullptr;
  for (std::size_t k = 0; k < sides.size(); ++k) {
    if (sides[k].is_floor) continue;
    if (first == nullptr) first = &got[k];
    ok = ok && got[k] == *first;
  }
  std::uint64_t local[3] = {first->count, first->id_sum, first->id_hash_sum}, global[3] = {0, 0, 0};
  MPI_Allreduce(local, global, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  ok = ok && census{global[0], global[1], global[2]} == global_start;
  int all_ok = 0, mine = ok ? 1 : 0;
  MPI_Allreduce(&mine, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok == 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!ok) std::fprintf(stderr, "migrate_bench: rank %d, step %d: the sides' particles differ\n", rank, step);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// Runs warmup + steps steps of every contender on the same arrays; contender k of step s runs
// (k + s)-th, so no side always follows the same one.
void run_steps(std::vector<contender>& sides, int warmup, int steps, double fraction, census const& global_start,
               int step_base) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<census> got(sides.size());
  for (int s = 0; s < warmup + steps; ++s) {
    leaving_rule const rule{step_base + s, rank, size, threshold_of(fraction)};
    for (std::size_t k = 0; k < sides.size(); ++k) got[k] = sides[k].prepare(rule);
    check_census(sides, got, global_start, step_base + s);
    for (std::size_t j = 0; j < sides.size(); ++j) {
      auto& side = sides[(j + static_cast<std::size_t>(s)) % sides.size()];
      phase_times p{};
      double const ms = timed_ms([&] { p = side.run(); });
      if (s >= warmup) side.times.add(ms, p);
    }
  }
  // And after the last step.
  leaving_rule const none{0, rank, size, 0};
  for (std::size_t k = 0; k < sides.size(); ++k) got[k] = sides[k].prepare(none);
  check_census(sides, got, global_start, step_base + warmup + steps);
}

// ---------------------------------------------------------------------------------------------
// Hand-written halo along x (the slab decomposition's only axis with neighbours): the owned
// particles within the cutoff of a face go to the neighbour across it as whole records, ghosts
// are appended after the owned particles. The plan (lists, counts, ghost slots, buffers) is made
// once; forward and reverse then move data only.
class hand_halo {
 public:
  hand_halo(int below, int above) : to_{below, above}, from_{above, below} {}

  // The face scan and the count exchange; the columns grow to hold the ghosts.
  void plan(soa_particles& p, std::size_t owned, double lo, double hi, double cutoff) {
    owned_ = owned;
    for (auto& l : list_) l.clear();
    for (std::size_t i = 0; i < owned; ++i) {
      if (to_[0] != MPI_PROC_NULL && p.x[i] < lo + cutoff) list_[0].push_back(static_cast<std::uint32_t>(i));
      if (to_[1] != MPI_PROC_NULL && p.x[i] >= hi - cutoff) list_[1].push_back(static_cast<std::uint32_t>(i));
    }
    MPI_Request requests[4];
    unsigned long long sent[2] = {list_[0].size(), list_[1].size()}, got[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      MPI_Irecv(&got[k], 1, MPI_UNSIGNED_LONG_LONG, from_[k], 10 + k, MPI_COMM_WORLD, &requests[2 * k]);
      MPI_Isend(&sent[k], 1, MPI_UNSIGNED_LONG_LONG, to_[k], 10 + k, MPI_COMM_WORLD, &requests[2 * k + 1]);
    }
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 2; ++k) {
      ghosts_in_[k] = got[k];
      out_[k].resize(list_[k].size());
      in_[k].resize(ghosts_in_[k]);
      force_in_[k].resize(list_[k].size());
    }
    p.resize(owned + ghosts());
  }
  void forward(soa_particles& p) {
    for (int k = 0; k < 2; ++k) {
      for (std::size_t j = 0; j < list_[k].size(); ++j) out_[k][j] = p.record(list_[k][j]);
    }
    MPI_Request requests[4];
    for (int k = 0; k < 2; ++k) {
      MPI_Irecv(in_[k].data(), bytes(in_[k]), MPI_BYTE, from_[k], 20 + k, MPI_COMM_WORLD, &requests[2 * k]);
      MPI_Isend(out_[k].data(), bytes(out_[k]), MPI_BYTE, to_[k], 20 + k, MPI_COMM_WORLD, &requests[2 * k + 1]);
    }
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 2; ++k) {
      std::size_t const first = ghost_start(k);
      for (std::size_t j = 0; j < in_[k].size(); ++j) p.set(first + j, in_[k][j]);
    }
  }
  // The ghosts of message k go back where they came from, straight from the force array (they are
  // contiguous), and are added into their owners.
  void reverse(std::vector<vec3>& force) {
    MPI_Request requests[4];
    for (int k = 0; k < 2; ++k) {
      MPI_Irecv(force_in_[k].data(), bytes(force_in_[k]), MPI_BYTE, to_[k], 30 + k, MPI_COMM_WORLD, &requests[2 * k]);
      MPI_Isend(force.data() + ghost_start(k), static_cast<int>(ghosts_in_[k] * sizeof(vec3)), MPI_BYTE, from_[k],
                30 + k, MPI_COMM_WORLD, &requests[2 * k + 1]);
    }
    MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
    for (int k = 0; k < 2; ++k) {
      for (std::size_t j = 0; j < list_[k].size(); ++j) {
        auto& f = force[list_[k][j]];
        auto const& g = force_in_[k][j];
        f.x += g.x, f.y += g.y, f.z += g.z;
      }
    }
  }
  std::size_t owned() const { return owned_; }
  std::size_t ghosts() const { return ghosts_in_[0] + ghosts_in_[1]; }
  // The floors: the same messages of `element` bytes per ghost, nothing packed.
  void set_forward_floor(raw_exchange& floor, std::size_t element) const {
    std::vector<raw_exchange::message> sends, receives;
    for (int k = 0; k < 2; ++k) {
      sends.push_back({to_[k], list_[k].size() * element, 40 + k});
      receives.push_back({from_[k], ghosts_in_[k] * element, 40 + k});
    }
    floor.set(std::move(sends), std::move(receives));
  }
  void set_reverse_floor(raw_exchange& floor, std::size_t element) const {
    std::vector<raw_exchange::message> sends, receives;
    for (int k = 0; k < 2; ++k) {
      sends.push_back({from_[k], ghosts_in_[k] * element, 50 + k});
      receives.push_back({to_[k], list_[k].size() * element, 50 + k});
    }
    floor.set(std::move(sends), std::move(receives));
  }
  std::vector<std::uint32_t> export_ids() const { return join(list_[0], list_[1]); }
  std::vector<int> export_ranks() const {
    std::vector<int> r(list_[0].size(), to_[0]);
    r.resize(list_[0].size() + list_[1].size(), to_[1]);
    return r;
  }

 private:
  template <class U> static int bytes(std::vector<U> const& v) { return static_cast<int>(v.size() * sizeof(U)); }
  static std::vector<std::uint32_t> join(std::vector<std::uint32_t> a, std::vector<std::uint32_t> const& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::size_t ghost_start(int k) const { return owned_ + (k == 0 ? 0 : ghosts_in_[0]); }

  std::array<int, 2> to_, from_;  // list k goes to to_[k]; the ghosts of message k come from from_[k]
  std::size_t owned_ = 0;
  std::array<std::vector<std::uint32_t>, 2> list_;
  std::array<std::size_t, 2> ghosts_in_{0, 0};
  std::array<std::vector<Particle>, 2> out_, in_;
  std::array<std::vector<vec3>, 2> force_in_;
};

// ---------------------------------------------------------------------------------------------
// A row of the table: the library, the hand-written code and the floor (0: none).
struct row {
  std::string name;
  double library = 0, hand = 0, floor = 0;
  std::string note;
};

void print_table(std::vector<row> const& rows) {
  std::printf("%-40s %10s %10s %10s %8s %8s\n", "case (ms, slowest rank's median)", "coalesce", "hand", "floor",
              "lib/hand", "hand/fl");
  auto cell = [](double v) {
    char b[32];
    if (v > 0) {
      std::snprintf(b, sizeof b, "%10.3f", v);
    } else {
      std::snprintf(b, sizeof b, "%10s", "-");
    }
    return std::string(b);
  };
  auto ratio = [](double a, double b) {
    char r[32];
    if (a > 0 && b > 0) {
      std::snprintf(r, sizeof r, "%8.2f", a / b);
    } else {
      std::snprintf(r, sizeof r, "%8s", "-");
    }
    return std::string(r);
  };
  for (auto const& r : rows) {
    std::printf("%-40s %s %s %s %s %s  %s\n", r.name.c_str(), cell(r.library).c_str(), cell(r.hand).c_str(),
                cell(r.floor).c_str(), ratio(r.library, r.hand).c_str(), ratio(r.hand, r.floor).c_str(),
                r.note.c_str());
  }
}

void print_phases(std::vector<std::pair<std::string, phase_times>> const& lines) {
  std::printf("\nwhere a migration's time goes (ms, each phase the slowest rank's median):\n%-34s", "");
  for (auto const* n : phase_names) std::printf(" %10s", n);
  std::printf("\n");
  for (auto const& [name, p] : lines) {
    std::printf("%-34s", name.c_str());
    for (double v : p) std::printf(" %10.3f", v);
    std::printf("\n");
  }
}

struct options {
  std::size_t n = 1u << 20;
  int steps = 20, warmup = 5;
  double leaving = 0.1;
  std::string only;  // "migrate" or "halo": those rows only (profiling one side)
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const a = argv[i];
    if (a == "--n-per-rank") {
      o.n = std::stoull(argv[i + 1]);
    } else if (a == "--steps") {
      o.steps = std::stoi(argv[i + 1]);
    } else if (a == "--warmup") {
      o.warmup = std::stoi(argv[i + 1]);
    } else if (a == "--leaving") {
      o.leaving = std::stod(argv[i + 1]);
    } else if (a == "--only") {
      o.only = argv[i + 1];
    }
  }
  return o;
}

// Random positions in this rank's slab; ids unique over the ranks.
std::vector<Particle> initial_particles(coalesce::box const& sub, std::size_t n, int rank, float width) {
  std::mt19937 rng(5u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> ux(static_cast<float>(sub.lo[0]), static_cast<float>(sub.hi[0]) - 1e-3f),
      u(0.0f, width - 1e-3f);
  std::vector<Particle> records(n);
  for (std::size_t i = 0; i < n; ++i)
    records[i] = {{ux(rng), u(rng), u(rng)}, {1, 2, 3}, 1.0f, static_cast<std::uint32_t>(rank * n + i)};
  return records;
}

census global_census(std::vector<Particle> const& records) {
  census c;
  for (auto const& p : records) c.add(p.id);
  std::uint64_t local[3] = {c.count, c.id_sum, c.id_hash_sum}, global[3] = {0, 0, 0};
  MPI_Allreduce(local, global, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return {global[0], global[1], global[2]};
}

using blocked = coalesce::aosoa<16>;
using split_layout = coalesce::split<coalesce::fields<&Particle::pos, &Particle::mass>, coalesce::aos, coalesce::soa>;

// The migration rows: F leaving on every layout, then nobody leaving, each side on its own arrays
// for the whole run.
void migration_rows(coalesce::mpi::decomposition const& d, std::vector<Particle> const& records, options const& o,
                    std::vector<row>& rows, std::vector<std::pair<std::string, phase_times>>& phases) {
  int const rank = d.rank(), size = d.size();
  census const start = global_census(records);
  auto hand_ordered = std::make_shared<hand_state>(hand_state{soa_particles(records), {}, {rank, size}});
  auto hand_unordered = std::make_shared<hand_state>(hand_state{soa_particles(records), {}, {rank, size}});
  std::vector<contender> sides;
  sides.push_back(library_contender<coalesce::soa>("coalesce soa, order kept", true, d, records));
  sides.push_back(library_contender<coalesce::soa>("coalesce soa, unordered", false, d, records));
  sides.push_back(library_contender<blocked>("coalesce aosoa<16>, order kept", true, d, records));
  sides.push_back(library_contender<blocked>("coalesce aosoa<16>, unordered", false, d, records));
  sides.push_back(library_contender<split_layout>("coalesce split, order kept", true, d, records));
  sides.push_back(hand_contender("hand-written, order kept", true, hand_ordered));
  sides.push_back(hand_contender("hand-written, unordered", false, hand_unordered));
  sides.push_back(floor_contender(hand_ordered, rank, size));
  run_steps(sides, o.warmup, o.steps, o.leaving, start, 1);

  std::vector<double> t;
  for (auto const& s : sides) t.push_back(s.times.slowest_median());
  double const hand_kept = t[5], hand_free = t[6], floor = t[7];
  int const pct = static_cast<int>(std::lround(o.leaving * 100));
  auto const leaving = "migrate " + std::to_string(pct) + "%, ";
  rows.push_back({leaving + "soa, order kept", t[0], hand_kept, floor, ""});
  rows.push_back({leaving + "soa, unordered", t[1], hand_free, floor, "hand: holes filled from the end"});
  rows.push_back({leaving + "aosoa<16>, order kept", t[2], hand_kept, floor, "against the SoA hand-written code"});
  rows.push_back({leaving + "aosoa<16>, unordered", t[3], hand_free, floor, ""});
  rows.push_back({leaving + "split, order kept", t[4], hand_kept, floor, "split<pos, mass | rest>"});
  for (std::size_t k : {0, 1, 2, 3, 4, 5, 6})
    phases.emplace_back(sides[k].name, sides[k].times.slowest_phase_medians());

  // Nobody leaving: the common step. The floor is the count exchange (every rank must learn that
  // nothing arrives).
  std::vector<contender> still;
  still.push_back(std::move(sides[0]));
  still.push_back(std::move(sides[5]));
  for (auto& s : still) s.times = {};
  contender counts{"floor: the count exchange", {}, {}, {}, true};
  counts.prepare = [](leaving_rule const&) { return census{}; };
  counts.run = [size] {
    std::vector<unsigned long long> out(static_cast<std::size_t>(size), 0), in(out.size());
    MPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    return phase_times{};
  };
  still.push_back(std::move(counts));
  run_steps(still, o.warmup, o.steps, 0.0, start, 1000);
  rows.push_back({"migrate, nobody leaving, soa", still[0].times.slowest_median(), still[1].times.slowest_median(),
                  still[2].times.slowest_median(), "floor: the count exchange"});
}

// Sums the ids of the ghosts and the owned forces' x: equal on both sides when the halos agree.
template <class V> std::uint64_t ghost_id_sum(V const& particles, std::size_t owned) {
  auto const v = particles.view();
  std::uint64_t s = 0;
  for (std::size_t i = owned; i < particles.size(); ++i) s += mix(static_cast<std::uint32_t>(v[i][&Particle::id]));
  return s;
}

void check_halos(bool ok, char const* what) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 0) {
    std::fprintf(stderr, "migrate_bench: %s differ between coalesce and the hand-written halo\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// The halo rows: forward of whole records (soa, aosoa<16>), reverse of a vec3 per ghost, and the
// plans, interleaved step by step on the same arrays.
void halo_rows(coalesce::mpi::decomposition const& d, std::vector<Particle> const& records, options const& o,
               double cutoff, std::vector<row>& rows, std::size_t& ghosts_on_rank0) {
  auto const sub = d.subdomain();
  coalesce::host_vector<Particle> particles(records);
  coalesce::host_vector<Particle, blocked> blocked_particles(records);
  auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);
  auto blocked_halo = coalesce::mpi::build_halo(d, blocked_particles, &Particle::pos, cutoff);
  coalesce::host_vector<vec3> forces(halo.owned() + halo.ghosts(), vec3{1, 1, 1});
  // The hand-written code's layout, an array of vec3 records: the library's overhead on it.
  coalesce::host_vector<vec3, coalesce::aos> record_forces(halo.owned() + halo.ghosts(), vec3{1, 1, 1});

  soa_particles hand_particles(records);
  hand_halo hand(d.neighbor(0, -1), d.neighbor(0, +1));
  hand.plan(hand_particles, records.size(), sub.lo[0], sub.hi[0], cutoff);
  std::vector<vec3> hand_forces(hand.owned() + hand.ghosts(), vec3{1, 1, 1});
  raw_exchange forward_floor, reverse_floor;
  hand.set_forward_floor(forward_floor, sizeof(Particle));
  hand.set_reverse_floor(reverse_floor, sizeof(vec3));
  check_halos(halo.ghosts() == hand.ghosts(), "the ghost counts");

  // forward: lib, aosoa, hand, floor; reverse: lib, hand, floor, into a member: soa, aosoa
  std::array<std::vector<double>, 10> t;
  std::vector<std::function<void()>> calls = {
      [&] { coalesce::mpi::forward(halo, particles); },
      [&] { coalesce::mpi::forward(blocked_halo, blocked_particles); },
      [&] { hand.forward(hand_particles); },
      [&] { forward_floor.run(); },
      [&] { coalesce::mpi::reverse(halo, forces); },
      [&] { hand.reverse(hand_forces); },
      [&] { reverse_floor.run(); },
      [&] { coalesce::mpi::reverse(halo, particles, &Particle::vel); },
      [&] { coalesce::mpi::reverse(blocked_halo, blocked_particles, &Particle::vel); },
      [&] { coalesce::mpi::reverse(halo, record_forces); }};
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    for (std::size_t j = 0; j < calls.size(); ++j) {
      std::size_t const k = (j + static_cast<std::size_t>(s)) % calls.size();
      double const ms = timed_ms(calls[k]);
      if (s >= o.warmup) t[k].push_back(ms);
    }
  }
  check_halos(
      ghost_id_sum(particles, halo.owned()) == ghost_id_sum(blocked_particles, blocked_halo.owned()) &&
          ghost_id_sum(particles, halo.owned()) ==
              [&] {
                std::uint64_t s = 0;
                for (std::size_t i = hand.owned(); i < hand_particles.size(); ++i) s += mix(hand_particles.id[i]);
                return s;
              }(),
      "the ghosts");
  double lib_force = 0, hand_force = 0;
  auto const fv = forces.view();
  for (std::size_t i = 0; i < halo.owned(); ++i) lib_force += static_cast<vec3>(fv[i]).x;
  for (std::size_t i = 0; i < hand.owned(); ++i) hand_force += hand_forces[i].x;
  check_halos(lib_force == hand_force, "the owners' reverse sums");
  double record_force = 0;
  auto const rv = record_forces.view();
  for (std::size_t i = 0; i < halo.owned(); ++i) record_force += static_cast<vec3>(rv[i]).x;
  check_halos(record_force == hand_force, "the owners' reverse sums (aos)");

  std::array<double, 10> m{};
  for (std::size_t k = 0; k < t.size(); ++k) m[k] = slowest_rank(median(t[k]));
  rows.push_back({"halo forward (whole records), soa", m[0], m[2], m[3], "hand: buffers reused, no counts"});
  rows.push_back({"halo forward (whole records), aosoa<16>", m[1], m[2], m[3], "against the SoA hand-written code"});
  rows.push_back({"halo reverse (a vec3 per ghost)", m[4], m[5], m[6], "added into the owner's vec3 (soa)"});
  rows.push_back({"halo reverse (a vec3 per ghost), aos", m[9], m[5], m[6], "the hand-written code's layout"});
  rows.push_back({"halo reverse into a member, soa", m[7], m[5], m[6], "reverse(halo, particles, &Particle::vel)"});
  rows.push_back({"halo reverse into a member, aosoa<16>", m[8], m[5], m[6], "against the hand-written vec3 array"});

  // Plans: the library's geometric plan over particles that hold the ghosts (options.owned),
  // build_halo again, and a plan from the hand-written side's export lists; the hand-written face
  // scan with its count exchange; the floor is that count exchange.
  coalesce::mpi::halo_options const again{.owned = halo.owned()};
  coalesce::mpi::communicator const world(MPI_COMM_WORLD);
  auto const ids = hand.export_ids();
  auto const ranks = hand.export_ranks();
  raw_exchange counts_floor;
  {
    std::vector<raw_exchange::message> sends, receives;
    for (int dir : {-1, +1}) {
      sends.push_back({d.neighbor(0, dir), sizeof(unsigned long long), 60});
      receives.push_back({d.neighbor(0, -dir), sizeof(unsigned long long), 60});
    }
    counts_floor.set(std::move(sends), std::move(receives));
  }
  std::array<std::vector<double>, 5> p;  // plan_halo, hand plan, counts floor, build_halo, export-list plan
  std::vector<std::function<void()>> plans = {
      [&] { (void)coalesce::mpi::plan_halo(d, particles, &Particle::pos, cutoff, again); },
      [&] { hand.plan(hand_particles, hand.owned(), sub.lo[0], sub.hi[0], cutoff); }, [&] { counts_floor.run(); },
      [&] { halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff, again); },
      [&] {
        (void)coalesce::mpi::plan_halo(world, particles, std::span<std::uint32_t const>(ids),
                                       std::span<int const>(ranks), again);
      }};
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    for (std::size_t j = 0; j < plans.size(); ++j) {
      std::size_t const k = (j + static_cast<std::size_t>(s)) % plans.size();
      double const ms = timed_ms(plans[k]);
      if (s >= o.warmup) p[k].push_back(ms);
    }
  }
  std::array<double, 5> q{};
  for (std::size_t k = 0; k < p.size(); ++k) q[k] = slowest_rank(median(p[k]));
  rows.push_back({"halo plan (plan_halo, geometric)", q[0], q[1], q[2], "hand: face scan + counts; floor: counts"});
  rows.push_back({"halo build (build_halo, geometric)", q[3], 0, 0, "plan + the ghosts' records"});
  rows.push_back({"halo plan from export lists", q[4], 0, q[2], "lists given: counts only"});
  ghosts_on_rank0 = halo.ghosts();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    options const o = parse(argc, argv);
    // Slabs 20 wide in a clamped box (every ghost comes from a neighbour rank, no periodic
    // images); a cutoff of 1 gives 5 % of a neighbour's particles per face.
    double const width = 20.0, cutoff = 1.0;
    coalesce::box const box{.lo = {0, 0, 0}, .hi = {width * size, width, width}, .edges = coalesce::boundary::open};
    coalesce::mpi::decomposition const d(MPI_COMM_WORLD, box, 3, {size, 1, 1});
    std::vector<Particle> const records = initial_particles(d.subdomain(), o.n, rank, static_cast<float>(width));

    std::vector<row> rows;
    std::vector<std::pair<std::string, phase_times>> phases;
    if (o.only != "halo") migration_rows(d, records, o, rows, phases);
    std::size_t ghosts = 0;
    if (o.only != "migrate") halo_rows(d, records, o, cutoff, rows, ghosts);
    if (rank == 0) {
      std::printf(
          "migrate_bench: %d ranks, %zu particles per rank at the start (32 B), %.0f%% leaving per step to the next "
          "rank, medians of %d steady steps after %d, %zu ghosts on rank 0; every side checked to hold the same "
          "particles after every step\n",
          size, o.n, o.leaving * 100, o.steps, o.warmup, ghosts);
      print_table(rows);
      print_phases(phases);
    }
  }
  MPI_Finalize();
  return 0;
}
