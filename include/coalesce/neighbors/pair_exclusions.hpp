// coalesce/neighbors/pair_exclusions.hpp - pairs the pair engine (pair_engine.hpp) skips: bonded
// pairs, whose interaction is the bond's, not the pair law's. Built from the user's bond list, held
// per particle (each particle's excluded partners, a symmetric CSR) in host or GPU memory.
//
//   std::vector<std::uint32_t> bonds = {0, 1, 1, 2, 2, 3};          // pairs (0, 1), (1, 2), (2, 3)
//   coalesce::pair_exclusions<> excluded(d.size(), bonds);         // in d's memory (device)
//   // coalesce::compute_pairs(d, &Particle::pos, &Particle::vel, list.view(d), domain, law, table, excluded);
//   coalesce::reorder_plan plan;                                    // after a reorder: remap, build again
//   coalesce::sort_by_key(d, coalesce::morton_keys(d, &Particle::pos, box, plan), plan);
//   coalesce::remap(bonds, plan);                                   // old index -> new index (reorder.hpp)
//   excluded = coalesce::pair_exclusions<>(d.size(), bonds);
//
// A pair (i, j) of the bond list excludes j from i and i from j; a pair given twice (either way round)
// counts once. Exclusions are complete: an excluded pair adds no force, no energy and no virial
// (there is no scaled 1-4 interaction). Angles and dihedrals exclude what the user lists: give the
// (i, k) of an angle i-j-k as a pair too, to exclude it.
//
// Indices are the particles' current ones. A reorder (sort_by_key) moves particles and leaves the
// exclusions naming the old indices: remap the bond list with the same plan (coalesce::remap of a
// std::vector or device_span, reorder.hpp) and build the exclusions again from it. compute_pairs
// refuses exclusions built for another particle count, but cannot see a reorder: building again
// after each one is the user's part, as it is for the bond list itself.
//
// Bad input throws coalesce::error and builds nothing: a pair naming a particle at or past the count
// (the error names the pair and the particle), a pair of a particle with itself, an odd-length flat
// list.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../memory/array.hpp"
#include "../memory/space.hpp"
#include "../memory/stream.hpp"

namespace coalesce {

namespace detail {
// A particle's excluded partners, ascending: what a loop holds per row.
struct exclusion_row {
  std::uint32_t const* first = nullptr;
  std::uint32_t const* last = nullptr;
  COALESCE_HOST_DEVICE COALESCE_INLINE bool contains(std::uint32_t j) const {
    for (std::uint32_t const* p = first; p != last; ++p) {
      if (*p >= j) return *p == j;
    }
    return false;
  }
};
}  // namespace detail

// The handle kernels take by value (pair_exclusions::view()): particle i's excluded partners are
// partners[offsets[i], offsets[i + 1]), ascending.
struct pair_exclusions_ref {
  std::uint32_t const* offsets = nullptr;   // particle i: its partners at [offsets[i], offsets[i + 1])
  std::uint32_t const* partners = nullptr;  // every particle's excluded partners, ascending per particle
  std::size_t particles = 0;                // the particle count it was built for

  // Particle i's excluded partners (a range with contains(j)).
  COALESCE_HOST_DEVICE COALESCE_INLINE detail::exclusion_row row(std::size_t i) const {
    return {partners + offsets[i], partners + offsets[i + 1]};
  }
  // True when the pair (i, j) is excluded.
  COALESCE_HOST_DEVICE COALESCE_INLINE bool excludes(std::size_t i, std::uint32_t j) const {
    return row(i).contains(j);
  }
};

// The owner, in the memory of Space (the particles' space: compute_pairs reads it in the same loop).
template <class Space = device> class pair_exclusions {
  static_assert(space<Space>, "coalesce: pair_exclusions<Space>: the space is coalesce::host or coalesce::device");

 public:
  using space_type = Space;  // the memory it lives in (the particles')

  // None, for no particles.
  pair_exclusions() = default;
  // From a flat bond list: pair k is (pairs[2k], pairs[2k + 1]), indices below `particles` (the
  // form coalesce::remap renumbers in place). Returns when the exclusions are in their memory.
  pair_exclusions(std::size_t particles, std::span<std::uint32_t const> pairs, stream on = default_stream) {
    if (pairs.size() % 2 != 0) {
      detail::throw_error("pair_exclusions: the flat bond list has " + std::to_string(pairs.size()) +
                          " indices, an odd count; give two indices (i, j) per pair");
    }
    auto const pair = [&](std::size_t k) { return std::array{pairs[2 * k], pairs[2 * k + 1]}; };
    build(particles, pairs.size() / 2, pair, on);
  }
  // The same from a vector.
  pair_exclusions(std::size_t particles, std::vector<std::uint32_t> const& pairs, stream on = default_stream)
      : pair_exclusions(particles, std::span<std::uint32_t const>(pairs), on) {}
  // From a list of pairs {i, j}.
  pair_exclusions(std::size_t particles, std::span<std::array<std::uint32_t, 2> const> pairs,
                  stream on = default_stream) {
    auto const pair = [&](std::size_t k) { return pairs[k]; };
    build(particles, pairs.size(), pair, on);
  }
  // The same from a vector of pairs.
  pair_exclusions(std::size_t particles, std::vector<std::array<std::uint32_t, 2>> const& pairs,
                  stream on = default_stream)
      : pair_exclusions(particles, std::span<std::array<std::uint32_t, 2> const>(pairs), on) {}

  // The particle count it was built for (compute_pairs checks it against the particles').
  std::size_t size() const { return particles_; }
  // Distinct excluded pairs (each once, however often and whichever way round it was given).
  std::size_t pairs() const { return partners_.size() / 2; }
  // The handle compute_pairs and kernels take by value.
  pair_exclusions_ref view() const { return {offsets_.data(), partners_.data(), particles_}; }
  // Each particle's excluded partners, ascending, in host memory (waits for them).
  std::vector<std::vector<std::uint32_t>> rows_on_host(stream on = default_stream) const {
    std::vector<std::vector<std::uint32_t>> rows(particles_);
    if (particles_ == 0) return rows;
    std::vector<std::uint32_t> const offsets = offsets_.to_host(on), partners = partners_.to_host(on);
    for (std::size_t i = 0; i < particles_; ++i)
      rows[i].assign(partners.begin() + offsets[i], partners.begin() + offsets[i + 1]);
    return rows;
  }

 private:
  // Checks every pair before building anything, then counts, fills, sorts and drops repeats per
  // row on the host, and copies the two arrays into Space.
  template <class Pair> void build(std::size_t particles, std::size_t count, Pair const& pair, stream on) {
    if (particles > std::size_t{0xffffffffu}) {
      detail::throw_error("pair_exclusions: " + std::to_string(particles) +
                          " particles; exclusions index at most 2^32 - 1 (std::uint32_t)");
    }
    for (std::size_t k = 0; k < count; ++k) {
      auto const [i, j] = pair(k);
      if (i < particles && j < particles && i != j) continue;
      std::string const named = "pair " + std::to_string(k) + " (" + std::to_string(i) + ", " + std::to_string(j) + ")";
      if (i >= particles || j >= particles) {
        detail::throw_error("pair_exclusions: " + named + " names particle " + std::to_string(i >= particles ? i : j) +
                            ", outside the " + std::to_string(particles) +
                            " particles; give indices below the particle count (after a reorder, remap the bond list "
                            "with the plan first)");
      }
      detail::throw_error("pair_exclusions: " + named + " names particle " + std::to_string(i) +
                          " twice; a particle never interacts with itself, drop the pair");
    }
    if (2 * count > std::size_t{0xffffffffu}) {
      detail::throw_error("pair_exclusions: " + std::to_string(count) +
                          " pairs; at most 2^31 - 1 (each is held twice, in std::uint32_t offsets)");
    }
    std::vector<std::uint32_t> offsets(particles + 1, 0), partners(2 * count);
    for (std::size_t k = 0; k < count; ++k) {
      auto const [i, j] = pair(k);
      ++offsets[i + 1];
      ++offsets[j + 1];
    }
    for (std::size_t i = 0; i < particles; ++i) offsets[i + 1] += offsets[i];
    std::vector<std::uint32_t> next(offsets.begin(), offsets.end() - 1);
    for (std::size_t k = 0; k < count; ++k) {
      auto const [i, j] = pair(k);
      partners[next[i]++] = j;
      partners[next[j]++] = i;
    }
    // Each row sorted, without repeats.
    std::vector<std::uint32_t> kept_offsets(particles + 1, 0), kept;
    kept.reserve(partners.size());
    for (std::size_t i = 0; i < particles; ++i) {
      auto const first = partners.begin() + offsets[i], last = partners.begin() + offsets[i + 1];
      std::sort(first, last);
      kept.insert(kept.end(), first, std::unique(first, last));
      kept_offsets[i + 1] = static_cast<std::uint32_t>(kept.size());
    }
    offsets.swap(kept_offsets);
    partners.swap(kept);
    offsets_ = array<std::uint32_t, Space>(std::span<std::uint32_t const>(offsets), on);
    partners_ = array<std::uint32_t, Space>(std::span<std::uint32_t const>(partners), on);
    particles_ = particles;
  }

  array<std::uint32_t, Space> offsets_;   // particles + 1
  array<std::uint32_t, Space> partners_;  // two per distinct pair
  std::size_t particles_ = 0;
};

namespace detail {

// No exclusions (every compute_pairs without them): a row that holds nothing, known when compiling,
// so the loops test nothing per pair.
struct no_exclusions {
  struct row_type {};
  COALESCE_HOST_DEVICE COALESCE_INLINE row_type row(std::size_t) const { return {}; }
};

template <class E> inline constexpr bool excludes_pairs = !std::is_same_v<E, no_exclusions>;

}  // namespace detail

}  // namespace coalesce
