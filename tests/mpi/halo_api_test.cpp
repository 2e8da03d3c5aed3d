// The halo and migration a Cabana or LAMMPS user expects (1, 2 and 4 ranks, host and GPU memory,
// every layout): migration by rank on a plain communicator, halos from explicit (index, rank)
// export lists, plan-only halos whose forward appends what build_halo would have, per-axis
// periodicity and halo axes.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpi_test_support.hpp"

namespace {

// Rank r starts with scattered(base + 37 r, r): every rank can rebuild any rank's particles.
constexpr std::size_t base_count = 200;
std::size_t count_of(int rank) { return base_count + 37 * static_cast<std::size_t>(rank); }

bool same_record(Particle const& a, Particle const& b) { return std::memcmp(&a, &b, sizeof(Particle)) == 0; }
// Records of `got` from `first` on that differ from `want` (bytes), plus 1 when the counts differ.
std::size_t records_differing(std::vector<Particle> const& got, std::size_t first, std::vector<Particle> const& want) {
  std::size_t const common = got.size() >= first ? std::min(got.size() - first, want.size()) : 0;
  std::size_t differ = got.size() - std::min(got.size(), first) == want.size() ? 0 : 1;
  for (std::size_t k = 0; k < common; ++k) differ += !same_record(got[first + k], want[k]);
  return differ;
}
// (index, rank) pairs as the two lists build_halo and plan_halo take.
struct export_lists {
  std::vector<std::uint32_t> ids;
  std::vector<int> ranks;
};
export_lists split_exports(std::vector<std::pair<std::uint32_t, int>> const& pairs) {
  export_lists out;
  for (auto const& [i, r] : pairs) {
    out.ids.push_back(i);
    out.ranks.push_back(r);
  }
  return out;
}

template <class T, class L, class S> std::vector<T> records_of(coalesce::vector<T, L, S> const& v) {
  std::vector<T> out(v.size());
  v.copy_to(out);
  return out;
}

// Element i of rank r goes to rank (r + i) % size.
int destination_of(int rank, std::size_t i, int size) { return static_cast<int>((rank + i) % size); }

template <class L> void migrate_on_communicator(bool keep_order) {
  cm::communicator const c(MPI_COMM_WORLD);
  int const rank = c.rank(), size = c.size();
  auto const records = scattered(count_of(rank), rank);
  test_vector<Particle, L> particles(records);
  std::vector<int> destination(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) destination[i] = destination_of(rank, i, size);
  auto const report = keep_order ? cm::migrate(c, particles, std::span<int const>(destination))
                                 : cm::migrate(cm::unordered, c, particles, std::span<int const>(destination));
  auto const after = records_of(particles);
  CHECK(report.kept + report.received == after.size());
  // Expected: what every rank sent here, by source rank ascending, each in its order; the kept
  // ones first (in order when the order is kept; as a set otherwise).
  std::vector<Particle> kept, arrivals;
  for (int r = 0; r < size; ++r) {
    auto const theirs = scattered(count_of(r), r);
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      if (destination_of(r, i, size) != rank) continue;
      (r == rank ? kept : arrivals).push_back(theirs[i]);
    }
  }
  REQUIRE(after.size() == kept.size() + arrivals.size());
  bool arrivals_in_order = true;
  for (std::size_t k = 0; k < arrivals.size(); ++k)
    arrivals_in_order = arrivals_in_order && same_record(after[kept.size() + k], arrivals[k]);
  CHECK(arrivals_in_order);
  std::vector<std::uint32_t> got_kept, want_kept;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    got_kept.push_back(after[k].id);
    want_kept.push_back(kept[k].id);
  }
  if (!keep_order) {
    std::sort(got_kept.begin(), got_kept.end());
    std::sort(want_kept.begin(), want_kept.end());
  }
  CHECK(got_kept == want_kept);
}

}  // namespace

TEST_CASE("a plain communicator migrates by destination rank, no decomposition needed, on every layout") {
  for (bool keep_order : {true, false}) {
    CAPTURE(keep_order);
    migrate_on_communicator<coalesce::soa>(keep_order);
    migrate_on_communicator<coalesce::aos>(keep_order);
    migrate_on_communicator<coalesce::aosoa<8>>(keep_order);
    migrate_on_communicator<split_first>(keep_order);
    migrate_on_communicator<stored_vel_half>(keep_order);
  }
}

namespace {

// The host path's in-place moves (src/reorder/indexed_moves.cpp, pack_and_close_up) in every
// shape: element 0 leaves, a run of stayers that never moves, short runs (10 % leaving, to the
// next rank), a run of stayers longer than the memmove threshold, half leaving to any other rank
// (several destinations at 4 ranks: packed from the grouped leavers), leavers at the very end;
// and more elements than one stretch of the moves (1024), over blocks of 6, 8 and 16.
int shaped_destination(int rank, std::size_t i, std::size_t n, int size) {
  if (size == 1) return 0;
  auto const hash = [&](std::size_t salt) {
    return (i * 2654435761u + salt * 40503u + static_cast<unsigned>(rank)) % 100;
  };
  bool leaves = false;
  if (i == 0 || i + 50 >= n) {
    leaves = true;
  } else if (i < 100) {
    leaves = false;
  } else if (i < 2000) {
    leaves = hash(1) < 10;
  } else if (i < 2600) {
    leaves = false;
  } else {
    leaves = hash(2) < 50;
  }
  if (!leaves) return rank;
  return static_cast<int>((static_cast<std::size_t>(rank) + 1 + hash(3) % static_cast<std::size_t>(size - 1)) %
                          static_cast<std::size_t>(size));
}
constexpr std::size_t shaped_count(int rank) { return 5000 + 37 * static_cast<std::size_t>(rank); }

template <class L> void migrate_shaped(bool keep_order) {
  cm::communicator const c(MPI_COMM_WORLD);
  int const rank = c.rank(), size = c.size();
  std::size_t const n = shaped_count(rank);
  auto const records = scattered(n, rank);
  test_vector<Particle, L> particles(records);
  std::vector<double> charges(n);
  for (std::size_t i = 0; i < n; ++i) charges[i] = records[i].id * 0.5;
  test_array<double> charge(charges);
  std::vector<int> destination(n);
  for (std::size_t i = 0; i < n; ++i) destination[i] = shaped_destination(rank, i, n, size);
  auto const report = keep_order ? cm::migrate(c, particles, std::span<int const>(destination), charge)
                                 : cm::migrate(cm::unordered, c, particles, std::span<int const>(destination), charge);
  // Expected, exactly: the stayers closed up in order, or (unordered, host memory) the leavers'
  // slots below the kept count taken by the stayers at or past it, lowest slot first; then the
  // arrivals by source rank, each in its sender's order.
  std::vector<Particle> want;
  std::vector<std::size_t> leavers;
  for (std::size_t i = 0; i < n; ++i) {
    if (destination[i] == rank) {
      want.push_back(records[i]);
    } else {
      leavers.push_back(i);
    }
  }
  bool const fills_holes = !keep_order && !(coalesce::device_is_gpu && std::is_same_v<test_space, coalesce::device>);
  if (fills_holes) {
    std::size_t const kept = want.size();
    want.assign(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(kept));
    std::size_t filler = kept;
    for (std::size_t hole : leavers) {
      if (hole >= kept) break;
      while (destination[filler] != rank) ++filler;
      want[hole] = records[filler++];
    }
  }
  CHECK(report.kept == want.size());
  for (int r = 0; r < size; ++r) {
    auto const theirs = scattered(shaped_count(r), r);
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      if (r != rank && shaped_destination(r, i, theirs.size(), size) == rank) want.push_back(theirs[i]);
    }
  }
  auto const after = records_of(particles);
  CHECK(records_differing(after, 0, want) == 0);
  auto const moved_charges = to_host(charge);
  REQUIRE(moved_charges.size() == after.size());
  bool charges_follow = true;
  for (std::size_t i = 0; i < after.size(); ++i)
    charges_follow = charges_follow && moved_charges[i] == after[i].id * 0.5;
  CHECK(charges_follow);
}

}  // namespace

TEST_CASE("migration moves every element where it says, exactly: close-up and hole filling in every shape") {
  for (bool keep_order : {true, false}) {
    CAPTURE(keep_order);
    migrate_shaped<coalesce::soa>(keep_order);
    migrate_shaped<coalesce::aos>(keep_order);
    migrate_shaped<coalesce::aosoa<16>>(keep_order);
    migrate_shaped<coalesce::aosoa<6>>(keep_order);
    migrate_shaped<split_first>(keep_order);
    migrate_shaped<stored_vel_half>(keep_order);
    migrate_shaped<stored_id_bits>(keep_order);
  }
}

namespace {

// Rank r exports element i to: the next rank when i % 3 == 0, itself when i % 5 == 0, the previous
// rank when i % 7 == 0 (each rank once per element).
std::vector<std::pair<std::uint32_t, int>> exports_of(int rank, int size) {
  std::vector<std::pair<std::uint32_t, int>> out;
  for (std::size_t i = 0; i < count_of(rank); ++i) {
    std::set<int> to;
    auto const add = [&](int r) {
      if (to.insert(r).second) out.emplace_back(static_cast<std::uint32_t>(i), r);
    };
    if (i % 3 == 0) add((rank + 1) % size);
    if (i % 5 == 0) add(rank);
    if (i % 7 == 0) add((rank + size - 1) % size);
  }
  return out;
}

// The ghosts rank `me` receives: from each source rank ascending, its exports to `me` in list order.
std::vector<Particle> expected_ghosts(int me, int size, float dx) {
  std::vector<Particle> out;
  for (int r = 0; r < size; ++r) {
    auto theirs = scattered(count_of(r), r);
    for (auto& p : theirs) p.pos.x += dx;
    for (auto const& [i, to] : exports_of(r, size))
      if (to == me) out.push_back(theirs[i]);
  }
  return out;
}

// How many ranks element i of `rank` is exported to.
int copies_of(int rank, int size, std::uint32_t i) {
  int n = 0;
  for (auto const& [k, to] : exports_of(rank, size)) n += k == i;
  return n;
}

template <class L> void check_export_halo() {
  cm::communicator const c(MPI_COMM_WORLD);
  int const rank = c.rank(), size = c.size();
  auto const records = scattered(count_of(rank), rank);
  auto const [ids, ranks] = split_exports(exports_of(rank, size));
  test_vector<Particle, L> particles(records);
  auto const stamp = particles.order_stamp();
  auto const halo = cm::build_halo(c, particles, std::span<std::uint32_t const>(ids), std::span<int const>(ranks));
  CHECK(halo.from_exports());
  CHECK(halo.owned() == records.size());
  CHECK(particles.size() == halo.owned() + halo.ghosts());
  if (halo.ghosts() > 0) CHECK(particles.order_stamp() != stamp);
  auto const check_ghosts = [&](float dx, char const* when) {
    auto const got = records_of(particles);
    auto const want = expected_ghosts(rank, size, dx);
    REQUIRE(got.size() == halo.owned() + want.size());
    std::size_t const bad = records_differing(got, halo.owned(), want);
    CHECK_MESSAGE(bad == 0, when << ": " << bad << " ghosts differ from their owners' records");
  };
  check_ghosts(0.0f, "after build_halo");

  // The owners move; a forward of the member, then of whole records, brings the ghosts along
  // (unshifted: explicit halos copy).
  {
    auto moved = records_of(particles);
    for (std::size_t i = 0; i < halo.owned(); ++i) moved[i].pos.x += 0.5f;
    particles.assign(coalesce::host_vector<Particle, L>(moved));
  }
  cm::forward(halo, particles, &Particle::pos);
  check_ghosts(0.5f, "after forward(halo, particles, &Particle::pos)");
  cm::forward(halo, particles);
  check_ghosts(0.5f, "after forward(halo, particles)");

  // Any array: owned() elements extended with the ghosts' values.
  std::vector<double> charges(halo.owned());
  for (std::size_t i = 0; i < charges.size(); ++i) charges[i] = records[i].id * 0.25;
  test_array<double> charge(charges);
  cm::forward(halo, charge);
  auto const charge_after = to_host(charge);
  auto const want = expected_ghosts(rank, size, 0.0f);
  REQUIRE(charge_after.size() == halo.owned() + want.size());
  bool charges_follow = true;
  for (std::size_t g = 0; g < want.size(); ++g)
    charges_follow = charges_follow && charge_after[halo.owned() + g] == want[g].id * 0.25;
  CHECK(charges_follow);

  // reverse: every entry (1, 2, 0): an owned element ends with 1 + its number of copies.
  test_vector<vec3> forces(std::vector<vec3>(particles.size(), vec3{1.0f, 2.0f, 0.0f}));
  cm::reverse(halo, forces);
  auto const totals = records_of(forces);
  bool summed = true;
  for (std::size_t i = 0; i < halo.owned(); ++i) {
    float const expect = 1.0f + static_cast<float>(copies_of(rank, size, static_cast<std::uint32_t>(i)));
    summed = summed && totals[i].x == expect && totals[i].y == 2.0f * expect && totals[i].z == 0.0f;
  }
  CHECK(summed);
  // Into one member of the particles; the other members untouched.
  {
    auto with_vel = records_of(particles);
    for (auto& p : with_vel) p.vel = vec3{1.0f, 2.0f, 0.0f};
    particles.assign(coalesce::host_vector<Particle, L>(with_vel));
    if constexpr (!coalesce::layout_storage<Particle, L>::natural(3)) {  // vel stored as half: not summed
      CHECK_THROWS_WITH_AS(cm::reverse(halo, particles, &Particle::vel), doctest::Contains("stored as half"),
                           coalesce::error);
    } else {
      cm::reverse(halo, particles, &Particle::vel);
      auto const after = records_of(particles);
      bool member_summed = true, others_kept = true;
      for (std::size_t i = 0; i < halo.owned(); ++i) {
        member_summed = member_summed && after[i].vel.x == totals[i].x && after[i].vel.y == totals[i].y;
        others_kept = others_kept && after[i].id == with_vel[i].id && after[i].pos.x == with_vel[i].pos.x;
      }
      CHECK(member_summed);
      CHECK(others_kept);
    }
  }

  // The plan alone moves nothing; its forward appends the same ghosts, and a plan for particles
  // that still hold a previous halo's ghosts (options.owned) replaces them.
  test_vector<Particle, L> fresh(records);
  auto const plan = cm::plan_halo(c, fresh, std::span<std::uint32_t const>(ids), std::span<int const>(ranks));
  CHECK(fresh.size() == records.size());
  CHECK(plan.ghosts() == halo.ghosts());
  cm::forward(plan, fresh);
  auto const planned = records_of(fresh);
  auto const built = expected_ghosts(rank, size, 0.0f);
  REQUIRE(planned.size() == records.size() + built.size());
  CHECK(records_differing(planned, records.size(), built) == 0);
  auto const again = cm::plan_halo(c, fresh, std::span<std::uint32_t const>(ids), std::span<int const>(ranks),
                                   {.owned = plan.owned()});
  CHECK(again.planned_size() == fresh.size());
  // The same lists as int ids, the options given in any order: the same ghosts.
  {
    std::vector<int> const int_ids(ids.begin(), ids.end());
    test_vector<Particle, L> by_int(records);
    auto const as_int = cm::plan_halo(c, by_int, std::span<int const>(int_ids), std::span<int const>(ranks),
                                      cm::halo_options{}.with_axes({true, true, true}).with_owned(records.size()));
    CHECK(as_int.ghosts() == plan.ghosts());
    CHECK(as_int.send_counts() == plan.send_counts());
    cm::forward(as_int, by_int);
    auto const got = records_of(by_int);
    REQUIRE(got.size() == planned.size());
    CHECK(records_differing(got, 0, planned) == 0);
  }
  cm::forward(again, fresh);
  CHECK(fresh.size() == again.owned() + again.ghosts());
  auto const replanned = records_of(fresh);
  CHECK(records_differing(replanned, 0, planned) == 0);
}

}  // namespace

TEST_CASE("a halo from explicit export lists holds the records asked for; forward and reverse replay it") {
  check_export_halo<coalesce::soa>();
  check_export_halo<coalesce::aos>();
  check_export_halo<coalesce::aosoa<8>>();
  check_export_halo<split_first>();
  check_export_halo<stored_vel_half>();
}

TEST_CASE("bad export lists stop every rank with the same error before anything moves") {
  cm::communicator const c(MPI_COMM_WORLD);
  int const rank = c.rank(), size = c.size();
  auto const records = scattered(count_of(rank), rank);
  test_vector<Particle> particles(records);
  auto const attempt = [&](std::vector<std::uint32_t> ids, std::vector<int> ranks, std::string const& expect) {
    CHECK_THROWS_WITH_AS(cm::build_halo(c, particles, std::span<std::uint32_t const>(ids), std::span<int const>(ranks)),
                         doctest::Contains(expect.c_str()), coalesce::error);
    CHECK(particles.size() == records.size());  // nothing appended
  };
  bool const last = rank == size - 1;
  attempt({0, 1}, {0, last ? size : 0},
          "rank " + std::to_string(size - 1) + ", element 1: export rank " + std::to_string(size) + ", outside [0, " +
              std::to_string(size) + ")");
  std::size_t const last_count = count_of(size - 1);  // the error is the last rank's, on every rank
  attempt({0, last ? static_cast<std::uint32_t>(records.size()) : 1u}, {0, 0},
          "export index " + std::to_string(last_count) + ", not below the " + std::to_string(last_count) +
              " owned particles");
  attempt({3, last ? 3u : 4u}, {0, 0}, "element 3 is exported to rank 0 twice");
  attempt(last ? std::vector<std::uint32_t>{0} : std::vector<std::uint32_t>{0, 1}, {0, 0},
          "the export lists differ in length: 1 indices, 2 ranks");
  CHECK_THROWS_WITH_AS(cm::plan_halo(c, particles, std::span<std::uint32_t const>(), std::span<int const>(),
                                     {.owned = records.size() + 1}),
                       doctest::Contains("halo_options::owned is"), coalesce::error);
  // Ids held as int (as Cabana's Halo takes them): a negative one is the same agreed error.
  std::vector<int> const int_ids{0, last ? -3 : 1}, to_first{0, 0};
  std::string const negative = "rank " + std::to_string(size - 1) + ", element 1: export index -3, negative";
  CHECK_THROWS_WITH_AS(cm::build_halo(c, particles, std::span<int const>(int_ids), std::span<int const>(to_first)),
                       doctest::Contains(negative.c_str()), coalesce::error);
  CHECK(particles.size() == records.size());
  // After all that the communicator still works: an empty halo.
  auto const empty = cm::build_halo(c, particles, std::span<std::uint32_t const>(), std::span<int const>());
  CHECK(empty.ghosts() == 0);
  CHECK(particles.size() == records.size());
}

namespace {

// Every image of every particle within the cutoff of `sub` along the halo's axes (inside it along
// the others), not inside it: the ghosts a geometric halo must hold. Images only along periodic
// axes that exchange ghosts.
std::vector<ghost_key> expected_images(std::vector<Particle> const& world, coalesce::box const& sub, double cutoff,
                                       std::array<bool, 3> periodic, std::array<bool, 3> axes) {
  std::vector<ghost_key> out;
  for (auto const& p : world) {
    double const c[3] = {p.pos.x, p.pos.y, p.pos.z};
    for (int sx = -1; sx <= 1; ++sx)
      for (int sy = -1; sy <= 1; ++sy)
        for (int sz = -1; sz <= 1; ++sz) {
          int const s[3] = {sx, sy, sz};
          bool allowed = true, inside = true, near = true;
          double q[3];
          for (int a = 0; a < 3; ++a) {
            allowed = allowed && (s[a] == 0 || (periodic[a] && axes[a]));
            q[a] = c[a] + 8.0 * s[a];
            inside = inside && q[a] >= sub.lo[a] && q[a] < sub.hi[a];
            near = near && (axes[a] ? q[a] >= sub.lo[a] - cutoff && q[a] < sub.hi[a] + cutoff
                                    : q[a] >= sub.lo[a] && q[a] < sub.hi[a]);
          }
          if (allowed && near && !inside) out.push_back(key_of(p.id, q[0], q[1], q[2]));
        }
  }
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<ghost_key> ghosts_of(std::vector<Particle> const& with_ghosts, std::size_t owned) {
  std::vector<ghost_key> out;
  for (std::size_t g = owned; g < with_ghosts.size(); ++g) {
    auto const& p = with_ghosts[g].pos;
    out.push_back(key_of(with_ghosts[g].id, p.x, p.y, p.z));
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <class L> void check_axes(std::array<bool, 3> periodic, std::array<bool, 3> axes) {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box, 3, {0, 0, 0}, periodic);
  for (unsigned a = 0; a < 3; ++a) CHECK(d.periodic(a) == periodic[a]);
  test_vector<Particle, L> particles(scattered(count_of(d.rank()), d.rank()));
  (void)cm::migrate(d, particles, &Particle::pos);
  auto const owned = records_of(particles);
  double const cutoff = 1.0;
  auto const halo = cm::build_halo(d, particles, &Particle::pos, cutoff, {.axes = axes});
  auto const want = expected_images(all_particles(owned), d.subdomain(), cutoff, periodic, axes);
  auto const got = ghosts_of(records_of(particles), halo.owned());
  CHECK(got.size() == want.size());
  CHECK(got == want);
  // Owners move along x; ghosts follow with their images.
  {
    auto moved = records_of(particles);
    for (std::size_t i = 0; i < halo.owned(); ++i) moved[i].pos.x += 0.125f;
    particles.assign(coalesce::host_vector<Particle, L>(moved));
  }
  cm::forward(halo, particles);
  auto shifted = owned;
  for (auto& p : shifted) p.pos.x += 0.125f;
  auto const after = ghosts_of(records_of(particles), halo.owned());
  // The same ghosts (ids and images), each moved with its owner.
  std::vector<ghost_key> want_after;
  for (auto k : want) {
    k.x += 125;
    want_after.push_back(k);
  }
  std::sort(want_after.begin(), want_after.end());
  CHECK(after == want_after);
}

}  // namespace

TEST_CASE("periodicity per axis: images only along the periodic axes; halo axes leave the others out") {
  std::array<bool, 3> const open_yz{true, false, false};
  std::array<bool, 3> const every_axis{true, true, true};
  // A channel: periodic along x only.
  check_axes<coalesce::soa>(open_yz, every_axis);
  check_axes<coalesce::aosoa<8>>(open_yz, every_axis);
  check_axes<split_first>({false, true, false}, every_axis);
  // A periodic box whose lists wrap y and z themselves: ghosts along x only.
  check_axes<coalesce::soa>(every_axis, {true, false, false});
  check_axes<coalesce::aos>(every_axis, {true, false, false});
  check_axes<stored_vel_half>(every_axis, {false, true, true});

  // owner() wraps along the periodic axis only.
  cm::decomposition const d(MPI_COMM_WORLD, unit_box, 3, {0, 0, 0}, open_yz);
  CHECK(d.owner({8.5, 1.0, 1.0}) == d.owner({0.5, 1.0, 1.0}));
  CHECK(d.owner({1.0, 8.5, 1.0}) == -1);
  CHECK(d.owner({1.0, 1.0, -0.5}) == -1);
  // A position outside the box along an open axis cannot migrate: every rank says which.
  auto records = scattered(count_of(d.rank()), d.rank());
  if (d.rank() == 0) records[5].pos.y = 9.0f;
  test_vector<Particle> particles(records);
  CHECK_THROWS_WITH_AS(cm::migrate(d, particles, &Particle::pos), doctest::Contains("rank 0, element 5: position"),
                       coalesce::error);
}

namespace {
template <class L> void check_plan_only() {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  test_vector<Particle, L> built(scattered(count_of(d.rank()), d.rank()));
  (void)cm::migrate(d, built, &Particle::pos);
  auto const owned = records_of(built);
  test_vector<Particle, L> planned(owned);
  double const cutoff = 1.0;
  auto const halo = cm::build_halo(d, built, &Particle::pos, cutoff);
  auto const plan = cm::plan_halo(d, planned, &Particle::pos, cutoff);
  CHECK(planned.size() == owned.size());  // a plan touches nothing
  CHECK(plan.owned() == halo.owned());
  CHECK(plan.ghosts() == halo.ghosts());
  cm::forward(plan, planned);
  auto const a = records_of(built), b = records_of(planned);
  REQUIRE(a.size() == b.size());
  std::size_t const differ = records_differing(b, 0, a);
  CHECK_MESSAGE(differ == 0, differ << " records differ between build_halo and plan_halo + forward");

  // Rebuilding with the ghosts still there: options.owned says where they begin.
  auto const replan = cm::plan_halo(d, planned, &Particle::pos, cutoff, {.owned = plan.owned()});
  CHECK(replan.ghosts() == plan.ghosts());
  CHECK(replan.planned_size() == planned.size());
  cm::forward(replan, planned);
  auto const c = records_of(planned);
  CHECK(records_differing(c, 0, a) == 0);
  auto const rebuilt = cm::build_halo(d, built, &Particle::pos, cutoff, {.owned = halo.owned()});
  CHECK(rebuilt.ghosts() == halo.ghosts());
  auto const e = records_of(built);
  CHECK(records_differing(e, 0, a) == 0);
  // The member forward of a plan needs the ghosts there first.
  test_vector<Particle, L> bare(owned);
  auto const bare_plan = cm::plan_halo(d, bare, &Particle::pos, cutoff);
  if (bare_plan.ghosts() > 0) {
    CHECK_THROWS_WITH_AS(cm::forward(bare_plan, bare, &Particle::pos),
                         doctest::Contains("forward the whole records first"), coalesce::error);
  }
}
}  // namespace

TEST_CASE("plan_halo finds build_halo's ghosts without touching the particles; its forward appends them") {
  check_plan_only<coalesce::soa>();
  check_plan_only<coalesce::aos>();
  check_plan_only<coalesce::aosoa<8>>();
  check_plan_only<split_first>();
  check_plan_only<stored_vel_half>();
  check_plan_only<stored_pos_fixed>();  // the coordinates staged keep their fixed-point format
}

TEST_CASE("a rank that owns no particles plans, builds and replays halos like the others") {
  // Geometric: each rank keeps only what it owns, rank 0 nothing.
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  std::vector<Particle> mine;
  if (d.rank() != 0) {
    for (auto const& p : scattered(count_of(d.rank()), d.rank()))
      if (d.owner({p.pos.x, p.pos.y, p.pos.z}) == d.rank()) mine.push_back(p);
  }
  test_vector<Particle> built(mine), planned(mine);
  double const cutoff = 1.0;
  auto const halo = cm::build_halo(d, built, &Particle::pos, cutoff);
  auto const plan = cm::plan_halo(d, planned, &Particle::pos, cutoff);
  cm::forward(plan, planned);
  auto const want = expected_images(all_particles(mine), d.subdomain(), cutoff, {true, true, true}, {true, true, true});
  CHECK(ghosts_of(records_of(built), halo.owned()) == want);
  CHECK(ghosts_of(records_of(planned), plan.owned()) == want);
  test_vector<vec3> forces(std::vector<vec3>(built.size(), vec3{1.0f, 0.0f, 0.0f}));
  cm::reverse(halo, forces);  // nothing to add into on rank 0, its ghosts' sums sent away
  CHECK(forces.size() == built.size());

  // From export lists: rank 0 owns and exports nothing; every other rank sends every fourth
  // element to rank 0 and to the next rank.
  cm::communicator const c(MPI_COMM_WORLD);
  int const rank = c.rank(), size = c.size();
  auto const records_of_rank = [](int r) { return r == 0 ? std::vector<Particle>{} : scattered(count_of(r), r); };
  auto const exports_to = [&](int r) {
    std::vector<std::pair<std::uint32_t, int>> out;
    if (r == 0) return out;
    for (std::size_t i = 0; i < count_of(r); i += 4) {
      out.emplace_back(static_cast<std::uint32_t>(i), 0);
      if ((r + 1) % size != 0) out.emplace_back(static_cast<std::uint32_t>(i), (r + 1) % size);
    }
    return out;
  };
  auto const [ids, ranks] = split_exports(exports_to(rank));
  test_vector<Particle> particles(records_of_rank(rank));
  auto const h = cm::build_halo(c, particles, std::span<std::uint32_t const>(ids), std::span<int const>(ranks));
  std::vector<Particle> expected;
  for (int r = 0; r < size; ++r) {
    auto const theirs = records_of_rank(r);
    for (auto const& [i, to] : exports_to(r))
      if (to == rank) expected.push_back(theirs[i]);
  }
  auto const got = records_of(particles);
  REQUIRE(got.size() == h.owned() + expected.size());
  CHECK(records_differing(got, h.owned(), expected) == 0);
  test_vector<vec3> sums(std::vector<vec3>(particles.size(), vec3{1.0f, 0.0f, 0.0f}));
  cm::reverse(h, sums);
  auto const totals = records_of(sums);
  bool summed = true;
  for (std::size_t i = 0; i < h.owned(); ++i) {
    float copies = 0;
    for (auto const& [k, to] : exports_to(rank)) copies += k == i ? 1.0f : 0.0f;
    summed = summed && totals[i].x == 1.0f + copies;
  }
  CHECK(summed);
}

TEST_CASE(
    "box_fixed<> positions in a box larger than the global box: migration wraps them and halos shift them by whole "
    "steps, exactly as float positions move") {
  using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<>>>;
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  int const rank = d.rank();
  // [-4, 12): steps of 2^-28. Positions on a 2^-10 grid are exact as floats and as box words, and
  // so are their images a box length (2^31 steps) away: the box run must equal the float run.
  coalesce::box const wide{.lo = {-4, -4, -4}, .hi = {12, 12, 12}};
  auto records = scattered(count_of(rank), rank);
  auto const on_grid = [](float x) { return std::floor(x * 1024.0f) / 1024.0f; };
  for (auto& r : records) r.pos = {on_grid(r.pos.x), on_grid(r.pos.y), on_grid(r.pos.z)};
  for (std::size_t i = 0; i < records.size(); i += 5) records[i].pos.x += 3.5f;  // past hi, inside the wide box
  for (std::size_t i = 1; i < records.size(); i += 7) records[i].pos.y -= 3.0f;  // below lo
  test_vector<Particle> plain(records);
  test_vector<Particle, boxed> particles(wide);
  particles.assign(test_vector<Particle>(records));
  (void)cm::migrate(d, plain, &Particle::pos);
  (void)cm::migrate(d, particles, &Particle::pos);
  auto const owned = records_of(particles);
  CHECK(records_differing(owned, 0, records_of(plain)) == 0);
  bool inside = true;
  for (auto const& p : owned) inside = inside && d.owner({p.pos.x, p.pos.y, p.pos.z}) == rank && p.pos.x < 8.0f;
  CHECK(inside);

  double const cutoff = 1.0;
  auto const float_halo = cm::build_halo(d, plain, &Particle::pos, cutoff);
  auto const halo = cm::build_halo(d, particles, &Particle::pos, cutoff);
  CHECK(halo.ghosts() == float_halo.ghosts());
  CHECK(records_differing(records_of(particles), 0, records_of(plain)) == 0);
  auto const want =
      expected_images(all_particles(owned), d.subdomain(), cutoff, {true, true, true}, {true, true, true});
  CHECK(ghosts_of(records_of(particles), halo.owned()) == want);
  // plan_halo stages the words themselves and finds the same ghosts.
  test_vector<Particle, boxed> planned(wide);
  planned.assign(test_vector<Particle>(owned));
  auto const plan = cm::plan_halo(d, planned, &Particle::pos, cutoff);
  CHECK(plan.ghosts() == halo.ghosts());
  cm::forward(plan, planned);
  CHECK(records_differing(records_of(planned), 0, records_of(particles)) == 0);

  // Owners move; forward moves their ghosts' words by the same whole steps as the floats.
  auto moved = records_of(particles);
  for (std::size_t i = 0; i < halo.owned(); ++i) moved[i].pos.x += 0.125f;
  particles.assign(test_vector<Particle>(moved));
  plain.assign(test_vector<Particle>(moved));
  cm::forward(halo, particles, &Particle::pos);
  cm::forward(float_halo, plain, &Particle::pos);
  CHECK(records_differing(records_of(particles), 0, records_of(plain)) == 0);

  // The box changed after the plan (set_box on the last rank only): forward of positions and of
  // whole records refuses on every rank before anything moves, until the box is the plan's again.
  coalesce::box grown = wide;
  if (rank == world_size() - 1) grown.hi[2] = 13.0;
  particles.set_box(grown);
  planned.set_box(grown);
  auto const stopped = records_of(particles);
  CHECK_THROWS_WITH_AS(cm::forward(halo, particles, &Particle::pos),
                       doctest::Contains("is [-4, 13), the halo was planned with [-4, 12)"), coalesce::error);
  CHECK_THROWS_WITH_AS(cm::forward(plan, planned), doctest::Contains("after set_box, build or plan the halo again"),
                       coalesce::error);
  CHECK(records_differing(records_of(particles), 0, stopped) == 0);
  particles.set_box(wide);
  planned.set_box(wide);
  CHECK_NOTHROW(cm::forward(halo, particles, &Particle::pos));
  CHECK(records_differing(records_of(particles), 0, records_of(plain)) == 0);

  // A box that does not hold the ghosts (the global box itself): refused before anything moves,
  // naming what to give. One that does not hold the global box: migration refuses it alike.
  test_vector<Particle, boxed> tight(unit_box);
  tight.assign(test_vector<Particle>(owned));
  CHECK_NOTHROW((void)cm::migrate(d, tight, &Particle::pos));
  CHECK_THROWS_WITH_AS((void)cm::build_halo(d, tight, &Particle::pos, cutoff),
                       doctest::Contains("ghost images up to the cutoff past the global box); give the vector a box "
                                         "that holds it (set_box)"),
                       coalesce::error);
  CHECK(tight.size() == owned.size());
  coalesce::box short_box = unit_box;
  short_box.hi[1] = 7.5;
  test_vector<Particle, boxed> too_short(short_box);
  auto inside_short = owned;
  for (auto& p : inside_short) p.pos.y = std::min(p.pos.y, 7.0f);
  too_short.assign(test_vector<Particle>(inside_short));
  CHECK_THROWS_WITH_AS((void)cm::migrate(d, too_short, &Particle::pos),
                       doctest::Contains("along axis 1 is [0, 7.5), but this call may write [0, 8]"), coalesce::error);
  CHECK(too_short.size() == inside_short.size());

  // Owners that left the box's margin before the halo was built again: forward's shift would
  // leave the box, an error (one rank, host memory: a GPU kernel traps, and a rank throwing
  // mid-forward would leave the others waiting).
  if (world_size() == 1 && coalesce::detail::kind_of_space<test_space> == coalesce::detail::memory_kind::host) {
    auto far = records_of(particles);
    // An owner near lo has its x image near hi + 1 (and the other way round): moved across the
    // box's middle, the image lands 5 past the global box, where the wide box ends at 4.
    for (std::size_t i = 0; i < halo.owned(); ++i) far[i].pos.x = far[i].pos.x < 4.0f ? 5.0f : 3.0f;
    particles.assign(test_vector<Particle>(far));
    CHECK_THROWS_WITH_AS(cm::forward(halo, particles, &Particle::pos),
                         doctest::Contains("leaves the vector's box [-4, 12)"), coalesce::error);
  }
}

TEST_CASE("box_fixed<> words read at a float edge: migration settles them inside the box, halos clamp their images") {
  using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<>>>;
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  int const rank = d.rank();
  auto const words_of = [](auto& v) {
    return coalesce::detail::readable_position_columns_of(v.storage(), &Particle::pos);
  };
  // Migration, box [-4, 12) (steps of 2^-28): rank 0's element 0 holds 8 - 2^-26 along x, which
  // reads as 8.0f; wrapped by whole steps it would hold -2^-26 and read below 0. It must end inside
  // [0, 8) as read, on the owner of what it reads.
  {
    coalesce::box const wide{.lo = {-4, -4, -4}, .hi = {12, 12, 12}};
    coalesce::host_vector<Particle, boxed> staged(wide);
    staged.assign(coalesce::host_vector<Particle>(scattered(count_of(rank), rank)));
    if (rank == 0) *reinterpret_cast<std::uint32_t*>(words_of(staged).axis[0].address(0)) = (12u << 28) - 4u;
    CHECK((rank != 0 || static_cast<vec3>(staged.view()[0][&Particle::pos]).x == 8.0f));
    test_vector<Particle, boxed> particles(wide);
    particles.assign(staged);
    (void)cm::migrate(d, particles, &Particle::pos);
    auto const after = records_of(particles);
    bool inside = true, owned = true;
    long long edge = 0;
    for (auto const& p : after) {
      inside = inside && p.pos.x >= 0.0f && p.pos.x < 8.0f && p.pos.y >= 0.0f && p.pos.y < 8.0f;
      owned = owned && d.owner({p.pos.x, p.pos.y, p.pos.z}) == rank;
      if (p.id == 0) edge += p.pos.x == 0.0f ? 1 : 100;
    }
    CHECK(inside);
    CHECK(owned);
    CHECK(sum_over_ranks(edge) == 1);  // on one rank, read as 0 (the image of 8)
  }
  // Halos, box exactly [lo - cutoff, hi + cutoff) = [-1, 9): element 0 holds 7 - 1e-7 along x, which
  // reads as 7.0f, the cutoff's edge, so it is chosen; its image (-1 - 1e-7) lies 43 steps below the
  // box and is clamped onto its edge instead of failing on one rank.
  {
    coalesce::box const exact{.lo = {-1, -1, -1}, .hi = {9, 9, 9}};
    coalesce::host_vector<Particle, boxed> staged(exact);
    auto records = scattered(count_of(rank), rank);
    test_vector<Particle> plain(records);
    (void)cm::migrate(d, plain, &Particle::pos);
    staged.assign(plain);
    bool const mine = d.owner({7.0, 1.0, 1.0}) == rank;
    if (mine) {
      staged.view()[0][&Particle::pos] = vec3{7.0f, 1.0f, 1.0f};
      double const step = 10.0 / 4294967296.0;
      *reinterpret_cast<std::uint32_t*>(words_of(staged).axis[0].address(0)) =
          static_cast<std::uint32_t>(std::nearbyint((8.0 - 1e-7) / step));
      CHECK(static_cast<vec3>(staged.view()[0][&Particle::pos]).x == 7.0f);
    }
    // (one rank owns the point; every rank learns its id: the image arrives elsewhere)
    auto const edge_id = static_cast<std::uint32_t>(sum_over_ranks(mine ? records_of(staged)[0].id : 0));
    test_vector<Particle, boxed> particles(exact);
    particles.assign(staged);
    cm::halo_plan halo = cm::plan_halo(d, particles, &Particle::pos, 1.0);  // (plans alike; built below)
    CHECK_NOTHROW(halo = cm::build_halo(d, particles, &Particle::pos, 1.0));
    auto const all = records_of(particles);
    long long images = 0;
    for (std::size_t g = halo.owned(); g < all.size(); ++g) {
      if (all[g].id == edge_id && all[g].pos.x < 0.0f) images += all[g].pos.x == -1.0f ? 1 : 100;
    }
    CHECK(sum_over_ranks(images) >= 1);
    CHECK(sum_over_ranks(images) < 100);
  }
}
