// coalesce::mpi (coalesce/mpi.hpp): the Cartesian decomposition, the collective agreement on bad
// input, and the message exchange of a migration. Built only with MPI (target coalesce::mpi).
#include <coalesce/mpi.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace coalesce::mpi {

namespace {

void check(int status, char const* call) {
  if (status != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(status, text, &length);
    detail::throw_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }
}

}  // namespace

decomposition::decomposition(MPI_Comm comm, box const& global, unsigned dims, std::array<int, 3> ranks_per_axis)
    : dims_(dims), global_(global) {
  if (dims != 2 && dims != 3) detail::throw_error("decomposition: dims must be 2 or 3, got " + std::to_string(dims));
  for (unsigned a = 0; a < dims; ++a) {
    if (!(global.hi[a] > global.lo[a]) || !std::isfinite(global.lo[a]) || !std::isfinite(global.hi[a])) {
      detail::throw_error("decomposition: the box is empty or not finite along axis " + std::to_string(a));
    }
  }
  int size = 0;
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
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
                        std::to_string(ranks[2]) + " ranks per axis do not divide the communicator's " + std::to_string(size) +
                        " ranks (0 lets MPI choose an axis)");
  }
  check(MPI_Dims_create(size, static_cast<int>(dims), ranks.data()), "MPI_Dims_create");
  if (ranks[0] * ranks[1] * ranks[2] != size) {
    detail::throw_error("decomposition: " + std::to_string(ranks[0]) + " x " + std::to_string(ranks[1]) + " x " +
                        std::to_string(ranks[2]) + " ranks per axis do not make the communicator's " + std::to_string(size) +
                        " ranks");
  }
  int const periodic[3] = {global.edges == boundary::periodic, global.edges == boundary::periodic,
                           global.edges == boundary::periodic};
  check(MPI_Cart_create(comm, static_cast<int>(dims), ranks.data(), periodic, 0, &comm_), "MPI_Cart_create");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  size_ = size;
  ranks_ = ranks;
  check(MPI_Cart_coords(comm_, rank_, static_cast<int>(dims), coords_.data()), "MPI_Cart_coords");
}

decomposition::~decomposition() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}
decomposition::decomposition(decomposition&& other) noexcept { *this = std::move(other); }
decomposition& decomposition::operator=(decomposition&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    dims_ = other.dims_;
    ranks_ = other.ranks_;
    coords_ = other.coords_;
    global_ = other.global_;
  }
  return *this;
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

int decomposition::owner(std::array<double, 3> const& position) const {
  int coords[3] = {0, 0, 0};
  for (unsigned a = 0; a < dims_; ++a) {
    double const extent = global_.hi[a] - global_.lo[a];
    double t = position[a] - global_.lo[a];
    if (!std::isfinite(t)) return -1;
    if (global_.edges == boundary::periodic) {
      if (t < 0.0 || t >= extent) t -= std::floor(t / extent) * extent;
    } else if (t < 0.0 || t > extent) {
      return -1;
    }
    int const c = static_cast<int>(t / extent * ranks_[a]);
    coords[a] = std::clamp(c, 0, ranks_[a] - 1);  // t == extent (or rounding): the last rank
  }
  int rank = 0;
  MPI_Cart_rank(comm_, coords, &rank);
  return rank;
}

int decomposition::neighbor(unsigned axis, int direction) const {
  if (axis >= dims_ || (direction != 1 && direction != -1)) {
    detail::throw_error("decomposition::neighbor: axis " + std::to_string(axis) + " and direction " + std::to_string(direction) +
                        " (axis < dims, direction +1 or -1)");
  }
  int source = 0, destination = 0;
  check(MPI_Cart_shift(comm_, static_cast<int>(axis), direction, &source, &destination), "MPI_Cart_shift");
  return destination;
}

namespace detail {

void agree_on_errors(MPI_Comm comm, long long local_bad, std::string const& local_value, char const* what) {
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  // Everybody learns every rank's first bad element; the lowest failing rank is reported by all.
  std::vector<long long> bad(static_cast<std::size_t>(size));
  check(MPI_Allgather(&local_bad, 1, MPI_LONG_LONG, bad.data(), 1, MPI_LONG_LONG, comm), "MPI_Allgather");
  auto const first = std::find_if(bad.begin(), bad.end(), [](long long b) { return b >= 0; });
  if (first == bad.end()) return;
  int const culprit = static_cast<int>(first - bad.begin());
  // The culprit's description travels to everybody, so all ranks throw the same words.
  int length = rank == culprit ? static_cast<int>(local_value.size()) : 0;
  check(MPI_Bcast(&length, 1, MPI_INT, culprit, comm), "MPI_Bcast");
  std::string value(static_cast<std::size_t>(length), ' ');
  if (rank == culprit) value = local_value;
  check(MPI_Bcast(value.data(), length, MPI_CHAR, culprit, comm), "MPI_Bcast");
  int failing = 0;
  for (long long b : bad) failing += b >= 0;
  throw_error(std::string(what) + ": rank " + std::to_string(culprit) + ", element " + std::to_string(*first) + ": " + value +
              (failing > 1 ? " (and " + std::to_string(failing - 1) + " more rank(s) with bad input)" : "") +
              "; every rank stopped before anything moved");
}

std::vector<std::byte> exchange(MPI_Comm comm, std::vector<std::byte> const& send, std::vector<std::size_t> const& send_bytes,
                                std::vector<std::size_t>& received_bytes) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<unsigned long long> out(send_bytes.begin(), send_bytes.end()), in(static_cast<std::size_t>(size));
  check(MPI_Alltoall(out.data(), 1, MPI_UNSIGNED_LONG_LONG, in.data(), 1, MPI_UNSIGNED_LONG_LONG, comm), "MPI_Alltoall");
  received_bytes.assign(in.begin(), in.end());
  std::size_t total = 0;
  for (auto b : received_bytes) total += b;
  std::vector<std::byte> received(total);
  std::vector<MPI_Request> requests;
  constexpr int tag = 0x636f;  // "co"
  // Messages of up to 2^31 - 1 bytes (MPI's int counts); larger ones are an error with a remedy.
  auto count_of = [](std::size_t bytes) {
    if (bytes > 0x7fffffffull) throw_error("migrate: a message of " + std::to_string(bytes) + " bytes exceeds MPI's int counts; migrate more often");
    return static_cast<int>(bytes);
  };
  std::size_t offset = 0;
  for (int r = 0; r < size; ++r) {
    std::size_t const b = received_bytes[static_cast<std::size_t>(r)];
    if (b > 0) {
      requests.emplace_back();
      check(MPI_Irecv(received.data() + offset, count_of(b), MPI_BYTE, r, tag, comm, &requests.back()), "MPI_Irecv");
    }
    offset += b;
  }
  offset = 0;
  for (int r = 0; r < size; ++r) {
    std::size_t const b = send_bytes[static_cast<std::size_t>(r)];
    if (b > 0) {
      requests.emplace_back();
      check(MPI_Isend(send.data() + offset, count_of(b), MPI_BYTE, r, tag, comm, &requests.back()), "MPI_Isend");
    }
    offset += b;
  }
  check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  return received;
}

std::vector<std::byte> sendrecv_bytes(MPI_Comm comm, std::vector<std::byte> const& send, int to, int from) {
  constexpr int tag = 0x6861;  // "ha"
  unsigned long long out = to == MPI_PROC_NULL ? 0 : send.size(), in = 0;
  check(MPI_Sendrecv(&out, 1, MPI_UNSIGNED_LONG_LONG, to, tag, &in, 1, MPI_UNSIGNED_LONG_LONG, from, tag, comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  if (from == MPI_PROC_NULL) in = 0;
  if (out > 0x7fffffffull || in > 0x7fffffffull) throw_error("halo: a message of more than 2^31 - 1 bytes; use more ranks");
  std::vector<std::byte> received(in);
  check(MPI_Sendrecv(send.data(), static_cast<int>(out), MPI_BYTE, to, tag + 1, received.data(), static_cast<int>(in), MPI_BYTE, from,
                     tag + 1, comm, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  return received;
}

}  // namespace detail
}  // namespace coalesce::mpi
