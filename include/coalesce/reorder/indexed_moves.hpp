// Type-erased moves of elements between columns through index lists, compiled once into
// libcoalesce.a (src/indexed_moves.cpp for host memory, src/indexed_moves_cuda.cu for GPU
// memory). They are the pack and unpack of messages between MPI ranks (coalesce/mpi.hpp): a
// message is a set of contiguous columns, filled from the particles' columns through the list of
// elements that leave (a gather), emptied into the particles' columns at the receiver (a copy to
// a range, or an indexed sum for forces on ghosts). Every call queues on `stream` (a
// cudaStream_t, null: the default stream) and waits only where it says so.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../memory/buffer.hpp"
#include "reorder_ops.hpp"

namespace coalesce::detail {

// Which element of a column the k-th moved element is: index[k], or first + k when index is null.
struct index_map {
  std::uint32_t const* index = nullptr;
  std::size_t first = 0;
  COALESCE_HOST_DEVICE std::size_t at(std::size_t k) const { return index != nullptr ? index[k] : first + k; }
};

// For k in [0, n): element dst.at(k) of every destination column from element src.at(k) of its
// source column, all columns in one pass. Index lists live in memory of `kind`.
void move_columns_indexed(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n, index_map src,
                          index_map dst, void* stream);

// The arithmetic types a sum adds (the leaves of a force, a virial, a count).
enum class scalar_type : unsigned char { f32, f64, i32, i64, u32, u64 };
template <class E> constexpr scalar_type scalar_type_of() {
  static_assert(std::is_arithmetic_v<E> && (sizeof(E) == 4 || sizeof(E) == 8),
                "coalesce::mpi::reverse sums leaves of float, double and 32- or 64-bit integers");
  if constexpr (std::is_floating_point_v<E>) return sizeof(E) == 4 ? scalar_type::f32 : scalar_type::f64;
  if constexpr (std::is_signed_v<E>) return sizeof(E) == 4 ? scalar_type::i32 : scalar_type::i64;
  return sizeof(E) == 4 ? scalar_type::u32 : scalar_type::u64;
}
struct column_sum {
  column_ref dst;
  column_ref src;
  scalar_type type = scalar_type::f32;
};
// For k in [0, n): element dst.at(k) += element src.at(k), per column. The destination elements
// of one call must be distinct (each is written by one k): no atomics, and the sums do not depend
// on scheduling.
void add_columns_indexed(memory_kind kind, column_sum const* columns, std::size_t count, std::size_t n, index_map src,
                         index_map dst, void* stream);

// Coordinate `axis` of elements [first, first + n) += shift, in the position's format (float,
// double or fixed point: store_coordinate).
void shift_column(memory_kind kind, position_columns const& position, unsigned axis, std::size_t first, std::size_t n,
                  double shift, void* stream);

// A face of a subdomain to select near: below (coordinates under `threshold`) or above (at least
// it); the indices go to `out` (room for the candidates, memory of the selection's kind).
struct face_selection {
  bool wanted = false;
  double threshold = 0;
  std::uint32_t* out = nullptr;
  std::size_t count = 0;  // set by select_near_faces
};
// The indices i in [first, n), ascending, whose coordinate `axis` (any position format) is below
// faces[0].threshold, and those at least faces[1].threshold, each face where wanted: in one pass
// over the coordinates on the host. Sets each face's count (waits for the counts).
void select_near_faces(memory_kind kind, position_columns const& position, unsigned axis, std::size_t first,
                       std::size_t n, face_selection (&faces)[2], void* stream);

// A regular grid of ranks over a box, numbered row-major (the numbering of MPI_Cart_create
// without reordering): the rank owning a position, -1 when it is not finite or outside the box
// along an open axis. The same arithmetic on host and GPU, so both agree to the bit.
struct owner_grid {
  std::array<double, 3> lo{};
  std::array<double, 3> hi{};
  std::array<int, 3> ranks{1, 1, 1};
  unsigned dims = 3;
  std::array<bool, 3> periodic{true, true, true};  // per axis
};
COALESCE_HOST_DEVICE inline int owner_rank(owner_grid const& g, double const* position) {
  int rank = 0;
  for (unsigned a = 0; a < 3; ++a) {
    int coord = 0;
    if (a < g.dims) {
      double const extent = g.hi[a] - g.lo[a];
      double t = position[a] - g.lo[a];
      if (!(t - t == 0.0)) return -1;  // NaN or infinite
      if (g.periodic[a]) {
        if (t < 0.0 || t >= extent) t -= floor(t / extent) * extent;
      } else if (t < 0.0 || t > extent) {
        return -1;
      }
      coord = static_cast<int>(t / extent * g.ranks[a]);
      coord = coord < 0 ? 0 : coord >= g.ranks[a] ? g.ranks[a] - 1 : coord;  // t == extent (or rounding): the last rank
    }
    rank = rank * g.ranks[a] + coord;
  }
  return rank;
}
// A coordinate outside the box's [lo, hi) along a periodic axis a, wrapped into it (the image inside
// the box, as owner_rank sees it); inside, clamped or not finite: unchanged.
COALESCE_HOST_DEVICE inline double wrapped_coordinate(owner_grid const& g, unsigned a, double x) {
  double const extent = g.hi[a] - g.lo[a];
  double t = x - g.lo[a];
  if (!g.periodic[a] || !(t - t == 0.0) || (t >= 0.0 && t < extent)) return x;
  t -= floor(t / extent) * extent;
  return g.lo[a] + t;
}
// A box_fixed word just moved into the global box by whole steps, moved on by the fewest steps that
// make the float it reads as lie in [lo, hi) (a value within half a float ulp below hi reads as hi,
// and its image below lo): what keys, lists, halos and owner_rank read is then inside, as float
// positions are after store_coordinate. Returns that reading.
COALESCE_HOST_DEVICE inline double settle_box_reading(owner_grid const& g, position_columns const& p, unsigned a,
                                                      std::size_t i) {
  stored_format const& f = p.box_format[a];
  auto* const at = reinterpret_cast<std::uint32_t*>(p.axis[a].address(i));
  double const last = power_of_two(32) - 1.0;
  auto const word_near = [&](float t) {  // the word nearest float t: its encoding, clamped to the box
    stored_format clamping = f;
    clamping.wraps = false;
    clamping.saturates = true;
    std::uint32_t word = 0;
    (void)encode_box_fraction(reinterpret_cast<std::byte*>(&word), t, clamping);
    return static_cast<double>(word);
  };
  auto const reading = [&](double q) { return static_cast<double>(box_read<float>(static_cast<std::uint32_t>(q), f)); };
  auto const below = [&](double q) { return reading(q) < g.lo[a]; };
  auto const above = [&](double q) { return reading(q) >= g.hi[a]; };
  double q = static_cast<double>(*at);
  bool const up = below(q);  // the side the word moves to: up from below lo, down from hi
  if (up || above(q)) {
    // Start at the word nearest the first float inside: the least at or above lo, the greatest
    // below hi; then step inwards while the reading is still outside.
    double const edge = up ? g.lo[a] : g.hi[a];
    float t = static_cast<float>(edge);
    if (up ? static_cast<double>(t) < edge : static_cast<double>(t) >= edge) t = next_toward<float>(t, up);
    q = word_near(t);
    while (up ? q < last && below(q) : q > 0.0 && above(q)) q += up ? 1.0 : -1.0;
  }
  *at = static_cast<std::uint32_t>(q);
  return reading(q);
}
// Coordinate a of element i wrapped in place into a periodic box (store_coordinate: a stored value
// that rounds onto hi is wrapped once more, to lo, so what is stored lies in [lo, hi) and a second
// migration moves nothing); returns the coordinate as stored.
COALESCE_HOST_DEVICE inline double wrap_in_place(owner_grid const& g, position_columns const& p, unsigned a,
                                                 std::size_t i) {
  double const x = coordinate_of(p, a, i);
  double const inside = wrapped_coordinate(g, a, x);
  if (inside == x) return x;
  // box_fixed<wrap> positions are read only: in the global box already, but a word in the last
  // steps can read as hi itself (where lo + (hi - lo) rounds above hi), whose image lo decides the
  // owner. Writable box_fixed positions (a box larger than the global one) move by whole steps; the
  // owner is that of what they then read, wrapped (a step's rounding may leave it a step outside).
  if (p.boxed) {
    if (!p.box_writable) return inside;
    shift_coordinate(p, a, i, inside - x);
    return settle_box_reading(g, p, a, i);
  }
  double stored = store_coordinate(p, a, i, inside);
  double const again = wrapped_coordinate(g, a, stored);
  if (again != stored) stored = store_coordinate(p, a, i, again);
  return stored;
}
// out[i] = owner_rank of element i's position. In a periodic box a position outside it is
// wrapped in place into the box first: a particle migrates as its image inside its new owner's
// subdomain, never as a point outside every subdomain (which the halo would not see).
void owners_of(memory_kind kind, position_columns const& position, std::size_t n, owner_grid const& grid, int* out,
               void* stream);

// keys[i] = 0 when dest[i] == self, dest[i] + 1 for another rank in [0, ranks), ranks + 1 for a
// destination outside (sorted last, found there).
COALESCE_HOST_DEVICE inline std::uint32_t destination_key(int r, int self, int ranks) {
  return r == self             ? 0u
         : r >= 0 && r < ranks ? static_cast<std::uint32_t>(r) + 1u
                               : static_cast<std::uint32_t>(ranks) + 1u;
}
void destination_keys(memory_kind kind, int const* dest, std::size_t n, int self, int ranks, std::uint32_t* keys,
                      void* stream);

// Host memory that the GPU copies to and from at full speed (page-locked in CUDA builds): the
// staging buffers of messages between ranks when MPI cannot take GPU pointers.
void* allocate_pinned(std::size_t bytes);
void deallocate_pinned(void* p) noexcept;

// "No such element" in the results below.
inline constexpr std::size_t no_element = static_cast<std::size_t>(-1);

// Groups elements by destination rank through the plan's sort: afterwards the plan's permutation
// lists the elements with dest == self first, then those for rank 0, 1, ... (self skipped), each
// group in its original order. Returns the number of elements per rank (counts[self]: those that
// stay). A destination outside [0, ranks) makes it return an empty vector and set first_bad to
// the lowest such element index and bad_value to its destination (the plan then holds no order).
std::vector<std::size_t> group_by_destination(reorder_plan& plan, memory_kind kind, int const* dest, std::size_t n,
                                              int self, int ranks, std::size_t& first_bad, int& bad_value);

// The host path of a migration (host memory only; GPU memory groups through the plan above and
// permutes). One pass over dest[0, n), as a hand-written code's counting pass: leavers[0, m) the
// elements whose destination is not `self`, ascending (room for n), counts[r] how many go to rank
// r (`ranks` entries; counts[self]: those that stay). Returns m. A destination outside [0, ranks)
// sets first_bad to the lowest such element and bad_value to its destination (then counts and
// leavers mean nothing); first_bad is no_element otherwise.
std::size_t find_leavers(int const* dest, std::size_t n, int self, int ranks, std::uint32_t* leavers,
                         std::size_t* counts, std::size_t& first_bad, int& bad_value);
// leavers[0, m) (ascending) grouped by destination rank ascending, each group in its order, into
// grouped[0, m) (a counting sort of the leavers only; counts as find_leavers left them).
void group_leavers(int const* dest, std::uint32_t const* leavers, std::size_t m, int self, int ranks,
                   std::size_t const* counts, std::uint32_t* grouped);
// Host memory, in place, in one pass over the columns (all columns of a stretch of elements
// before the next stretch, so blocked columns read each line once): the leavers (ascending, m of
// the n elements) packed into the contiguous columns .dst (element k from leaver k; a null .dst
// base: not packed), and the columns .src (the particles' own) closed up. keep_order: the stayers
// move to the front in their order (each by the number of leavers before it). Otherwise the
// leavers' slots below n - m take the stayers at or past n - m, the lowest slot the lowest such
// stayer, and no other element moves. fillers: scratch for m indices.
void pack_and_close_up(column_copy const* columns, std::size_t count, std::size_t n, std::uint32_t const* leavers,
                       std::size_t m, bool keep_order, std::uint32_t* fillers);

}  // namespace coalesce::detail
