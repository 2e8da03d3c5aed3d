// coalesce/mpi.hpp - particles over MPI ranks: a Cartesian decomposition of the box and the
// migration of particles that left their rank's subdomain (target coalesce::mpi, CMake option
// COALESCE_ENABLE_MPI=AUTO|ON|OFF; the core never needs MPI).
//
//   coalesce::mpi::decomposition const d(MPI_COMM_WORLD, box);    // MPI_Cart_create over the ranks
//   d.owner(position);  d.subdomain();  d.neighbor(0, +1);        // who owns what, who is next
//   auto moved = coalesce::mpi::migrate(d, particles, &Particle::pos, charges);  // leavers moved
//   auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);  // ghosts (mpi_halo.hpp)
//
// migrate() moves every element whose position (or given destination rank) belongs to another
// rank: the ranks exchange counts, each rank sends one message per destination holding all the
// leavers' fields (records packed by one fused permutation of every column, extra arrays after
// them), receivers append what arrives, and nothing is left as a hole. The order afterwards is
// deterministic: the elements that stayed, in their order, then the arrivals by source rank
// ascending, each in its sender's order. Extra arrays (std::vector<U> or coalesce::vector, one
// element per particle) follow their particles.
//
// Bad input is agreed on collectively before any data moves: a destination outside the
// communicator, or a position that is not finite (or outside a clamped box) on any rank makes
// every rank throw the same coalesce::error naming the first such rank, element and value; no
// rank is left waiting and nothing has moved.
//
// Memory: host vectors (and device vectors of a CPU build, which are host memory). Device vectors
// in GPU memory are not accepted yet (a compile-time message says so); copy them to a host_vector
// around the migration until then.
#pragma once
#include <mpi.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "error.hpp"
#include "keys.hpp"
#include "reorder.hpp"
#include "vector.hpp"

namespace coalesce::mpi {

// A regular Cartesian decomposition of a box over the ranks of a communicator (MPI_Cart_create
// on a duplicate of it; periodic along every axis when the box is periodic). Move-only.
class decomposition {
 public:
  // ranks_per_axis: 0 lets MPI_Dims_create choose; dims: 2 or 3 (a 2-D box ignores z).
  decomposition(MPI_Comm comm, box const& global, unsigned dims = 3, std::array<int, 3> ranks_per_axis = {0, 0, 0});
  ~decomposition();
  decomposition(decomposition&& other) noexcept;
  decomposition& operator=(decomposition&& other) noexcept;
  decomposition(decomposition const&) = delete;
  decomposition& operator=(decomposition const&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  unsigned dims() const { return dims_; }
  std::array<int, 3> ranks_per_axis() const { return ranks_; }
  std::array<int, 3> coords() const { return coords_; }
  box const& global() const { return global_; }
  // This rank's part of the box: [lo, hi) per axis.
  box subdomain() const;
  // The rank owning a position (periodic boxes wrap it first), or -1 when it is not finite or
  // lies outside a clamped box.
  int owner(std::array<double, 3> const& position) const;
  // The rank next to this one along `axis` in `direction` (+1 or -1); MPI_PROC_NULL past a clamped edge.
  int neighbor(unsigned axis, int direction) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  unsigned dims_ = 3;
  std::array<int, 3> ranks_{1, 1, 1};
  std::array<int, 3> coords_{0, 0, 0};
  box global_{};
};

struct migration_report {
  std::size_t kept = 0;      // elements that stayed on this rank
  std::size_t sent = 0;      // elements this rank sent away
  std::size_t received = 0;  // elements that arrived
};

namespace detail {

using coalesce::detail::throw_error;

// Agrees on the first bad element over all ranks (local: this rank's first bad element or -1,
// with its value in words); when any rank has one, every rank throws the same error.
void agree_on_errors(MPI_Comm comm, long long local_bad, std::string const& local_value, char const* what);

// Exchanges the per-destination byte buffers: send_bytes[r] bytes from `send` (packed by
// destination in rank order) to rank r; returns what arrived, packed by source rank in rank order,
// and received_bytes[r] from each rank. Counts first (MPI_Alltoall), then point-to-point messages
// to and from the ranks with something to send or receive.
std::vector<std::byte> exchange(MPI_Comm comm, std::vector<std::byte> const& send, std::vector<std::size_t> const& send_bytes,
                                std::vector<std::size_t>& received_bytes);

template <class T, class L, class S> constexpr void check_migratable() {
  static_assert(!device_is_gpu || std::is_same_v<S, host>,
                "coalesce::mpi::migrate: this vector is in GPU memory, which migrate() does not take yet; copy it to a "
                "coalesce::host_vector around the migration (host_vector<T, L> h = d; migrate(..., h); d = h;)");
}

// Element access to the extra arrays that follow their particles.
template <class U, class A> std::size_t size_of(std::vector<U, A> const& a) { return a.size(); }
template <class U, class L, class S> std::size_t size_of(coalesce::vector<U, L, S> const& a) { return a.size(); }
template <class U, class A> std::size_t element_bytes(std::vector<U, A> const&) { return sizeof(U); }
template <class U, class L, class S> std::size_t element_bytes(coalesce::vector<U, L, S> const&) { return sizeof(U); }

// Coordinate a of element i's position (float or double columns, host memory), and its setter.
inline double position_axis(coalesce::detail::position_columns const& c, unsigned a, std::size_t i) {
  void const* at = c.axis[a].address(i);
  return c.width == 4 ? static_cast<double>(*static_cast<float const*>(at)) : *static_cast<double const*>(at);
}
inline void set_position_axis(coalesce::detail::position_columns const& c, unsigned a, std::size_t i, double value) {
  void* at = c.axis[a].address(i);
  if (c.width == 4) {
    *static_cast<float*>(at) = static_cast<float>(value);
  } else {
    *static_cast<double*>(at) = value;
  }
}

// Elements [first, first + count) of a per-particle array (the particles themselves too) to and
// from the bytes of a message.
template <class U, class A> void pack(std::vector<U, A> const& a, std::size_t first, std::size_t count, std::byte* out) {
  static_assert(std::is_trivially_copyable_v<U>, "coalesce::mpi::migrate: extra arrays hold trivially copyable elements");
  std::memcpy(out, a.data() + first, count * sizeof(U));
}
template <class U, class L, class S> void pack(coalesce::vector<U, L, S> const& a, std::size_t first, std::size_t count, std::byte* out) {
  check_migratable<U, L, S>();
  auto const v = a.const_view();
  for (std::size_t k = 0; k < count; ++k) {
    U const record = v[first + k];
    std::memcpy(out + k * sizeof(U), &record, sizeof(U));
  }
}
template <class U, class A> void keep_and_reserve(std::vector<U, A>& a, std::size_t kept, std::size_t total) {
  a.resize(kept);
  a.resize(total);
}
template <class U, class L, class S> void keep_and_reserve(coalesce::vector<U, L, S>& a, std::size_t kept, std::size_t total) {
  a.resize(kept);
  a.resize(total);
}
template <class U, class A> void unpack(std::vector<U, A>& a, std::size_t first, std::size_t count, std::byte const* in) {
  std::memcpy(a.data() + first, in, count * sizeof(U));
}
template <class U, class L, class S> void unpack(coalesce::vector<U, L, S>& a, std::size_t first, std::size_t count, std::byte const* in) {
  auto v = a.view();
  for (std::size_t k = 0; k < count; ++k) {
    U record;
    std::memcpy(&record, in + k * sizeof(U), sizeof(U));
    v[first + k] = record;
  }
}
template <class U, class A> void permute(reorder_plan& plan, std::vector<U, A>& a) { coalesce::apply(plan, a); }
template <class U, class L, class S> void permute(reorder_plan& plan, coalesce::vector<U, L, S>& a) { coalesce::apply(plan, a); }

}  // namespace detail

// Moves the elements whose destination rank (one int per element, host memory) is another rank.
// Collective: every rank of the decomposition calls it.
template <class T, class L, class S, class... Extra>
migration_report migrate(decomposition const& d, vector<T, L, S>& particles, std::span<int const> destination,
                         Extra&... arrays) {
  detail::check_migratable<T, L, S>();
  std::size_t const n = particles.size();
  long long bad = -1;
  std::string bad_value;
  if (destination.size() != n) {
    bad = static_cast<long long>(std::min(destination.size(), n));
    bad_value = "the destination list has " + std::to_string(destination.size()) + " entries for " + std::to_string(n) + " elements";
  }
  (([&] {
     if (bad < 0 && detail::size_of(arrays) != n) {
       bad = 0;
       bad_value = "an extra array has " + std::to_string(detail::size_of(arrays)) + " elements for " + std::to_string(n) + " particles";
     }
   }()),
   ...);
  for (std::size_t i = 0; bad < 0 && i < n; ++i) {
    if (destination[i] < 0 || destination[i] >= d.size()) {
      bad = static_cast<long long>(i);
      bad_value = "destination rank " + std::to_string(destination[i]) + ", outside [0, " + std::to_string(d.size()) + ")";
    }
  }
  detail::agree_on_errors(d.comm(), bad, bad_value, "migrate");

  // One fused permutation of every column (and of the extra arrays): the elements that stay first,
  // in their order, then the leavers grouped by destination rank, each group in order.
  std::vector<std::uint32_t> keys(n);
  std::vector<std::size_t> count(static_cast<std::size_t>(d.size()), 0);
  for (std::size_t i = 0; i < n; ++i) {
    int const r = destination[i];
    keys[i] = r == d.rank() ? 0u : static_cast<std::uint32_t>(r) + 1u;
    if (r != d.rank()) ++count[static_cast<std::size_t>(r)];
  }
  migration_report report;
  report.sent = std::accumulate(count.begin(), count.end(), std::size_t{0});
  report.kept = n - report.sent;
  if (report.sent > 0) {
    reorder_plan plan;
    sort_by_key(particles, std::span<std::uint32_t const>(keys), plan);
    (detail::permute(plan, arrays), ...);
  }

  // One message per destination: its records, then each extra array's elements.
  std::size_t const record_bytes = sizeof(T) + (std::size_t{0} + ... + detail::element_bytes(arrays));
  std::vector<std::byte> send(report.sent * record_bytes);
  std::vector<std::size_t> send_bytes(count.size());
  {
    std::size_t first = report.kept;
    std::byte* out = send.data();
    for (std::size_t r = 0; r < count.size(); ++r) {
      send_bytes[r] = count[r] * record_bytes;
      detail::pack(particles, first, count[r], out);
      std::byte* extra = out + count[r] * sizeof(T);
      ((detail::pack(arrays, first, count[r], extra), extra += count[r] * detail::element_bytes(arrays)), ...);
      out += send_bytes[r];
      first += count[r];
    }
  }
  std::vector<std::size_t> received_bytes;
  std::vector<std::byte> const received = detail::exchange(d.comm(), send, send_bytes, received_bytes);
  report.received = received.size() / record_bytes;

  // Keep the stayers, append the arrivals by source rank: no holes.
  std::size_t const total = report.kept + report.received;
  detail::keep_and_reserve(particles, report.kept, total);
  (detail::keep_and_reserve(arrays, report.kept, total), ...);
  std::byte const* in = received.data();
  std::size_t first = report.kept;
  for (std::size_t r = 0; r < received_bytes.size(); ++r) {
    std::size_t const c = received_bytes[r] / record_bytes;
    detail::unpack(particles, first, c, in);
    std::byte const* extra = in + c * sizeof(T);
    ((detail::unpack(arrays, first, c, extra), extra += c * detail::element_bytes(arrays)), ...);
    in += received_bytes[r];
    first += c;
  }
  return report;
}

// The same with each element's destination the owner of its position (a member path, as for
// keys: &Particle::pos, or member_path(&Atom::pos)). A position that is not finite, or outside a
// clamped box, is an error on every rank.
template <class T, class L, class S, class Pos, class... Extra>
  requires(!std::is_convertible_v<Pos, std::span<int const>>)
migration_report migrate(decomposition const& d, vector<T, L, S>& particles, Pos const& position, Extra&... arrays) {
  detail::check_migratable<T, L, S>();
  auto const columns = coalesce::detail::position_columns_of(particles.storage(), position);
  std::vector<int> destination(particles.size());
  long long bad = -1;
  std::string bad_value;
  for (std::size_t i = 0; i < particles.size(); ++i) {
    std::array<double, 3> p{0, 0, 0};
    for (unsigned a = 0; a < columns.dims; ++a) p[a] = detail::position_axis(columns, a, i);
    destination[i] = d.owner(p);
    if (destination[i] < 0 && bad < 0) {
      bad = static_cast<long long>(i);
      bad_value = "position (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ", " + std::to_string(p[2]) +
                  "), which is not finite or lies outside the clamped box";
    }
  }
  detail::agree_on_errors(d.comm(), bad, bad_value, "migrate");  // every rank takes part, bad or not
  return migrate(d, particles, std::span<int const>(destination), arrays...);
}

}  // namespace coalesce::mpi

#include "mpi_halo.hpp"  // ghosts: build_halo, forward, reverse
