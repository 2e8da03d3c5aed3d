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

#include <algorithm>
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
  // Room for `bytes` when `held` is too small: a quarter more, and at least twice what was held.
  // Message sizes wander from call to call (a halo's three axes, each build's ghost counts);
  // page-locked allocations cost milliseconds, so a steady loop must not make one per new high.
  static std::size_t room_for(std::size_t bytes, std::size_t held) { return std::max(bytes + bytes / 4, 2 * held); }
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
        std::size_t const grown = room_for(bytes, size);
        clear();
        data = static_cast<std::byte*>(coalesce::detail::allocate_pinned(grown));
        size = grown;
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
  // A migration on host memory: the leavers (ascending; room for all the particles), the same
  // grouped by destination when they go to several ranks, and the stayers that fill the holes.
  std::vector<std::uint32_t> leavers, grouped, holes;
  std::uint32_t* leavers_at_least(std::size_t n) {
    if (leavers.size() < n) leavers.resize(n + n / 4);  // headroom: the counts wander step to step
    return leavers.data();
  }
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
    selection = coalesce::detail::buffer();
    for (auto& c : coordinates) c = coalesce::detail::buffer();
    send_stage.clear();
    received_stage.clear();
    grouping.release();
    for (auto* v : {&leavers, &grouped, &holes}) std::vector<std::uint32_t>().swap(*v);
  }
  // A geometric halo's selection of the elements near a face, before they are copied into the
  // plan's own list of the size selected (so a plan holds its lists, not a buffer per stage as
  // large as all the particles, and a rebuilt halo allocates only those small lists).
  coalesce::detail::buffer selection;
  std::uint32_t* selection_at_least(coalesce::detail::memory_kind kind, std::size_t n, void* stream) {
    return reinterpret_cast<std::uint32_t*>(grow(selection, kind, n * sizeof(std::uint32_t), stream));
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
      std::size_t const grown = room_for(bytes, b.kind() == kind ? b.size() : 0);
      b = coalesce::detail::buffer();
      b = coalesce::detail::buffer(kind, grown);
      coalesce::detail::zero_bytes(kind, b.data(), grown, stream);
    }
    return b.data();
  }
};

// Message buffers that halo plans hand back when they are destroyed, for the next plan of the
// same communicator: a loop that rebuilds its halo every few steps (`halo = build_halo(...)`)
// would otherwise allocate page-locked staging memory (milliseconds) and GPU buffers for every
// new plan. Shared by the communicator and its plans, so a plan may outlive either. Not
// thread-safe (as the communicator and its plans are not).
class message_buffer_pool {
 public:
  std::unique_ptr<message_buffers> take() {
    if (spare_.empty()) return std::make_unique<message_buffers>();
    auto out = std::move(spare_.back());
    spare_.pop_back();
    return out;
  }
  // Two sets are enough for the old plan and the one built while it is still held.
  void give_back(std::unique_ptr<message_buffers> b) {
    if (b && spare_.size() < 2) spare_.push_back(std::move(b));
  }
  void release() { spare_.clear(); }

 private:
  std::vector<std::unique_ptr<message_buffers>> spare_;
};

// A plan's message buffers, taken from its communicator's pool and returned to it at the end. A
// plan made without a pool makes its own set at first use (halo_access::start replaces a default
// plan's set with a pooled one: no set is made to be thrown away).
class pooled_message_buffers {
 public:
  pooled_message_buffers() = default;
  explicit pooled_message_buffers(std::shared_ptr<message_buffer_pool> pool)
      : pool_(std::move(pool)), buffers_(pool_->take()) {}
  pooled_message_buffers(pooled_message_buffers&&) noexcept = default;
  pooled_message_buffers& operator=(pooled_message_buffers&& other) noexcept {
    if (this != &other) {
      give_back();
      pool_ = std::move(other.pool_);
      buffers_ = std::move(other.buffers_);
    }
    return *this;
  }
  ~pooled_message_buffers() { give_back(); }
  message_buffers& operator*() const {
    if (!buffers_) buffers_ = std::make_unique<message_buffers>();
    return *buffers_;
  }

 private:
  void give_back() noexcept {
    if (pool_ && buffers_) {
      try {
        pool_->give_back(std::move(buffers_));
      } catch (...) {  // no room for the pointer: the buffers are freed instead
      }
    }
    buffers_.reset();
  }
  std::shared_ptr<message_buffer_pool> pool_;
  mutable std::unique_ptr<message_buffers> buffers_;
};
}  // namespace coalesce::detail

namespace coalesce::mpi {

// The ranks of an MPI communicator, for exchanges without geometry. Holds a duplicate of the
// communicator (coalesce's messages never match the caller's own), with MPI errors returned as
// coalesce::error rather than aborting. Move-only.
class communicator {
 public:
  // Duplicates comm (MPI_Comm_dup: collective over comm's ranks) and sets its errors to return;
  // a failing MPI call throws coalesce::error.
  explicit communicator(MPI_Comm comm);
  ~communicator();
  // Takes over other's duplicate and buffers; other is left holding none (destroy or assign it).
  communicator(communicator&& other) noexcept;
  // The same, freeing this one's duplicate first (MPI_Comm_free).
  communicator& operator=(communicator&& other) noexcept;
  communicator(communicator const&) = delete;
  communicator& operator=(communicator const&) = delete;

  MPI_Comm comm() const { return comm_; }  // the duplicate (owned: freed with this object)
  int rank() const { return rank_; }       // this process's rank in it
  int size() const { return size_; }       // the number of ranks
  // The stream that migrate() and build_halo() (and the halo plans they build) queue GPU work on.
  void set_stream(coalesce::stream s) { stream_ = s; }
  coalesce::stream stream() const { return stream_; }  // default_stream until set_stream
  // How GPU messages travel in later calls and in the halo plans built from now on (a plan keeps
  // the transport it was built with: halo_plan::set_transport).
  void set_transport(mpi::transport t) { transport_ = t; }
  // The transport in use: default_transport() until set_transport.
  mpi::transport transport() const { return transport_; }
  // The message buffers migrations reuse between calls (library use; release_memory frees them).
  coalesce::detail::message_buffers& buffers() const { return *buffers_; }
  // Where the halo plans made on this communicator take their message buffers from and give
  // them back to (a steady loop of rebuilt halos allocates none).
  std::shared_ptr<coalesce::detail::message_buffer_pool> const& halo_buffer_pool() const { return halo_buffers_; }
  // Frees the memory kept between migrations (message and staging buffers, the grouping sort's
  // scratch, which holds up to one copy of the particles, and the halo plans' spare buffers); the
  // next migrate() allocates again.
  void release_memory() const {
    if (buffers_) buffers_->release();  // a moved-from communicator holds none
    if (halo_buffers_) halo_buffers_->release();
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
  std::shared_ptr<coalesce::detail::message_buffer_pool> halo_buffers_ =
      std::make_shared<coalesce::detail::message_buffer_pool>();
};

}  // namespace coalesce::mpi
