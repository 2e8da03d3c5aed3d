// How much of a cluster-pair list's per-entry work super-clusters could share (GROMACS's nbnxm
// groups 8 clusters into one row of (j cluster, mask) entries: the j cluster's loads, reduction and
// atomics done once per entry for every masked i cluster). From a list in host memory: the rows of
// S clusters merged, as S consecutive clusters (a stack along one grid column) or as S clusters
// whose centres share a cell of `cell_factor` times their mean spacing (cells in Morton order,
// chunked by S: GROMACS's 2 x 2 x 2 shape). Mask bits per entry is the divisor of the per-entry work.
#pragma once
#include <coalesce/coalesce.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace bench {

struct cluster_sharing {
  double entries_per_group = 0;
  double bits_per_entry = 0;  // cluster pairs per merged entry
};

// Cluster ids grouped S at a time (0xffffffff past the last); compact: by centre cells. at(s, x)
// puts slot s's position into x and returns false for an empty slot.
template <class SlotPosition> std::vector<std::uint32_t> cluster_groups(std::size_t clusters, SlotPosition&& at,
                                                                        float length, unsigned group, bool compact,
                                                                        double cell_factor = 2.0) {
  std::vector<std::uint32_t> members;
  if (!compact) {
    members.assign((clusters + group - 1) / group * group, 0xffffffffu);
    for (std::size_t c = 0; c < clusters; ++c) members[c] = static_cast<std::uint32_t>(c);
    return members;
  }
  double const spacing = std::cbrt(double(length) * length * length / static_cast<double>(clusters));
  auto const cells = static_cast<std::uint32_t>(std::max(1.0, std::floor(length / (cell_factor * spacing))));
  auto const spread = [](std::uint32_t v) {  // the bits of v at every third place
    std::uint64_t r = 0;
    for (int b = 0; b < 21; ++b) r |= std::uint64_t((v >> b) & 1u) << (3 * b);
    return r;
  };
  std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed;
  for (std::size_t c = 0; c < clusters; ++c) {
    double sum[3] = {0, 0, 0}, first[3] = {0, 0, 0};
    int count = 0;
    for (std::size_t s = c * 8; s < c * 8 + 8; ++s) {
      double x[3];
      if (!at(s, x)) continue;
      for (int a = 0; a < 3; ++a) {
        if (count == 0) first[a] = x[a];
        sum[a] += x[a] - length * std::nearbyint((x[a] - first[a]) / length);  // the image nearest the first
      }
      ++count;
    }
    if (count == 0) continue;  // an empty cluster lists nothing
    std::uint32_t cell[3];
    for (int a = 0; a < 3; ++a) {
      double const centre = sum[a] / count, t = centre - length * std::floor(centre / length);
      cell[a] = std::min(cells - 1, static_cast<std::uint32_t>(t / length * cells));
    }
    keyed.push_back({spread(cell[0]) | spread(cell[1]) << 1 | spread(cell[2]) << 2, static_cast<std::uint32_t>(c)});
  }
  std::sort(keyed.begin(), keyed.end());
  members.assign((keyed.size() + group - 1) / group * group, 0xffffffffu);
  for (std::size_t k = 0; k < keyed.size(); ++k) members[k] = keyed[k].second;
  return members;
}

// The rows of each group merged into (j cluster, mask) entries. by_group (a full list): each pair of
// clusters kept once, in the row of the lower group (within a group, of the lower cluster), as
// GROMACS halves its list by super-cluster; otherwise the list's own rows (a half list's by cluster).
inline cluster_sharing sharing_of(coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list,
                                  std::vector<std::uint32_t> const& members, unsigned group, bool by_group = false) {
  std::size_t const groups = members.size() / group;
  std::vector<std::uint32_t> seen(list.clusters, 0xffffffffu), group_of(list.clusters, 0xffffffffu);
  for (std::size_t k = 0; k < members.size(); ++k) {
    if (members[k] < list.clusters) group_of[members[k]] = static_cast<std::uint32_t>(k / group);
  }
  std::size_t merged = 0, pairs = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    for (unsigned k = 0; k < group; ++k) {
      std::uint32_t const c = members[g * group + k];
      if (c >= list.clusters) continue;
      for (std::uint32_t e = list.row_offsets[c]; e < list.row_offsets[c + 1]; ++e) {
        std::uint32_t const j = list.entries[e];
        if (by_group && (group_of[j] < g || (group_of[j] == g && j < c))) continue;
        ++pairs;
        if (seen[list.entries[e]] != g) seen[list.entries[e]] = static_cast<std::uint32_t>(g), ++merged;
      }
    }
  }
  cluster_sharing out;
  out.entries_per_group = groups ? double(merged) / double(groups) : 0;
  out.bits_per_entry = merged ? double(pairs) / double(merged) : 0;
  return out;
}

}  // namespace bench
