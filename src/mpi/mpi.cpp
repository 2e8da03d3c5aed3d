// coalesce::mpi (coalesce/mpi.hpp): the Cartesian decomposition, the collective agreement on bad
// input, and the message exchange of a migration. Built only with MPI (target coalesce::mpi).
#include <coalesce/mpi/halo.hpp>
#include <coalesce/mpi/migrate.hpp>
#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // MPIX_Query_cuda_support
#endif

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace coalesce::mpi {

transport default_transport() {
  if (char const* env = std::getenv("COALESCE_MPI_DEVICE_POINTERS"); env != nullptr && env[0] != '\0') {
    return env[0] == '1' ? transport::device_pointers : transport::staged;
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (MPIX_Query_cuda_support() == 1) return transport::device_pointers;
#endif
  return transport::staged;
}

}  // namespace coalesce::mpi

namespace coalesce::detail {
namespace {

void check_mpi(int status, char const* call) {
  if (status != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    detail::throw_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }
}

// MPI_Waitall that, when it fails (a truncated receive: a neighbour sent another type or
// plan), still lets every request it left pending finish before throwing. Throwing at once would
// free message buffers that a send in flight still reads (a use-after-free in the MPI library when
// the peer's receive arrives later: seen with UCX's rendezvous on GPU memory).
void wait_all_mpi(int count, MPI_Request* requests, MPI_Status* statuses) {
  int const status = MPI_Waitall(count, requests, statuses);
  if (status != MPI_SUCCESS) {
    for (int i = 0; i < count; ++i) {
      if (requests[i] != MPI_REQUEST_NULL) (void)MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
    }
  }
  check_mpi(status, "MPI_Waitall");
}

}  // namespace
}  // namespace coalesce::detail

namespace coalesce::mpi {

communicator::communicator(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  adopt(dup);
}

void communicator::adopt(MPI_Comm owned) {
  comm_ = owned;
  // Errors come back as codes (and leave as coalesce::error naming the call), not as an abort.
  detail::check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  detail::check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  detail::check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

communicator::~communicator() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}
communicator::communicator(communicator&& other) noexcept { *this = std::move(other); }
communicator& communicator::operator=(communicator&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    stream_ = other.stream_;
    transport_ = other.transport_;
    buffers_ = std::move(other.buffers_);
    halo_buffers_ = std::move(other.halo_buffers_);
  }
  return *this;
}

decomposition::decomposition(MPI_Comm comm, box const& global, unsigned dims, std::array<int, 3> ranks_per_axis)
    : decomposition(comm, global, dims, ranks_per_axis, global.periodic_axes()) {}

decomposition::decomposition(MPI_Comm comm, box const& global, unsigned dims, std::array<int, 3> ranks_per_axis,
                             std::array<bool, 3> periodic)
    : dims_(dims), periodic_(periodic), global_(global) {
  if (dims != 2 && dims != 3) detail::throw_error("decomposition: dims must be 2 or 3, got " + std::to_string(dims));
  for (unsigned a = 0; a < dims; ++a) {
    if (!(global.hi[a] > global.lo[a]) || !std::isfinite(global.lo[a]) || !std::isfinite(global.hi[a])) {
      detail::throw_error("decomposition: the box is empty or not finite along axis " + std::to_string(a));
    }
  }
  int size = 0;
  detail::check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::array<int, 3> ranks = ranks_per_axis;
  if (dims == 2) ranks[2] = 1;
  // MPI_Dims_create aborts the job when the given counts cannot make `size`: say it ourselves.
  int fixed = 1;
  for (unsigned a = 0; a < dims; ++a) {
    if (ranks[a] < 0) detail::throw_error("decomposition: a negative number of ranks along axis " + std::to_string(a));
    if (ranks[a] > 0) fixed *= ranks[a];
  }
  if (size % fixed != 0) {
    detail::throw_error("decomposition: " + std::to_string(ranks[0]) + " x " + std::to_string(ranks[1]) + " x " +
                        std::to_string(ranks[2]) + " ranks per axis do not divide the communicator's " +
                        std::to_string(size) + " ranks (0 lets MPI choose an axis)");
  }
  detail::check_mpi(MPI_Dims_create(size, static_cast<int>(dims), ranks.data()), "MPI_Dims_create");
  if (ranks[0] * ranks[1] * ranks[2] != size) {
    detail::throw_error("decomposition: " + std::to_string(ranks[0]) + " x " + std::to_string(ranks[1]) + " x " +
                        std::to_string(ranks[2]) + " ranks per axis do not make the communicator's " +
                        std::to_string(size) + " ranks");
  }
  if (dims == 2) periodic_[2] = false;
  int const cart_periodic[3] = {periodic_[0], periodic_[1], periodic_[2]};
  MPI_Comm cart = MPI_COMM_NULL;
  detail::check_mpi(MPI_Cart_create(comm, static_cast<int>(dims), ranks.data(), cart_periodic, 0, &cart),
                    "MPI_Cart_create");
  adopt(cart);
  ranks_ = ranks;
  detail::check_mpi(MPI_Cart_coords(this->comm(), rank(), static_cast<int>(dims), coords_.data()), "MPI_Cart_coords");
  // owner() numbers ranks row-major, as MPI_Cart_create without reordering does: make sure.
  int const row_major = (coords_[0] * ranks_[1] + coords_[1]) * ranks_[2] + coords_[2];
  if (row_major != rank()) {
    detail::throw_error("decomposition: this MPI numbers Cartesian ranks other than row-major (rank " +
                        std::to_string(rank()) + " at coordinates " + std::to_string(coords_[0]) + ", " +
                        std::to_string(coords_[1]) + ", " + std::to_string(coords_[2]) + "), which owner() relies on");
  }
}

box decomposition::subdomain() const {
  box b = global_;
  for (unsigned a = 0; a < dims_; ++a) {
    double const width = (global_.hi[a] - global_.lo[a]) / ranks_[a];
    b.lo[a] = global_.lo[a] + width * coords_[a];
    b.hi[a] = coords_[a] + 1 == ranks_[a] ? global_.hi[a] : global_.lo[a] + width * (coords_[a] + 1);
  }
  return b;
}

coalesce::detail::owner_grid decomposition::grid() const {
  coalesce::detail::owner_grid g;
  g.lo = global_.lo;
  g.hi = global_.hi;
  g.ranks = ranks_;
  g.dims = dims_;
  g.periodic = periodic_;
  return g;
}

int decomposition::owner(std::array<double, 3> const& position) const {
  return coalesce::detail::owner_rank(grid(), position.data());  // the arithmetic GPU kernels use too
}

int decomposition::neighbor(unsigned axis, int direction) const {
  if (axis >= dims_ || (direction != 1 && direction != -1)) {
    detail::throw_error("decomposition::neighbor: axis " + std::to_string(axis) + " and direction " +
                        std::to_string(direction) + " (axis < dims, direction +1 or -1)");
  }
  int source = 0, destination = 0;
  detail::check_mpi(MPI_Cart_shift(comm(), static_cast<int>(axis), direction, &source, &destination), "MPI_Cart_shift");
  return destination;
}

}  // namespace coalesce::mpi

namespace coalesce::detail {

void agree_on_errors(MPI_Comm comm, long long local_bad, std::string const& local_value, char const* what) {
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  // Everybody learns every rank's first bad element; the lowest failing rank is reported by all.
  std::vector<long long> bad(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&local_bad, 1, MPI_LONG_LONG, bad.data(), 1, MPI_LONG_LONG, comm), "MPI_Allgather");
  auto const first = std::find_if(bad.begin(), bad.end(), [](long long b) { return b >= 0; });
  if (first == bad.end()) return;
  int const culprit = static_cast<int>(first - bad.begin());
  // The culprit's description travels to everybody, so all ranks throw the same words.
  int length = rank == culprit ? static_cast<int>(local_value.size()) : 0;
  check_mpi(MPI_Bcast(&length, 1, MPI_INT, culprit, comm), "MPI_Bcast");
  std::string value(static_cast<std::size_t>(length), ' ');
  if (rank == culprit) value = local_value;
  check_mpi(MPI_Bcast(value.data(), length, MPI_CHAR, culprit, comm), "MPI_Bcast");
  int failing = 0;
  for (long long b : bad) failing += b >= 0;
  std::string const element = *first == whole_call ? "" : ", element " + std::to_string(*first);
  throw_error(std::string(what) + ": rank " + std::to_string(culprit) + element + ": " + value +
              (failing > 1 ? " (and " + std::to_string(failing - 1) + " more rank(s) with bad input)" : "") +
              "; every rank stopped before anything moved");
}

namespace {

constexpr std::size_t segment_alignment = 16;
std::size_t round_up(std::size_t bytes) {
  return (bytes + segment_alignment - 1) / segment_alignment * segment_alignment;
}

int message_count(std::size_t bytes, char const* what) {
  if (bytes > 0x7fffffffull) {
    throw_error(std::string(what) + ": a message of " + std::to_string(bytes) +
                " bytes exceeds MPI's int counts; use more ranks or migrate more often");
  }
  return static_cast<int>(bytes);
}

bool on_gpu(memory_kind kind) { return kind == memory_kind::device && device_is_gpu; }

// Where MPI reads a message from: the message itself (host memory, or GPU memory with a
// CUDA-aware MPI) or its staged copy in page-locked host memory. Waits for the stream's work
// (the packing) first: MPI reads the bytes as soon as it is called.
std::byte const* outgoing(memory_kind kind, mpi::transport how, void* stream, std::byte const* send, std::size_t bytes,
                          message_buffers& buffers) {
  if (!on_gpu(kind)) return send;
  if (how == mpi::transport::device_pointers) {
    coalesce::detail::synchronize_stream(stream);
    return send;
  }
  std::byte* stage = buffers.send_stage.at_least(bytes);
  coalesce::detail::copy_bytes(memory_kind::host, stage, kind, send, bytes, stream);  // waits: host memory
  return stage;
}

// Where MPI writes a message to, and the copy to its final place after it arrived.
std::byte* incoming(memory_kind kind, mpi::transport how, void* stream, std::size_t bytes, message_buffers& buffers) {
  std::byte* received = buffers.received_at_least(kind, bytes, stream);
  if (!on_gpu(kind) || how == mpi::transport::device_pointers) return received;
  return buffers.received_stage.at_least(bytes);
}
void arrived(memory_kind kind, mpi::transport how, void* stream, std::size_t bytes, message_buffers& buffers) {
  if (!on_gpu(kind) || how == mpi::transport::device_pointers || bytes == 0) return;
  coalesce::detail::copy_bytes(kind, buffers.received.data(), memory_kind::host, buffers.received_stage.data, bytes,
                               stream);
}

}  // namespace

std::size_t message_columns::bytes(std::size_t count) const {
  std::size_t total = 0;
  for (std::size_t w : widths) total += round_up(count * w);
  return total;
}

std::size_t message_columns::element_bytes() const {
  std::size_t total = 0;
  for (std::size_t w : widths) total += w;
  return total;
}

void message_columns::add(memory_kind k, coalesce::column_ref c, std::size_t width, int type, char const* what) {
  if (kind_set && !coalesce::detail::same_memory(kind, k)) {
    throw_error(std::string(what) +
                ": the per-particle arrays are in different memories (host and GPU); keep them all "
                "where the particles are");
  }
  kind = k;
  kind_set = true;
  columns.push_back(c);
  widths.push_back(width);
  types.push_back(type);
}

void pack(message_columns const& m, std::size_t count, index_map from, std::byte* message, void* stream) {
  pack_part(m, count, 0, count, from, message, stream);
}

void pack_part(message_columns const& m, std::size_t total, std::size_t first, std::size_t count, index_map from,
               std::byte* message, void* stream) {
  if (count == 0) return;
  std::vector<coalesce::detail::column_copy> copies;
  std::size_t offset = 0;
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    copies.push_back(
        {coalesce::column_ref{message + offset + first * m.widths[c], m.widths[c]}, m.columns[c], m.widths[c]});
    offset += round_up(total * m.widths[c]);
  }
  coalesce::detail::move_columns_indexed(m.kind, copies.data(), copies.size(), count, from, index_map{nullptr, 0},
                                         stream);
}

void unpack(message_columns const& m, std::size_t count, std::byte const* message, index_map to, void* stream) {
  if (count == 0) return;
  std::vector<coalesce::detail::column_copy> copies;
  std::size_t offset = 0;
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    copies.push_back(
        {m.columns[c], coalesce::column_ref{const_cast<std::byte*>(message) + offset, m.widths[c]}, m.widths[c]});
    offset += round_up(count * m.widths[c]);
  }
  coalesce::detail::move_columns_indexed(m.kind, copies.data(), copies.size(), count, index_map{nullptr, 0}, to,
                                         stream);
}

void unpack_sum(message_columns const& m, std::size_t count, std::byte const* message, index_map to, void* stream) {
  if (count == 0) return;
  std::vector<coalesce::detail::column_sum> sums;
  std::size_t offset = 0;
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    if (m.types[c] < 0)
      throw_error(
          "reverse: a column that is not float, double or a 32/64-bit integer cannot be summed (a member "
          "stored in another format by stored_as is not summed either: sum into a float or double array)");
    sums.push_back({m.columns[c], coalesce::column_ref{const_cast<std::byte*>(message) + offset, m.widths[c]},
                    static_cast<coalesce::detail::scalar_type>(m.types[c])});
    offset += round_up(count * m.widths[c]);
  }
  coalesce::detail::add_columns_indexed(m.kind, sums.data(), sums.size(), count, index_map{nullptr, 0}, to, stream);
}

std::array<double, 3> read_position(memory_kind kind, coalesce::detail::position_columns const& c, std::size_t i) {
  std::array<double, 3> p{0, 0, 0};
  for (unsigned a = 0; a < c.dims; ++a) p[a] = read_position_coordinate(kind, c, a, i);
  return p;
}

namespace {
// A plan's replay knows how many bytes each message holds: one of another size was sent by a rank
// replaying another plan, or for arrays of another type.
void check_replayed_message(MPI_Status const& status, std::size_t expected, std::string const& sender,
                            char const* plan) {
  int got = 0;
  MPI_Get_count(&status, MPI_BYTE, &got);
  if (static_cast<std::size_t>(got) != expected) {
    throw_error("halo: " + sender + " sent " + std::to_string(got) + " bytes where this rank's plan expects " +
                std::to_string(expected) + "; every rank must use the plans of one " + plan +
                " call, for arrays of the same type");
  }
}

// A message's element count travels with its element size, so arrays of different types on two
// ranks are an error, not a misread.
void check_element_size(unsigned long long theirs, std::size_t ours, char const* what) {
  if (theirs != ours) {
    throw_error(std::string(what) + ": a neighbour sent elements of " + std::to_string(theirs) +
                " bytes where this rank's have " + std::to_string(ours) +
                "; every rank must exchange arrays of the same element type");
  }
}
}  // namespace

std::vector<std::size_t> exchange_counts_agreeing(MPI_Comm comm, std::vector<std::size_t> const& send_counts,
                                                  std::size_t element_bytes, long long local_bad,
                                                  std::string const& local_value, char const* what) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  auto const ranks = static_cast<std::size_t>(size);
  // Per rank: the count, the element size, and whether this rank has bad input (every rank tells
  // every rank, so all learn alike whether anybody has).
  std::vector<unsigned long long> out(3 * ranks), in(3 * ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    out[3 * r] = local_bad >= 0 ? 0 : send_counts[r];
    out[3 * r + 1] = element_bytes;
    out[3 * r + 2] = local_bad >= 0 ? 1 : 0;
  }
  check_mpi(MPI_Alltoall(out.data(), 3, MPI_UNSIGNED_LONG_LONG, in.data(), 3, MPI_UNSIGNED_LONG_LONG, comm),
            "MPI_Alltoall");
  bool anybody_bad = false;
  for (std::size_t r = 0; r < ranks; ++r) anybody_bad = anybody_bad || in[3 * r + 2] != 0;
  // Every rank takes this branch or none: the full agreement (which rank, which element, in words)
  // then throws the same error everywhere.
  if (anybody_bad) agree_on_errors(comm, local_bad, local_value, what);
  std::vector<std::size_t> received(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r) {
    received[r] = in[3 * r];
    if (in[3 * r] > 0) check_element_size(in[3 * r + 1], element_bytes, what);
  }
  return received;
}

void pack_and_close_up(message_columns const& m, std::size_t n, std::uint32_t const* leavers, std::size_t leaving,
                       int const* destination, int self, std::vector<std::size_t> const& send_counts, bool keep_order,
                       std::byte* send, message_buffers& buffers) {
  if (leaving == 0) return;
  int const ranks = static_cast<int>(send_counts.size());
  int destinations = 0;
  for (std::size_t c : send_counts) destinations += c > 0;
  std::vector<coalesce::detail::column_copy> moves;
  std::size_t offset = 0;
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    // One destination (its message first in `send`): the close-up packs too; several: packed below.
    moves.push_back(
        {coalesce::column_ref{destinations == 1 ? send + offset : nullptr, m.widths[c]}, m.columns[c], m.widths[c]});
    offset += round_up(leaving * m.widths[c]);
  }
  if (destinations > 1) {
    if (buffers.grouped.size() < leaving) buffers.grouped.resize(leaving + leaving / 4);
    coalesce::detail::group_leavers(destination, leavers, leaving, self, ranks, send_counts.data(),
                                    buffers.grouped.data());
    std::size_t first = 0;
    offset = 0;
    for (std::size_t r = 0; r < send_counts.size(); ++r) {
      pack(m, send_counts[r], index_map{buffers.grouped.data() + first, 0}, send + offset, nullptr);
      offset += m.bytes(send_counts[r]);
      first += send_counts[r];
    }
  }
  if (buffers.holes.size() < leaving) buffers.holes.resize(leaving + leaving / 4);
  coalesce::detail::pack_and_close_up(moves.data(), moves.size(), n, leavers, leaving, keep_order,
                                      buffers.holes.data());
}

std::byte const* exchange(MPI_Comm comm, memory_kind kind, mpi::transport how, void* stream, message_columns const& m,
                          std::byte const* send, std::vector<std::size_t> const& send_counts,
                          std::vector<std::size_t>& received_counts, message_buffers& buffers,
                          std::vector<std::size_t> const* expected) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  auto const ranks = static_cast<std::size_t>(size);
  std::vector<unsigned long long> out(2 * ranks), in(2 * ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    out[2 * r] = send_counts[r];
    out[2 * r + 1] = m.element_bytes();
  }
  if (expected != nullptr) {  // a plan's replay: only the data travels
    for (std::size_t r = 0; r < ranks; ++r) {
      in[2 * r] = (*expected)[r];
      in[2 * r + 1] = m.element_bytes();
    }
  } else {
    check_mpi(MPI_Alltoall(out.data(), 2, MPI_UNSIGNED_LONG_LONG, in.data(), 2, MPI_UNSIGNED_LONG_LONG, comm),
              "MPI_Alltoall");
  }
  received_counts.assign(ranks, 0);
  std::size_t total_in = 0, total_out = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    received_counts[r] = in[2 * r];
    if (in[2 * r] > 0) check_element_size(in[2 * r + 1], m.element_bytes(), "migrate");
    total_in += m.bytes(received_counts[r]);
    total_out += m.bytes(send_counts[r]);
  }
  std::byte const* from = outgoing(kind, how, stream, send, total_out, buffers);
  std::byte* into = incoming(kind, how, stream, total_in, buffers);
  std::vector<MPI_Request> requests;
  constexpr int tag = 0x636f;  // "co"
  std::size_t offset = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::size_t const b = m.bytes(received_counts[r]);
    if (b > 0) {
      requests.emplace_back();
      check_mpi(MPI_Irecv(into + offset, message_count(b, "migrate"), MPI_BYTE, static_cast<int>(r), tag, comm,
                          &requests.back()),
                "MPI_Irecv");
    }
    offset += b;
  }
  offset = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::size_t const b = m.bytes(send_counts[r]);
    if (b > 0) {
      requests.emplace_back();
      check_mpi(MPI_Isend(from + offset, message_count(b, "migrate"), MPI_BYTE, static_cast<int>(r), tag, comm,
                          &requests.back()),
                "MPI_Isend");
    }
    offset += b;
  }
  std::vector<MPI_Status> statuses(requests.size());
  wait_all_mpi(static_cast<int>(requests.size()), requests.data(), statuses.data());
  if (expected != nullptr) {  // the receives come first among the requests, by source rank ascending
    std::size_t k = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      std::size_t const b = m.bytes(received_counts[r]);
      if (b == 0) continue;
      check_replayed_message(statuses[k++], b, "rank " + std::to_string(r), "plan_halo");
    }
  }
  arrived(kind, how, stream, total_in, buffers);
  return buffers.received.data();
}

std::vector<std::size_t> exchange_counts(MPI_Comm comm, std::vector<std::size_t> const& counts) {
  std::vector<unsigned long long> out(counts.begin(), counts.end()), in(out.size());
  check_mpi(MPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, comm),
            "MPI_Alltoall");
  return {in.begin(), in.end()};
}

std::byte const* sendrecv_pair(MPI_Comm comm, memory_kind kind, mpi::transport how, void* stream,
                               message_columns const& m, std::byte const* send, std::array<std::size_t, 2> count,
                               std::array<int, 2> to, std::array<int, 2> from,
                               std::array<std::size_t, 2> const* expected, std::array<std::size_t, 2>& received,
                               message_buffers& buffers) {
  if (to[0] == MPI_PROC_NULL && to[1] == MPI_PROC_NULL && from[0] == MPI_PROC_NULL && from[1] == MPI_PROC_NULL) {
    received = {0, 0};  // an axis with no neighbour on either side: nobody sends to this rank either
    return nullptr;
  }
  constexpr int tag = 0x6870;  // "hp": +0, +1 counts of messages 0 and 1, +2, +3 their bytes
  unsigned long long out[2][2], in[2][2] = {{0, 0}, {0, 0}};
  MPI_Request requests[4];
  for (int k = 0; k < 2; ++k) {
    out[k][0] = to[k] == MPI_PROC_NULL ? 0 : count[k];
    out[k][1] = m.element_bytes();
  }
  if (expected != nullptr) {  // a plan's replay: the counts are known, only the data travels
    for (int k = 0; k < 2; ++k) {
      in[k][0] = (*expected)[k];
      in[k][1] = m.element_bytes();
    }
  } else {
    for (int k = 0; k < 2; ++k) {
      check_mpi(MPI_Irecv(in[k], 2, MPI_UNSIGNED_LONG_LONG, from[k], tag + k, comm, &requests[2 * k]), "MPI_Irecv");
      check_mpi(MPI_Isend(out[k], 2, MPI_UNSIGNED_LONG_LONG, to[k], tag + k, comm, &requests[2 * k + 1]), "MPI_Isend");
    }
    wait_all_mpi(4, requests, MPI_STATUSES_IGNORE);
  }
  std::size_t out_bytes[2], in_bytes[2];
  for (int k = 0; k < 2; ++k) {
    if (from[k] == MPI_PROC_NULL) in[k][0] = 0;
    if (in[k][0] > 0) check_element_size(in[k][1], m.element_bytes(), "halo");
    received[k] = in[k][0];
    out_bytes[k] = m.bytes(out[k][0]);
    in_bytes[k] = m.bytes(in[k][0]);
  }
  if (m.columns.empty()) return nullptr;  // counts only (a plan's last axis with neighbours): no data round
  std::byte const* message = outgoing(kind, how, stream, send, out_bytes[0] + out_bytes[1], buffers);
  std::byte* into = incoming(kind, how, stream, in_bytes[0] + in_bytes[1], buffers);
  for (int k = 0; k < 2; ++k) {
    check_mpi(MPI_Irecv(into + (k == 0 ? 0 : in_bytes[0]), message_count(in_bytes[k], "halo"), MPI_BYTE, from[k],
                        tag + 2 + k, comm, &requests[2 * k]),
              "MPI_Irecv");
    check_mpi(MPI_Isend(message + (k == 0 ? 0 : out_bytes[0]), message_count(out_bytes[k], "halo"), MPI_BYTE, to[k],
                        tag + 2 + k, comm, &requests[2 * k + 1]),
              "MPI_Isend");
  }
  MPI_Status statuses[4];
  wait_all_mpi(4, requests, statuses);
  for (int k = 0; k < 2 && expected != nullptr; ++k) {
    if (from[k] != MPI_PROC_NULL) check_replayed_message(statuses[2 * k], in_bytes[k], "a neighbour", "build_halo");
  }
  arrived(kind, how, stream, in_bytes[0] + in_bytes[1], buffers);
  return buffers.received.data();
}

}  // namespace coalesce::detail

namespace coalesce::mpi {}  // namespace coalesce::mpi
