// coalesce/core/box.hpp - an axis-aligned box: what spatial keys and neighbour lists bin positions
// in (reorder/keys.hpp), and the frame of positions stored relative to it (box_fixed,
// core/stored_types.hpp: a vector's set_box).
//
//   coalesce::box b{.lo = {0, 0, 0}, .hi = {L, L, L}, .edges = coalesce::boundary::periodic};   // every axis
//   coalesce::box slab{.lo = {0, 0, 0}, .hi = {L, L, 4},                                          // per axis
//                      .edges = {coalesce::boundary::periodic, coalesce::boundary::periodic, coalesce::boundary::open}};
//   bool const wraps_z = slab.periodic(2);   // false: z is open
//
// Each axis is periodic (it wraps: keys, lists, the pair engine and migration see the nearest
// image) or open (positions lie inside [lo, hi]: lists and keys refuse others, nothing wraps).
// A box that does not say is periodic along every axis (.edges left out): state it where an open
// boundary is meant, since a periodic list over an open box gains pairs across the faces.
#pragma once
#include <array>
#include <cmath>
#include <string>

#include "config.hpp"
#include "error.hpp"

namespace coalesce {

// clamped is the former name of open (Morton and Hilbert keys clamp nothing either: a position
// outside an open axis is an error).
enum class boundary : unsigned char { periodic, open, clamped = open };

// The boundary of each axis: one for all (`.edges = boundary::open`) or one per axis
// (`.edges = {boundary::periodic, boundary::periodic, boundary::open}`).
struct box_edges {
  std::array<boundary, 3> axis{boundary::periodic, boundary::periodic, boundary::periodic};  // x, y, z
  constexpr box_edges() = default;
  // One boundary for every axis; implicit, so that `.edges = boundary::open` reads as it says.
  constexpr box_edges(boundary every) : axis{every, every, every} {}  // NOLINT: implicit on purpose
  // One boundary per axis.
  constexpr box_edges(boundary x, boundary y, boundary z) : axis{x, y, z} {}
  // True when axis a wraps (false for a >= 3); host or device code.
  COALESCE_HOST_DEVICE constexpr bool periodic(unsigned a) const { return a < 3 && axis[a] == boundary::periodic; }
  constexpr boundary operator[](unsigned a) const { return axis[a]; }  // axis a's boundary (a < 3, unchecked)
  friend constexpr bool operator==(box_edges const&, box_edges const&) = default;  // axis by axis
  // Every axis has boundary b (the one-boundary spelling's comparison).
  friend constexpr bool operator==(box_edges const& e, boundary b) {
    return e.axis[0] == b && e.axis[1] == b && e.axis[2] == b;
  }
};

// An axis-aligned box; for 2-D positions only the first two axes are used.
struct box {
  std::array<double, 3> lo{0.0, 0.0, 0.0};  // the low corner, in the positions' units
  std::array<double, 3> hi{1.0, 1.0, 1.0};  // the high corner (above lo on every axis in use)
  box_edges edges{};                        // each axis's boundary (periodic unless given)
  // True when axis a wraps (false for a >= 3); host or device code.
  COALESCE_HOST_DEVICE constexpr bool periodic(unsigned a) const { return edges.periodic(a); }
  // periodic(a) for the three axes.
  constexpr std::array<bool, 3> periodic_axes() const { return {periodic(0), periodic(1), periodic(2)}; }
};

namespace detail {

// The box that a storage's box_fixed leaves are relative to (core/stored_types.hpp): lo and length
// per axis, all zero until the owner gives one (vector::set_box), and the hi it was given (what
// get_box returns). Layouts without such leaves hold no_box_frame, which takes no bytes.
struct box_frame {
  std::array<double, 3> origin{};
  std::array<double, 3> length{};
  std::array<double, 3> end{};
  bool given() const { return length[0] > 0.0 || length[1] > 0.0 || length[2] > 0.0; }
  friend constexpr bool operator==(box_frame const&, box_frame const&) = default;
};
struct no_box_frame {
  static constexpr bool given() { return true; }
  friend constexpr bool operator==(no_box_frame const&, no_box_frame const&) = default;
};
// Where a storage keeps its frame: a base class, so that a storage without box_fixed leaves
// spends no bytes on it (the empty base optimisation). Not a [[no_unique_address]] member: with
// one, nvcc 13.0's device code read a view's size() at another offset than the host wrote it (0 in
// every kernel taking a view by value, on the H200; tests/gpu/kernels_test.cu checks this).
template <bool Boxed> struct frame_base { box_frame frame{}; };
template <> struct frame_base<false> { static constexpr no_box_frame frame{}; };
// Gives storage s the frame f (host code; nothing to do for a storage without a box).
template <class Storage, class Frame> void set_frame(Storage& s, Frame const& f) {
  if constexpr (Storage::boxed) s.frame = f;
}

// The frame of box b, checked: every axis finite with lo < hi.
inline box_frame frame_of(box const& b, char const* caller) {
  box_frame f;
  for (int a = 0; a < 3; ++a) {
    double length = b.hi[a] - b.lo[a];
    // The frame ends at lo + length (box_end: one rounding), which must not lie above hi, or the
    // last steps would read as hi itself (-9.9 + (60 - -9.9) rounds above 60): the length a few
    // ulps shorter where it does.
    while (length > 0.0 && b.lo[a] + length > b.hi[a]) length = std::nextafter(length, 0.0);
    // (A length whose 2^-32 part is not a normal double has no steps to store.)
    if (!(length * 0x1p-32 >= 0x1p-1022) || !(length < 1e300) || !(b.lo[a] == b.lo[a])) {
      throw_error(std::string(caller) + ": axis " + std::to_string(a) + " of the box is [" + std::to_string(b.lo[a]) +
                  ", " + std::to_string(b.hi[a]) +
                  "); box_fixed members need finite bounds with lo < hi on every axis (an axis no member uses "
                  "too: leave it at [0, 1))");
    }
    f.origin[a] = b.lo[a];
    f.length[a] = length;
    f.end[a] = b.hi[a];
  }
  return f;
}

}  // namespace detail
}  // namespace coalesce
