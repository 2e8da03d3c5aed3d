// coalesce/mpi/migrate.hpp - particles over MPI ranks: a Cartesian decomposition of the box and the
// migration of particles that left their rank's subdomain (target coalesce::mpi, CMake option
// COALESCE_ENABLE_MPI=AUTO|ON|OFF; the core never needs MPI).
//
//   coalesce::mpi::decomposition const d(MPI_COMM_WORLD, box);    // MPI_Cart_create over the ranks
//   d.owner(position);  d.subdomain();  d.neighbor(0, +1);        // who owns what, who is next
//   auto moved = coalesce::mpi::migrate(d, particles, &Particle::pos, charges);  // leavers moved
//   coalesce::mpi::migrate(coalesce::mpi::unordered, d, particles, &Particle::pos); // order not kept
//   auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);  // ghosts (mpi_halo.hpp)
//
// migrate() moves every element whose position (or given destination rank) belongs to another
// rank: the ranks exchange counts, each rank sends one message per destination holding all the
// leavers' fields (extra arrays after them; on host memory packed from where they are in the pass
// that closes up the stayers, on GPU memory after one fused permutation of every column),
// receivers append what arrives, and nothing is left as a hole. The order afterwards is
// deterministic: the elements that stayed, in their order, then the arrivals by source rank
// ascending, each in its sender's order. Extra arrays (std::vector<U> or coalesce::vector, one
// element per particle) follow their particles. A code that sorts its particles next does not
// need that order: migrate(coalesce::mpi::unordered, d, particles, ...) fills the leavers' slots
// from the tail on host memory (the stayers past the last kept slot move, nothing else; the
// lowest such slot takes the lowest such stayer).
//
// Bad input is agreed on collectively before any data moves: a destination outside the
// communicator, or a position that is not finite (or outside the box along an open axis) on any rank makes
// every rank throw the same coalesce::error naming the first such rank, element and value; no
// rank is left waiting and nothing has moved.
//
// Memory: the particles and every extra array in one kind of memory, host or GPU (a
// coalesce::device_vector and device arrays in CUDA builds). Finding the leavers, packing and
// unpacking run where the data is (GPU kernels for GPU memory, on the decomposition's stream);
// MPI gets GPU pointers when the decomposition's transport is device_pointers (a CUDA-aware MPI),
// otherwise each message is staged through page-locked host memory. Every call waits for its
// messages: the data is in place when it returns.
//
// Streams (the one rule of coalesce/memory/stream.hpp): every call that runs work takes a stream
// last, coalesce::default_stream when left out; these calls take a decomposition or a halo plan,
// whose stream (set_stream) is theirs, as a reorder_plan's is.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../memory/array.hpp"
#include "../memory/particle_array.hpp"
#include "../reorder/indexed_moves.hpp"
#include "../core/error.hpp"
#include "../reorder/keys.hpp"
#include "../reorder/reorder.hpp"
#include "../memory/stream.hpp"
#include "../memory/vector.hpp"
#include "communicator.hpp"

namespace coalesce::mpi {

// A regular Cartesian decomposition of a box over the ranks of a communicator (MPI_Cart_create
// on a duplicate of it), periodic along the axes where the box is (or where `periodic` says, per
// axis: a channel periodic along x only). A communicator with geometry: owner() of a position,
// neighbor() along an axis. Move-only.
class decomposition : public communicator {
 public:
  // ranks_per_axis: 0 lets MPI_Dims_create choose; dims: 2 or 3 (a 2-D box ignores z). Collective
  // over comm's ranks (MPI_Cart_create). Throws coalesce::error for other dims, a box empty or not
  // finite along an axis, or rank counts that do not make the communicator's size.
  decomposition(MPI_Comm comm, box const& global, unsigned dims = 3, std::array<int, 3> ranks_per_axis = {0, 0, 0});
  // The same with periodicity per axis given (it overrides the box's edges).
  decomposition(MPI_Comm comm, box const& global, unsigned dims, std::array<int, 3> ranks_per_axis,
                std::array<bool, 3> periodic);

  unsigned dims() const { return dims_; }                       // 2 or 3
  std::array<int, 3> ranks_per_axis() const { return ranks_; }  // x, y, z; their product is size()
  std::array<int, 3> coords() const { return coords_; }         // this rank's place in that grid
  box const& global() const { return global_; }                 // the whole box, as given
  // Whether positions wrap along `axis` (owner() wraps them; a halo's ghosts across that edge are
  // periodic images); an open axis ends at the box.
  bool periodic(unsigned axis) const { return axis < 3 && periodic_[axis]; }
  // This rank's part of the box: [lo, hi) per axis.
  box subdomain() const;
  // The rank owning a position (periodic axes wrap it first), or -1 when it is not finite or
  // lies outside the box along an open axis.
  int owner(std::array<double, 3> const& position) const;
  // The rank next to this one along `axis` in `direction` (+1 or -1); MPI_PROC_NULL past an open edge.
  int neighbor(unsigned axis, int direction) const;
  // The grid as GPU kernels see it (owner() on the GPU).
  coalesce::detail::owner_grid grid() const;

 private:
  unsigned dims_ = 3;
  std::array<int, 3> ranks_{1, 1, 1};
  std::array<int, 3> coords_{0, 0, 0};
  std::array<bool, 3> periodic_{true, true, true};
  box global_{};
};

// What migrate() did on this rank.
struct migration_report {
  std::size_t kept = 0;      // elements that stayed on this rank
  std::size_t sent = 0;      // elements this rank sent away
  std::size_t received = 0;  // elements that arrived
};

}  // namespace coalesce::mpi

namespace coalesce::detail {

// Agrees on the first bad element over all ranks (local: this rank's first bad element,
// whole_call for bad input that is no one element's (a size, a cutoff, a box), or -1; with its
// value in words); when any rank has one, every rank throws the same error.
inline constexpr long long whole_call = std::numeric_limits<long long>::max();
void agree_on_errors(MPI_Comm comm, long long local_bad, std::string const& local_value, char const* what);

// The 1-D columns of per-particle arrays in the order they travel: a message of `count` elements
// holds one segment per column (count elements of its width, each segment starting 16-byte
// aligned), whatever the arrays' layouts, so sender and receiver need not share a layout.
struct message_columns {
  memory_kind kind = memory_kind::host;
  bool kind_set = false;
  std::vector<coalesce::column_ref> columns;
  std::vector<std::size_t> widths;
  std::vector<int> types;  // coalesce::detail::scalar_type per column, -1 when not summable
  std::size_t bytes(std::size_t count) const;
  std::size_t element_bytes() const;  // of one element, all columns
  void add(memory_kind k, coalesce::column_ref c, std::size_t width, int type, char const* what);
};
// Elements from.at(k), k < count, of every column into a message; a message into elements to.at(k);
// a message added into elements to.at(k) (distinct), column types permitting. Queued on `stream`.
void pack(message_columns const& m, std::size_t count, index_map from, std::byte* message, void* stream);
// Part of a message of `total` elements: its elements [first, first + count) from from.at(k), k <
// count (a message gathered from two sources, each packing its part).
void pack_part(message_columns const& m, std::size_t total, std::size_t first, std::size_t count, index_map from,
               std::byte* message, void* stream);
void unpack(message_columns const& m, std::size_t count, std::byte const* message, index_map to, void* stream);
void unpack_sum(message_columns const& m, std::size_t count, std::byte const* message, index_map to, void* stream);

// The messages of a migration: send_counts[r] elements of the columns `m` (packed by destination
// in rank order, in memory of `kind`, after the work on `stream`) to rank r. Counts go first
// (MPI_Alltoall on the host), then point-to-point messages. Returns the received messages,
// packed by source rank, in memory of `kind` (inside `buffers`), and received_counts[r] from each rank.
// `expected` (a plan's replay): the counts to receive are known, so no counts travel; a message
// of another size is an error.
std::byte const* exchange(MPI_Comm comm, memory_kind kind, mpi::transport how, void* stream, message_columns const& m,
                          std::byte const* send, std::vector<std::size_t> const& send_counts,
                          std::vector<std::size_t>& received_counts, message_buffers& buffers,
                          std::vector<std::size_t> const* expected = nullptr);
// Every rank's counts[r] for rank r, exchanged (MPI_Alltoall): what each rank has for this one.
std::vector<std::size_t> exchange_counts(MPI_Comm comm, std::vector<std::size_t> const& counts);
// A migration's counts and its agreement on bad input in one MPI_Alltoall: send_counts[r] to rank
// r and the element size; returns what each rank sends this one (then pass them to exchange() as
// `expected`). When any rank has bad input (local_bad, local_value: as agree_on_errors) every
// rank throws the same error, as agree_on_errors does, and nothing has moved.
std::vector<std::size_t> exchange_counts_agreeing(MPI_Comm comm, std::vector<std::size_t> const& send_counts,
                                                  std::size_t element_bytes, long long local_bad,
                                                  std::string const& local_value, char const* what);
// The host path of a migration, in place: the `leaving` leavers (ascending, find_leavers) packed
// into `send` by destination (send_counts, message by message in rank order) and the stayers
// closed up in order (keep_order) or the holes below the kept count filled from the tail
// (detail::pack_and_close_up), one pass over the columns when all leavers go to one rank.
void pack_and_close_up(message_columns const& m, std::size_t n, std::uint32_t const* leavers, std::size_t leaving,
                       int const* destination, int self, std::vector<std::size_t> const& send_counts, bool keep_order,
                       std::byte* send, message_buffers& buffers);
// One message of count[k] elements to to[k] and one from from[k] (MPI_PROC_NULL: none), for k
// = 0 and 1 at once, counts first (messages 0 and 1 back to back in `send` and in the result,
// distinct tags, so to[0] == to[1] is fine); returns the received messages in memory of `kind`
// and their element counts. `expected` (a plan's replay): the counts to receive are known, so no
// counts travel; a message of another size is an error. An `m` of no columns: the counts only.
std::byte const* sendrecv_pair(MPI_Comm comm, memory_kind kind, mpi::transport how, void* stream,
                               message_columns const& m, std::byte const* send, std::array<std::size_t, 2> count,
                               std::array<int, 2> to, std::array<int, 2> from,
                               std::array<std::size_t, 2> const* expected, std::array<std::size_t, 2>& received,
                               message_buffers& buffers);

// A position's coordinates read back to the host (error messages).
std::array<double, 3> read_position(memory_kind kind, coalesce::detail::position_columns const& c, std::size_t i);

// Per-leaf scalar types of U (for sums), -1 for a leaf that is not a float, double or 32/64-bit integer.
template <class E> constexpr int scalar_code() {
  if constexpr (std::is_arithmetic_v<E> && !std::is_same_v<E, bool> && (sizeof(E) == 4 || sizeof(E) == 8)) {
    return static_cast<int>(coalesce::detail::scalar_type_of<E>());
  } else {
    return -1;
  }
}
template <class U> constexpr auto leaf_scalar_codes() {
  return []<std::size_t... L>(std::index_sequence<L...>) {
    return std::array<int, sizeof...(L)>{scalar_code<typename reflect::leaf_t<U, L>::type>()...};
  }
  (std::make_index_sequence<reflect::leaf_count_v<U>>{});
}
template <class U> constexpr bool summable() {
  if constexpr (std::is_arithmetic_v<U>) {
    return scalar_code<U>() >= 0;
  } else {
    for (int code : leaf_scalar_codes<U>()) {
      if (code < 0) return false;
    }
    return true;
  }
}

// The columns of one per-particle array: a coalesce::vector's leaf columns (any layout), or the
// leaves of a std::vector's elements (host memory) as strided columns.
template <class T, class L, class S> void add_columns(message_columns& m, vector<T, L, S>& v, char const* what) {
  constexpr auto codes = leaf_scalar_codes<T>();
  using storage = coalesce::layout_storage<T, L>;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    // A leaf stored in another format moves as its stored bytes, and is not summed by reverse().
    // A bit-packed field other than its word's carrier has no bytes: it moves with the word.
    if (storage::leaf_bytes(l) == 0) return;
    m.add(coalesce::detail::kind_of_space<S>, v.storage().column(l, j), storage::leaf_bytes(l),
          storage::natural(l) ? codes[l] : -1, what);
  });
}
// coalesce::array, std::vector, span_in: contiguous elements, a column per leaf of the element.
template <class A>
requires coalesce::detail::array_traits<A>::contiguous void add_columns(message_columns& m, A& a, char const* what) {
  using U = typename coalesce::detail::array_traits<A>::element_type;
  static_assert(std::is_trivially_copyable_v<U>, "coalesce::mpi: per-particle arrays hold trivially copyable elements");
  static_assert(std::is_arithmetic_v<U> || reflect::reflectable<U>,
                "coalesce::mpi: array elements must be arithmetic or reflectable");
  auto* base = reinterpret_cast<std::byte*>(coalesce::detail::array_traits<A>::data(a));
  constexpr auto kind = coalesce::detail::memory_of_array<A>;
  if constexpr (std::is_arithmetic_v<U>) {
    m.add(kind, coalesce::column_ref{base, sizeof(U)}, sizeof(U), scalar_code<U>(), what);
  } else {
    constexpr auto codes = leaf_scalar_codes<U>();
    reflect::for_each_column<U>([&](std::size_t l, std::size_t j) {
      auto const& leaf = reflect::leaf_table_v<U>[l];
      m.add(kind, coalesce::column_ref{base + leaf.offset + j * leaf.size, sizeof(U)}, leaf.size, codes[l], what);
    });
  }
}
// True on every rank when every rank passed the same box (collective).
inline bool same_box_on_every_rank(MPI_Comm comm, coalesce::box const& b) {
  std::array<double, 6> low{}, high{};
  for (int a = 0; a < 3; ++a) low[a] = high[a] = b.lo[a], low[3 + a] = high[3 + a] = b.hi[a];
  MPI_Allreduce(MPI_IN_PLACE, low.data(), 6, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, high.data(), 6, MPI_DOUBLE, MPI_MAX, comm);
  return low == high;
}
// box_fixed members travel between ranks as their stored fractions: every rank's vector must hold
// them in one box. Collective (every rank calls it with arrays of the same types), so every rank
// throws alike. Other arrays: nothing to check.
template <class A> void check_boxes_agree(MPI_Comm, A const&, char const*) {}
// Positions stored as box_fixed<wrap> (migration by position, read only): along the decomposition's
// periodic axes the vector's box must be its global box (the same frame: origin and length,
// compared exactly as set_box stored them), so that every stored position is inside it and its
// image there is itself. (Clamped axes need nothing: a position outside the global box is reported
// by the owner search. box_fixed<> positions are written by the wrap: check_fixed_position_range.)
// Collective: a rank whose box differs makes every rank throw.
template <class T, class L, class S> void check_position_box(mpi::decomposition const& d, vector<T, L, S> const& v,
                                                             coalesce::detail::position_columns const& columns) {
  if constexpr (layout_storage<T, L>::boxed) {  // (the same layout on every rank: all of them agree here)
    std::string why;
    auto const mine = v.storage().frame;
    auto const global = coalesce::detail::frame_of(d.global(), "migrate");
    bool const read_only = columns.boxed && !columns.box_writable;
    for (unsigned a = 0; read_only && a < std::min(columns.dims, d.dims()) && why.empty(); ++a) {
      if (d.periodic(a) && (mine.origin[a] != global.origin[a] || mine.length[a] != global.length[a])) {
        why = "the positions are stored as box_fixed relative to the vector's box, whose periodic axis " +
              std::to_string(a) + " starts at " + exact_text(mine.origin[a]) + " with length " +
              exact_text(mine.length[a]) + " where the decomposition's global box starts at " +
              exact_text(global.origin[a]) + " with length " + exact_text(global.length[a]) +
              "; give the vector the decomposition's box (set_box(d.global()))";
      }
    }
    agree_on_errors(d.comm(), why.empty() ? -1 : whole_call, why, "migrate");
  }
}
template <class T, class L, class S> void check_boxes_agree(MPI_Comm comm, vector<T, L, S> const& v, char const* what) {
  if constexpr (layout_storage<T, L>::boxed) {
    if (!same_box_on_every_rank(comm, v.get_box()))
      throw_error(std::string(what) +
                  ": the particles' box (set_box) differs between ranks; box_fixed members "
                  "travel as fractions of it, so every rank must give its vector the same box");
  }
}

template <class... Arrays> message_columns columns_of(char const* what, Arrays&... arrays) {
  message_columns m;
  (add_columns(m, arrays, what), ...);
  return m;
}

template <class T, class L, class S, class... Extra> constexpr void check_same_memory() {
  static_assert(!device_is_gpu || ((memory_of_array<Extra> == coalesce::detail::kind_of_space<S>)&&...),
                "coalesce::mpi: the extra arrays must be in the particles' memory (a device_vector's companions are "
                "device_vectors; a std::vector is host memory)");
}

// True for GPU memory: the only memory whose work is queued on a stream. Host memory in a CUDA
// build makes no CUDA call (a CUDA build must run on host memory where no GPU or driver exists).
template <class S> inline constexpr bool on_gpu = device_is_gpu&& std::is_same_v<S, coalesce::device>;
template <class... Arrays> inline constexpr bool any_on_gpu = device_is_gpu &&
                                                              ((memory_of_array<Arrays> == memory_kind::device) || ...);

// Keeps the first `kept` elements and grows to `total`: the arrivals are unpacked behind them, so
// the growth does not fill them first (a second write of every arrival: 10 % leaving went
// 0.86-0.91x -> 0.78-0.85x the hand-written code on host memory, docs/performance.md).
template <class A> void resize_to(A& a, std::size_t kept, std::size_t total) {
  static_assert(coalesce::detail::array_traits<A>::resizable,
                "coalesce::mpi: migrate changes the number of particles, so its arrays must grow: a span_in over your "
                "memory cannot; pass a coalesce::array or coalesce::vector");
  coalesce::detail::array_traits<A>::resize(a, kept);
  coalesce::detail::array_traits<A>::resize_for_overwrite(a, total);
}

// Resizes per-particle storage outside any stream's work: the work queued on `s` first, the
// resize's own copies and fills (the default stream) finished after. A fill left running on the
// default stream would race with unpacks on a non-blocking stream of the user's and zero the
// arrivals (found by distributed_md at 4 ranks on 2 GPUs).
template <class... Arrays>
void resize_in_order(coalesce::stream s, std::size_t kept, std::size_t total, Arrays&... arrays) {
  if constexpr (any_on_gpu<Arrays...>) coalesce::synchronize(s);
  (resize_to(arrays, kept, total), ...);
  if constexpr (any_on_gpu<Arrays...>) {
    coalesce::synchronize(coalesce::default_stream);  // a vector made on a stream waits for it itself
  }
}

// The migration once the destinations (ints in the particles' memory) are known (its callers have
// checked that the boxes of box_fixed members agree between ranks).
// describe(i, destination) says in words why element i's destination is bad.
template <class T, class L, class S, class Describe, class... Extra>
mpi::migration_report migrate_to(bool keep_order, mpi::communicator const& d, vector<T, L, S>& particles,
                                 int const* destination, std::string size_error, Describe const& describe,
                                 Extra&... arrays) {
  check_same_memory<T, L, S, Extra...>();
  constexpr memory_kind kind = coalesce::detail::kind_of_space<S>;
  std::size_t const n = particles.size();
  void* const stream = d.stream().handle();
  std::size_t const self = static_cast<std::size_t>(d.rank());
  message_buffers& buffers = d.buffers();
  // Host memory: one pass finds the leavers (their indices, ascending) and counts them per rank;
  // nothing is permuted, the leavers are packed from where they are and the stayers close up in
  // place below. GPU memory: every element grouped by destination through one sort (stayers
  // first, then by rank), then one fused permutation of every column.
  constexpr bool permute = on_gpu<S>;
  reorder_plan& plan = buffers.grouping;  // kept: its scratch is reused call after call
  std::size_t first_bad = coalesce::detail::no_element;
  int bad_destination = 0;
  std::vector<std::size_t> count(static_cast<std::size_t>(d.size()), 0);
  std::uint32_t* leavers = nullptr;
  if (size_error.empty()) {
    if constexpr (permute) {
      plan.set_stream(d.stream());
      count = coalesce::detail::group_by_destination(plan, kind, destination, n, d.rank(), d.size(), first_bad,
                                                     bad_destination);
    } else {
      leavers = buffers.leavers_at_least(n);
      coalesce::detail::find_leavers(destination, n, d.rank(), d.size(), leavers, count.data(), first_bad,
                                     bad_destination);
    }
  }
  long long bad = size_error.empty() ? -1 : whole_call;
  if (first_bad != coalesce::detail::no_element) {
    bad = static_cast<long long>(first_bad);
    size_error = describe(first_bad, bad_destination);
  }
  // The counts travel with the agreement on bad input (one collective): every rank throws alike
  // before anything moved, or every rank knows what arrives.
  message_columns columns = columns_of("migrate", particles, arrays...);
  std::vector<std::size_t> send_counts(static_cast<std::size_t>(d.size()), 0);
  if (bad < 0) {
    send_counts = count;
    send_counts[self] = 0;
  }
  std::vector<std::size_t> const arriving =
      exchange_counts_agreeing(d.comm(), send_counts, columns.element_bytes(), bad, size_error, "migrate");

  mpi::migration_report report;
  report.kept = count[self];
  report.sent = n - report.kept;
  std::size_t total_send = 0;
  for (std::size_t c : send_counts) total_send += columns.bytes(c);
  std::byte* const send = buffers.send_at_least(kind, total_send, stream);
  if constexpr (permute) {
    // The leavers contiguous after the permutation: one message per destination, each column's
    // leavers segment after segment.
    if (report.sent > 0) {
      coalesce::apply(plan, particles, arrays...);
      columns = columns_of("migrate", particles, arrays...);  // the permuted columns may be new storage
      std::size_t first = report.kept, offset = 0;
      for (std::size_t r = 0; r < count.size(); ++r) {
        if (r == self) continue;
        pack(columns, count[r], index_map{nullptr, first}, send + offset, stream);
        offset += columns.bytes(count[r]);
        first += count[r];
      }
    }
  } else {
    // The stayers close up in order (each moves down by the leavers before it), or unordered the
    // leavers' slots below `kept` take the stayers at or past it (about the leavers' share of the
    // elements moves, not all); the leavers packed in the same pass.
    pack_and_close_up(columns, n, leavers, report.sent, destination, d.rank(), send_counts, keep_order, send, buffers);
  }
  std::vector<std::size_t> arrived;
  std::byte const* received =
      exchange(d.comm(), kind, d.transport(), stream, columns, send, send_counts, arrived, buffers, &arriving);

  // Keep the stayers, append the arrivals by source rank: no holes.
  for (std::size_t c : arrived) report.received += c;
  // Elements left, arrived or moved in place: lists built for the old order are stale now (on GPU
  // memory apply() above said so already; host memory moved them in place).
  if (report.sent + report.received > 0) particles.mark_reordered();
  std::size_t const total = report.kept + report.received;
  resize_in_order(d.stream(), report.kept, total, particles, arrays...);
  message_columns const into = columns_of("migrate", particles, arrays...);
  std::size_t first = report.kept;
  std::size_t offset = 0;
  for (std::size_t r = 0; r < arrived.size(); ++r) {
    unpack(into, arrived[r], received + offset, index_map{nullptr, first}, stream);
    offset += into.bytes(arrived[r]);
    first += arrived[r];
  }
  if constexpr (on_gpu<S>) coalesce::synchronize(d.stream());  // host memory: nothing queued, no CUDA call
  return report;
}

}  // namespace coalesce::detail

namespace coalesce::mpi {

// Pass as the first argument of migrate() when the order of the kept particles does not matter
// (a code that sorts them next): on host memory the leavers' slots are then filled from the tail,
// which moves about the leavers' share of the elements instead of every stayer behind the first
// hole. GPU memory permutes all columns in one pass either way (the order is kept).
struct unordered_t {};
inline constexpr unordered_t unordered{};  // the tag: migrate(coalesce::mpi::unordered, d, particles, ...)

}  // namespace coalesce::mpi

namespace coalesce::detail {
// migrate() by destination rank and by position, keeping the kept elements' order or not.
template <class T, class L, class S, class... Extra>
mpi::migration_report migrate_by_rank(bool keep_order, mpi::communicator const& d, vector<T, L, S>& particles,
                                      std::span<int const> destination, Extra&... arrays) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  std::size_t const n = particles.size();
  std::string size_error;
  if (destination.size() != n) {
    size_error = "the destination list has " + std::to_string(destination.size()) + " entries for " +
                 std::to_string(n) + " elements";
  }
  ((size_error.empty() && detail::particle_count(arrays) != n
        ? (void)(size_error = "an extra array has " + std::to_string(detail::particle_count(arrays)) +
                              " elements for " + std::to_string(n) + " particles")
        : (void)0),
   ...);
  auto const describe = [&](std::size_t, int rank) {
    return "destination rank " + std::to_string(rank) + ", outside [0, " + std::to_string(d.size()) + ")";
  };
  check_boxes_agree(d.comm(), particles, "migrate");  // (collective, as migrate_to's checks)
  (check_boxes_agree(d.comm(), arrays, "migrate"), ...);
  if (!size_error.empty() || !device_is_gpu || kind == coalesce::detail::memory_kind::host) {
    return detail::migrate_to(keep_order, d, particles, destination.data(), size_error, describe, arrays...);
  }
  int* const on_device = d.buffers().destinations_at_least(kind, n, d.stream().handle());
  coalesce::detail::copy_bytes(kind, on_device, coalesce::detail::memory_kind::host, destination.data(),
                               n * sizeof(int), d.stream().handle());
  return detail::migrate_to(keep_order, d, particles, on_device, size_error, describe, arrays...);
}

template <class T, class L, class S, class Pos, class... Extra>
mpi::migration_report migrate_by_position(bool keep_order, mpi::decomposition const& d, vector<T, L, S>& particles,
                                          Pos const& position, Extra&... arrays) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  std::size_t const n = particles.size();
  std::string size_error;
  ((size_error.empty() && detail::particle_count(arrays) != n
        ? (void)(size_error = "an extra array has " + std::to_string(detail::particle_count(arrays)) +
                              " elements for " + std::to_string(n) + " particles")
        : (void)0),
   ...);
  // box_fixed<wrap> positions are read only: relative to the decomposition's global box they lie
  // inside it already, so the wrap below writes none of them (checked on every rank, which throw
  // alike). box_fixed<> positions are wrapped by whole steps inside a box that holds the global box.
  auto const columns = coalesce::detail::migrated_position_columns_of(particles.storage(), position);
  check_position_box(d, particles, columns);
  check_boxes_agree(d.comm(), particles, "migrate");  // (collective: the range check below is then alike)
  (check_boxes_agree(d.comm(), arrays, "migrate"), ...);
  // Fixed-point positions: the wrap writes coordinates in [lo, hi]; the format must hold them (the
  // same layout and box on every rank: every rank throws alike).
  coalesce::detail::check_fixed_position_range(columns, d.global().lo, d.global().hi,
                                               {d.periodic(0), d.periodic(1), d.periodic(2)}, 0.0, "migrate");
  int* const dest = d.buffers().destinations_at_least(kind, n, d.stream().handle());
  coalesce::detail::owners_of(kind, columns, n, d.grid(), dest, d.stream().handle());
  auto const describe = [&](std::size_t i, int) {
    auto const p = detail::read_position(kind, columns, i);
    return "position (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ", " + std::to_string(p[2]) +
           "), which is not finite or lies outside the box along an open axis";
  };
  return detail::migrate_to(keep_order, d, particles, dest, size_error, describe, arrays...);
}
}  // namespace coalesce::detail

namespace coalesce::mpi {

// Moves the elements whose destination rank (one int per element, host memory) is another rank.
// Collective: every rank of the communicator (or decomposition) calls it; no geometry is needed. The kept elements stay in their order,
// the arrivals follow by source rank.
template <class T, class L, class S, class... Extra>
migration_report migrate(communicator const& d, vector<T, L, S>& particles, std::span<int const> destination,
                         Extra&... arrays) {
  return detail::migrate_by_rank(true, d, particles, destination, arrays...);
}
// The same without keeping the kept elements' order (unordered_t).
template <class T, class L, class S, class... Extra>
migration_report migrate(unordered_t, communicator const& d, vector<T, L, S>& particles,
                         std::span<int const> destination, Extra&... arrays) {
  return detail::migrate_by_rank(false, d, particles, destination, arrays...);
}

// The same with each element's destination the owner of its position (a member path, as for
// keys: &Particle::pos, or member_path(&Atom::pos)), computed where the particles are. A position
// that is not finite, or outside the box along an open axis, is an error on every rank.
template <class T, class L, class S, class Pos, class... Extra>
requires(!std::is_convertible_v<Pos, std::span<int const>>) migration_report
    migrate(decomposition const& d, vector<T, L, S>& particles, Pos const& position, Extra&... arrays) {
  return detail::migrate_by_position(true, d, particles, position, arrays...);
}
// The same without keeping the kept elements' order (unordered_t).
template <class T, class L, class S, class Pos, class... Extra>
requires(!std::is_convertible_v<Pos, std::span<int const>>) migration_report
    migrate(unordered_t, decomposition const& d, vector<T, L, S>& particles, Pos const& position, Extra&... arrays) {
  return detail::migrate_by_position(false, d, particles, position, arrays...);
}

}  // namespace coalesce::mpi
