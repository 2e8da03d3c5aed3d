// coalesce/core/element_index.hpp - an element's index as a loop over blocks hands it out: the
// block's first element and the lane inside the block.
//
//   auto v = d.view();                                    // any layout, aosoa<W> included
//   coalesce::for_each_index(coalesce::device{}, v, [=] COALESCE_HOST_DEVICE (coalesce::element_index i) {
//     auto [pos, vel, mass, id] = v[i];                   // aosoa<W>: the address of lane i.lane
//     pos[&vec3::x] += vel[&vec3::x] * dt;                //   of i's block, a unit stride in the lane
//     masses[i] *= 2.0f;                                  // anything else: i is a std::size_t
//   });
//
// Why it exists: under aosoa<W> the address of element i is base + (i / W) * block_stride +
// (i % W) * size. That is not an affine function of i, so a CPU compiler vectorizes no loop over
// i (g++ 12 does not fold (b * W + l) / W back to b either, whatever it knows of l). Given the
// block and the lane, a view of width W computes the block's base once per block and the lane's
// address as base + lane * size: the lane loop of for_each_index(space, view, f) then has unit
// strides and vectorizes as the hand-written block-of-lanes loop does (docs/dev/performance-history.md "CPU
// vectorization"). On the GPU one thread runs one element and nothing changes.
//
// A kernel may take std::size_t instead (the index converts; that loop keeps its old code), and a
// kernel taking element_index runs under for_each_index(space, n, f) too (an index converts).
#pragma once
#include <cstddef>

#include "config.hpp"

namespace coalesce {

// An element's index as a loop over blocks hands it to a kernel: the block's first element and
// the lane inside the block. It converts to the plain index first + lane.
struct element_index {
  std::size_t first = 0;  // the block's first element (a multiple of width)
  std::size_t lane = 0;   // the element's place in its block
  std::size_t width = 0;  // elements per block of the loop; 0: first + lane is a plain index

  element_index() = default;
  // A plain index (what a GPU thread or a loop over n hands a kernel that takes element_index).
  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr element_index(std::size_t i) : first(i) {}
  // Lane `lane_in_block` of the block that starts at `block_first`, in a loop over blocks of
  // `block_width` elements.
  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr element_index(std::size_t block_first, std::size_t lane_in_block,
                                                               std::size_t block_width)
      : first(block_first), lane(lane_in_block), width(block_width) {}

  // The element's index, for everything that is not a blocked view: spans, pointers, lists.
  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr operator std::size_t() const { return first + lane; }
};

}  // namespace coalesce
