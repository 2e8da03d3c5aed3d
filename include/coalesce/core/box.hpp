// coalesce/core/box.hpp - an axis-aligned box: what spatial keys and neighbour lists bin positions
// in (reorder/keys.hpp), and the frame of positions stored relative to it (box_fixed,
// core/stored_types.hpp: a vector's set_box).
//
//   coalesce::box b{.lo = {0, 0, 0}, .hi = {L, L, L}, .edges = coalesce::boundary::periodic};
#pragma once
#include <array>

namespace coalesce {

enum class boundary : unsigned char { periodic, clamped };

// An axis-aligned box; for 2-D positions only the first two axes are used.
struct box {
  std::array<double, 3> lo{0.0, 0.0, 0.0};
  std::array<double, 3> hi{1.0, 1.0, 1.0};
  boundary edges = boundary::periodic;
};

}  // namespace coalesce
