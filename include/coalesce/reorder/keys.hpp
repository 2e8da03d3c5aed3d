// coalesce/reorder/keys.hpp - spatial sort keys from a position field, for coalesce::sort_by_key.
//
//   coalesce::reorder_plan plan;
//   coalesce::box box{.lo = {0, 0, 0}, .hi = {L, L, L}, .edges = coalesce::boundary::periodic};
//   auto cells = coalesce::cell_keys(d, &Particle::pos, box, cutoff, plan);   // row-major cell id
//   auto z     = coalesce::morton_keys(d, &Particle::pos, box, plan);          // 32-bit Z-order
//   auto h     = coalesce::hilbert_keys<std::uint64_t>(d, &Particle::pos, box, plan);  // 64-bit
//   auto deep  = coalesce::morton_keys(bodies, coalesce::member_path(&Body::state, &State::x), box, plan);
//   coalesce::sort_by_key(d, z, plan);                                         // see reorder.hpp
//
//   // Particles in memory the program owns (a view: float4 positions kept, other fields as
//   // columns), in device memory: the space comes first, as for for_each_index.
//   using keep_float4 = coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>;
//   auto atoms = coalesce::view<Atom, keep_float4>::over_blobs(n, {positions_float4, charges, ids});
//   auto k = coalesce::hilbert_keys(coalesce::device{}, atoms, &Atom::pos, box, plan);
//   coalesce::sort_by_key(coalesce::device{}, atoms, k, plan);
//
// The position is a member (or a path of members) whose type is a struct of 2, 3 or 4 float or
// double leaves (a user vec3, CUDA's float3, double2, a float4 whose w holds a type or charge):
// 2-D or 3-D keys (a fourth member is not a coordinate). A periodic box wraps
// positions into [lo, hi); an open axis requires them inside [lo, hi] (hi maps to the last
// cell). NaN or infinite positions, and positions outside the box along an open axis, are a coalesce::error
// naming the first such element and its value.
//
// Keys are written into the plan (no allocation once it has seen the size) and the returned
// key_array points there, in the vector's memory. They are valid until the next key
// computation or sort through the same plan: sort_by_key, sort_keys and cell_offsets check it
// and throw coalesce::error for keys that a later call overwrote or that belong to another
// plan (compute keys right before the sort that uses them, or use one plan per key set).
// Keys use only the bits they need
// (cell keys: bit_width(cells - 1); Morton and Hilbert: dims * levels) and the sort is told that
// bit range, so a 2^21-cell grid sorts 21 bits, not 32. The kernels live in libcoalesce.
//
// Streams (the one rule of coalesce/memory/stream.hpp): every call that runs work takes a stream
// last, coalesce::default_stream when left out; these calls take a reorder_plan, whose stream
// (the one it was made with) is theirs.
#pragma once
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "reorder_ops.hpp"
#include "reorder_plan.hpp"
#include "../core/box.hpp"
#include "../core/error.hpp"
#include "../core/reference.hpp"
#include "../core/reflect.hpp"
#include "../memory/vector.hpp"
#include "../core/layout_storage.hpp"

namespace coalesce {

// Sort keys (std::uint32_t or std::uint64_t) in the memory of Space (host by default, as for
// coalesce::vector; the *_keys functions return them in the vector's space). Only bits [begin_bit,
// end_bit) are significant. For cell keys, `cells` is the number of cells (keys lie in
// [0, cells)) and `grid` the cells per axis (x fastest); both are 0 for other keys.
// `generation` is set by the *_keys functions (keys that live in a plan) and stays 0 for keys
// in your own memory.
template <class Key = std::uint32_t, class Space = host> struct key_array {
  static_assert(std::is_same_v<Key, std::uint32_t> || std::is_same_v<Key, std::uint64_t>,
                "coalesce: sort keys are std::uint32_t or std::uint64_t");
  Key const* data = nullptr;                   // the keys, in Space's memory (the plan's, for computed keys)
  std::size_t size = 0;                        // one key per element
  int begin_bit = 0;                           // the lowest significant bit
  int end_bit = 8 * sizeof(Key);               // one past the highest significant bit
  std::uint64_t cells = 0;                     // cell keys: the number of cells; 0 for other keys
  std::array<std::uint32_t, 3> grid{0, 0, 0};  // cell keys: cells per axis (x fastest); 0 for other keys
  std::uint64_t generation = 0;                // which key computation of the plan wrote them (0: your keys)
};

// A path of member pointers from the element type down to the position struct.
template <class... M> struct member_path_t {
  std::tuple<M...> members;  // the member pointers, outermost first
};
// The path through members, outermost first: member_path(&Body::state, &State::x).
template <class... M> member_path_t<M...> member_path(M... members) { return {{members...}}; }

namespace detail {

template <class M> struct position_path;
template <class P, class U> struct position_path<P U::*> {
  using root = U;
  using target = P;
  static std::size_t offset(P U::*m) { return member_offset(m); }
};
template <class M0, class... M> struct position_path<member_path_t<M0, M...>> {
  using root = typename position_path<M0>::root;
  using target = typename position_path<std::tuple_element_t<sizeof...(M), std::tuple<M0, M...>>>::target;
  static std::size_t offset(member_path_t<M0, M...> const& p) {
    return std::apply([](auto... m) { return (std::size_t{0} + ... + member_offset(m)); }, p.members);
  }
};

template <class P> constexpr bool is_position_struct() {
  if constexpr (!(std::is_class_v<P> && reflect::reflectable<P>)) {
    return false;
  } else {
    constexpr std::size_t n = reflect::leaf_count_v<P>;
    if constexpr (n < 2 || n > 4) {
      return false;
    } else {
      using E = typename reflect::leaf_t<P, 0>::type;
      return (std::is_same_v<E, float> || std::is_same_v<E, double>)&&[]<std::size_t... L>(std::index_sequence<L...>) {
        return ((std::is_same_v<typename reflect::leaf_t<P, L>::type, E> && reflect::leaf_t<P, L>::extent == 1) && ...);
      }
      (std::make_index_sequence<n>{});
    }
  }
}

// Where a position's coordinates (x, y[, z]) lie inside a record of T: byte offsets and width.
// Kept by a halo plan, so that forward() of whole records re-applies the periodic shift to them.
struct position_leaves {
  std::array<std::size_t, 3> offset{};
  unsigned dims = 3;
  unsigned width = 4;
};
template <class T, class Pos> position_leaves position_leaves_of(Pos const& position) {
  using info = position_path<Pos>;
  using P = typename info::target;
  static_assert(std::is_same_v<typename info::root, T>,
                "coalesce: the position member (path) must start at the vector's element type");
  static_assert(is_position_struct<P>(),
                "coalesce: the position must be a struct of 2, 3 or 4 float or double members (a vec3, float3, float4, "
                "double2 ...); for other data compute your own keys and call sort_by_key(v, keys, plan)");
  std::size_t const base = info::offset(position);
  position_leaves out;
  // x, y[, z]: a fourth member (float4's w: a type, a charge) is not a coordinate.
  out.dims = static_cast<unsigned>(std::min<std::size_t>(reflect::leaf_count_v<P>, 3));
  out.width = static_cast<unsigned>(sizeof(typename reflect::leaf_t<P, 0>::type));
  for (unsigned a = 0; a < out.dims; ++a) out.offset[a] = base + reflect::leaf_table_v<P>[a].offset;
  return out;
}

// The columns of the position's leaves inside T's storage. Readers (keys, neighbour lists) and
// writers (migration's wrap, halo shifts: shift_coordinate) also take float coordinates stored as
// fixed_point<std::int32_t, F> (the same F on every axis) or as box_fixed on every axis (writers:
// box_fixed<> or <saturate>, which hold images past the global box when the vector's box is larger;
// migration also reads box_fixed<wrap>, whose positions are their own images); sums (reverse() of a
// member) take them in their own type only.
enum class position_use { read, migrate, write, sum };
template <class T, class L> position_columns position_columns_at(layout_storage<T, L> const& storage,
                                                                 position_leaves const& leaves,
                                                                 position_use use = position_use::write) {
  position_columns out;
  out.dims = leaves.dims;
  out.width = leaves.width;
  constexpr auto table = reflect::leaf_table_v<T>;
  for (unsigned a = 0; a < out.dims; ++a) {
    bool found = false;
    for (std::size_t l = 0; l < table.size() && !found; ++l) {
      if (table[l].offset == leaves.offset[a] && table[l].size == out.width && table[l].extent == 1) {
        if (!layout_storage<T, L>::natural(l)) {
          stored_format const f = storage.format_at(l);
          bool const boxed = f.kind == number_kind::box_fraction;
          bool const box_allowed =
              use == position_use::read || use == position_use::migrate || (use == position_use::write && !f.wraps);
          if (boxed && box_allowed && out.width == 4 && (a == 0 || out.boxed)) {
            out.boxed = true;
            out.box_writable = (a == 0 || out.box_writable) && use != position_use::read && !f.wraps;
            out.box_format[a] = f;
            out.box_slack[a] = float_reading_slack(f);
          } else if (!boxed && use != position_use::sum && f.kind == number_kind::fixed && f.bytes == 4 &&
                     out.width == 4 && !out.boxed && (a == 0 || out.fixed_bits == static_cast<int>(f.fraction_bits))) {
            out.fixed_bits = static_cast<int>(f.fraction_bits);
          } else if (boxed && use == position_use::write) {
            throw_error("the position member is stored as " + format_name(f) +
                        ", which wraps at the vector's box: halos write ghost images past the global box, which "
                        "such a word cannot hold (keys, lists and migration read it). For halos store the "
                        "position as box_fixed<> and give the vector a box that extends the decomposition's "
                        "global box by the cutoff along periodic axes (set_box), or keep it as float");
          } else {
            throw_error("the position member is stored as " + format_name(f) +
                        " (stored_as): keys, neighbour lists, migration and halos take positions in their own "
                        "type or as fixed_point<std::int32_t, F> (float members, one F for every axis; keys and "
                        "lists also box_fixed on every axis), and reverse() sums a member in its own type only; "
                        "keep that member as it is for those calls");
          }
        } else if (out.fixed_bits >= 0 || out.boxed) {
          throw_error(
              "the position member stores some axes as fixed point or box_fixed and others as float; store all "
              "of them alike");
        }
        // No elements: no columns (no arithmetic on null), but the format all the same (a rank with
        // no particle checks a fixed-point range as the others do).
        if (storage.base() != nullptr) out.axis[a] = storage.column(l, 0);
        found = true;
      }
    }
    if (!found) throw_error("keys: the position member path does not lead to leaves of the element type");
  }
  return out;
}
template <class T, class L, class Pos>
position_columns position_columns_of(layout_storage<T, L> const& storage, Pos const& position) {
  return position_columns_at(storage, position_leaves_of<T>(position));
}
// For calls that only read positions (the same columns: fixed-point positions are read and written).
template <class T, class L, class Pos>
position_columns readable_position_columns_of(layout_storage<T, L> const& storage, Pos const& position) {
  return position_columns_at(storage, position_leaves_of<T>(position), position_use::read);
}
// For migration by position: written where they wrap into the global box, except box_fixed<wrap>
// positions, which are read (their images are themselves).
template <class T, class L, class Pos>
position_columns migrated_position_columns_of(layout_storage<T, L> const& storage, Pos const& position) {
  return position_columns_at(storage, position_leaves_of<T>(position), position_use::migrate);
}
// For reverse(): a member summed in its own type.
template <class T, class L, class Member>
position_columns summed_member_columns_of(layout_storage<T, L> const& storage, Member const& member) {
  return position_columns_at(storage, position_leaves_of<T>(member), position_use::sum);
}

// Positions stored as fixed point hold [-2^(31 - F), 2^(31 - F)) (less 2^(7 - F): a float just below
// the end rounds onto it). Calls that write positions (migration wraps into the box, halos shift
// ghosts up to `margin` past it, along periodic axes only) check that all they may write fits,
// before anything moves. (A ghost whose owner drifts further before the halo is built again is
// caught where it is written: store_coordinate.)
// Writable box_fixed positions: the vector's box must hold the same range (its end to within a
// step: a box given exactly as [lo - margin, hi + margin) may end a few ulps short, frame_of).
inline void check_fixed_position_range(position_columns const& p, std::array<double, 3> const& lo,
                                       std::array<double, 3> const& hi, std::array<bool, 3> const& periodic,
                                       double margin, char const* call) {
  for (unsigned a = 0; p.box_writable && a < p.dims; ++a) {
    stored_format const& f = p.box_format[a];
    if (periodic[a] && (f.origin > lo[a] - margin || box_end(f) + f.step < hi[a] + margin)) {
      throw_error(std::string(call) + ": positions are stored as " + format_name(f) +
                  " relative to the vector's box, which along axis " + std::to_string(a) + " is [" +
                  exact_text(f.origin) + ", " + exact_text(box_end(f)) + "), but this call may write [" +
                  exact_text(lo[a] - margin) + ", " + exact_text(hi[a] + margin) + "] (" +
                  (margin > 0 ? "ghost images up to the cutoff past the global box" : "images inside the global box") +
                  "); give the vector a box that holds it (set_box); nothing was moved");
    }
  }
  if (p.fixed_bits < 0) return;
  double const end = std::ldexp(1.0, 31 - p.fixed_bits) - std::ldexp(1.0, 7 - p.fixed_bits);
  for (unsigned a = 0; a < p.dims; ++a) {
    if (periodic[a] && (lo[a] - margin < -end || hi[a] + margin > end)) {
      throw_error(std::string(call) + ": positions are stored as fixed_point<std::int32_t, " +
                  std::to_string(p.fixed_bits) + ">, which holds [" + std::to_string(-end) + ", " +
                  std::to_string(end) + "], but this call may write [" + std::to_string(lo[a] - margin) + ", " +
                  std::to_string(hi[a] + margin) + "] along axis " + std::to_string(a) +
                  "; store them with fewer fraction bits (or keep them as float); nothing was moved");
    }
  }
}

inline void check_box(box const& b, unsigned dims) {
  for (unsigned a = 0; a < dims; ++a) {
    if (!(std::isfinite(b.lo[a]) && std::isfinite(b.hi[a]) && b.hi[a] > b.lo[a])) {
      throw_error("keys: the box needs finite lo < hi on every axis; axis " + std::to_string(a) +
                  " has lo = " + std::to_string(b.lo[a]) + ", hi = " + std::to_string(b.hi[a]));
    }
  }
}

template <class Key> constexpr unsigned max_levels(unsigned dims) {
  return static_cast<unsigned>(8 * sizeof(Key)) / dims;
}

template <class Key, class S, class T, class L, class Pos>
key_array<Key, S> curve_keys(curve kind, layout_storage<T, L> const& storage, std::size_t n, Pos const& position,
                             box const& b, reorder_plan& plan, int levels) {
  auto const columns = readable_position_columns_of(storage, position);
  check_box(b, columns.dims);
  unsigned const most = max_levels<Key>(columns.dims);
  if (levels < 0 || static_cast<unsigned>(levels) > most) {
    throw_error("keys: " + std::to_string(levels) + " levels do not fit a " + std::to_string(8 * sizeof(Key)) +
                "-bit key in " + std::to_string(columns.dims) + "-D (at most " + std::to_string(most) +
                "; 0 picks the most)");
  }
  key_spec spec;
  spec.kind = kind;
  spec.key_bytes = sizeof(Key);
  spec.dims = columns.dims;
  spec.periodic = b.periodic_axes();
  spec.lo = b.lo;
  spec.hi = b.hi;
  spec.levels = levels == 0 ? most : static_cast<unsigned>(levels);
  for (unsigned a = 0; a < columns.dims; ++a) spec.grid[a] = std::uint64_t{1} << spec.levels;
  auto const keys = compute_keys(plan, kind_of_space<S>, spec, columns, n);
  key_array<Key, S> out;
  out.data = static_cast<Key const*>(keys.data);
  out.generation = keys.generation;
  out.size = n;
  out.end_bit = static_cast<int>(spec.levels * columns.dims);
  return out;
}

template <class Key, class S, class T, class L, class Pos>
key_array<Key, S> cell_keys_of(layout_storage<T, L> const& storage, std::size_t n, Pos const& position, box const& b,
                               double cell_size, reorder_plan& plan) {
  auto const columns = readable_position_columns_of(storage, position);
  check_box(b, columns.dims);
  if (!(std::isfinite(cell_size) && cell_size > 0)) {
    throw_error("cell_keys: the cell size must be positive and finite, got " + std::to_string(cell_size));
  }
  key_spec spec;
  spec.kind = curve::cell;
  spec.key_bytes = sizeof(Key);
  spec.dims = columns.dims;
  spec.periodic = b.periodic_axes();
  spec.lo = b.lo;
  spec.hi = b.hi;
  std::uint64_t cells = 1;
  key_array<Key, S> out;
  for (unsigned a = 0; a < columns.dims; ++a) {
    double const count = std::floor((b.hi[a] - b.lo[a]) / cell_size);
    if (count >= 4294967295.0) throw_error("cell_keys: more than 2^32 cells along axis " + std::to_string(a));
    out.grid[a] = static_cast<std::uint32_t>(std::max(1.0, count));
    spec.grid[a] = out.grid[a];
    // Keys must stay below 2^bits (and the product must not wrap around in 64 bits).
    if (static_cast<double>(cells) * spec.grid[a] >= std::ldexp(1.0, 8 * sizeof(Key))) {
      throw_error("cell_keys: the grid has too many cells for a " + std::to_string(8 * sizeof(Key)) +
                  "-bit key; use cell_keys<std::uint64_t> or a larger cell size");
    }
    cells *= spec.grid[a];
  }
  auto const keys = compute_keys(plan, kind_of_space<S>, spec, columns, n);
  out.data = static_cast<Key const*>(keys.data);
  out.generation = keys.generation;
  out.size = n;
  out.end_bit = std::max(1, static_cast<int>(std::bit_width(cells - 1)));
  out.cells = cells;
  return out;
}

// A call on a view over user memory said to be in space S: every blob must be there (a CUDA
// build checks the pointers; a host pointer handed to a device call is refused instead of read by
// the GPU), and the work goes to the plan's stream, so a space naming another stream (device{s})
// is a mistake that would otherwise be silent.
template <class S, class T, class L>
void check_view_call(S const& space, view<T, L> const& v, reorder_plan const& plan, char const* call) {
  if constexpr (std::is_same_v<S, device>) {
    if (space.stream != default_stream && space.stream != plan.stream()) {
      throw_error(std::string(call) +
                  ": the space names a stream other than the plan's; the plan's stream runs the work, so "
                  "give the stream to the plan (reorder_plan(s) or plan.set_stream(s)) and pass coalesce::device{}");
    }
  }
  if (v.size() == 0) return;
  auto const& blobs = v.storage().blobs;
  for (std::size_t b = 0; b < blobs.size(); ++b) {
    std::string const what = std::string(call) + ": blob " + std::to_string(b) + " of the view";
    check_space(kind_of_space<S>, blobs[b], what.c_str());
  }
}

}  // namespace detail

// Row-major cell index (x fastest) on a grid of cells at least cell_size wide:
// floor((hi - lo) / cell_size) cells per axis, at least 1. Key = (cz * ny + cy) * nx + cx.
template <class Key = std::uint32_t, class T, class L, class S, class Pos>
[[nodiscard]] key_array<Key, S> cell_keys(vector<T, L, S> const& v, Pos const& position, box const& b, double cell_size,
                                          reorder_plan& plan) {
  return detail::cell_keys_of<Key, S>(v.storage(), v.size(), position, b, cell_size, plan);
}
// The same over a view of memory the program owns, in space S (coalesce::host{} or
// coalesce::device{}): keys without copying the particles into a coalesce::vector. The work goes
// to the plan's stream (device{s} with another stream is an error).
template <class Key = std::uint32_t, class S, class T, class L, class Pos>
requires space<S>
[[nodiscard]] key_array<Key, S> cell_keys(S space, view<T, L> const& v, Pos const& position, box const& b,
                                          double cell_size, reorder_plan& plan) {
  detail::check_view_call(space, v, plan, "cell_keys");
  return detail::cell_keys_of<Key, S>(v.storage(), v.size(), position, b, cell_size, plan);
}

// Z-order (Morton) keys: each axis quantized to `levels` bits (0: as many as the key holds,
// 10 per axis for 32-bit 3-D keys, 21 for 64-bit), bits interleaved x lowest.
template <class Key = std::uint32_t, class T, class L, class S, class Pos>
[[nodiscard]] key_array<Key, S> morton_keys(vector<T, L, S> const& v, Pos const& position, box const& b,
                                            reorder_plan& plan, int levels = 0) {
  return detail::curve_keys<Key, S>(detail::curve::morton, v.storage(), v.size(), position, b, plan, levels);
}
// The same over a view of memory the program owns, in space S (as cell_keys on a view).
template <class Key = std::uint32_t, class S, class T, class L, class Pos>
requires space<S>
[[nodiscard]] key_array<Key, S> morton_keys(S space, view<T, L> const& v, Pos const& position, box const& b,
                                            reorder_plan& plan, int levels = 0) {
  detail::check_view_call(space, v, plan, "morton_keys");
  return detail::curve_keys<Key, S>(detail::curve::morton, v.storage(), v.size(), position, b, plan, levels);
}

// Hilbert keys (Skilling's transpose algorithm): like Morton, but consecutive keys are always
// neighbouring cells, so runs of the sorted order stay compact.
template <class Key = std::uint32_t, class T, class L, class S, class Pos>
[[nodiscard]] key_array<Key, S> hilbert_keys(vector<T, L, S> const& v, Pos const& position, box const& b,
                                             reorder_plan& plan, int levels = 0) {
  return detail::curve_keys<Key, S>(detail::curve::hilbert, v.storage(), v.size(), position, b, plan, levels);
}
// The same over a view of memory the program owns, in space S (as cell_keys on a view).
template <class Key = std::uint32_t, class S, class T, class L, class Pos>
requires space<S>
[[nodiscard]] key_array<Key, S> hilbert_keys(S space, view<T, L> const& v, Pos const& position, box const& b,
                                             reorder_plan& plan, int levels = 0) {
  detail::check_view_call(space, v, plan, "hilbert_keys");
  return detail::curve_keys<Key, S>(detail::curve::hilbert, v.storage(), v.size(), position, b, plan, levels);
}

}  // namespace coalesce
