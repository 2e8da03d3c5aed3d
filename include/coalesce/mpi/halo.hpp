// coalesce/mpi/halo.hpp - ghosts of the particles near each face of a rank's subdomain (included
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
// forward() and reverse() re-plan nothing and send no counts: forward runs the axes in order,
// sending the listed elements (positions shifted again); reverse runs them backwards, sending each
// stage's ghost values to the rank they came from, which adds them into the listed elements (one
// thread per element, each element once per stage: sums are reproducible run to run, host and
// GPU alike). Both directions of an axis travel at once. Rebuild the plan after a migration.
//
// GPU memory (device_vector, device_array): selection, packing, unpacking, shifts and sums run on
// the GPU, on the plan's stream (halo.set_stream); messages go as GPU pointers or staged through
// page-locked host memory (halo.set_transport, coalesce/mpi/migrate.hpp). Each call waits for its
// messages and returns with the ghosts (or sums) in place.
//
// Bad input, agreed on by every rank before anything moves: a cutoff that is not positive, or
// larger than a subdomain's width along an axis with more than one rank (the ghosts of one hop
// would not cover it), and arrays of the wrong length.
//
// Streams (the one rule of coalesce/memory/stream.hpp): every call that runs work takes a stream
// last, coalesce::default_stream when left out; these calls take a decomposition or a halo plan,
// whose stream (set_stream) is theirs, as a reorder_plan's is.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <optional>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "../reorder/keys.hpp"
#include "migrate.hpp"
#include "../core/reflect.hpp"
#include "../memory/vector.hpp"

namespace coalesce::mpi {

using coalesce::detail::index_map;

class halo_plan {
 public:
  std::size_t owned() const { return owned_; }
  std::size_t ghosts() const { return ghosts_; }
  coalesce::stream stream() const { return stream_; }
  void set_stream(coalesce::stream s) { stream_ = s; }
  mpi::transport transport() const { return transport_; }
  void set_transport(mpi::transport t) { transport_ = t; }
  MPI_Comm comm() const { return comm_; }
  // Where the plan's send lists live: the memory of the particles it was built for.
  coalesce::detail::memory_kind memory() const { return kind_; }

  struct stage {
    unsigned axis = 0;
    int direction = 0;              // +1: sent to the rank above along axis, -1: below
    int to = 0, from = 0;           // ranks (MPI_PROC_NULL past a clamped edge)
    double received_shift = 0;      // added to the received ghosts' coordinate (a periodic image)
    coalesce::detail::buffer sent;  // indices of the elements sent, in order (the particles' memory)
    std::size_t sent_count = 0;
    std::size_t first_ghost = 0;  // ghosts received: [first_ghost, first_ghost + received)
    std::size_t received = 0;
    std::uint32_t const* sent_indices() const { return reinterpret_cast<std::uint32_t const*>(sent.data()); }
  };
  std::vector<stage> const& stages() const { return stages_; }
  detail::message_buffers& buffers() const { return *buffers_; }
  // The particles' element type and where its position lies in a record: forward() of whole
  // records (of that type, in any layout or array) shifts their periodic images as build_halo did.
  std::type_info const& particle_type() const { return *particle_type_; }
  coalesce::detail::position_leaves const& position() const { return position_; }

 private:
  template <class T, class L, class S, class Pos>
  friend halo_plan build_halo(decomposition const& d, vector<T, L, S>& particles, Pos const& position, double cutoff);
  MPI_Comm comm_ = MPI_COMM_NULL;
  coalesce::detail::memory_kind kind_ = coalesce::detail::memory_kind::host;
  coalesce::stream stream_{};
  mpi::transport transport_ = mpi::transport::staged;
  std::size_t owned_ = 0, ghosts_ = 0;
  std::type_info const* particle_type_ = &typeid(void);
  coalesce::detail::position_leaves position_{};
  std::vector<stage> stages_;
  std::unique_ptr<detail::message_buffers> buffers_ = std::make_unique<detail::message_buffers>();
};

}  // namespace coalesce::mpi

namespace coalesce::detail {

// The plan's send lists live in the particles' memory: an array in the other memory (a
// std::vector for a halo of GPU particles) would be packed through GPU indices on the host.
template <class Array> void check_halo_memory(mpi::halo_plan const& h, char const* what) {
  constexpr memory_kind kind = memory_of_array<Array>;
  if (!coalesce::detail::same_memory(kind, h.memory())) {
    throw_error(
        std::string(what) + ": an array in " + (kind == memory_kind::host ? "host" : "GPU") +
        " memory for a halo built on " + (h.memory() == memory_kind::host ? "host" : "GPU") +
        " memory; give it an array in the particles' memory (a device_array or device_vector for GPU particles)");
  }
}

template <class Array> void check_halo_size(mpi::halo_plan const& h, Array const& a, char const* what) {
  if (particle_count(a) != h.owned() && particle_count(a) != h.owned() + h.ghosts()) {
    throw_error(std::string(what) + ": an array of " + std::to_string(particle_count(a)) + " elements for a halo of " +
                std::to_string(h.owned()) + " owned particles and " + std::to_string(h.ghosts()) +
                " ghosts; give it owned() or owned() + ghosts() elements");
  }
}

// A stage's message must hold what the plan says (plans built together, for arrays of one type).
inline void check_arrived(std::size_t expected, std::size_t arrived, char const* what) {
  if (expected != arrived) {
    throw_error(std::string(what) + ": a neighbour sent " + std::to_string(arrived) +
                " elements where this rank's halo plan expects " + std::to_string(expected) +
                "; every rank must use the plans of one build_halo call, for arrays of the same type");
  }
}

// The columns of a position-like member (x, y[, z]) as a message: untyped for forward (copied),
// typed float or double by width for reverse (summed).
inline message_columns coordinate_message(memory_kind kind, coalesce::detail::position_columns const& c, bool summed) {
  message_columns m;
  int const code = !summed ? -1 : c.width == 4 ? scalar_code<float>() : scalar_code<double>();
  for (unsigned a = 0; a < c.dims; ++a) m.add(kind, c.axis[a], c.width, code, summed ? "reverse" : "forward");
  return m;
}

// The position's columns in `values` when its elements are records of the halo's particle type
// (a coalesce::vector in any layout, a coalesce::array or a std::vector of them): whole records
// forwarded carry the position, which must be shifted to the periodic image as build_halo did.
// Arrays of anything else (charges, forces) hold no position: nothing to shift.
template <class T, class L, class S>
std::optional<coalesce::detail::position_columns> image_columns(mpi::halo_plan const& h, vector<T, L, S>& values) {
  if (typeid(T) != h.particle_type()) return std::nullopt;
  return coalesce::detail::position_columns_at(values.storage(), h.position());
}
template <class Array>
std::optional<coalesce::detail::position_columns> image_columns(mpi::halo_plan const& h, Array& values) {
  using U = element_of_array<Array>;
  if (typeid(U) != h.particle_type() || particle_count(values) == 0) return std::nullopt;
  coalesce::detail::position_columns out;
  out.dims = h.position().dims;
  out.width = h.position().width;
  auto* const base = reinterpret_cast<std::byte*>(values.data());
  for (unsigned a = 0; a < out.dims; ++a) out.axis[a] = coalesce::column_ref{base + h.position().offset[a], sizeof(U)};
  return out;
}

// One axis's two stages at once: message k (k = 0: direction -1, 1: direction +1) of count[k]
// elements of `m`, taken through from[k], goes to to[k]; what arrives from source[k] is returned
// (in the plan's memory) with its element count. Both directions travel together, so a rank
// packs both, waits for both and unpacks both, instead of waiting for one neighbour at a time.
struct axis_messages {
  std::array<std::byte const*, 2> at{};
  std::array<std::size_t, 2> count{};
};
inline axis_messages exchange_axis(mpi::halo_plan const& h, message_columns const& m, std::array<std::size_t, 2> count,
                                   std::array<index_map, 2> from, std::array<int, 2> to, std::array<int, 2> source,
                                   std::array<std::size_t, 2> const* expected = nullptr) {
  memory_kind const kind = m.kind_set ? m.kind : memory_kind::host;
  std::array<std::size_t, 2> sending{};
  for (int k = 0; k < 2; ++k) sending[k] = to[k] == MPI_PROC_NULL ? 0 : count[k];
  std::byte* send = h.buffers().send_at_least(kind, m.bytes(sending[0]) + m.bytes(sending[1]), h.stream().handle());
  pack(m, sending[0], from[0], send, h.stream().handle());
  pack(m, sending[1], from[1], send + m.bytes(sending[0]), h.stream().handle());
  axis_messages out;
  std::byte const* got = sendrecv_pair(h.comm(), kind, h.transport(), h.stream().handle(), m, send, sending, to, source,
                                       expected, out.count, h.buffers());
  out.at = {got, got + m.bytes(out.count[0])};
  return out;
}

// forward() and reverse() return with the values in place: the last stage's unpacks (and
// shifts) queued on the plan's stream are waited for, so work the caller queues next on another
// stream reads them (a non-blocking stream waits for nothing else). Host memory: no CUDA call.
inline void wait_for_unpacks(mpi::halo_plan const& h, message_columns const& m) {
  if (device_is_gpu && m.kind_set && m.kind == memory_kind::device) coalesce::synchronize(h.stream());
}

// forward() over every axis in order: owners' values (the columns of m) to their ghosts, then
// after_unpack(stage) for each stage (a periodic shift).
template <class After> void for_each_axis(mpi::halo_plan const& h, message_columns const& m, After&& after_unpack) {
  auto const& stages = h.stages();
  for (std::size_t a = 0; a < stages.size() / 2; ++a) {
    auto const* st = stages.data() + 2 * a;
    std::array<std::size_t, 2> const expected{st[0].received, st[1].received};
    auto const got = exchange_axis(h, m, {st[0].sent_count, st[1].sent_count},
                                   {index_map{st[0].sent_indices(), 0}, index_map{st[1].sent_indices(), 0}},
                                   {st[0].to, st[1].to}, {st[0].from, st[1].from}, &expected);
    for (int k = 0; k < 2; ++k) {
      check_arrived(st[k].received, got.count[k], "forward");
      unpack(m, st[k].received, got.at[k], index_map{nullptr, st[k].first_ghost}, h.stream().handle());
      after_unpack(st[k]);
    }
  }
  wait_for_unpacks(h, m);
}

}  // namespace coalesce::detail

namespace coalesce::mpi {

// Finds the ghosts, exchanges them stage by stage, appends them to `particles` (whole records)
// and returns the plan. `particles` holds owned particles only when called (a previous halo's
// ghosts removed: particles.resize(halo.owned())). Collective. GPU memory: candidates are
// selected and packed on the GPU (the plan's stream is the decomposition's).
template <class T, class L, class S, class Pos>
halo_plan build_halo(decomposition const& d, vector<T, L, S>& particles, Pos const& position, double cutoff) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
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
      why = "the cutoff " + std::to_string(cutoff) + " is larger than the subdomain's width " +
            std::to_string(sub.hi[a] - sub.lo[a]) + " along axis " + std::to_string(a) +
            "; use fewer ranks along that axis or a smaller cutoff";
    }
  }
  detail::agree_on_errors(d.comm(), bad, why, "build_halo");

  halo_plan h;
  h.comm_ = d.comm();
  h.kind_ = kind;
  h.stream_ = d.stream();
  h.transport_ = d.transport();
  h.owned_ = particles.size();
  particles.mark_reordered();  // new ghosts behind the owned particles: lists of the old ones are stale
  h.particle_type_ = &typeid(T);
  h.position_ = coalesce::detail::position_leaves_of<T>(position);
  void* const stream = d.stream().handle();
  bool const periodic = d.global().edges == boundary::periodic;
  for (unsigned a = 0; a < d.dims(); ++a) {
    double const length = d.global().hi[a] - d.global().lo[a];
    // Both stages of an axis choose among what existed before the axis began: the owned particles
    // and the other axes' ghosts, never this axis's own ghosts (those would go back where they came from).
    std::size_t const candidates = particles.size();
    std::array<halo_plan::stage, 2> st;
    auto const columns = coalesce::detail::position_columns_of(particles.storage(), position);
    for (int k = 0; k < 2; ++k) {
      int const direction = k == 0 ? -1 : +1;
      st[k].axis = a;
      st[k].direction = direction;
      st[k].to = d.neighbor(a, direction);
      st[k].from = d.neighbor(a, -direction);
      // Candidates: every element so far (owned and earlier axes' ghosts) near the face.
      st[k].sent = coalesce::detail::buffer(kind, std::max<std::size_t>(candidates, 1) * sizeof(std::uint32_t));
      if (st[k].to != MPI_PROC_NULL && candidates > 0) {
        bool const below = direction < 0;
        st[k].sent_count = coalesce::detail::select_near_face(
            kind, columns.axis[a], columns.width, candidates, below, below ? sub.lo[a] + cutoff : sub.hi[a] - cutoff,
            reinterpret_cast<std::uint32_t*>(st[k].sent.data()), stream);
      }
    }
    detail::message_columns const records = detail::columns_of("build_halo", particles);
    auto const got = detail::exchange_axis(h, records, {st[0].sent_count, st[1].sent_count},
                                           {index_map{st[0].sent_indices(), 0}, index_map{st[1].sent_indices(), 0}},
                                           {st[0].to, st[1].to}, {st[0].from, st[1].from});
    st[0].first_ghost = particles.size();
    st[0].received = got.count[0];
    st[1].first_ghost = st[0].first_ghost + st[0].received;
    st[1].received = got.count[1];
    detail::resize_in_order(h.stream_, st[0].first_ghost, st[1].first_ghost + st[1].received, particles);
    detail::message_columns const into = detail::columns_of("build_halo", particles);
    auto const after = coalesce::detail::position_columns_of(particles.storage(), position);
    int const coord = d.coords()[a], last = d.ranks_per_axis()[a] - 1;
    for (int k = 0; k < 2; ++k) {
      detail::unpack(into, st[k].received, got.at[k], index_map{nullptr, st[k].first_ghost}, stream);
      // What crossed the global boundary on its way here is a periodic image, one box length away:
      // the sender sits at the edge it sent across.
      int const direction = st[k].direction;
      int const from_coord = (coord - direction + d.ranks_per_axis()[a]) % d.ranks_per_axis()[a];
      st[k].received_shift = periodic && direction < 0 && from_coord == 0      ? length
                             : periodic && direction > 0 && from_coord == last ? -length
                                                                               : 0.0;
      if (st[k].received > 0) {
        coalesce::detail::shift_column(kind, after.axis[a], after.width, st[k].first_ghost, st[k].received,
                                       st[k].received_shift, stream);
      }
      h.stages_.push_back(std::move(st[k]));
    }
  }
  h.ghosts_ = particles.size() - h.owned_;
  if constexpr (detail::on_gpu<S>) coalesce::synchronize(h.stream_);
  return h;
}

// Owners' positions to their ghosts (the stages in order, shifts applied): once per step. Only
// the position's coordinates travel, in their own precision. GPU memory: packing, unpacking and
// the shifts are queued on the plan's stream; the call waits for each stage's messages.
template <class T, class L, class S, class Pos>
void forward(halo_plan const& h, vector<T, L, S>& particles, Pos const& position) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  if (particles.size() != h.owned() + h.ghosts()) {
    detail::throw_error("forward: " + std::to_string(particles.size()) + " particles for a halo of " +
                        std::to_string(h.owned()) + " owned and " + std::to_string(h.ghosts()) +
                        " ghosts; rebuild the halo after the particle count changed");
  }
  auto const columns = coalesce::detail::position_columns_of(particles.storage(), position);
  detail::message_columns const m = detail::coordinate_message(kind, columns, false);
  detail::for_each_axis(h, m, [&](halo_plan::stage const& st) {
    coalesce::detail::shift_column(kind, columns.axis[st.axis], columns.width, st.first_ghost, st.received,
                                   st.received_shift, h.stream().handle());
  });
}

// Any per-particle array (std::vector<U>, coalesce::array<U> or coalesce::vector<U>), owners'
// values to the ghosts; an array of owned() elements is extended to owned() + ghosts(). Whole
// records of the particles' type (the particles themselves) arrive as build_halo left them: the
// position of a ghost across a periodic boundary is its image, shifted by the box length.
template <class Array> void forward(halo_plan const& h, Array& values) {
  detail::check_halo_memory<Array>(h, "forward");
  detail::check_halo_size(h, values, "forward");
  if (detail::particle_count(values) != h.owned() + h.ghosts()) {
    detail::resize_in_order(h.stream(), h.owned(), h.owned() + h.ghosts(), values);
  }
  constexpr auto kind = detail::memory_of_array<Array>;
  detail::message_columns const m = detail::columns_of("forward", values);
  auto const images = detail::image_columns(h, values);
  detail::for_each_axis(h, m, [&](halo_plan::stage const& st) {
    if (!images || st.received == 0) return;
    coalesce::detail::shift_column(kind, images->axis[st.axis], images->width, st.first_ghost, st.received,
                                   st.received_shift, h.stream().handle());
  });
}

}  // namespace coalesce::mpi

namespace coalesce::detail {
// reverse's stages, backwards, over the columns of m.
inline void reverse_columns(mpi::halo_plan const& h, message_columns const& m) {
  auto const& stages = h.stages();
  for (std::size_t a = stages.size() / 2; a-- > 0;) {
    auto const* st = stages.data() + 2 * a;
    std::array<std::size_t, 2> const expected{st[0].sent_count, st[1].sent_count};
    auto const got = exchange_axis(h, m, {st[0].received, st[1].received},
                                   {coalesce::detail::index_map{nullptr, st[0].first_ghost},
                                    coalesce::detail::index_map{nullptr, st[1].first_ghost}},
                                   {st[0].from, st[1].from}, {st[0].to, st[1].to}, &expected);
    for (int k = 1; k >= 0; --k) {  // the stages backwards, as one at a time would: the same sums, bit for bit
      check_arrived(st[k].sent_count, got.count[k], "reverse");
      unpack_sum(m, got.count[k], got.at[k], coalesce::detail::index_map{st[k].sent_indices(), 0}, h.stream().handle());
    }
  }
  wait_for_unpacks(h, m);
}
}  // namespace coalesce::detail

namespace coalesce::mpi {

// Ghosts' values summed into their owners (the stages backwards: a ghost of a ghost reaches its
// owner through the rank it came through), e.g. forces computed on ghosts. Afterwards the owned
// entries hold the totals; ghost entries hold partial sums (the relays), not meaningful values.
// Each stage adds what arrives in list order into distinct elements, so the sums are the same
// run to run, on the host and on the GPU.
template <class Array> void reverse(halo_plan const& h, Array& values) {
  using U = detail::element_of_array<Array>;
  static_assert(detail::summable<U>(),
                "coalesce::mpi::reverse: the values must have float, double or 32/64-bit integer leaves only");
  detail::check_halo_memory<Array>(h, "reverse");
  if (detail::particle_count(values) != h.owned() + h.ghosts()) {
    detail::throw_error("reverse: an array of " + std::to_string(detail::particle_count(values)) +
                        " elements for a halo of " + std::to_string(h.owned()) + " owned particles and " +
                        std::to_string(h.ghosts()) + " ghosts; it needs owned() + ghosts() elements");
  }
  detail::reverse_columns(h, detail::columns_of("reverse", values));
}

// One member of the particles themselves (a force or a velocity: 1 to 3 float or double
// coordinates, as a position is), ghosts' values summed into their owners' member; the other
// members are untouched. Cabana's scatter(halo, slice) on one member:
//   coalesce::mpi::reverse(halo, particles, &Particle::force);
template <class T, class L, class S, class Member>
void reverse(halo_plan const& h, vector<T, L, S>& particles, Member const& member) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  if (particles.size() != h.owned() + h.ghosts()) {
    detail::throw_error("reverse: " + std::to_string(particles.size()) + " particles for a halo of " +
                        std::to_string(h.owned()) + " owned and " + std::to_string(h.ghosts()) +
                        " ghosts; reverse runs on the particles with their ghosts (owned() + ghosts())");
  }
  auto const columns = coalesce::detail::position_columns_of(particles.storage(), member);
  detail::reverse_columns(h, detail::coordinate_message(kind, columns, true));
}

}  // namespace coalesce::mpi
