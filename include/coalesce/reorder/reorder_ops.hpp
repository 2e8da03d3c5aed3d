// Type-erased reorder operations, compiled once into libcoalesce.a (src/reorder_*.cpp|cu,
// src/keys_*.cpp|cu). The public templates in reorder.hpp and keys.hpp only describe columns
// and index arrays (pointers, strides, widths) and call these, so a user translation unit never
// instantiates a sort, a gather or a key kernel, and CUB/Thrust never reach user code.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../core/stored_types.hpp"
#include "../memory/buffer.hpp"

namespace coalesce {
class reorder_plan;
}  // namespace coalesce

namespace coalesce::detail {

// The 2 or 3 leaves of a position (x, y[, z]), all float (width 4) or all double (width 8) in
// memory; or, where fixed_bits >= 0, float members stored as fixed_point<std::int32_t, fixed_bits>
// (stored_as; width 4); or, where boxed, float members stored as box_fixed (32-bit fractions of the
// vector's box, box_format[a] with its origin and step): keys and neighbour lists read these, only
// fixed point is written through them (migration, halos).
struct position_columns {
  std::array<column_ref, 3> axis{};
  unsigned dims = 3;
  unsigned width = 4;
  int fixed_bits = -1;
  bool boxed = false;
  // box_fixed columns that migration's wrap and halo shifts may write (box_fixed<> or <saturate>
  // in a box that holds what they write); box_fixed<wrap> columns are read only.
  bool box_writable = false;
  std::array<stored_format, 3> box_format{};
  // Per box_fixed axis, float_reading_slack of its format: worked out where the columns are made,
  // not per coordinate in the shift kernels.
  std::array<double, 3> box_slack{};
};
// True when the coordinates are stored in another type than the member's (fixed point, box_fixed):
// read through coordinate_of.
COALESCE_HOST_DEVICE COALESCE_INLINE bool stored_position(position_columns const& p) {
  return p.fixed_bits >= 0 || p.boxed;
}

// Element i of a position column (float or double, by width) as a double: the one reading of a
// coordinate that keys, migration and neighbour lists share, on host and GPU.
COALESCE_HOST_DEVICE COALESCE_INLINE double coordinate_at(column_ref const& c, unsigned width, std::size_t i) {
  return width == 4 ? static_cast<double>(*reinterpret_cast<float const*>(c.address(i)))
                    : *reinterpret_cast<double const*>(c.address(i));
}
// The same from memory of `kind` read by the host (a copy for GPU memory): error messages.
double read_coordinate(memory_kind kind, column_ref const& c, unsigned width, std::size_t i);

// Coordinate a of element i, whatever the position's stored format. Fixed point: the float the
// member's converting reference reads (decode<float>: (float)q * 2^-bits, one rounding), not the
// exact q * 2^-bits, so keys and lists see what the user's kernels see (a q above 2^24 that an
// integer update left odd is not a float).
COALESCE_HOST_DEVICE COALESCE_INLINE double coordinate_of(position_columns const& p, unsigned a, std::size_t i) {
  if (p.fixed_bits >= 0) {
    auto const q = *reinterpret_cast<std::int32_t const*>(p.axis[a].address(i));
    return static_cast<double>(static_cast<float>(q) * float_power_of_two(-p.fixed_bits));
  }
  if (p.boxed) {  // box_fixed: the float the member's reference reads (inside [lo, hi))
    return static_cast<double>(
        box_read<float>(*reinterpret_cast<std::uint32_t const*>(p.axis[a].address(i)), p.box_format[a]));
  }
  return coordinate_at(p.axis[a], p.width, i);
}
// Stores x as coordinate a of element i in the position's format, as the member's converting
// reference stores a float: x rounded to float, then (fixed point) to the nearest multiple of
// 2^-bits, ties to even. Returns what coordinate_of reads back. Fixed point: the caller has checked
// that x lies in the format's range (check_fixed_position_range, keys.hpp).
COALESCE_HOST_DEVICE COALESCE_INLINE double store_coordinate(position_columns const& p, unsigned a, std::size_t i,
                                                             double x) {
  std::byte* const at = p.axis[a].address(i);
  if (p.boxed) {  // box_fixed positions move by whole steps (shift_coordinate), never through a float
#if COALESCE_IN_DEVICE_CODE
    printf("coalesce: internal error: a box_fixed position stored through store_coordinate\n");
    __trap();
#else
    throw_error("internal error: a box_fixed position stored through store_coordinate; please report it");
#endif
  }
  if (p.fixed_bits >= 0) {
    std::byte const before[4] = {at[0], at[1], at[2], at[3]};
    encode_status const status =
        encode_floating(at, static_cast<float>(x),
                        stored_format{number_kind::fixed, 4, static_cast<std::uint8_t>(p.fixed_bits), false});
    if (status != encode_status::ok) {  // a ghost that drifted past the format's range since the halo was built
      for (int b = 0; b < 4; ++b) at[b] = before[b];
#if COALESCE_IN_DEVICE_CODE
      printf(
          "coalesce: a position moved to %g along axis %u does not fit its fixed_point<std::int32_t, %d>; "
          "build the halo again (or migrate) sooner, or store positions with fewer fraction bits\n",
          x, a, p.fixed_bits);
      __trap();
#else
      throw_error("a position moved to " + std::to_string(x) + " along axis " + std::to_string(a) +
                  " does not fit its fixed_point<std::int32_t, " + std::to_string(p.fixed_bits) +
                  ">; build the halo again (or migrate) sooner, or store positions with fewer fraction bits");
#endif
    }
    return coordinate_of(p, a, i);
  }
  if (p.width == 4) {
    *reinterpret_cast<float*>(at) = static_cast<float>(x);
    return static_cast<double>(static_cast<float>(x));
  }
  *reinterpret_cast<double*>(at) = x;
  return x;
}
// Steps of a box_fixed format within which the float reading of a word can differ from its value:
// half a float ulp of the box's largest coordinate, and a step (position_columns::box_slack).
inline double float_reading_slack(stored_format const& f) {
  double const largest = std::fmax(std::fabs(f.origin), std::fabs(box_end(f)));
  return std::ceil(largest * power_of_two(-24) / f.step) + 1.0;
}
// Moves coordinate a of element i by `shift` (a halo's periodic image, migration's wrap). box_fixed:
// by round(shift / step) whole steps of the vector's box, so the stored word moves exactly and every
// image of one shift moves alike (a float in between would round positions to the float's ulp,
// coarser than the box's steps); a word that would leave the box is an error (the box given to
// the vector must hold what halos and migration write: checked before they start, so here only a
// ghost whose owner left the box's margin since the halo was built). Others: store_coordinate.
COALESCE_HOST_DEVICE COALESCE_INLINE void shift_coordinate(position_columns const& p, unsigned a, std::size_t i,
                                                           double shift) {
  if (!p.boxed) {
    (void)store_coordinate(p, a, i, coordinate_of(p, a, i) + shift);
    return;
  }
  stored_format const& f = p.box_format[a];
  auto* const at = reinterpret_cast<std::uint32_t*>(p.axis[a].address(i));
#if COALESCE_IN_DEVICE_CODE
  double const steps = rint(shift / f.step);
#else
  double const steps = std::nearbyint(shift / f.step);
#endif
  double moved = static_cast<double>(*at) + steps;
  // Halos choose ghosts, and migration wraps, by the float a word reads as, which can lie up to
  // half a float ulp from the word's own value: an image of a particle read exactly at the
  // cutoff's edge may overshoot a box given exactly as the global box +- the cutoff by that much.
  // Such an overshoot is clamped onto the box's edge (a move below float resolution); more is an
  // error.
  double const last = power_of_two(32) - 1.0;
  double const slack = p.box_slack[a];
  if (moved < 0.0 && moved >= -slack) moved = 0.0;
  if (moved > last && moved <= last + slack) moved = last;
  if (p.box_writable && moved >= 0.0 && moved <= last) {
    *at = static_cast<std::uint32_t>(moved);
    return;
  }
#if COALESCE_IN_DEVICE_CODE
  printf(
      "coalesce: element %llu's box_fixed position moved by %g along axis %u leaves the vector's box [%g, %g); "
      "build the halo again (or migrate) sooner, or give the vector a larger box (set_box)\n",
      static_cast<unsigned long long>(i), shift, a, f.origin, box_end(f));
  __trap();
#else
  if (!p.box_writable) throw_error("internal error: a read-only box_fixed position shifted; please report it");
  char text[320];
  std::snprintf(text, sizeof text,
                "element %zu's box_fixed position moved by %g along axis %u leaves the vector's box [%g, %g); build "
                "the halo again (or migrate) sooner, or give the vector a larger box (set_box)",
                i, shift, a, f.origin, box_end(f));
  throw_error(text);
#endif
}
// The same, read by the host from memory of `kind` (error messages).
double read_position_coordinate(memory_kind kind, position_columns const& p, unsigned a, std::size_t i);

enum class curve : unsigned char { cell, morton, hilbert };

// What key to compute. grid[a] is the number of cells along axis a (cell keys), or 2^levels
// (Morton and Hilbert keys, which quantize each axis to `levels` bits).
struct key_spec {
  curve kind = curve::morton;
  unsigned key_bytes = 4;
  unsigned dims = 3;
  std::array<bool, 3> periodic{true, true, true};  // per axis: wraps (true) or open
  std::array<double, 3> lo{};
  std::array<double, 3> hi{};
  std::array<std::uint64_t, 3> grid{1, 1, 1};  // 64 bits: 2-D 64-bit curves have 2^32 cells per axis
  unsigned levels = 0;
};

// Keys the plan computed: where they are, and the generation that names this computation.
// Generations are unique in the process (0 means "the caller's own keys"), so keys that a later
// computation overwrote, or keys of another plan, are recognised before they are read.
struct plan_keys {
  void const* data = nullptr;
  std::uint64_t generation = 0;
};

// Writes n keys into the plan's key buffer (memory of `kind`). Throws coalesce::error naming
// the first bad position (NaN, infinite, or outside the box along an open axis).
plan_keys compute_keys(reorder_plan& plan, memory_kind kind, key_spec const& spec, position_columns const& pos,
                       std::size_t n);

// Keys another module computes into the plan (a neighbour list's own cells: verlet_list::cell_keys),
// so that sort_by_key and cell_offsets take them as the plan's: keys_for_writing gives the plan's
// key buffer for n keys (memory of `kind`; keys computed before are gone), and once the caller's
// work on the plan's stream wrote them, keys_written names them with a new generation.
void* keys_for_writing(reorder_plan& plan, memory_kind kind, unsigned key_bytes, std::size_t n);
std::uint64_t keys_written(reorder_plan& plan);

// Stable sort of (key, original index) pairs; afterwards the plan holds the permutation
// (new -> old) and the sorted keys. Keys must have zero bits at and above end_bit (checked).
// generation: 0 for the caller's keys, else what compute_keys returned (checked: still current).
void sort_keys(reorder_plan& plan, memory_kind kind, void const* keys, unsigned key_bytes, std::size_t n, int begin_bit,
               int end_bit, std::uint64_t generation);

// The plan's permutation (new -> old) and inverse (old -> new) in memory of `kind` (mirrored
// there once per sort when the sort ran in the other kind of memory).
std::uint32_t const* permutation_in(reorder_plan& plan, memory_kind kind);
std::uint32_t const* inverse_in(reorder_plan& plan, memory_kind kind);

// A reused allocation of exactly `bytes` bytes of `kind`, owned by the plan (out-of-place targets).
buffer& scratch(reorder_plan& plan, memory_kind kind, std::size_t bytes);

// One fused gather of every column: element i of dst from element perm[i] of src, on the plan's stream.
void permute_columns(reorder_plan& plan, memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n,
                     std::uint32_t const* perm);
// A copy within memory of `kind` on the plan's stream.
void copy_in_plan_stream(reorder_plan& plan, memory_kind kind, void* dst, void const* src, std::size_t bytes);

// 32-bit index arrays (std::uint32_t or std::int32_t; signedness only changes error messages).
struct index_array {
  std::uint32_t* data = nullptr;
  std::size_t size = 0;
  bool is_signed = false;
};

enum class list_format : unsigned char { row_major, column_major, csr };

// A neighbour list: for row_major / column_major, `particles` rows of `max_neighbors` slots
// (entry k of particle i at i * max + k, or k * particles + i) of which counts[i] are used
// (all when counts is null); for csr, row i is indices[offsets[i] .. offsets[i + 1]).
struct neighbor_desc {
  list_format format = list_format::row_major;
  std::uint32_t* indices = nullptr;
  std::uint32_t* counts = nullptr;   // fixed formats; may be null
  std::uint32_t* offsets = nullptr;  // csr: particles + 1 entries
  std::size_t particles = 0;
  std::size_t max_neighbors = 0;
  bool is_signed = false;
};

void remap_indices(reorder_plan& plan, memory_kind kind, index_array const& indices);
// In place (through plan scratch), or into `into` (a list of the same shape in other memory:
// nothing is copied back).
void remap_neighbors(reorder_plan& plan, memory_kind kind, neighbor_desc const& list,
                     neighbor_desc const* into = nullptr);
// Mean |i - j| over the list's entries (j a neighbour of i); 0 for an empty list.
double neighbor_locality(reorder_plan& plan, memory_kind kind, neighbor_desc const& list);
// cells + 1 start offsets of each cell in the sorted order (memory of the sort's kind). The
// plan's last sort must have sorted the cell keys of that generation, with no key computation since.
std::uint32_t const* cell_offsets(reorder_plan& plan, std::uint64_t cells, std::uint64_t generation);

}  // namespace coalesce::detail
