// coalesce/core/node_storage.hpp - what the proxy of a nested struct holds: the mapping and the
// blob pointers of its own leaves only, not the whole layout_storage of the root.
//
//   auto [pos, vel, force, mass, charge] = v[i];   // soa of 13 leaves: v[i] holds 13 blob pointers,
//   auto [x, y, z] = pos;                          //   pos, vel and force 3 each (their own leaves)
//
// Why: a proxy holds its storage by value, so that g++ keeps it in registers; but g++ splits an
// aggregate into registers (SRA) only up to 72-136 bytes (--param
// sra-max-scalarization-size-Ospeed: move ratio x 8 bytes). Under soa a 16-leaf record's storage
// is 144 bytes: each nested proxy of `auto [pos, vel, force, ...] = v[i]` was a 152-byte copy kept
// on the stack, and the loop stopped vectorizing (20-89x the raw loop; docs/dev/performance-history.md "CPU
// vectorization"). The proxy of a vec3 now holds 3 pointers. A nested proxy keeps its parent's
// storage where that is no larger (aosoa: one blob pointer for every leaf), and a node found at
// run time (by member pointer) keeps its parent's.
#pragma once
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "layout.hpp"
#include "layout_storage.hpp"

namespace coalesce::detail {

// Leaves [First, First + Count) of Full (a layout_storage): one pointer per leaf, to the start of
// the blob that holds it, so that a leaf's address is the same arithmetic as in Full.
template <class Full, std::size_t First, std::size_t Count> struct leaf_range_storage : frame_base<Full::boxed> {
  using full_type = Full;
  using shape = typename Full::shape;
  using mapping_type = typename Full::mapping_type;
  static constexpr bool converts = Full::converts;
  static constexpr bool boxed = Full::boxed;
  static constexpr std::size_t pointers = Count;

  COALESCE_HOST_DEVICE COALESCE_INLINE static constexpr stored_format format(std::size_t l) { return Full::format(l); }
  static constexpr bool natural(std::size_t l) { return Full::natural(l); }
  template <std::size_t F, std::size_t C> static constexpr node_slot node() { return Full::template node<F, C>(); }

  mapping_type map{};
  std::array<std::byte*, Count> leaf_blobs{};

  COALESCE_HOST_DEVICE COALESCE_INLINE constexpr stored_format format_at(std::size_t l) const {
    if constexpr (boxed) {
      return detail::in_frame(Full::format(l), this->frame);
    } else {
      return Full::format(l);
    }
  }

  // A leaf outside the range has no address here (only unselected branches of a run-time select
  // name one).
  template <std::size_t Leaf, class U>
  COALESCE_HOST_DEVICE COALESCE_INLINE U* leaf_address(std::size_t i, std::size_t j) const {
    if constexpr (Leaf < First || Leaf >= First + Count) {
      return nullptr;
    } else {
      return reinterpret_cast<U*>(leaf_blobs[Leaf - First] + map.place(Leaf, j).at(i));
    }
  }
  template <class U> COALESCE_INLINE U* leaf_address_at(std::size_t leaf, std::size_t i, std::size_t j) const {
    return reinterpret_cast<U*>(leaf_blobs[leaf - First] + map.place(leaf, j).at(i));
  }
};

template <class S> struct storage_facts {  // a layout_storage
  using full = S;
  static constexpr std::size_t pointers = S::blob_count;
  static constexpr std::size_t first = 0;
};
template <class Full, std::size_t First, std::size_t Count>
struct storage_facts<leaf_range_storage<Full, First, Count>> {
  using full = Full;
  static constexpr std::size_t pointers = Count;
  static constexpr std::size_t first = First;
};

// The storage of a static child node with leaves [First, First + Count) under a parent proxy
// holding Parent: its own leaves' pointers where that is fewer than the parent holds.
template <class Parent, std::size_t First, std::size_t Count> using child_storage_t =
    std::conditional_t<(Count < storage_facts<Parent>::pointers),
                       leaf_range_storage<typename storage_facts<Parent>::full, First, Count>, Parent>;

template <class Child, class Parent> COALESCE_HOST_DEVICE COALESCE_INLINE Child narrow_storage(Parent const& parent) {
  if constexpr (std::is_same_v<Child, Parent>) {
    return parent;
  } else {
    Child out;
    out.map = parent.map;
    if constexpr (Child::boxed) out.frame = parent.frame;
    [&]<std::size_t... K>(std::index_sequence<K...>) COALESCE_INLINE_LAMBDA {
      constexpr std::size_t first = storage_facts<Child>::first;
      if constexpr (std::is_same_v<Parent, typename storage_facts<Parent>::full>) {
        ((out.leaf_blobs[K] = parent.blobs[Parent::mapping_type::blob_of(first + K)]), ...);
      } else {
        ((out.leaf_blobs[K] = parent.leaf_blobs[first + K - storage_facts<Parent>::first]), ...);
      }
    }
    (std::make_index_sequence<Child::pointers>{});
    return out;
  }
}

}  // namespace coalesce::detail
