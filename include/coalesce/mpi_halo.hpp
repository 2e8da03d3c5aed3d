// coalesce/mpi_halo.hpp - ghosts of the particles near each face of a rank's subdomain (included
// by coalesce/mpi.hpp).
//
//   auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);  // ghosts appended
//   coalesce::mpi::forward(halo, particles, &Particle::pos);   // each step: owners' positions -> ghosts
//   coalesce::mpi::forward(halo, charges);                     // any per-particle array, the same way
//   coalesce::mpi::reverse(halo, forces);                      // ghosts' force sums -> their owners
//
// Ghosts are copies of particles within `cutoff` of a face, received from the rank across that
// face, and appended after the owned particles (particles[0, halo.owned()) are owned,
// [halo.owned(), size()) ghosts). The exchange is staged along the axes, x then y then z, each
// stage sending what lies near the face among the owned particles and the ghosts of earlier
// stages, so edge and corner ghosts arrive in two or three hops with no diagonal messages. A
// particle crossing the global boundary of a periodic box arrives as its periodic image (the box
// length added to or subtracted from its position); a clamped box sends nothing past its edges.
//
// The plan keeps what each stage sent (indices and shifts) and how many ghosts it received, so
// forward() and reverse() re-plan nothing: forward runs the stages in order, sending the listed
// elements (positions shifted again); reverse runs them backwards, sending each stage's ghost
// values to the rank they came from, which adds them into the listed elements in list order (a
// fixed order: sums are reproducible run to run). Rebuild the plan after a migration.
//
// Bad input, agreed on by every rank before anything moves: a cutoff that is not positive, or
// larger than a subdomain's width along an axis with more than one rank (the ghosts of one hop
// would not cover it), and arrays of the wrong length.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "keys.hpp"
#include "mpi.hpp"
#include "reflect.hpp"
#include "vector.hpp"

namespace coalesce::mpi {

class halo_plan {
 public:
  std::size_t owned() const { return owned_; }
  std::size_t ghosts() const { return ghosts_; }

  struct stage {
    unsigned axis = 0;
    int direction = 0;                 // +1: sent to the rank above along axis, -1: below
    int to = 0, from = 0;              // ranks (MPI_PROC_NULL past a clamped edge)
    double received_shift = 0;         // added to the received ghosts' coordinate (a periodic image)
    std::vector<std::uint32_t> sent;   // indices of the elements sent, in order
    std::size_t first_ghost = 0;       // ghosts received: [first_ghost, first_ghost + received)
    std::size_t received = 0;
  };
  std::vector<stage> const& stages() const { return stages_; }
  MPI_Comm comm() const { return comm_; }

 private:
  template <class T, class L, class S, class Pos>
  friend halo_plan build_halo(decomposition const& d, vector<T, L, S>& particles, Pos const& position, double cutoff);
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::size_t owned_ = 0, ghosts_ = 0;
  std::vector<stage> stages_;
};

namespace detail {

// Sends `send_bytes` to `to` and receives from `from` (MPI_PROC_NULL: nothing), counts first.
std::vector<std::byte> sendrecv_bytes(MPI_Comm comm, std::vector<std::byte> const& send, int to, int from);

inline void add_to_axis(coalesce::detail::position_columns const& c, unsigned a, std::size_t i, double shift) {
  set_position_axis(c, a, i, position_axis(c, a, i) + shift);
}

// Adds b into a leaf by leaf (arithmetic leaves: force sums of vec3, double, ...).
template <class U> void add_into(U& a, U const& b) {
  if constexpr (std::is_arithmetic_v<U>) {
    a += b;
  } else {
    [&]<std::size_t... L>(std::index_sequence<L...>) {
      ((
           [&] {
             using E = typename reflect::leaf_t<U, L>::type;
             static_assert(std::is_arithmetic_v<E>, "coalesce::mpi::reverse: the values must have arithmetic leaves only");
             constexpr std::size_t offset = reflect::leaf_t<U, L>::offset;
             for (std::size_t j = 0; j < reflect::leaf_t<U, L>::extent; ++j) {
               E x, y;
               std::memcpy(&x, reinterpret_cast<std::byte const*>(&a) + offset + j * sizeof(E), sizeof(E));
               std::memcpy(&y, reinterpret_cast<std::byte const*>(&b) + offset + j * sizeof(E), sizeof(E));
               x += y;
               std::memcpy(reinterpret_cast<std::byte*>(&a) + offset + j * sizeof(E), &x, sizeof(E));
             }
           }()),
       ...);
    }(std::make_index_sequence<reflect::leaf_count_v<U>>{});
  }
}

template <class U, class A> U get(std::vector<U, A> const& a, std::size_t i) { return a[i]; }
template <class U, class A> void set(std::vector<U, A>& a, std::size_t i, U const& v) { a[i] = v; }
template <class U, class L, class S> U get(coalesce::vector<U, L, S> const& a, std::size_t i) { return a.const_view()[i]; }
template <class U, class L, class S> void set(coalesce::vector<U, L, S>& a, std::size_t i, U const& v) { a.view()[i] = v; }
template <class U, class A> U element_type_of(std::vector<U, A> const&);
template <class U, class L, class S> U element_type_of(coalesce::vector<U, L, S> const&);

template <class Array> void check_halo_size(halo_plan const& h, Array const& a, char const* what) {
  if (size_of(a) != h.owned() && size_of(a) != h.owned() + h.ghosts()) {
    throw_error(std::string(what) + ": an array of " + std::to_string(size_of(a)) + " elements for a halo of " +
                std::to_string(h.owned()) + " owned particles and " + std::to_string(h.ghosts()) +
                " ghosts; give it owned() or owned() + ghosts() elements");
  }
}

}  // namespace detail

// Finds the ghosts, exchanges them stage by stage, appends them to `particles` (whole records)
// and returns the plan. `particles` holds owned particles only when called (a previous halo's
// ghosts removed: particles.resize(halo.owned())). Collective.
template <class T, class L, class S, class Pos>
halo_plan build_halo(decomposition const& d, vector<T, L, S>& particles, Pos const& position, double cutoff) {
  detail::check_migratable<T, L, S>();
  box const sub = d.subdomain();
  long long bad = -1;
  std::string why;
  if (!(cutoff > 0) || !std::isfinite(cutoff)) {
    bad = 0;
    why = "the cutoff " + std::to_string(cutoff) + " is not positive and finite";
  }
  for (unsigned a = 0; a < d.dims() && bad < 0; ++a) {
    if (d.ranks_per_axis()[a] > 1 && cutoff > sub.hi[a] - sub.lo[a]) {
      bad = 0;
      why = "the cutoff " + std::to_string(cutoff) + " is larger than the subdomain's width " + std::to_string(sub.hi[a] - sub.lo[a]) +
            " along axis " + std::to_string(a) + "; use fewer ranks along that axis or a smaller cutoff";
    }
  }
  detail::agree_on_errors(d.comm(), bad, why, "build_halo");

  halo_plan h;
  h.comm_ = d.comm();
  h.owned_ = particles.size();
  bool const periodic = d.global().edges == boundary::periodic;
  for (unsigned a = 0; a < d.dims(); ++a) {
    double const length = d.global().hi[a] - d.global().lo[a];
    // Both stages of an axis choose among what existed before the axis began: the owned particles
    // and the other axes' ghosts, never this axis's own ghosts (those would go back where they came from).
    std::size_t const candidates = particles.size();
    for (int direction : {-1, +1}) {
      halo_plan::stage st;
      st.axis = a;
      st.direction = direction;
      st.to = d.neighbor(a, direction);
      st.from = d.neighbor(a, -direction);
      int const coord = d.coords()[a], last = d.ranks_per_axis()[a] - 1;
      // Candidates: every element so far (owned and earlier stages' ghosts) near the face.
      auto const columns = coalesce::detail::position_columns_of(particles.storage(), position);
      for (std::size_t i = 0; i < candidates && st.to != MPI_PROC_NULL; ++i) {
        double const x = detail::position_axis(columns, a, i);
        if (direction < 0 ? x < sub.lo[a] + cutoff : x >= sub.hi[a] - cutoff) st.sent.push_back(static_cast<std::uint32_t>(i));
      }
      std::vector<std::byte> send(st.sent.size() * sizeof(T));
      {
        auto const v = particles.const_view();
        for (std::size_t k = 0; k < st.sent.size(); ++k) {
          T record = v[st.sent[k]];
          std::memcpy(send.data() + k * sizeof(T), &record, sizeof(T));
        }
      }
      std::vector<std::byte> const got = detail::sendrecv_bytes(d.comm(), send, st.to, st.from);
      st.first_ghost = particles.size();
      st.received = got.size() / sizeof(T);
      particles.resize(st.first_ghost + st.received);
      detail::unpack(particles, st.first_ghost, st.received, got.data());
      // What crossed the global boundary on its way here is a periodic image, one box length away:
      // the sender sits at the edge it sent across.
      int const from_coord = (coord - direction + d.ranks_per_axis()[a]) % d.ranks_per_axis()[a];
      st.received_shift = periodic && direction < 0 && from_coord == 0 ? length
                          : periodic && direction > 0 && from_coord == last ? -length
                                                                             : 0.0;
      if (st.received > 0 && st.received_shift != 0) {
        auto const after = coalesce::detail::position_columns_of(particles.storage(), position);
        for (std::size_t k = 0; k < st.received; ++k) detail::add_to_axis(after, a, st.first_ghost + k, st.received_shift);
      }
      h.stages_.push_back(std::move(st));
    }
  }
  h.ghosts_ = particles.size() - h.owned_;
  return h;
}

// Owners' positions to their ghosts (the stages in order, shifts applied): once per step.
template <class T, class L, class S, class Pos>
void forward(halo_plan const& h, vector<T, L, S>& particles, Pos const& position) {
  detail::check_migratable<T, L, S>();
  if (particles.size() != h.owned() + h.ghosts()) {
    detail::throw_error("forward: " + std::to_string(particles.size()) + " particles for a halo of " + std::to_string(h.owned()) +
                        " owned and " + std::to_string(h.ghosts()) + " ghosts; rebuild the halo after the particle count changed");
  }
  auto const columns = coalesce::detail::position_columns_of(particles.storage(), position);
  unsigned const dims = columns.dims;
  for (auto const& st : h.stages()) {
    std::vector<std::byte> send(st.sent.size() * dims * sizeof(double));
    auto* out = reinterpret_cast<double*>(send.data());
    for (std::size_t k = 0; k < st.sent.size(); ++k) {
      for (unsigned a = 0; a < dims; ++a) out[k * dims + a] = detail::position_axis(columns, a, st.sent[k]);
    }
    std::vector<std::byte> const got = detail::sendrecv_bytes(h.comm(), send, st.to, st.from);
    auto const* in = reinterpret_cast<double const*>(got.data());
    for (std::size_t k = 0; k < st.received; ++k) {
      for (unsigned a = 0; a < dims; ++a) {
        double const value = in[k * dims + a] + (a == st.axis ? st.received_shift : 0.0);
        detail::set_position_axis(columns, a, st.first_ghost + k, value);
      }
    }
  }
}

// Any per-particle array (std::vector<U> or coalesce::vector<U>), owners' values to the ghosts;
// an array of owned() elements is extended to owned() + ghosts().
template <class Array> void forward(halo_plan const& h, Array& values) {
  using U = decltype(detail::element_type_of(values));
  detail::check_halo_size(h, values, "forward");
  values.resize(h.owned() + h.ghosts());
  for (auto const& st : h.stages()) {
    std::vector<std::byte> send(st.sent.size() * sizeof(U));
    for (std::size_t k = 0; k < st.sent.size(); ++k) {
      U const v = detail::get(values, st.sent[k]);
      std::memcpy(send.data() + k * sizeof(U), &v, sizeof(U));
    }
    std::vector<std::byte> const got = detail::sendrecv_bytes(h.comm(), send, st.to, st.from);
    for (std::size_t k = 0; k < st.received; ++k) {
      U v;
      std::memcpy(&v, got.data() + k * sizeof(U), sizeof(U));
      detail::set(values, st.first_ghost + k, v);
    }
  }
}

// Ghosts' values summed into their owners (the stages backwards: a ghost of a ghost reaches its
// owner through the rank it came through), e.g. forces computed on ghosts. Afterwards the owned
// entries hold the totals; ghost entries hold partial sums (the relays), not meaningful values.
template <class Array> void reverse(halo_plan const& h, Array& values) {
  using U = decltype(detail::element_type_of(values));
  if (detail::size_of(values) != h.owned() + h.ghosts()) {
    detail::throw_error("reverse: an array of " + std::to_string(detail::size_of(values)) + " elements for a halo of " +
                        std::to_string(h.owned()) + " owned particles and " + std::to_string(h.ghosts()) +
                        " ghosts; it needs owned() + ghosts() elements");
  }
  auto const& stages = h.stages();
  for (std::size_t s = stages.size(); s-- > 0;) {
    auto const& st = stages[s];
    std::vector<std::byte> send(st.received * sizeof(U));
    for (std::size_t k = 0; k < st.received; ++k) {
      U const v = detail::get(values, st.first_ghost + k);
      std::memcpy(send.data() + k * sizeof(U), &v, sizeof(U));
    }
    std::vector<std::byte> const got = detail::sendrecv_bytes(h.comm(), send, st.from, st.to);
    for (std::size_t k = 0; k < got.size() / sizeof(U); ++k) {
      U add;
      std::memcpy(&add, got.data() + k * sizeof(U), sizeof(U));
      U sum = detail::get(values, st.sent[k]);
      detail::add_into(sum, add);
      detail::set(values, st.sent[k], sum);
    }
  }
}

}  // namespace coalesce::mpi
