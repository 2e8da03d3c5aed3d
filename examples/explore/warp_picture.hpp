// The terminal picture of one warp-wide access: the sectors (or lines) it touches as rows, the
// 32 lanes as columns, and which bytes of each row the warp actually uses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <coalesce/analysis/analysis.hpp>

namespace explore {

// lane_addresses[k] is lane k's address, or empty when lane k is inactive (active[k] == false).
std::string warp_picture(coalesce::analysis::device_model const& model,
                         std::vector<std::uint64_t> const& lane_addresses, std::vector<bool> const& active,
                         std::uint64_t width, std::size_t max_rows = 64);

}  // namespace explore
