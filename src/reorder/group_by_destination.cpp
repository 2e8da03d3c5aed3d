// Groups the particles a migration sends by destination rank (coalesce::mpi's first step): keys
// from the destinations, then a stable sort by key in the plan, so that each rank's particles are
// contiguous and in their old order. It lives in the reorder layer, not in src/mpi, because it
// works in the plan's buffers and needs no MPI: a build without MPI compiles it too.
#include <bit>
#include <string>
#include <vector>

#include <coalesce/reorder/indexed_moves.hpp>
#include <coalesce/core/error.hpp>

#include "reorder_state.hpp"

namespace coalesce::detail {

namespace {
// The counts of a migration in which nobody leaves: all n on this rank.
std::vector<std::size_t> everyone_stays(std::size_t n, int self, int ranks) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), 0);
  counts[static_cast<std::size_t>(self)] = n;
  return counts;
}

// group_by_destination in memory the host reads: a stable counting sort (keys take ranks + 2
// values) from the counts per key the caller's pass found, one pass to place, instead of a
// general sort.
std::vector<std::size_t> group_on_host(reorder_state& s, memory_kind kind, std::uint32_t const* keys, int const* dest,
                                       std::size_t n, int self, int ranks, std::vector<std::size_t> const& per_key,
                                       std::size_t& first_bad, int& bad_value) {
  auto const cells = static_cast<std::size_t>(ranks) + 2;
  if (per_key[cells - 1] > 0) {  // a destination outside [0, ranks): the lowest such element
    std::size_t i = 0;
    while (keys[i] != cells - 1) ++i;
    first_bad = i;
    bad_value = dest[i];
    return {};
  }
  // The plan's state as after a sort (sort_keys), with the permutation placed here.
  s.sorted = false;
  s.inverse_valid = s.perm_mirror_valid = s.inverse_mirror_valid = false;
  ++s.step;
  auto* perm = static_cast<std::uint32_t*>(s.ensure(s.perm, kind, n * 4));
  std::vector<std::size_t> next(cells, 0);
  for (std::size_t k = 1; k < cells; ++k) next[k] = next[k - 1] + per_key[k - 1];
  for (std::size_t i = 0; i < n; ++i) perm[next[keys[i]]++] = static_cast<std::uint32_t>(i);
  s.key_bytes = 4;
  s.kind = kind;
  s.n = n;
  s.sorted = true;
  s.key_generation = 0;
  s.sorted_generation = 0;
  std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), 0);
  counts[static_cast<std::size_t>(self)] = per_key[0];
  for (int r = 0; r < ranks; ++r) {
    if (r != self) counts[static_cast<std::size_t>(r)] = per_key[static_cast<std::size_t>(r) + 1];
  }
  return counts;
}
}  // namespace

std::vector<std::size_t> group_by_destination(reorder_plan& plan, memory_kind kind, int const* dest, std::size_t n,
                                              int self, int ranks, std::size_t& first_bad, int& bad_value) {
  check_element_count(n, "migrate");
  auto& s = state_of(plan);
  first_bad = none;
  if (n == 0) return std::vector<std::size_t>(static_cast<std::size_t>(ranks), 0);
  if (host_accessible(kind)) {
    // On the host one pass counts the destinations: the common step, nobody leaving, ends there,
    // as a hand-written loop does; the keys are written only when some element moves.
    if (s.deferred_flags_set) report_deferred(s);  // as the path below: an earlier call's checks first
    std::vector<std::size_t> per_key(static_cast<std::size_t>(ranks) + 2, 0);
    for (std::size_t i = 0; i < n; ++i) ++per_key[destination_key(dest[i], self, ranks)];
    if (per_key[0] == n) {
      return everyone_stays(n, self, ranks);
    }
    s.ensure(s.keys, kind, n * 4);
    auto* keys = reinterpret_cast<std::uint32_t*>(s.keys.data());
    destination_keys(kind, dest, n, self, ranks, keys, s.stream);
    return group_on_host(s, kind, keys, dest, n, self, ranks, per_key, first_bad, bad_value);
  }
  // Keys 0 (stays), rank + 1 (leaves), ranks + 1 (a bad destination, sorted last) in the plan's key
  // buffer; the stable sort then groups them, and the cells' starts are the counts.
  s.ensure(s.keys, kind, n * 4);
  auto* keys = reinterpret_cast<std::uint32_t*>(s.keys.data());
  destination_keys(kind, dest, n, self, ranks, keys, s.stream);
  // Nobody leaving (the common step) costs one more pass and no sort: the first nonzero key.
  {
    std::uint64_t* flags = s.host_flags.data();
    if (kind == memory_kind::device && device_is_gpu) {
      flags = static_cast<std::uint64_t*>(s.ensure(s.flag, memory_kind::device, check_words * sizeof(std::uint64_t)));
    }
    if (s.deferred_flags_set) report_deferred(s);  // the words are reused here
    reorder_backend& backend = s.backend(kind);
    backend.reset_flags(flags);
    backend.find_key_above(keys, 4, n, 0, flags);
    std::uint64_t first_leaver = nothing_found;
    copy_bytes(memory_kind::host, &first_leaver, kind, flags + bad_entry, sizeof first_leaver, s.stream);
    if (first_leaver == nothing_found) {
      return everyone_stays(n, self, ranks);
    }
  }
  int const end_bit = std::bit_width(static_cast<unsigned>(ranks) + 1u);
  sort_keys(plan, kind, keys, 4, n, 0, end_bit, 0);
  auto const cells = static_cast<std::uint64_t>(ranks) + 2;
  s.ensure(s.cells, kind, (cells + 1) * 4);
  auto* starts = reinterpret_cast<std::uint32_t*>(s.cells.data());
  s.backend(kind).cell_starts(s.keys.data(), 4, n, cells, starts);
  std::vector<std::uint32_t> host_starts(cells + 1);
  copy_bytes(memory_kind::host, host_starts.data(), kind, starts, host_starts.size() * 4, s.stream);
  if (host_starts[cells - 1] < n) {  // the stable sort put the lowest bad element first among the bad
    std::uint32_t const at =
        read_one(s, kind, reinterpret_cast<std::uint32_t const*>(s.perm.data()) + host_starts[cells - 1]);
    first_bad = at;
    bad_value = read_one(s, kind, dest + at);
    return {};
  }
  std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), 0);
  counts[static_cast<std::size_t>(self)] = host_starts[1];
  for (int r = 0; r < ranks; ++r) {
    if (r != self)
      counts[static_cast<std::size_t>(r)] =
          host_starts[static_cast<std::size_t>(r) + 2] - host_starts[static_cast<std::size_t>(r) + 1];
  }
  return counts;
}

}  // namespace coalesce::detail
