// coalesce/mpi/communicator.hpp - the ranks that exchange particles, with no geometry: a halo or
// a migration from explicit (index, rank) lists on any communicator (included by coalesce/mpi.hpp).
//
//   coalesce::mpi::communicator const c(MPI_COMM_WORLD);               // a duplicate: its own messages
//   coalesce::mpi::migrate(c, particles, destination_ranks, charges);  // one int per particle
//   auto halo = coalesce::mpi::build_halo(c, particles, export_ids, export_ranks);  // ghosts appended
//   coalesce::mpi::forward(halo, particles);  coalesce::mpi::reverse(halo, forces);
//
// A communicator is what every exchange needs: the ranks, the stream GPU work is queued on, how
// GPU messages travel (transport) and the message buffers kept between calls (a steady loop
// allocates nothing). A decomposition (coalesce/mpi/migrate.hpp) is a communicator that also
// knows the box and which rank owns which part of it; the calls that take positions need one,
// the calls that take ranks or export lists take either.
#pragma once
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../memory/buffer.hpp"
#include "../memory/stream.hpp"
#include "../reorder/indexed_moves.hpp"
#include "../reorder/reorder.hpp"

namespace coalesce::mpi {

// How messages between ranks travel when the particles are in GPU memory: staged through
// page-locked host buffers (works with any MPI), or as GPU pointers handed to MPI (needs a
// CUDA-aware MPI; collectives never get GPU pointers). Host memory always goes as it is.
enum class transport : unsigned char { staged, device_pointers };

// The default transport: device_pointers when the environment variable
// COALESCE_MPI_DEVICE_POINTERS is 1, or when the MPI says it is CUDA-aware (Open MPI's
// MPIX_Query_cuda_support); staged otherwise, and always staged when set to 0.
transport default_transport();

}  // namespace coalesce::mpi

namespace coalesce::detail {
// Message buffers kept between calls (grown, never shrunk), so a steady-state loop allocates
// nothing: messages in the particles' memory, page-locked staging copies on the host.
struct message_buffers {
  coalesce::detail::buffer send, received;
  struct pinned {
    std::byte* data = nullptr;
    std::size_t size = 0;
    pinned() = default;
    pinned(pinned const&) = delete;
    pinned& operator=(pinned const&) = delete;
    ~pinned() { clear(); }
    void clear() noexcept {
      coalesce::detail::deallocate_pinned(data);
      data = nullptr;
      size = 0;
    }
    std::byte* at_least(std::size_t bytes) {
      if (bytes > size) {
        clear();
        data = static_cast<std::byte*>(coalesce::detail::allocate_pinned(bytes));
        size = bytes;
      }
      return data;
    }
  };
  pinned send_stage, received_stage;
  // Kept between migrations too, so that a steady loop allocates (and page-faults) nothing: the
  // plan of the grouping sort (its scratch pool ends up holding the particles' previous storage:
  // one copy of the particles) and the destination ranks.
  reorder_plan grouping{coalesce::default_stream, check_policy::off};
  coalesce::detail::buffer destinations;
  std::vector<std::uint32_t> holes;  // an unordered migration's leavers' slots (host memory)
  // plan_halo's coordinates of the owned particles and the ghosts so far, one buffer per axis
  // (grown by doubling, kept: a steady loop of plans allocates and page-faults nothing).
  std::array<coalesce::detail::buffer, 3> coordinates;
  int* destinations_at_least(coalesce::detail::memory_kind kind, std::size_t n, void* stream) {
    return reinterpret_cast<int*>(grow(destinations, kind, n * sizeof(int), stream));
  }
  // Gives all of it back (the next call allocates again).
  void release() {
    send = coalesce::detail::buffer();
    received = coalesce::detail::buffer();
    destinations = coalesce::detail::buffer();
    for (auto& c : coordinates) c = coalesce::detail::buffer();
    send_stage.clear();
    received_stage.clear();
    grouping.release();
  }
  // `stream`: where the messages are packed (a new buffer is zeroed there first).
  std::byte* send_at_least(coalesce::detail::memory_kind kind, std::size_t bytes, void* stream) {
    return grow(send, kind, bytes, stream);
  }
  std::byte* received_at_least(coalesce::detail::memory_kind kind, std::size_t bytes, void* stream) {
    return grow(received, kind, bytes, stream);
  }

 private:
  // A new buffer is zeroed once: the padding between a message's segments is never written, and
  // a whole message is copied (staged) or sent, so no byte of it is left uninitialised.
  static std::byte* grow(coalesce::detail::buffer& b, coalesce::detail::memory_kind kind, std::size_t bytes,
                         void* stream) {
    if (b.kind() != kind || b.size() < bytes) {
      b = coalesce::detail::buffer();
      b = coalesce::detail::buffer(kind, bytes);
      coalesce::detail::zero_bytes(kind, b.data(), bytes, stream);
    }
    return b.data();
  }
};
}  // namespace coalesce::detail

namespace coalesce::mpi {

// The ranks of an MPI communicator, for exchanges without geometry. Holds a duplicate of the
// communicator (coalesce's messages never match the caller's own), with MPI errors returned as
// coalesce::error rather than aborting. Move-only.
class communicator {
 public:
  explicit communicator(MPI_Comm comm);
  ~communicator();
  communicator(communicator&& other) noexcept;
  communicator& operator=(communicator&& other) noexcept;
  communicator(communicator const&) = delete;
  communicator& operator=(communicator const&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The stream that migrate() and build_halo() (and the halo plans they build) queue GPU work on.
  void set_stream(coalesce::stream s) { stream_ = s; }
  coalesce::stream stream() const { return stream_; }
  void set_transport(mpi::transport t) { transport_ = t; }
  mpi::transport transport() const { return transport_; }
  coalesce::detail::message_buffers& buffers() const { return *buffers_; }
  // Frees the memory kept between migrations (message and staging buffers, the grouping sort's
  // scratch, which holds up to one copy of the particles); the next migrate() allocates again.
  void release_memory() const {
    if (buffers_) buffers_->release();  // a moved-from communicator holds none
  }

 protected:
  communicator() = default;
  // Takes `owned` (a communicator made for this object: a duplicate or a Cartesian one).
  void adopt(MPI_Comm owned);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  coalesce::stream stream_{};
  mpi::transport transport_ = default_transport();
  std::unique_ptr<coalesce::detail::message_buffers> buffers_ = std::make_unique<coalesce::detail::message_buffers>();
};

}  // namespace coalesce::mpi
