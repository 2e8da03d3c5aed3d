// coalesce/mpi/export_halo.hpp - a halo from explicit export lists on any communicator, as
// Cabana's Halo(comm, n, export_ids, export_ranks) is (included by coalesce/mpi.hpp).
//
//   coalesce::mpi::communicator const c(MPI_COMM_WORLD);
//   // element export_ids[k] of this rank becomes a ghost on rank export_ranks[k] (host memory lists;
//   // ids as std::uint32_t or int)
//   auto halo = coalesce::mpi::build_halo(c, particles, export_ids, export_ranks);  // ghosts appended
//   coalesce::mpi::forward(halo, particles, &Particle::pos);  // each step, as for geometric halos
//   coalesce::mpi::reverse(halo, particles, &Particle::force);
//   auto plan = coalesce::mpi::plan_halo(c, particles, export_ids, export_ranks);  // counts only
//
// The user decides what goes where (any ranks, one hop, no geometry): a ghost arrives as a copy
// of its owner's record, unshifted (periodic images are the caller's to shift). Ghosts are
// appended behind the owned particles by source rank ascending, each source's in the order of
// its export list; an element may go to several ranks, and to its own rank, but to each rank at
// most once (a reverse() adds every copy's value into it). forward() and reverse() then send
// only data: the counts are in the plan.
//
// Bad input, agreed on by every rank before anything moves: lists of different lengths, a rank
// outside the communicator, an index not below the owned count, an element exported to one rank
// twice. GPU particles take the same host-memory lists (copied to the GPU once, in the plan).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "halo.hpp"

namespace coalesce::detail {

// The export list grouped by destination rank (a stable counting sort: each rank's entries in
// list order), or the first bad entry in words.
struct grouped_exports {
  std::vector<std::uint32_t> indices;
  std::vector<std::size_t> counts;
  long long bad = -1;
  std::string why;
};
// Id: std::uint32_t, or int as Cabana's Halo and many MPI codes hold them (a negative one is bad input).
template <class Id> grouped_exports group_exports(std::span<Id const> ids, std::span<int const> ranks, int size,
                                                  mpi::halo_options const& options, std::size_t particles) {
  grouped_exports out;
  out.counts.assign(static_cast<std::size_t>(size), 0);
  std::size_t const owned = options.owned_of(particles);
  if (std::string const e = options.owned_error(particles); !e.empty()) {
    out.bad = static_cast<long long>(particles);
    out.why = e;
    return out;
  }
  if (ids.size() != ranks.size()) {
    out.bad = static_cast<long long>(std::min(ids.size(), ranks.size()));
    out.why = "the export lists differ in length: " + std::to_string(ids.size()) + " indices, " +
              std::to_string(ranks.size()) + " ranks";
    return out;
  }
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (ranks[k] < 0 || ranks[k] >= size) {
      out.bad = static_cast<long long>(k);
      out.why = "export rank " + std::to_string(ranks[k]) + ", outside [0, " + std::to_string(size) + ")";
      return out;
    }
    if constexpr (std::is_signed_v<Id>) {
      if (ids[k] < 0) {
        out.bad = static_cast<long long>(k);
        out.why = "export index " + std::to_string(ids[k]) + ", negative";
        return out;
      }
    }
    if (static_cast<std::size_t>(ids[k]) >= owned) {
      out.bad = static_cast<long long>(k);
      out.why =
          "export index " + std::to_string(ids[k]) + ", not below the " + std::to_string(owned) + " owned particles";
      return out;
    }
    ++out.counts[static_cast<std::size_t>(ranks[k])];
  }
  std::vector<std::size_t> next(out.counts.size(), 0);
  for (std::size_t r = 1; r < next.size(); ++r) next[r] = next[r - 1] + out.counts[r - 1];
  out.indices.resize(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    out.indices[next[static_cast<std::size_t>(ranks[k])]++] = static_cast<std::uint32_t>(ids[k]);
  }
  // An element twice in one destination's group would be summed twice at once by reverse().
  std::vector<int> last_group(owned, -1);
  for (std::size_t r = 0, k = 0; r < out.counts.size(); ++r) {
    for (std::size_t e = 0; e < out.counts[r]; ++e, ++k) {
      std::uint32_t const i = out.indices[k];
      if (last_group[i] == static_cast<int>(r)) {
        out.bad = static_cast<long long>(i);
        out.why = "element " + std::to_string(i) + " is exported to rank " + std::to_string(r) +
                  " twice; export an element to each rank at most once";
        return out;
      }
      last_group[i] = static_cast<int>(r);
    }
  }
  return out;
}

// The plan of plan_halo from export lists, for either id type.
template <class Id, class T, class L, class S>
mpi::halo_plan plan_export_halo(mpi::communicator const& c, vector<T, L, S> const& particles,
                                std::span<Id const> export_ids, std::span<int const> export_ranks,
                                mpi::halo_options const& options) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  std::size_t const owned = options.owned_of(particles.size());
  auto grouped = detail::group_exports(export_ids, export_ranks, c.size(), options, particles.size());
  detail::agree_on_errors(c.comm(), grouped.bad, grouped.why, "plan_halo");
  coalesce::detail::check_boxes_agree(c.comm(), particles, "plan_halo");

  std::vector<std::size_t> received = detail::exchange_counts(c.comm(), grouped.counts);
  std::size_t ghosts = 0;
  for (std::size_t r : received) ghosts += r;

  coalesce::detail::buffer exports(kind, std::max<std::size_t>(grouped.indices.size(), 1) * sizeof(std::uint32_t));
  if (!grouped.indices.empty()) {
    coalesce::detail::copy_bytes(kind, exports.data(), coalesce::detail::memory_kind::host, grouped.indices.data(),
                                 grouped.indices.size() * sizeof(std::uint32_t), c.stream().handle());
    if constexpr (detail::on_gpu<S>) coalesce::synchronize(c.stream());
  }
  mpi::halo_plan h = detail::halo_access::start(c, kind, owned, particles.size());
  detail::halo_access::set_exports(h, std::move(grouped.counts), std::move(received), std::move(exports));
  detail::halo_access::set_ghosts(h, ghosts);
  return h;
}
}  // namespace coalesce::detail

namespace coalesce::mpi {

// The plan of a halo from export lists: element export_ids[k] (below the owned count) to rank
// export_ranks[k]. Only counts travel (one all-to-all); the particles are untouched, and
// forward(halo, particles) appends the ghosts' records. The particles' first options.owned
// elements (default: all) are owned. Collective.
template <class T, class L, class S>
halo_plan plan_halo(communicator const& c, vector<T, L, S> const& particles, std::span<std::uint32_t const> export_ids,
                    std::span<int const> export_ranks, halo_options const& options = {}) {
  return detail::plan_export_halo(c, particles, export_ids, export_ranks, options);
}
// Export ids held as int (Cabana's Halo takes them so): a negative one is bad input, as above.
template <class T, class L, class S>
halo_plan plan_halo(communicator const& c, vector<T, L, S> const& particles, std::span<int const> export_ids,
                    std::span<int const> export_ranks, halo_options const& options = {}) {
  return detail::plan_export_halo(c, particles, export_ids, export_ranks, options);
}

// plan_halo, then the ghosts' whole records appended to the particles (a previous halo's ghosts,
// past options.owned, replaced). Collective.
template <class T, class L, class S>
halo_plan build_halo(communicator const& c, vector<T, L, S>& particles, std::span<std::uint32_t const> export_ids,
                     std::span<int const> export_ranks, halo_options const& options = {}) {
  halo_plan h = plan_halo(c, particles, export_ids, export_ranks, options);
  forward(h, particles);
  return h;
}
// The same with export ids held as int (a negative one is bad input).
template <class T, class L, class S>
halo_plan build_halo(communicator const& c, vector<T, L, S>& particles, std::span<int const> export_ids,
                     std::span<int const> export_ranks, halo_options const& options = {}) {
  halo_plan h = plan_halo(c, particles, export_ids, export_ranks, options);
  forward(h, particles);
  return h;
}

}  // namespace coalesce::mpi
