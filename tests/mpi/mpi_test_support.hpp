// What the coalesce::mpi tests share (tests/mpi/*.cpp): the memory they run on (host, or GPU in
// coalesce_mpi_gpu_tests), ranks, particles scattered over the box, and every rank's particles.
#pragma once
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <coalesce/coalesce.hpp>
#include <coalesce/mpi.hpp>

#include "test_types.hpp"

using namespace coalesce_test;
namespace cm = coalesce::mpi;
// Velocities as half, ids widened, over aosoa blocks: stored formats move as their bytes.
using stored_vel_half = coalesce::stored_as<coalesce::aosoa<8>, coalesce::store<&Particle::vel, coalesce::half>,
                                            coalesce::store<&Particle::id, std::uint64_t>>;
// Ids in 20 bits of a packed word (records of an aos): the word moves with the record.
using stored_id_bits = coalesce::stored_as<coalesce::aos, coalesce::store<&Particle::id, coalesce::bits<20>>>;
// Positions as 32-bit fixed point, 2^-24 steps (the box of 8 and its ghosts fit [-128, 128)): the wrap
// and the halo shifts write them as the member's reference writes a float (a float image that
// rounds onto hi wraps once more).
using stored_pos_fixed =
    coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::fixed_point<std::int32_t, 24>>>;

// The same tests on host vectors (coalesce_mpi_tests) and, in CUDA builds, on GPU vectors
// (coalesce_mpi_gpu_tests, compiled with COALESCE_MPI_TEST_SPACE=coalesce::device).
#ifndef COALESCE_MPI_TEST_SPACE
#define COALESCE_MPI_TEST_SPACE coalesce::host
#endif
using test_space = COALESCE_MPI_TEST_SPACE;
template <class T, class L = coalesce::soa> using test_vector = coalesce::vector<T, L, test_space>;
template <class U> using test_array = coalesce::array<U, test_space>;
template <class U, class S> std::vector<U> to_host(coalesce::array<U, S> const& a) { return a.to_host(); }
template <class T, class L, class S> std::vector<T> to_host(coalesce::vector<T, L, S> const& v) {
  std::vector<T> out(v.size());
  v.copy_to(out);
  return out;
}

namespace mpi_test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}
inline long long sum_over_ranks(long long v) {
  long long total = 0;
  MPI_Allreduce(&v, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

inline coalesce::box const unit_box{.lo = {0, 0, 0}, .hi = {8, 8, 8}};

// Each rank starts with particles anywhere in the box (most belong to other ranks), ids unique
// over ranks: rank * 100000 + i.
inline std::vector<Particle> scattered(std::size_t n, int rank) {
  std::mt19937 rng(static_cast<unsigned>(17 + rank));
  std::uniform_real_distribution<float> u(0.0f, 8.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = {{u(rng), u(rng), u(rng)},
              {1.0f, 2.0f, 3.0f},
              0.5f,
              static_cast<std::uint32_t>(rank * 100000 + static_cast<int>(i))};
  }
  return out;
}

// Every rank's owned particles, on every rank.
inline std::vector<Particle> all_particles(std::vector<Particle> const& mine) {
  int const size = world_size();
  int const bytes = static_cast<int>(mine.size() * sizeof(Particle));
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size), 0);
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < size; ++r)
    offsets[static_cast<std::size_t>(r)] =
        offsets[static_cast<std::size_t>(r - 1)] + counts[static_cast<std::size_t>(r - 1)];
  std::vector<Particle> out(static_cast<std::size_t>(offsets.back() + counts.back()) / sizeof(Particle));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, out.data(), counts.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD);
  return out;
}

struct ghost_key {
  std::uint32_t id;
  long x, y, z;  // position in units of 1e-3
  friend bool operator<(ghost_key const& a, ghost_key const& b) {
    return std::tie(a.id, a.x, a.y, a.z) < std::tie(b.id, b.x, b.y, b.z);
  }
  friend bool operator==(ghost_key const&, ghost_key const&) = default;
};
inline ghost_key key_of(std::uint32_t id, double x, double y, double z) {
  return {id, std::lround(x * 1000), std::lround(y * 1000), std::lround(z * 1000)};
}

}  // namespace mpi_test

using namespace mpi_test;
