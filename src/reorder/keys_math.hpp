// Internal to libcoalesce: position -> cell -> key arithmetic, the same source on the host
// (keys_host.cpp) and the GPU (keys_cuda.cu), so both builds produce identical keys.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <coalesce/core/config.hpp>
#include <coalesce/reorder/reorder_ops.hpp>

namespace coalesce::detail {

// key_spec with the divisions done once, in a form a kernel takes by value.
struct key_params {
  double lo[3];
  double extent[3];
  double cells_per_length[3];
  std::uint64_t grid[3];  // up to 2^32 cells per axis (2-D 64-bit curves)
  unsigned dims;
  unsigned levels;
  bool periodic[3];
  curve kind;
};

inline key_params make_key_params(key_spec const& spec) {
  key_params p{};
  for (int a = 0; a < 3; ++a) {
    p.lo[a] = spec.lo[a];
    p.extent[a] = spec.hi[a] - spec.lo[a];
    p.grid[a] = spec.grid[a];
    p.cells_per_length[a] = p.extent[a] > 0 ? static_cast<double>(spec.grid[a]) / p.extent[a] : 0.0;
  }
  p.dims = spec.dims;
  p.levels = spec.levels;
  for (int a = 0; a < 3; ++a) p.periodic[a] = spec.periodic[a];
  p.kind = spec.kind;
  return p;
}

// Cell coordinates of a position; false for NaN/infinite positions and, along an open axis, for
// positions outside [lo, hi].
// Coordinate a of element i as the key kernels read it: E is float or double for positions in
// their own type, std::int32_t for positions stored in 32 bits (fixed point, box_fixed: decoded by
// coordinate_of).
template <class E>
COALESCE_HOST_DEVICE COALESCE_INLINE double key_coordinate(position_columns const& pos, unsigned a, std::size_t i) {
  if constexpr (std::is_same_v<E, std::int32_t>) {
    return coordinate_of(pos, a, i);
  } else {
    return *reinterpret_cast<E const*>(pos.axis[a].address(i));
  }
}

COALESCE_HOST_DEVICE COALESCE_INLINE bool cell_of(key_params const& p, unsigned dims, double const* x,
                                                  std::uint32_t* cell) {
  for (unsigned a = 0; a < dims; ++a) {
    double const v = x[a];
    if (!(v - v == 0.0)) return false;  // NaN or infinite (inf - inf is NaN)
    double t = v - p.lo[a];
    if (p.periodic[a]) {
      // Only images outside the box pay for the division (most positions are inside).
      if (t < 0.0 || t >= p.extent[a]) t -= ::floor(t / p.extent[a]) * p.extent[a];
    } else if (t < 0.0 || t > p.extent[a]) {
      return false;
    }
    double const c = t * p.cells_per_length[a];
    // Rounding can land exactly on grid (t == extent, or a wrapped -0.0 epsilon): last cell.
    cell[a] = c >= static_cast<double>(p.grid[a]) ? static_cast<std::uint32_t>(p.grid[a] - 1)
                                                  : (c <= 0.0 ? 0u : static_cast<std::uint32_t>(c));
  }
  return true;
}

COALESCE_HOST_DEVICE inline std::uint64_t spread_by_3(std::uint64_t x) {  // 21 bits -> every third bit
  x &= 0x1fffffull;
  x = (x | x << 32) & 0x1f00000000ffffull;
  x = (x | x << 16) & 0x1f0000ff0000ffull;
  x = (x | x << 8) & 0x100f00f00f00f00full;
  x = (x | x << 4) & 0x10c30c30c30c30c3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}
COALESCE_HOST_DEVICE inline std::uint64_t spread_by_2(std::uint64_t x) {  // 32 bits -> every other bit
  x &= 0xffffffffull;
  x = (x | x << 16) & 0x0000ffff0000ffffull;
  x = (x | x << 8) & 0x00ff00ff00ff00ffull;
  x = (x | x << 4) & 0x0f0f0f0f0f0f0f0full;
  x = (x | x << 2) & 0x3333333333333333ull;
  x = (x | x << 1) & 0x5555555555555555ull;
  return x;
}

// Bit b of axis a goes to bit b * dims + a (x lowest).
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint64_t interleave(std::uint32_t const* c, unsigned dims) {
  if (dims == 3) return spread_by_3(c[0]) | spread_by_3(c[1]) << 1 | spread_by_3(c[2]) << 2;
  return spread_by_2(c[0]) | spread_by_2(c[1]) << 1;
}

// J. Skilling, "Programming the Hilbert curve" (AIP Conf. Proc. 707, 2004): axes -> transposed
// Hilbert index, then the transpose read most significant axis first at each level.
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint64_t hilbert_index(std::uint32_t const* cell, unsigned dims,
                                                                 unsigned levels) {
  std::uint32_t x[3] = {cell[0], dims > 1 ? cell[1] : 0u, dims > 2 ? cell[2] : 0u};
  std::uint32_t const m = std::uint32_t{1} << (levels - 1);
  for (std::uint32_t q = m; q > 1; q >>= 1) {
    std::uint32_t const p = q - 1;
    for (unsigned i = 0; i < dims; ++i) {
      if (x[i] & q) {
        x[0] ^= p;
      } else {
        std::uint32_t const t = (x[0] ^ x[i]) & p;
        x[0] ^= t;
        x[i] ^= t;
      }
    }
  }
  for (unsigned i = 1; i < dims; ++i) x[i] ^= x[i - 1];
  std::uint32_t t = 0;
  for (std::uint32_t q = m; q > 1; q >>= 1) {
    if (x[dims - 1] & q) t ^= q - 1;
  }
  for (unsigned i = 0; i < dims; ++i) x[i] ^= t;
  std::uint32_t reversed[3] = {x[dims - 1], x[dims - 2], dims > 2 ? x[0] : 0u};
  return interleave(reversed, dims);
}

// `dims` is p.dims, passed on its own so that a kernel instantiated per dimension count can give
// a constant: the loops unroll and the coordinates stay in registers (a run-time count put them
// in local memory: 18x the time of a bare key kernel on the H200).
COALESCE_HOST_DEVICE COALESCE_INLINE std::uint64_t key_of_cell(key_params const& p, unsigned dims,
                                                               std::uint32_t const* cell) {
  switch (p.kind) {
    case curve::cell: {
      std::uint64_t key = cell[dims - 1];
      for (int a = static_cast<int>(dims) - 2; a >= 0; --a) key = key * p.grid[a] + cell[a];
      return key;
    }
    case curve::morton:
      return interleave(cell, dims);
    default:
      return hilbert_index(cell, dims, p.levels);
  }
}

}  // namespace coalesce::detail
