// coalesce/mpi/halo.hpp - ghosts of the particles near each face of a rank's subdomain (included
// by coalesce/mpi.hpp).
//
//   auto halo = coalesce::mpi::build_halo(d, particles, &Particle::pos, cutoff);  // ghosts appended
//   coalesce::mpi::forward(halo, particles, &Particle::pos);   // each step: owners' positions -> ghosts
//   coalesce::mpi::forward(halo, charges);                     // any per-particle array, the same way
//   coalesce::mpi::reverse(halo, forces);                      // ghosts' force sums -> their owners
//   coalesce::mpi::reverse(halo, particles, &Particle::force); // or into one member of the particles
//   halo = coalesce::mpi::plan_halo(d, particles, &Particle::pos, cutoff, {.owned = halo.owned()});
//   coalesce::mpi::forward(halo, particles);                   // a plan only, then the ghosts' records
//
// Ghosts are copies of particles within `cutoff` of a face, received from the rank across that
// face, and appended after the owned particles (particles[0, halo.owned()) are owned,
// [halo.owned(), size()) ghosts). The exchange is staged along the axes, x then y then z, each
// stage sending what lies near the face among the owned particles and the ghosts of earlier
// stages, so edge and corner ghosts arrive in two or three hops with no diagonal messages. A
// particle crossing the global boundary along a periodic axis arrives as its periodic image (the
// box length added to or subtracted from its position); an open axis sends nothing past its
// edges. halo_options::axes leaves axes out (a slab decomposition whose neighbour lists apply the
// minimum image along y and z themselves exchanges along x only).
//
// plan_halo() finds the same ghosts without touching the particles (only the coordinates travel,
// stage by stage); forward() of the whole records then appends them, as build_halo would have.
// Both take halo_options::owned: the particles' first `owned` elements are the owned ones, the
// rest a previous halo's ghosts (dropped by build_halo, replaced by the forward of a plan).
// Halos from explicit (index, rank) export lists on any communicator: coalesce/mpi/export_halo.hpp.
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

namespace coalesce::detail {
struct halo_access;
}

namespace coalesce::mpi {

using coalesce::detail::index_map;

// What a halo is built from, besides the particles and the cutoff.
struct halo_options {
  // Axes along which ghosts are exchanged (geometric halos). Leave out an axis whose periodicity
  // your neighbour list handles by the minimum image on its own (one rank along it).
  std::array<bool, 3> axes{true, true, true};
  // The particles' first `owned` elements are owned; the rest (a previous halo's ghosts) are
  // dropped by build_halo and replaced by the first forward of a plan. Default: every element.
  static constexpr std::size_t every_element = static_cast<std::size_t>(-1);
  std::size_t owned = every_element;  // the owned count, or every_element
  // The owned count for `size` particles (owned, at most size).
  std::size_t owned_of(std::size_t size) const { return owned < size ? owned : size; }
  // "" or, when owned is more than `size` particles, why that is wrong (the text of the error).
  std::string owned_error(std::size_t size) const {
    if (owned == every_element || owned <= size) return "";
    return "halo_options::owned is " + std::to_string(owned) + " for " + std::to_string(size) + " particles";
  }
  // In any order, where designated initializers need the members' order (axes, then owned):
  //   coalesce::mpi::halo_options{}.with_owned(n).with_axes({true, true, false})
  halo_options with_owned(std::size_t n) const {
    halo_options out = *this;
    out.owned = n;
    return out;
  }
  // A copy with the exchange axes set to `a`.
  halo_options with_axes(std::array<bool, 3> a) const {
    halo_options out = *this;
    out.axes = a;
    return out;
  }
};

// What build_halo and plan_halo found: which elements each stage (or each export) sends where and
// how many ghosts arrive, so that forward() and reverse() replay it without sending counts. Move-only;
// it uses its communicator's MPI handle (not a duplicate of it): keep the communicator alive.
class halo_plan {
 public:
  std::size_t owned() const { return owned_; }    // particles [0, owned()) are owned, the ghosts follow
  std::size_t ghosts() const { return ghosts_; }  // ghosts the plan receives, appended after owned()
  // The particles' size when the plan was made (owned() plus a previous halo's ghosts): forward()
  // of whole records takes an array of this size too and replaces those ghosts.
  std::size_t planned_size() const { return planned_size_; }
  // The stream forward() and reverse() queue GPU work on (the communicator's when the plan was made).
  coalesce::stream stream() const { return stream_; }
  void set_stream(coalesce::stream s) { stream_ = s; }  // for the later forward() and reverse() calls
  // How its GPU messages travel (the communicator's transport when the plan was made).
  mpi::transport transport() const { return transport_; }
  void set_transport(mpi::transport t) { transport_ = t; }  // for the later forward() and reverse() calls
  MPI_Comm comm() const { return comm_; }                   // the communicator's handle (not owned by the plan)
  // Where the plan's send lists live: the memory of the particles it was built for.
  bool in_gpu_memory() const { return kind_ == coalesce::detail::memory_kind::device; }

  // A geometric halo: two stages per axis (build_halo and plan_halo on a decomposition).
  struct stage {
    unsigned axis = 0;  // 0, 1, 2: x, y, z
    int direction = 0;  // +1: sent to the rank above along axis, -1: below
    // to: the rank this stage sends to; from: the rank it receives from.
    int to = 0, from = 0;           // ranks (MPI_PROC_NULL past an open edge)
    double received_shift = 0;      // added to the received ghosts' coordinate (a periodic image)
    coalesce::detail::buffer sent;  // indices of the elements sent, in order (the particles' memory)
    std::size_t sent_count = 0;     // elements sent (the length of the list in `sent`)
    std::size_t first_ghost = 0;    // ghosts received: [first_ghost, first_ghost + received)
    std::size_t received = 0;       // ghosts this stage receives
    // The indices in `sent`, in the particles' memory (a GPU pointer for GPU particles).
    std::uint32_t const* sent_indices() const { return reinterpret_cast<std::uint32_t const*>(sent.data()); }
  };
  // A geometric halo's stages in the order forward() runs them (empty for a halo from export lists).
  std::vector<stage> const& stages() const { return stages_; }

  // A halo from export lists (coalesce/mpi/export_halo.hpp): one hop to any ranks, no stages.
  // Ghosts arrive by source rank ascending, each source's in its export list's order.
  bool from_exports() const { return from_exports_; }
  std::vector<std::size_t> const& send_counts() const { return send_counts_; }        // per destination rank
  std::vector<std::size_t> const& receive_counts() const { return receive_counts_; }  // per source rank
  // The exported elements grouped by destination rank ascending (the particles' memory).
  std::uint32_t const* export_indices() const { return reinterpret_cast<std::uint32_t const*>(exports_.data()); }

  // The message buffers its exchanges reuse, from the communicator's pool (library use).
  coalesce::detail::message_buffers& buffers() const { return *buffers_; }
  // The particles' element type and where its position lies in a record: forward() of whole
  // records (of that type, in any layout or array) shifts their periodic images as build_halo did.
  std::type_info const& particle_type() const { return *particle_type_; }
  // Where the position's coordinates lie in a record of particle_type() (byte offsets, width).
  coalesce::detail::position_leaves const& position() const { return position_; }

 private:
  friend struct coalesce::detail::halo_access;
  MPI_Comm comm_ = MPI_COMM_NULL;
  coalesce::detail::memory_kind kind_ = coalesce::detail::memory_kind::host;
  coalesce::stream stream_{};
  mpi::transport transport_ = mpi::transport::staged;
  std::size_t owned_ = 0, ghosts_ = 0, planned_size_ = 0;
  std::type_info const* particle_type_ = &typeid(void);
  coalesce::detail::position_leaves position_{};
  std::vector<stage> stages_;
  bool from_exports_ = false;
  std::vector<std::size_t> send_counts_, receive_counts_;
  coalesce::detail::buffer exports_;
  coalesce::detail::pooled_message_buffers buffers_;  // the communicator's pool's, when made on one
  // build_halo and plan_halo of particles with box_fixed members: their box, which the ghost
  // shifts were checked against (forward holds the particles to it).
  std::optional<coalesce::box> box_;
};

}  // namespace coalesce::mpi

namespace coalesce::detail {

// The plan's fields, for the functions that build plans (templates over the particles' type).
struct halo_access {
  static memory_kind memory(mpi::halo_plan const& h) { return h.kind_; }
  static mpi::halo_plan start(mpi::communicator const& c, memory_kind kind, std::size_t owned,
                              std::size_t planned_size) {
    mpi::halo_plan h;
    if (c.halo_buffer_pool()) h.buffers_ = pooled_message_buffers(c.halo_buffer_pool());
    h.comm_ = c.comm();
    h.kind_ = kind;
    h.stream_ = c.stream();
    h.transport_ = c.transport();
    h.owned_ = owned;
    h.planned_size_ = planned_size;
    return h;
  }
  template <class T> static void set_particles(mpi::halo_plan& h, position_leaves const& position) {
    h.particle_type_ = &typeid(T);
    h.position_ = position;
  }
  static void set_box(mpi::halo_plan& h, coalesce::box const& b) { h.box_ = b; }
  static std::optional<coalesce::box> const& box(mpi::halo_plan const& h) { return h.box_; }
  static std::vector<mpi::halo_plan::stage>& stages(mpi::halo_plan& h) { return h.stages_; }
  static void set_ghosts(mpi::halo_plan& h, std::size_t ghosts) { h.ghosts_ = ghosts; }
  static void set_exports(mpi::halo_plan& h, std::vector<std::size_t> send_counts,
                          std::vector<std::size_t> receive_counts, buffer exports) {
    h.from_exports_ = true;
    h.send_counts_ = std::move(send_counts);
    h.receive_counts_ = std::move(receive_counts);
    h.exports_ = std::move(exports);
  }
};

// The plan's send lists live in the particles' memory: an array in the other memory (a
// std::vector for a halo of GPU particles) would be packed through GPU indices on the host.
template <class Array> void check_halo_memory(mpi::halo_plan const& h, char const* what) {
  constexpr memory_kind kind = memory_of_array<Array>;
  if (!coalesce::detail::same_memory(kind, halo_access::memory(h))) {
    throw_error(
        std::string(what) + ": an array in " + (kind == memory_kind::host ? "host" : "GPU") +
        " memory for a halo built on " + (h.in_gpu_memory() ? "GPU" : "host") +
        " memory; give it an array in the particles' memory (a device_array or device_vector for GPU particles)");
  }
}

// forward() takes owned() elements (extended), owned() + ghosts(), or the size the particles had
// when the plan was made (a previous halo's ghosts, replaced).
template <class Array> void check_halo_size(mpi::halo_plan const& h, Array const& a, char const* what) {
  std::size_t const n = particle_count(a);
  if (n != h.owned() && n != h.owned() + h.ghosts() && n != h.planned_size()) {
    throw_error(std::string(what) + ": an array of " + std::to_string(n) + " elements for a halo of " +
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

// The box of a box_fixed vector in a forward. Where the forward shifts its positions (ghost
// images) under a plan made for box_fixed particles, it must be the box the plan was made with
// (the shifts were checked against that box; set_box moves every stored coordinate with the box),
// on every rank; otherwise its words travel as they are, so the boxes must agree between ranks.
// Collective: every rank throws alike, before anything moves. Other arrays: nothing to check.
template <class Array> void check_forward_box(mpi::halo_plan const&, Array const&, bool) {}
template <class T, class L, class S>
void check_forward_box(mpi::halo_plan const& h, vector<T, L, S> const& v, bool shifted) {
  if constexpr (layout_storage<T, L>::boxed) {
    auto const& planned = halo_access::box(h);
    if (!shifted || !planned) {
      check_boxes_agree(h.comm(), v, "forward");
      return;
    }
    coalesce::box const now = v.get_box();
    std::string why;
    for (unsigned a = 0; a < 3 && why.empty(); ++a) {
      if (now.lo[a] != planned->lo[a] || now.hi[a] != planned->hi[a]) {
        why = "the particles' box (set_box) along axis " + std::to_string(a) + " is [" + exact_text(now.lo[a]) + ", " +
              exact_text(now.hi[a]) + "), the halo was planned with [" + exact_text(planned->lo[a]) + ", " +
              exact_text(planned->hi[a]) + "); its ghost shifts hold in that box only: after set_box, build or " +
              "plan the halo again";
      }
    }
    agree_on_errors(h.comm(), why.empty() ? -1 : whole_call, why, "forward");
  }
}

// One axis's two stages at once: message k (k = 0: direction -1, 1: direction +1) of count[k]
// elements of `m`, taken through from[k], goes to to[k]; what arrives from source[k] is returned
// (in the plan's memory) with its element count. Both directions travel together, so a rank
// packs both, waits for both and unpacks both, instead of waiting for one neighbour at a time.
struct axis_messages {
  std::array<std::byte const*, 2> at{};
  std::array<std::size_t, 2> count{};
};
// pack_message(k, n, at) writes message k's n elements at `at` (laid out as m's).
template <class PackMessage>
axis_messages exchange_axis_packed(mpi::halo_plan const& h, message_columns const& m, std::array<std::size_t, 2> count,
                                   PackMessage&& pack_message, std::array<int, 2> to, std::array<int, 2> source,
                                   std::array<std::size_t, 2> const* expected = nullptr) {
  memory_kind const kind = m.kind_set ? m.kind : memory_kind::host;
  std::array<std::size_t, 2> sending{};
  for (int k = 0; k < 2; ++k) sending[k] = to[k] == MPI_PROC_NULL ? 0 : count[k];
  std::byte* send = h.buffers().send_at_least(kind, m.bytes(sending[0]) + m.bytes(sending[1]), h.stream().handle());
  pack_message(0, sending[0], send);
  pack_message(1, sending[1], send + m.bytes(sending[0]));
  axis_messages out;
  std::byte const* got = sendrecv_pair(h.comm(), kind, h.transport(), h.stream().handle(), m, send, sending, to, source,
                                       expected, out.count, h.buffers());
  out.at = {got, got + m.bytes(out.count[0])};
  return out;
}
inline axis_messages exchange_axis(mpi::halo_plan const& h, message_columns const& m, std::array<std::size_t, 2> count,
                                   std::array<index_map, 2> from, std::array<int, 2> to, std::array<int, 2> source,
                                   std::array<std::size_t, 2> const* expected = nullptr) {
  auto const pack_message = [&](int k, std::size_t n, std::byte* at) { pack(m, n, from[k], at, h.stream().handle()); };
  return exchange_axis_packed(h, m, count, pack_message, to, source, expected);
}

// forward() and reverse() return with the values in place: the last stage's unpacks (and
// shifts) queued on the plan's stream are waited for, so work the caller queues next on another
// stream reads them (a non-blocking stream waits for nothing else). Host memory: no CUDA call.
inline void wait_for_unpacks(mpi::halo_plan const& h, message_columns const& m) {
  if (device_is_gpu && m.kind_set && m.kind == memory_kind::device) coalesce::synchronize(h.stream());
}

// A halo from export lists, replayed in one hop. Forward: each destination's exported elements,
// ghosts unpacked by source rank from owned() on. Reverse: each source's ghosts back to it, added
// into the exported elements destination by destination in rank order (an element appears once
// per destination, so each sum writes distinct elements: the same bits run to run).
inline void replay_exports(mpi::halo_plan const& h, message_columns const& m, bool reverse) {
  memory_kind const kind = m.kind_set ? m.kind : memory_kind::host;
  void* const stream = h.stream().handle();
  // The exported elements of the ranks before r: export_indices() + first; their ghosts:
  // owned() + first.
  auto const exported = [&](std::size_t first) { return index_map{h.export_indices() + first, 0}; };
  auto const ghosts = [&](std::size_t first) { return index_map{nullptr, h.owned() + first}; };
  auto const& out = reverse ? h.receive_counts() : h.send_counts();
  auto const& in = reverse ? h.send_counts() : h.receive_counts();
  std::size_t bytes = 0;
  for (std::size_t c : out) bytes += m.bytes(c);
  std::byte* const send = h.buffers().send_at_least(kind, bytes, stream);
  for (std::size_t r = 0, first = 0, offset = 0; r < out.size(); first += out[r], offset += m.bytes(out[r]), ++r) {
    pack(m, out[r], reverse ? ghosts(first) : exported(first), send + offset, stream);
  }
  std::vector<std::size_t> arrived;
  std::byte const* got = exchange(h.comm(), kind, h.transport(), stream, m, send, out, arrived, h.buffers(), &in);
  for (std::size_t r = 0, first = 0, offset = 0; r < arrived.size();
       first += arrived[r], offset += m.bytes(arrived[r]), ++r) {
    if (reverse) {
      unpack_sum(m, arrived[r], got + offset, exported(first), stream);
    } else {
      unpack(m, arrived[r], got + offset, ghosts(first), stream);
    }
  }
}

// forward() over every axis in order: owners' values (the columns of m) to their ghosts, then
// after_unpack(stage) for each stage (a periodic shift). A halo from export lists: one hop.
template <class After> void for_each_axis(mpi::halo_plan const& h, message_columns const& m, After&& after_unpack) {
  if (h.from_exports()) {
    replay_exports(h, m, false);
    wait_for_unpacks(h, m);
    return;
  }
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

namespace coalesce::detail {

// Bad geometric halo input, agreed on by every rank before anything moves.
inline void check_halo_input(mpi::decomposition const& d, double cutoff, mpi::halo_options const& options,
                             std::size_t size, char const* what) {
  box const sub = d.subdomain();
  long long bad = -1;
  std::string why;
  if (!(cutoff > 0) || !std::isfinite(cutoff)) {
    bad = whole_call;
    why = "the cutoff " + std::to_string(cutoff) + " is not positive and finite";
  }
  for (unsigned a = 0; a < d.dims() && bad < 0; ++a) {
    if (d.ranks_per_axis()[a] > 1 && cutoff > sub.hi[a] - sub.lo[a]) {
      bad = whole_call;
      why = "the cutoff " + std::to_string(cutoff) + " is larger than the subdomain's width " +
            std::to_string(sub.hi[a] - sub.lo[a]) + " along axis " + std::to_string(a) +
            "; use fewer ranks along that axis or a smaller cutoff";
    }
  }
  if (std::string const e = options.owned_error(size); bad < 0 && !e.empty()) {
    bad = static_cast<long long>(size);
    why = e;
  }
  agree_on_errors(d.comm(), bad, why, what);
}

// What a geometric halo is staged over: the particles themselves (build_halo: whole records
// travel and are appended) or a scratch copy of their coordinates (plan_halo: only coordinates
// travel, the particles are untouched). Both give the stages the same candidates in the same
// order, so a plan and a build find the same ghosts.
template <class T, class L, class S, class Pos> struct particle_stage_store {
  static constexpr bool plan_only = false;  // the ghosts' records are the point: they always travel
  vector<T, L, S>& particles;
  Pos const& position;
  std::size_t size() const { return particles.size(); }
  position_columns positions() const { return position_columns_of(particles.storage(), position); }
  message_columns message() const { return columns_of("build_halo", particles); }
  void grow(coalesce::stream s, std::size_t kept, std::size_t total) { resize_in_order(s, kept, total, particles); }
  // The candidates [0, n) near each face (message k: faces[k]); then a message's elements packed.
  void select(unsigned axis, std::size_t n, face_selection (&faces)[2], void* stream) const {
    select_near_faces(kind_of_space<S>, positions(), axis, 0, n, faces, stream);
  }
  void pack_selected(int, message_columns const& m, std::size_t n, std::uint32_t const* sent, std::byte* at,
                     void* stream) const {
    pack(m, n, index_map{sent, 0}, at, stream);
  }
};
class coordinate_stage_store {
 public:
  static constexpr bool plan_only = true;  // only the stages' counts and lists are kept
  // The particles' first `n` elements are the candidates of the first stage, read where the
  // particles hold them (`from`, their position columns: nothing is copied); the ghosts'
  // coordinates go to `storage` (a communicator's buffers, kept between plans) at their own
  // indices, n and up, so one index names an element in either. The buffers' first n elements are
  // never written (host memory: pages never touched).
  coordinate_stage_store(memory_kind kind, position_columns const& from, std::size_t n, std::array<buffer, 3>& storage,
                         void* stream)
      : kind_(kind),
        dims_(from.dims),
        width_(from.width),
        owned_(from),
        owned_count_(n),
        size_(n),
        coordinates_(storage) {
    reserve(n + n / 4, n, stream);  // room for ghosts of a quarter of the particles before a regrowth
  }
  std::size_t size() const { return size_; }
  // The ghosts' coordinates (elements owned_count and up; the particles' stored format).
  position_columns positions() const {
    position_columns out = owned_;
    for (unsigned a = 0; a < dims_; ++a) out.axis[a] = column(a);
    return out;
  }
  message_columns message() const { return message_of(positions()); }
  void grow(coalesce::stream s, std::size_t kept, std::size_t total) {
    reserve(total, kept, s.handle());
    size_ = total;
  }
  // Candidates [0, n): the particles' own below owned_count, then earlier stages' ghosts; the
  // selection is ascending, so message k's first owned_part_[k] elements are particles'.
  void select(unsigned axis, std::size_t n, face_selection (&faces)[2], void* stream) {
    select_near_faces(kind_, owned_, axis, 0, std::min(n, owned_count_), faces, stream);
    face_selection ghosts[2] = {faces[0], faces[1]};
    for (int k = 0; k < 2; ++k) {
      owned_part_[k] = faces[k].count;
      if (ghosts[k].wanted) ghosts[k].out += faces[k].count;
    }
    select_near_faces(kind_, positions(), axis, owned_count_, n, ghosts, stream);
    for (int k = 0; k < 2; ++k) faces[k].count += ghosts[k].count;
  }
  void pack_selected(int k, message_columns const& m, std::size_t n, std::uint32_t const* sent, std::byte* at,
                     void* stream) const {
    std::size_t const first = std::min(owned_part_[k], n);
    pack_part(message_of(owned_), n, 0, first, index_map{sent, 0}, at, stream);
    pack_part(m, n, first, n - first, index_map{sent + first, 0}, at, stream);
  }

 private:
  message_columns message_of(position_columns const& c) const {
    message_columns m;
    for (unsigned a = 0; a < dims_; ++a) m.add(kind_, c.axis[a], width_, -1, "plan_halo");
    return m;
  }
  column_ref column(unsigned a) const { return column_ref{coordinates_[a].data(), width_}; }
  // At least `capacity` elements per axis, the ghosts below `kept` kept; a buffer of another memory
  // or too small is replaced by one twice the size asked for.
  void reserve(std::size_t capacity, std::size_t kept, void* stream) {
    std::size_t const bytes = std::max<std::size_t>(capacity, 1) * width_;
    for (unsigned a = 0; a < dims_; ++a) {
      buffer& b = coordinates_[a];
      if (b.kind() == kind_ && b.size() >= bytes) continue;
      buffer grown(kind_, 2 * bytes);
      if (kept > owned_count_) {
        copy_bytes(kind_, grown.data() + owned_count_ * width_, kind_, b.data() + owned_count_ * width_,
                   (kept - owned_count_) * width_, stream);
      }
      b = std::move(grown);
    }
  }
  memory_kind kind_;
  unsigned dims_, width_;
  position_columns owned_;  // the particles' position columns
  std::size_t owned_count_, size_;
  std::array<std::size_t, 2> owned_part_{};
  std::array<buffer, 3>& coordinates_;
};

// The stages of a geometric halo over `store` (owned elements [0, h.owned()), the ghosts appended
// behind them as they arrive): along each axis in `axes`, x then y then z, both directions at once.
template <class Store>
void stage_axes(mpi::halo_plan& h, mpi::decomposition const& d, Store& store, double cutoff, std::array<bool, 3> axes) {
  memory_kind const kind = halo_access::memory(h);
  box const sub = d.subdomain();
  void* const stream = d.stream().handle();
  for (unsigned a = 0; a < d.dims(); ++a) {
    if (!axes[a]) continue;
    double const length = d.global().hi[a] - d.global().lo[a];
    bool const periodic = d.periodic(a);
    // Both stages of an axis choose among what existed before the axis began: the owned particles
    // and the other axes' ghosts, never this axis's own ghosts (those would go back where they came from).
    std::size_t const candidates = store.size();
    std::array<mpi::halo_plan::stage, 2> st;
    for (int k = 0; k < 2; ++k) {
      int const direction = k == 0 ? -1 : +1;
      st[k].axis = a;
      st[k].direction = direction;
      st[k].to = d.neighbor(a, direction);
      st[k].from = d.neighbor(a, -direction);
    }
    // Candidates: every element so far (owned and earlier axes' ghosts) near either face, selected
    // in one pass into the buffers' scratch (room for all candidates per face), then kept in lists
    // of the sizes selected.
    face_selection faces[2] = {{st[0].to != MPI_PROC_NULL && candidates > 0, sub.lo[a] + cutoff},
                               {st[1].to != MPI_PROC_NULL && candidates > 0, sub.hi[a] - cutoff}};
    if (faces[0].wanted || faces[1].wanted) {
      std::uint32_t* const picked = h.buffers().selection_at_least(kind, 2 * candidates, stream);
      faces[0].out = picked;
      faces[1].out = picked + candidates;
      store.select(a, candidates, faces, stream);
    }
    for (int k = 0; k < 2; ++k) {
      st[k].sent_count = faces[k].wanted ? faces[k].count : 0;
      st[k].sent = buffer(kind, std::max<std::size_t>(st[k].sent_count, 1) * sizeof(std::uint32_t));
      if (st[k].sent_count > 0) {
        copy_bytes(kind, st[k].sent.data(), kind, faces[k].out, st[k].sent_count * sizeof(std::uint32_t), stream);
      }
    }
    // A plan's last axis with neighbours anywhere sends counts only: the ghosts' coordinates are
    // candidates of later axes, and there are none (a slab decomposition: one message of counts).
    // Every rank agrees: ranks per axis and periodicity are the decomposition's, not a rank's.
    bool later_neighbours = false;
    for (unsigned b = a + 1; b < d.dims(); ++b) {
      later_neighbours = later_neighbours || (axes[b] && (d.ranks_per_axis()[b] > 1 || d.periodic(b)));
    }
    bool const counts_only = Store::plan_only && !later_neighbours;
    message_columns const records = counts_only ? message_columns{} : store.message();
    auto const pack_message = [&](int k, std::size_t n, std::byte* at) {
      if (!counts_only) store.pack_selected(k, records, n, st[k].sent_indices(), at, stream);
    };
    auto const got = exchange_axis_packed(h, records, {st[0].sent_count, st[1].sent_count}, pack_message,
                                          {st[0].to, st[1].to}, {st[0].from, st[1].from});
    st[0].first_ghost = store.size();
    st[0].received = got.count[0];
    st[1].first_ghost = st[0].first_ghost + st[0].received;
    st[1].received = got.count[1];
    store.grow(d.stream(), st[0].first_ghost, st[1].first_ghost + st[1].received);
    message_columns const into = store.message();
    auto const after = store.positions();
    int const coord = d.coords()[a], last = d.ranks_per_axis()[a] - 1;
    for (int k = 0; k < 2; ++k) {
      if (!counts_only) unpack(into, st[k].received, got.at[k], index_map{nullptr, st[k].first_ghost}, stream);
      // What crossed the global boundary on its way here is a periodic image, one box length away:
      // the sender sits at the edge it sent across.
      int const direction = st[k].direction;
      int const from_coord = (coord - direction + d.ranks_per_axis()[a]) % d.ranks_per_axis()[a];
      st[k].received_shift = periodic && direction < 0 && from_coord == 0      ? length
                             : periodic && direction > 0 && from_coord == last ? -length
                                                                               : 0.0;
      if (st[k].received > 0 && !counts_only) {
        shift_column(kind, after, a, st[k].first_ghost, st[k].received, st[k].received_shift, stream);
      }
      halo_access::stages(h).push_back(std::move(st[k]));
    }
  }
  halo_access::set_ghosts(h, store.size() - h.owned());
  if (kind == memory_kind::device && device_is_gpu) coalesce::synchronize(h.stream());
}

}  // namespace coalesce::detail

namespace coalesce::mpi {

// Finds the ghosts, exchanges them stage by stage, appends them to `particles` (whole records)
// and returns the plan. The particles' first options.owned elements (default: all) are owned;
// the rest, a previous halo's ghosts, are dropped first. Collective. GPU memory: candidates are
// selected and packed on the GPU (the plan's stream is the decomposition's).
template <class T, class L, class S, class Pos> halo_plan build_halo(decomposition const& d, vector<T, L, S>& particles,
                                                                     Pos const& position, double cutoff,
                                                                     halo_options const& options = {}) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  std::size_t const owned = options.owned_of(particles.size());
  detail::check_halo_input(d, cutoff, options, particles.size(), "build_halo");
  coalesce::detail::check_boxes_agree(d.comm(), particles, "build_halo");
  // Fixed-point and box_fixed positions: ghosts are written up to a cutoff past the box (images).
  coalesce::detail::check_fixed_position_range(coalesce::detail::position_columns_of(particles.storage(), position),
                                               d.global().lo, d.global().hi,
                                               {d.periodic(0), d.periodic(1), d.periodic(2)}, cutoff, "build_halo");
  if (owned < particles.size()) detail::resize_in_order(d.stream(), owned, owned, particles);
  halo_plan h = detail::halo_access::start(d, kind, owned, owned);
  detail::halo_access::set_particles<T>(h, coalesce::detail::position_leaves_of<T>(position));
  if constexpr (layout_storage<T, L>::boxed) detail::halo_access::set_box(h, particles.get_box());
  particles.mark_reordered();  // new ghosts behind the owned particles: lists of the old ones are stale
  detail::particle_stage_store<T, L, S, Pos> store{particles, position};
  detail::stage_axes(h, d, store, cutoff, options.axes);
  return h;
}

// The plan of build_halo without touching the particles: only their coordinates travel, stage by
// stage, so that later stages see earlier stages' ghosts. forward(halo, particles) then appends
// the ghosts' whole records (replacing a previous halo's ghosts: the particles may hold them, past
// options.owned) exactly as build_halo would have. Collective.
template <class T, class L, class S, class Pos>
halo_plan plan_halo(decomposition const& d, vector<T, L, S> const& particles, Pos const& position, double cutoff,
                    halo_options const& options = {}) {
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  std::size_t const owned = options.owned_of(particles.size());
  detail::check_halo_input(d, cutoff, options, particles.size(), "plan_halo");
  coalesce::detail::check_boxes_agree(d.comm(), particles, "plan_halo");
  coalesce::detail::check_fixed_position_range(coalesce::detail::position_columns_of(particles.storage(), position),
                                               d.global().lo, d.global().hi,
                                               {d.periodic(0), d.periodic(1), d.periodic(2)}, cutoff, "plan_halo");
  halo_plan h = detail::halo_access::start(d, kind, owned, particles.size());
  detail::halo_access::set_particles<T>(h, coalesce::detail::position_leaves_of<T>(position));
  if constexpr (layout_storage<T, L>::boxed) detail::halo_access::set_box(h, particles.get_box());
  detail::coordinate_stage_store store(kind, coalesce::detail::position_columns_of(particles.storage(), position),
                                       owned, d.buffers().coordinates, d.stream().handle());
  detail::stage_axes(h, d, store, cutoff, options.axes);
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
                        " ghosts; after plan_halo, forward the whole records first (forward(halo, particles)); "
                        "after the particle count changed, rebuild the halo");
  }
  detail::check_forward_box(h, particles, true);
  auto const columns = coalesce::detail::position_columns_of(particles.storage(), position);
  detail::message_columns const m = detail::coordinate_message(kind, columns, false);
  detail::for_each_axis(h, m, [&](halo_plan::stage const& st) {
    coalesce::detail::shift_column(kind, columns, st.axis, st.first_ghost, st.received, st.received_shift,
                                   h.stream().handle());
  });
}

// Any per-particle array (std::vector<U>, coalesce::array<U> or coalesce::vector<U>), owners'
// values to the ghosts; an array of owned() elements (or of the particles' size when the plan
// was made: a previous halo's ghosts) is extended to owned() + ghosts(). Whole
// records of the particles' type (the particles themselves) arrive as build_halo left them: the
// position of a ghost across a periodic boundary is its image, shifted by the box length.
template <class Array> void forward(halo_plan const& h, Array& values) {
  detail::check_halo_memory<Array>(h, "forward");
  detail::check_halo_size(h, values, "forward");
  if (detail::particle_count(values) != h.owned() + h.ghosts()) {
    detail::resize_in_order(h.stream(), h.owned(), h.owned() + h.ghosts(), values);
    if constexpr (requires { values.mark_reordered(); }) values.mark_reordered();  // new ghosts: old lists stale
  }
  constexpr auto kind = detail::memory_of_array<Array>;
  auto const images = detail::image_columns(h, values);
  detail::check_forward_box(h, values, images.has_value());
  detail::message_columns const m = detail::columns_of("forward", values);
  detail::for_each_axis(h, m, [&](halo_plan::stage const& st) {
    if (!images || st.received == 0) return;
    coalesce::detail::shift_column(kind, *images, st.axis, st.first_ghost, st.received, st.received_shift,
                                   h.stream().handle());
  });
}

}  // namespace coalesce::mpi

namespace coalesce::detail {
// reverse's stages, backwards, over the columns of m.
inline void reverse_columns(mpi::halo_plan const& h, message_columns const& m) {
  if (h.from_exports()) {
    replay_exports(h, m, true);
    wait_for_unpacks(h, m);
    return;
  }
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
  auto const columns = coalesce::detail::summed_member_columns_of(particles.storage(), member);
  detail::reverse_columns(h, detail::coordinate_message(kind, columns, true));
}

}  // namespace coalesce::mpi
