// coalesce::mpi on 1, 2 and 4 ranks (CTest runs this binary under mpiexec): the decomposition,
// migration by positions and by destination ranks on every layout with extra arrays following,
// conservation of particles (count and sum of ids), and bad input agreed on by every rank.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>
#if COALESCE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include "mpi_test_support.hpp"

namespace {

template <class L> void migrate_by_position(std::size_t base_count = 300, bool keep_order = true) {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  int const rank = d.rank();
  std::size_t const n = base_count + 37 * static_cast<std::size_t>(rank);  // odd sizes, different per rank
  auto const records = scattered(n, rank);
  test_vector<Particle, L> particles(records);
  std::vector<double> charges(n);
  for (std::size_t i = 0; i < n; ++i) charges[i] = records[i].id * 0.5;
  test_array<double> charge(charges);
  long long const ids_before = sum_over_ranks(
      std::accumulate(records.begin(), records.end(), 0LL, [](long long s, Particle const& p) { return s + p.id; }));
  long long const count_before = sum_over_ranks(static_cast<long long>(n));

  auto const stamp_before = particles.order_stamp();
  auto const report = keep_order ? cm::migrate(d, particles, &Particle::pos, charge)
                                 : cm::migrate(cm::unordered, d, particles, &Particle::pos, charge);
  // Anything left or arrived: a neighbour list of the old order must see it (host memory too,
  // where the stayers are compacted in place without a permutation).
  if (report.sent + report.received > 0) CHECK(particles.order_stamp() != stamp_before);
  CHECK(report.kept + report.received == particles.size());
  CHECK(report.kept + report.sent == n);
  CHECK(charge.size() == particles.size());
  std::vector<Particle> after(particles.size());
  particles.copy_to(after);
  charges = to_host(charge);
  bool all_mine = true, charges_follow = true;
  long long ids = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    auto const& p = after[i].pos;
    all_mine = all_mine && d.owner({p.x, p.y, p.z}) == rank;
    charges_follow = charges_follow && charges[i] == after[i].id * 0.5;
    ids += after[i].id;
  }
  CHECK(all_mine);
  CHECK(charges_follow);
  CHECK(sum_over_ranks(static_cast<long long>(after.size())) == count_before);
  CHECK(sum_over_ranks(ids) == ids_before);
  // GPU memory permutes every column in one pass, order kept, unordered or not.
  bool const fills_holes = !keep_order && !(coalesce::device_is_gpu && std::is_same_v<test_space, coalesce::device>);
  if (!fills_holes) {
    // The kept elements first, in their original order (ids of this rank ascend), then arrivals.
    bool kept_in_order = true;
    for (std::size_t i = 1; i < report.kept; ++i) kept_in_order = kept_in_order && after[i - 1].id < after[i].id;
    CHECK(kept_in_order);
  } else {
    // Holes filled from the tail: a stayer in a slot below `kept` has not moved; the first `kept`
    // slots hold this rank's own particles, the arrivals follow.
    bool stayers_in_place = true, kept_first = true;
    for (std::size_t i = 0; i < report.kept; ++i) {
      auto const& p = records[i].pos;
      if (d.owner({p.x, p.y, p.z}) == rank) stayers_in_place = stayers_in_place && after[i].id == records[i].id;
      kept_first = kept_first && after[i].id / 100000 == static_cast<std::uint32_t>(rank);
    }
    CHECK(stayers_in_place);
    CHECK(kept_first);
  }
  // A second migration moves nothing.
  auto const again = cm::migrate(d, particles, &Particle::pos, charge);
  CHECK(again.sent == 0);
  CHECK(again.received == 0);
}

}  // namespace

TEST_CASE("the decomposition covers the box: every subdomain centre is owned by its rank") {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  auto const r = d.ranks_per_axis();
  CHECK(r[0] * r[1] * r[2] == world_size());
  auto const sub = d.subdomain();
  std::array<double, 3> centre{};
  for (int a = 0; a < 3; ++a) centre[a] = 0.5 * (sub.lo[a] + sub.hi[a]);
  CHECK(d.owner(centre) == d.rank());
  // Periodic images wrap to the same owner; the far corner belongs to the last rank along each axis.
  CHECK(d.owner({centre[0] + 8.0, centre[1] - 8.0, centre[2] + 16.0}) == d.owner(centre));
  CHECK(d.owner({std::nan(""), 1.0, 1.0}) == -1);
  // Neighbours are mutual.
  for (unsigned a = 0; a < 3; ++a) {
    int const right = d.neighbor(a, +1);
    int left_of_right = -1;
    MPI_Sendrecv(&left_of_right, 0, MPI_INT, MPI_PROC_NULL, 0, &left_of_right, 0, MPI_INT, MPI_PROC_NULL, 0, d.comm(),
                 MPI_STATUS_IGNORE);
    int mine = d.rank(), from_left = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, right, 7, &from_left, 1, MPI_INT, d.neighbor(a, -1), 7, d.comm(),
                 MPI_STATUS_IGNORE);
    CHECK(from_left == d.neighbor(a, -1));
  }
  CHECK_THROWS_WITH_AS(cm::decomposition(MPI_COMM_WORLD, unit_box, 3, {world_size() + 1, 1, 1}),
                       doctest::Contains("ranks per axis"), coalesce::error);
}

TEST_CASE("migration by position moves every particle to its owner, on every layout, nothing lost") {
  migrate_by_position<coalesce::aos>();
  migrate_by_position<coalesce::soa>();
  migrate_by_position<coalesce::aosoa<8>>();
  migrate_by_position<split_first>();
  // Past the host moves' chunks of 2048 elements (src/reorder/indexed_moves.cpp): the in-place
  // compaction and the packing run chunk after chunk, all columns of a chunk together.
  migrate_by_position<coalesce::aosoa<16>>(5000);
  migrate_by_position<coalesce::soa>(5000);
  // Members stored in other formats travel as their stored bytes (velocities {1, 2, 3} are exact in half).
  migrate_by_position<stored_vel_half>();
  migrate_by_position<stored_vel_half>(5000);
  // Unordered: the leavers' slots filled from the tail (host memory), every layout.
  migrate_by_position<coalesce::soa>(5000, false);
  migrate_by_position<coalesce::aos>(300, false);
  migrate_by_position<coalesce::aosoa<16>>(5000, false);
  migrate_by_position<split_first>(300, false);
  migrate_by_position<stored_vel_half>(300, false);
  migrate_by_position<stored_id_bits>(5000);
  migrate_by_position<stored_id_bits>(300, false);
  // Positions in fixed point: read decoded, wrapped and stored back encoded.
  migrate_by_position<stored_pos_fixed>();
  migrate_by_position<stored_pos_fixed>(5000, false);
}

TEST_CASE("migration by destination rank: arrivals come by source rank, each in its sender's order") {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  int const rank = d.rank(), size = d.size();
  std::size_t const n = 50;
  auto records = scattered(n, rank);
  test_vector<Particle> particles(records);
  test_vector<vec3> forces(n);
  std::vector<int> destination(n);
  for (std::size_t i = 0; i < n; ++i) destination[i] = static_cast<int>(i) % size;  // round robin
  auto const report = cm::migrate(d, particles, std::span<int const>(destination), forces);
  std::vector<Particle> after(particles.size());
  particles.copy_to(after);
  // From every source s: the elements i with i % size == rank, in order; kept ones first.
  std::vector<std::uint32_t> expected;
  for (int i = 0; i < static_cast<int>(n); ++i)
    if (i % size == rank) expected.push_back(static_cast<std::uint32_t>(rank * 100000 + i));
  for (int s = 0; s < size; ++s) {
    if (s == rank) continue;
    for (int i = 0; i < static_cast<int>(n); ++i)
      if (i % size == rank) expected.push_back(static_cast<std::uint32_t>(s * 100000 + i));
  }
  std::vector<std::uint32_t> got;
  for (auto const& p : after) got.push_back(p.id);
  CHECK(got == expected);
  CHECK(report.received == expected.size() - report.kept);
  CHECK(forces.size() == particles.size());
}

TEST_CASE(
    "migration of positions stored in a box (box_fixed), by rank and by position: the same box on every rank, or an "
    "error on every rank") {
  using boxed =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  int const rank = d.rank(), size = d.size();
  std::size_t const n = 40;
  // Eighths of the box of 8: exact as box fractions, so the arrivals compare exactly.
  auto records = scattered(n, rank);
  for (auto& r : records) r.pos = {std::floor(r.pos.x * 8) / 8, std::floor(r.pos.y * 8) / 8, 0.125f};
  test_vector<Particle, boxed> particles(unit_box);
  particles.assign(test_vector<Particle>(records));
  std::vector<int> destination(n);
  for (std::size_t i = 0; i < n; ++i) destination[i] = static_cast<int>(i) % size;
  (void)cm::migrate(d, particles, std::span<int const>(destination));
  auto const after = to_host(particles);
  auto const world = all_particles(records);
  std::map<std::uint32_t, Particle> by_id;
  for (auto const& p : world) by_id[p.id] = p;
  bool kept = true;
  for (auto const& p : after) {
    Particle const& was = by_id[p.id];
    kept = kept && p.pos.x == was.pos.x && p.pos.y == was.pos.y && p.pos.z == was.pos.z;
  }
  CHECK(kept);
  CHECK(sum_over_ranks(static_cast<long long>(after.size())) == static_cast<long long>(world.size()));
  if (size > 1) {
    coalesce::box other = unit_box;
    if (rank == size - 1) other.hi[0] = 16.0;
    test_vector<Particle, boxed> elsewhere(other);
    elsewhere.assign(test_vector<Particle>(records));
    std::vector<int> stay(n, rank);
    CHECK_THROWS_WITH_AS(cm::migrate(d, elsewhere, std::span<int const>(stay)),
                         doctest::Contains("differs between ranks"), coalesce::error);
  }
  // By position: box_fixed positions relative to the global box are read (never written); each
  // particle arrives on its owner with its stored words unchanged. A vector in another box: an
  // error on every rank, before anything moved.
  {
    test_vector<Particle, boxed> by_position(unit_box);
    by_position.assign(test_vector<Particle>(scattered(300, rank)));
    auto const before = all_particles(to_host(by_position));
    (void)cm::migrate(d, by_position, &Particle::pos);
    auto const arrived = to_host(by_position);
    std::map<std::uint32_t, Particle> was;
    for (auto const& p : before) was[p.id] = p;
    bool owned = true, unchanged = true;
    for (auto const& p : arrived) {
      owned = owned && d.owner({p.pos.x, p.pos.y, p.pos.z}) == rank;
      unchanged = unchanged && p.pos.x == was[p.id].pos.x && p.pos.y == was[p.id].pos.y && p.pos.z == was[p.id].pos.z;
    }
    CHECK(owned);
    CHECK(unchanged);
    CHECK(sum_over_ranks(static_cast<long long>(arrived.size())) == static_cast<long long>(before.size()));
    coalesce::box shifted = unit_box;
    if (rank == size - 1) shifted.lo[1] = -1.0;
    test_vector<Particle, boxed> other_box(shifted);
    other_box.assign(test_vector<Particle>(scattered(30, rank)));
    CHECK_THROWS_WITH_AS(cm::migrate(d, other_box, &Particle::pos),
                         doctest::Contains("give the vector the decomposition's box"), coalesce::error);
    CHECK(other_box.size() == 30);
    std::string message;  // the box is no element's: the message names the rank only
    try {
      (void)cm::migrate(d, other_box, &Particle::pos);
    } catch (coalesce::error const& e) {
      message = e.what();
    }
    CHECK(message.find("migrate: rank " + std::to_string(size - 1) + ": the positions") != std::string::npos);
  }
  // A box whose lo + (hi - lo) is not hi (-9.9 + 69.9 rounds above 60): the vector given the
  // decomposition's box is accepted, and a word in the last steps reads below hi (the frame's
  // length is an ulp shorter) and migrates to the owner of what it reads, keeping its word.
  {
    coalesce::box const odd{.lo = {-9.9, -9.9, -9.9}, .hi = {60.0, 60.0, 60.0}};
    cm::decomposition const od(MPI_COMM_WORLD, odd);
    coalesce::host_vector<Particle, boxed> staged(odd);
    staged.assign(coalesce::host_vector<Particle>(scattered(50, rank)));
    auto const words = coalesce::detail::readable_position_columns_of(staged.storage(), &Particle::pos);
    *reinterpret_cast<std::uint32_t*>(words.axis[0].address(0)) = ~0u;
    test_vector<Particle, boxed> odd_particles(odd);
    odd_particles.assign(staged);
    CHECK_NOTHROW((void)cm::migrate(od, odd_particles, &Particle::pos));
    coalesce::host_vector<Particle, boxed> back(odd);
    back.assign(odd_particles);
    auto const back_words = coalesce::detail::readable_position_columns_of(back.storage(), &Particle::pos);
    long long edges_here = 0;  // every rank's element 0 (id rank * 100000) is an edge particle
    bool edge_kept = true, edge_owned = true;
    for (std::size_t i = 0; i < back.size(); ++i) {
      if (static_cast<std::uint32_t>(back.view()[i][&Particle::id]) % 100000u != 0) continue;
      ++edges_here;
      edge_kept = edge_kept && *reinterpret_cast<std::uint32_t const*>(back_words.axis[0].address(i)) == ~0u;
      vec3 const at = back.view()[i][&Particle::pos];
      edge_owned = edge_owned && at.x < 60.0f && od.owner({at.x, at.y, at.z}) == rank;
    }
    CHECK(edge_kept);
    CHECK(edge_owned);
    CHECK(sum_over_ranks(edges_here) == static_cast<long long>(size));
  }
  // Halos write ghost images past the box, which a box_fixed<wrap> word cannot hold: refused by
  // name (box_fixed<> in a larger box takes them: tests/mpi/halo_api_test.cpp).
  {
    test_vector<Particle, boxed> for_halo(unit_box);
    for_halo.assign(test_vector<Particle>(scattered(30, rank)));
    CHECK_THROWS_WITH_AS((void)cm::build_halo(d, for_halo, &Particle::pos, 1.0),
                         doctest::Contains("wraps at the vector's box"), coalesce::error);
  }
  // Ghosts carry box_fixed members (here the velocities) as their bytes: one box, or an error.
  using boxed_vel = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::box_fixed<>>>;
  test_vector<Particle, boxed_vel> with_vel(unit_box);
  with_vel.assign(test_vector<Particle>(scattered(200, rank)));
  (void)cm::migrate(d, with_vel, &Particle::pos);
  auto const halo = cm::build_halo(d, with_vel, &Particle::pos, 1.0);
  auto const ghosts = to_host(with_vel);
  bool velocities = true;
  for (auto const& p : ghosts) velocities = velocities && p.vel.x == 1.0f && p.vel.y == 2.0f && p.vel.z == 3.0f;
  CHECK(velocities);
  CHECK(halo.owned() <= ghosts.size());
  if (size > 1) {
    coalesce::box other = unit_box;
    if (rank == 0) other.lo[2] = -8.0;
    test_vector<Particle, boxed_vel> elsewhere(other);
    elsewhere.assign(test_vector<Particle>(scattered(20, rank)));
    CHECK_THROWS_WITH_AS(cm::build_halo(d, elsewhere, &Particle::pos, 1.0), doctest::Contains("differs between ranks"),
                         coalesce::error);
  }
}

#if COALESCE_WITH_CUDA
TEST_CASE("migration on a non-blocking stream of the user's leaves the arrivals in place behind default-stream work") {
  if constexpr (!std::is_same_v<test_space, coalesce::device>) {
    MESSAGE("host memory: no stream to test");
  } else {
    cudaStream_t stream = nullptr;
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    cm::decomposition d(MPI_COMM_WORLD, unit_box);
    d.set_stream(stream);
    std::size_t const n = 20000;
    auto const records = scattered(n, d.rank());
    {
      test_vector<Particle> warm(records);
      (void)cm::migrate(d, warm, &Particle::pos);  // message and staging buffers allocated
    }
    test_vector<Particle> particles(records);
    particles.reserve(4 * n);  // the arrivals fit: the particles' storage is filled in place, not reallocated
    // The default stream kept busy: default-stream work queued by migrate (a fill of the new
    // slots) would run after the unpacks on the non-blocking stream and zero the arrivals.
    void* busy = nullptr;
    std::size_t const busy_bytes = std::size_t{1} << 30;
    REQUIRE(cudaMalloc(&busy, busy_bytes) == cudaSuccess);
    for (int k = 0; k < 8; ++k) REQUIRE(cudaMemsetAsync(busy, k, busy_bytes, nullptr) == cudaSuccess);
    auto const report = cm::migrate(d, particles, &Particle::pos);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<Particle> after = to_host(particles);
    long long ids = 0;
    bool all_mine = true;
    for (auto const& p : after) {
      all_mine = all_mine && d.owner({p.pos.x, p.pos.y, p.pos.z}) == d.rank() && p.mass == 0.5f;
      ids += p.id;
    }
    CHECK(all_mine);
    CHECK(report.kept + report.received == after.size());
    long long expected = 0;
    for (auto const& p : records) expected += p.id;
    CHECK(sum_over_ranks(ids) == sum_over_ranks(expected));
    cudaFree(busy);
    cudaStreamDestroy(stream);
  }
}
#endif

TEST_CASE("bad input on one rank stops every rank with the same error, before anything moves") {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  int const size = d.size();
  std::size_t const n = 20;
  auto const records = scattered(n, d.rank());
  test_vector<Particle> particles(records);
  std::vector<int> destination(n, 0);
  if (d.rank() == size - 1) destination[13] = size;  // out of range on the last rank only
  std::string const expected =
      "rank " + std::to_string(size - 1) + ", element 13: destination rank " + std::to_string(size);
  CHECK_THROWS_WITH_AS(cm::migrate(d, particles, std::span<int const>(destination)),
                       doctest::Contains(expected.c_str()), coalesce::error);
  CHECK(particles.size() == n);  // nothing moved
  std::vector<Particle> after(n);
  particles.copy_to(after);
  CHECK(after[0].id == records[0].id);
  // A NaN position on rank 0.
  auto nan_records = records;
  if (d.rank() == 0) nan_records[4].pos.y = std::nanf("");
  test_vector<Particle> with_nan(nan_records);
  CHECK_THROWS_WITH_AS(cm::migrate(d, with_nan, &Particle::pos), doctest::Contains("rank 0, element 4: position"),
                       coalesce::error);
  // An extra array of the wrong length.
  test_array<float> short_array(d.rank() == 0 ? n - 1 : n);
  CHECK_THROWS_WITH_AS(cm::migrate(d, particles, std::span<int const>(std::vector<int>(n, 0)), short_array),
                       doctest::Contains("an extra array has"), coalesce::error);
}

namespace {
template <class L> void check_halo() {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  auto const records = scattered(400, d.rank());
  test_vector<Particle, L> particles(records);
  (void)cm::migrate(d, particles, &Particle::pos);
  std::vector<Particle> owned(particles.size());
  particles.copy_to(owned);
  double const cutoff = 1.0;
  auto const halo = cm::build_halo(d, particles, &Particle::pos, cutoff);
  CHECK(halo.owned() == owned.size());
  CHECK(particles.size() == halo.owned() + halo.ghosts());

  // Expected: every image of every particle, within the cutoff of this subdomain, not owned here.
  auto const world = all_particles(owned);
  auto const sub = d.subdomain();
  std::vector<ghost_key> expected;
  for (auto const& p : world) {
    double const c[3] = {p.pos.x, p.pos.y, p.pos.z};
    for (int sx = -1; sx <= 1; ++sx)
      for (int sy = -1; sy <= 1; ++sy)
        for (int sz = -1; sz <= 1; ++sz) {
          double const q[3] = {c[0] + 8.0 * sx, c[1] + 8.0 * sy, c[2] + 8.0 * sz};
          bool inside = true, near = true;
          for (int a = 0; a < 3; ++a) {
            inside = inside && q[a] >= sub.lo[a] && q[a] < sub.hi[a];
            near = near && q[a] >= sub.lo[a] - cutoff && q[a] < sub.hi[a] + cutoff;
          }
          if (near && !inside) expected.push_back(key_of(p.id, q[0], q[1], q[2]));
        }
  }
  std::vector<Particle> with_ghosts(particles.size());
  particles.copy_to(with_ghosts);
  std::vector<ghost_key> got;
  for (std::size_t g = halo.owned(); g < with_ghosts.size(); ++g) {
    auto const& p = with_ghosts[g].pos;
    got.push_back(key_of(with_ghosts[g].id, p.x, p.y, p.z));
  }
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  CHECK(got.size() == expected.size());
  CHECK(got == expected);

  // forward: owners move, ghosts follow with the same image shift.
  {
    coalesce::host_vector<Particle, L> on_host(with_ghosts);
    auto v = on_host.view();
    for (std::size_t i = 0; i < halo.owned(); ++i) v[i][&Particle::pos][&vec3::x] += 0.25f;
    particles.assign(on_host);
  }
  cm::forward(halo, particles, &Particle::pos);
  std::vector<Particle> moved(particles.size());
  particles.copy_to(moved);
  bool followed = true;
  for (std::size_t g = halo.owned(); g < moved.size(); ++g)
    followed = followed && std::abs(moved[g].pos.x - with_ghosts[g].pos.x - 0.25f) < 1e-4f;
  CHECK(followed);
  // forward of another array: each ghost gets its owner's value.
  std::vector<double> charges(halo.owned());
  for (std::size_t i = 0; i < halo.owned(); ++i) charges[i] = owned[i].id * 0.25;
  test_array<double> charge_values(charges);
  cm::forward(halo, charge_values);
  auto const charge = to_host(charge_values);
  REQUIRE(charge.size() == particles.size());
  bool ghost_charges = true;
  for (std::size_t g = halo.owned(); g < charge.size(); ++g)
    ghost_charges = ghost_charges && charge[g] == with_ghosts[g].id * 0.25;
  CHECK(ghost_charges);

  // reverse: every entry 1; an owned particle ends with 1 + the number of its ghost copies anywhere.
  test_vector<vec3> forces(std::vector<vec3>(particles.size(), vec3{1.0f, 2.0f, 4.0f}));
  cm::reverse(halo, forces);
  std::vector<std::uint32_t> my_ghost_ids;
  for (std::size_t g = halo.owned(); g < with_ghosts.size(); ++g) my_ghost_ids.push_back(with_ghosts[g].id);
  std::vector<Particle> ghost_records(my_ghost_ids.size());
  for (std::size_t k = 0; k < my_ghost_ids.size(); ++k) ghost_records[k].id = my_ghost_ids[k];
  auto const every_ghost = all_particles(ghost_records);
  std::map<std::uint32_t, int> copies;
  for (auto const& p : every_ghost) ++copies[p.id];
  std::vector<vec3> totals(forces.size());
  forces.copy_to(totals);
  bool summed = true;
  for (std::size_t i = 0; i < halo.owned(); ++i) {
    float const want = 1.0f + static_cast<float>(copies[owned[i].id]);
    summed = summed && totals[i].x == want && totals[i].y == 2.0f * want && totals[i].z == 4.0f * want;
  }
  CHECK(summed);

  // reverse into one member of the particles (Cabana's scatter on a slice): the same totals in
  // vel, every other member untouched.
  {
    std::vector<Particle> records(particles.size());
    particles.copy_to(records);
    for (auto& r : records) r.vel = vec3{1.0f, 2.0f, 4.0f};
    particles.assign(coalesce::host_vector<Particle, L>(records));
    if constexpr (!coalesce::layout_storage<Particle, L>::natural(3)) {  // vel stored as half: not summed
      CHECK_THROWS_WITH_AS(cm::reverse(halo, particles, &Particle::vel), doctest::Contains("stored as half"),
                           coalesce::error);
      return;
    }
    cm::reverse(halo, particles, &Particle::vel);
    std::vector<Particle> after(particles.size());
    particles.copy_to(after);
    bool member_summed = true, others_kept = true;
    for (std::size_t i = 0; i < halo.owned(); ++i) {
      member_summed = member_summed && after[i].vel.x == totals[i].x && after[i].vel.y == totals[i].y &&
                      after[i].vel.z == totals[i].z;
      others_kept = others_kept && after[i].id == records[i].id && after[i].pos.x == records[i].pos.x &&
                    after[i].mass == records[i].mass;
    }
    CHECK(member_summed);
    CHECK(others_kept);
  }
}
}  // namespace

TEST_CASE(
    "the halo holds exactly the periodic images within the cutoff of the subdomain; forward and reverse re-plan "
    "nothing") {
  check_halo<coalesce::soa>();
  check_halo<coalesce::aos>();
  check_halo<coalesce::aosoa<8>>();
  check_halo<split_first>();
  check_halo<stored_vel_half>();
  check_halo<stored_id_bits>();  // ghosts' ids from packed words
}

namespace {
// Every ghost's position is its owner's image: the owner's position plus a multiple of the box
// length per axis (nonzero only across a periodic boundary), the same multiple before and after
// a forward, and a ghost lies within the cutoff of this subdomain. `owner_shift` is the owners'
// displacement since build_halo (the ghosts must have followed it).
struct ghost_images {
  std::map<std::uint32_t, vec3> owner;    // every rank's owned positions by id, at build time
  std::vector<std::array<int, 3>> image;  // per ghost: the box lengths added per axis at build time
};
std::array<int, 3> image_of(vec3 ghost, vec3 owner, double length) {
  float const g[3] = {ghost.x, ghost.y, ghost.z}, o[3] = {owner.x, owner.y, owner.z};
  std::array<int, 3> out{};
  for (int a = 0; a < 3; ++a) out[a] = static_cast<int>(std::lround((g[a] - o[a]) / length));
  return out;
}
// Checks the ghosts of `with_ghosts` against their owners (moved by `moved` along x since build).
// Returns the first bad ghost in words, or "".
std::string bad_ghost(std::vector<Particle> const& with_ghosts, std::size_t owned, ghost_images& images, float moved,
                      bool building, bool periodic, coalesce::box const& sub, double cutoff) {
  double const length = 8.0;
  for (std::size_t g = owned; g < with_ghosts.size(); ++g) {
    auto const& p = with_ghosts[g];
    auto const found = images.owner.find(p.id);
    if (found == images.owner.end()) return "ghost " + std::to_string(g) + " has an id no rank owns";
    vec3 owner = found->second;
    owner.x += moved;
    auto const image = image_of(p.pos, owner, length);
    if (!periodic && image != std::array<int, 3>{}) return "ghost " + std::to_string(g) + " is an image in an open box";
    if (building) {
      images.image.push_back(image);
      double const c[3] = {p.pos.x, p.pos.y, p.pos.z};
      for (int a = 0; a < 3; ++a) {
        if (c[a] < sub.lo[a] - cutoff - 1e-4 || c[a] > sub.hi[a] + cutoff + 1e-4) {
          return "ghost " + std::to_string(g) + " lies beyond the cutoff of this subdomain along axis " +
                 std::to_string(a);
        }
      }
    } else if (images.image[g - owned] != image) {
      return "ghost " + std::to_string(g) + " (id " + std::to_string(p.id) + ") changed its periodic image: x " +
             std::to_string(p.pos.x) + ", owner's x " + std::to_string(owner.x);
    }
    float const expect[3] = {static_cast<float>(owner.x + image[0] * length),
                             static_cast<float>(owner.y + image[1] * length),
                             static_cast<float>(owner.z + image[2] * length)};
    float const got[3] = {p.pos.x, p.pos.y, p.pos.z};
    for (int a = 0; a < 3; ++a) {
      if (std::abs(got[a] - expect[a]) > 1e-4f) {
        return "ghost " + std::to_string(g) + " axis " + std::to_string(a) + ": " + std::to_string(got[a]) +
               ", its owner's image " + std::to_string(expect[a]);
      }
    }
  }
  return "";
}

template <class L> void check_ghost_positions(coalesce::boundary edges) {
  coalesce::box world = unit_box;
  world.edges = edges;
  bool const periodic = edges == coalesce::boundary::periodic;
  cm::decomposition const d(MPI_COMM_WORLD, world);
  test_vector<Particle, L> particles(scattered(500, d.rank()));
  (void)cm::migrate(d, particles, &Particle::pos);
  std::vector<Particle> owned(particles.size());
  particles.copy_to(owned);
  ghost_images images;
  for (auto const& p : all_particles(owned)) images.owner[p.id] = p.pos;
  double const cutoff = 1.0;
  auto const halo = cm::build_halo(d, particles, &Particle::pos, cutoff);
  auto const records = [&] {
    std::vector<Particle> out(particles.size());
    particles.copy_to(out);
    return out;
  };
  std::string const after_build =
      bad_ghost(records(), halo.owned(), images, 0.0f, true, periodic, d.subdomain(), cutoff);
  CHECK_MESSAGE(after_build.empty(), "after build_halo: " << after_build);
  long long images_here = 0;  // the test must see ghosts across the boundary in a periodic box
  for (auto const& im : images.image) images_here += im != std::array<int, 3>{} ? 1 : 0;
  CHECK((sum_over_ranks(images_here) > 0) == periodic);

  // Owners move by 0.125 along x; whole records forwarded: the ghosts follow, images kept.
  auto const move_owners = [&](float dx) {
    auto on_host = records();
    for (std::size_t i = 0; i < halo.owned(); ++i) on_host[i].pos.x += dx;
    particles.assign(coalesce::host_vector<Particle, L>(on_host));
  };
  move_owners(0.125f);
  cm::forward(halo, particles);
  std::string const after_records =
      bad_ghost(records(), halo.owned(), images, 0.125f, false, periodic, d.subdomain(), cutoff);
  CHECK_MESSAGE(after_records.empty(), "after forward(halo, particles): " << after_records);
  // Whole records twice in a row: the shift is applied once per forward, never accumulated.
  cm::forward(halo, particles);
  std::string const twice = bad_ghost(records(), halo.owned(), images, 0.125f, false, periodic, d.subdomain(), cutoff);
  CHECK_MESSAGE(twice.empty(), "after a second forward(halo, particles): " << twice);

  // One member forwarded (the position): the same.
  move_owners(0.125f);
  cm::forward(halo, particles, &Particle::pos);
  std::string const after_member =
      bad_ghost(records(), halo.owned(), images, 0.25f, false, periodic, d.subdomain(), cutoff);
  CHECK_MESSAGE(after_member.empty(), "after forward(halo, particles, &Particle::pos): " << after_member);

  // Whole records as a std::vector (host memory only: a GPU halo refuses host arrays) and as a
  // coalesce::array in the particles' memory.
  if constexpr (std::is_same_v<L, coalesce::soa>) {
    std::vector<Particle> plain(owned);
    for (auto& p : plain) p.pos.x += 0.25f;
    if constexpr (coalesce::detail::kind_of_space<test_space> == coalesce::detail::memory_kind::host ||
                  !coalesce::device_is_gpu) {
      cm::forward(halo, plain);
      std::string const as_std = bad_ghost(plain, halo.owned(), images, 0.25f, false, periodic, d.subdomain(), cutoff);
      CHECK_MESSAGE(as_std.empty(), "after forward(halo, std::vector<Particle>): " << as_std);
    } else {
      std::vector<Particle> host_copy(plain);
      CHECK_THROWS_WITH_AS(cm::forward(halo, host_copy),
                           doctest::Contains("an array in host memory for a halo built on GPU memory"),
                           coalesce::error);
    }
    test_array<Particle> array(plain);
    cm::forward(halo, array);
    std::string const as_array =
        bad_ghost(to_host(array), halo.owned(), images, 0.25f, false, periodic, d.subdomain(), cutoff);
    CHECK_MESSAGE(as_array.empty(), "after forward(halo, coalesce::array<Particle>): " << as_array);
  }
  // Another array type is never shifted: a vec3 velocity array keeps its owners' values exactly.
  test_vector<vec3> velocity(std::vector<vec3>(halo.owned(), vec3{0.5f, 0.25f, 0.125f}));
  cm::forward(halo, velocity);
  bool unshifted = true;
  for (auto const& v : to_host(velocity)) unshifted = unshifted && v.x == 0.5f && v.y == 0.25f && v.z == 0.125f;
  CHECK(unshifted);
}

// Particles that crossed the periodic boundary (positions outside the box) migrate as their
// image inside the box: the owner's halo then sees them.
template <class L> void check_migration_wraps() {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  auto records = scattered(300, d.rank());
  for (std::size_t i = 0; i < records.size(); i += 3) records[i].pos.x += 8.0f;  // one box length past hi
  for (std::size_t i = 1; i < records.size(); i += 3)
    records[i].pos.y -= 8.25f;  // below lo (and beyond one length for some)
  records[2].pos.z = -1e-9f;    // just below lo: its image rounds to hi in float, and must be stored as lo's
  records[5].pos.z = -6e-8f;    // the same in 2^-24 fixed point (one step below lo)
  test_vector<Particle, L> particles(records);
  (void)cm::migrate(d, particles, &Particle::pos);
  std::vector<Particle> after(particles.size());
  particles.copy_to(after);
  bool inside = true, mine = true;
  for (auto const& p : after) {
    float const c[3] = {p.pos.x, p.pos.y, p.pos.z};
    for (int a = 0; a < 3; ++a) inside = inside && c[a] >= 0.0f && c[a] < 8.0f;
    mine = mine && d.owner({p.pos.x, p.pos.y, p.pos.z}) == d.rank();
  }
  CHECK(inside);
  CHECK(mine);
  auto const again = cm::migrate(d, particles, &Particle::pos);
  CHECK(sum_over_ranks(static_cast<long long>(again.sent)) == 0);
}
}  // namespace

TEST_CASE(
    "ghost positions are their owners' periodic images after build_halo and after every forward, on every layout") {
  for (auto edges : {coalesce::boundary::periodic, coalesce::boundary::open}) {
    CAPTURE(static_cast<int>(edges));
    check_ghost_positions<coalesce::soa>(edges);
    check_ghost_positions<coalesce::aos>(edges);
    check_ghost_positions<coalesce::aosoa<8>>(edges);
    check_ghost_positions<split_first>(edges);
    check_ghost_positions<stored_vel_half>(edges);
    check_ghost_positions<stored_pos_fixed>(edges);
    check_ghost_positions<stored_id_bits>(edges);
  }
}

TEST_CASE("migration by position in a periodic box wraps positions outside the box into it, on every layout") {
  check_migration_wraps<coalesce::soa>();
  check_migration_wraps<coalesce::aos>();
  check_migration_wraps<coalesce::aosoa<8>>();
  check_migration_wraps<split_first>();
  check_migration_wraps<stored_pos_fixed>();
}

TEST_CASE("fixed-point positions that cannot hold the box (or its ghosts) are refused on every rank, nothing moved") {
  // 2^-28 steps hold [-8, 8) less a step: the box's hi (8) and ghosts past it do not fit.
  using too_fine =
      coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::fixed_point<std::int32_t, 28>>>;
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  auto records = scattered(50, d.rank());
  for (auto& r : records) r.pos = {r.pos.x * 0.5f, r.pos.y * 0.5f, r.pos.z * 0.5f};  // values the format holds
  test_vector<Particle, too_fine> particles(records);
  auto const before = to_host(particles);
  CHECK_THROWS_WITH_AS(cm::migrate(d, particles, &Particle::pos), doctest::Contains("fixed_point<std::int32_t, 28>"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((void)cm::build_halo(d, particles, &Particle::pos, 1.0),
                       doctest::Contains("fewer fraction bits"), coalesce::error);
  auto const after = to_host(particles);
  bool same = after.size() == before.size();
  for (std::size_t i = 0; same && i < after.size(); ++i) same = after[i].id == before[i].id;
  CHECK(same);
  // Sums of a fixed-point member (reverse) are refused with what to do.
  test_vector<Particle, stored_pos_fixed> fine(scattered(50, d.rank()));
  (void)cm::migrate(d, fine, &Particle::pos);
  auto const halo = cm::build_halo(d, fine, &Particle::pos, 1.0);
  CHECK_THROWS_WITH_AS(cm::reverse(halo, fine, &Particle::pos), doctest::Contains("reverse() sums a member"),
                       coalesce::error);
  // Owners that drift far past the box before the halo is built again: their ghosts' images leave
  // the format's range where forward writes them, an error, not a saturated value. One rank, host
  // memory (a GPU kernel traps; a rank that throws mid-forward would leave the others waiting).
  if (mpi_test::world_size() == 1 &&
      coalesce::detail::kind_of_space<test_space> == coalesce::detail::memory_kind::host) {
    auto moved = to_host(fine);
    for (std::size_t i = 0; i < halo.owned(); ++i) moved[i].pos.x += 120.0f;  // up to 128: images past 128
    fine.assign(coalesce::host_vector<Particle, stored_pos_fixed>(moved));
    CHECK_THROWS_WITH_AS(cm::forward(halo, fine, &Particle::pos), doctest::Contains("does not fit"), coalesce::error);
  }
}

TEST_CASE("a cutoff wider than a subdomain is refused on every rank") {
  cm::decomposition const d(MPI_COMM_WORLD, unit_box);
  test_vector<Particle> particles(scattered(10, d.rank()));
  (void)cm::migrate(d, particles, &Particle::pos);
  auto const r = d.ranks_per_axis();
  if (r[0] > 1 || r[1] > 1 || r[2] > 1) {
    CHECK_THROWS_WITH_AS(cm::build_halo(d, particles, &Particle::pos, 5.0),
                         doctest::Contains("larger than the subdomain's width"), coalesce::error);
  }
  CHECK_THROWS_WITH_AS(cm::build_halo(d, particles, &Particle::pos, 0.0), doctest::Contains("not positive"),
                       coalesce::error);
}

TEST_CASE("arrays of different types on two ranks are refused by forward, not misread") {
  if (world_size() != 2) return;  // two ranks, each the other's only neighbour along x
  cm::decomposition const d(MPI_COMM_WORLD, unit_box, 3, {2, 1, 1});
  test_vector<Particle> particles(scattered(300, d.rank()));
  (void)cm::migrate(d, particles, &Particle::pos);
  auto const halo = cm::build_halo(d, particles, &Particle::pos, 1.0);
  if (d.rank() == 0) {
    test_array<double> values(halo.owned());
    CHECK_THROWS_AS(cm::forward(halo, values), coalesce::error);
  } else {
    test_array<float> values(halo.owned());
    CHECK_THROWS_AS(cm::forward(halo, values), coalesce::error);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if constexpr (std::is_same_v<test_space, coalesce::device> && coalesce::device_is_gpu) {
    int visible = 1;
    try {
      coalesce::array<int, coalesce::device> probe(1);
    } catch (coalesce::error const&) {
      visible = 0;
    }
    int everywhere = 0;
    MPI_Allreduce(&visible, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (everywhere == 0) {
      if (world_rank() == 0)
        std::fprintf(stderr, "SKIPPED: no CUDA GPU visible; the MPI tests on GPU memory did not run\n");
      MPI_Finalize();
      return 77;
    }
  }
  doctest::Context context(argc, argv);
  if (world_rank() != 0) context.setOption("out", "/dev/null");  // one rank reports; all must pass
  int const failed = context.run() != 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any != 0 && failed != 0 && world_rank() != 0) {
    std::fprintf(stderr, "coalesce_mpi_tests: rank %d failed (rerun with its output to see why)\n", world_rank());
  }
  MPI_Finalize();
  return any;
}

TEST_CASE("a halo rebuilt every few steps reuses its communicator's message buffers; a plan may outlive them") {
  std::optional<cm::halo_plan> outlives;
  std::weak_ptr<coalesce::detail::message_buffer_pool> pool;
  {
    cm::decomposition d(MPI_COMM_WORLD, unit_box);
    pool = d.halo_buffer_pool();
    test_vector<Particle> particles(scattered(400, d.rank()));
    (void)cm::migrate(d, particles, &Particle::pos);
    std::size_t const owned = particles.size();
    auto halo = cm::build_halo(d, particles, &Particle::pos, 0.1);
    auto const* first = &halo.buffers();
    std::size_t const ghosts = halo.ghosts();
    // `halo = build_halo(...)`: the new plan is built while the old one is held, then the old one
    // goes back to the pool; from the second rebuild on, the two sets of buffers alternate.
    halo = cm::build_halo(d, particles, &Particle::pos, 0.1, {.owned = owned});
    auto const* second = &halo.buffers();
    CHECK(second != first);
    halo = cm::build_halo(d, particles, &Particle::pos, 0.1, {.owned = owned});
    CHECK(&halo.buffers() == first);
    halo = cm::build_halo(d, particles, &Particle::pos, 0.1, {.owned = owned});
    CHECK(&halo.buffers() == second);
    CHECK(halo.ghosts() == ghosts);  // the same ghosts every time
    cm::forward(halo, particles);    // and the plan's buffers work
    outlives = std::move(halo);
  }
  // The decomposition is gone; the plan still shares the pool, and gives its buffers back there,
  // not to freed memory; then nothing holds the pool.
  CHECK_FALSE(pool.expired());
  outlives.reset();
  CHECK(pool.expired());
}
