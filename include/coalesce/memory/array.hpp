// coalesce/memory/array.hpp - an owning 1-D array of plain values (indices, keys, per-particle scalars)
// in host or device memory: what coalesce::vector is for records, without reflection.
//
//   std::vector<float> host_energy(n, 1.0f);
//   coalesce::reorder_plan plan;
//   coalesce::device_array<std::uint32_t> nbr(n * 32);           // zero-filled GPU memory
//   coalesce::device_array<float> energy(host_energy);           // upload
//   std::vector<float> back = energy.to_host();                  // download
//   energy.copy_from(back);                                      // upload in place
//   coalesce::device_neighbor_list<std::uint32_t> list{.indices = nbr.data(), .particles = n,
//       .max_neighbors = 32, .order = coalesce::neighbor_order::column_major};
//   coalesce::apply(plan, energy.span());                        // permute it with the particles
//
// The memory is one 256-byte aligned allocation; copies go through libcoalesce. Streams follow
// the one rule of coalesce/memory/stream.hpp, as for coalesce::vector: every call that runs work
// takes a stream last (coalesce::default_stream when left out); the array keeps only its
// allocation stream (allocated there with cudaMallocAsync, freed there); a call on the default
// stream first waits for it and is done when it returns; a call on a stream of yours is queued.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "buffer.hpp"
#include "../core/error.hpp"
#include "index_arrays.hpp"
#include "space.hpp"

namespace coalesce {

// An owning array of trivially copyable values in Space's memory (host, or device: the GPU in a
// CUDA build), zero-filled where it is made or grown; the streams as the opening comment says.
template <class U, class Space = host> class array {
  static_assert(std::is_trivially_copyable_v<U> && !std::is_const_v<U>,
                "coalesce: array<U> holds trivially copyable, non-const values; for structs use coalesce::vector<T>");
  static_assert(space<Space>, "coalesce: the space must be coalesce::host or coalesce::device");
  static constexpr detail::memory_kind kind = detail::kind_of_space<Space>;

 public:
  using value_type = U;      // trivially copyable, not const
  using space_type = Space;  // host or device: where the values live

  // None: no memory.
  array() = default;
  // n zero values, allocated and zeroed on `on` (a device array's allocation stream from then on).
  explicit array(std::size_t n, stream on = default_stream) : memory_(kind, bytes_for(n), on.handle()), size_(n) {
    keep_allocation_stream(on);
    detail::zero_bytes(kind, memory_.data(), n * sizeof(U), on.handle());
  }
  // From values in host memory (returns when they have been read).
  explicit array(std::span<U const> values, stream on = default_stream)
      : memory_(kind, bytes_for(values.size()), on.handle()), size_(values.size()) {
    keep_allocation_stream(on);
    detail::copy_bytes(kind, memory_.data(), detail::memory_kind::host, values.data(), size_ * sizeof(U), on.handle());
  }
  // The same from a vector (returns when the values have been read).
  explicit array(std::vector<U> const& values, stream on = default_stream) : array(std::span<U const>(values), on) {}
  // A deep copy, made on the default stream after the work queued on other's allocation stream;
  // done when it returns.
  array(array const& other) : memory_(kind, other.memory_.size()), size_(other.size_) {
    other.wait_for_allocation_stream(default_stream);
    detail::copy_bytes(kind, memory_.data(), kind, other.memory_.data(), size_ * sizeof(U));
  }
  array(array&& other) noexcept { swap(other); }  // takes other's memory; other is left empty
  // A deep copy of other, as the copy constructor makes it; the old memory is freed.
  array& operator=(array const& other) {
    if (this != &other) array(other).swap(*this);
    return *this;
  }
  // Takes other's memory (other is left empty); the old memory is freed.
  array& operator=(array&& other) noexcept {
    array(std::move(other)).swap(*this);
    return *this;
  }
  // Exchanges the memory, sizes and allocation streams: no copy, no work queued.
  void swap(array& other) noexcept {
    memory_.swap(other.memory_);
    std::swap(size_, other.size_);
    std::swap(allocation_stream_, other.allocation_stream_);
  }

  // The values' memory: GPU memory for a device array (for kernels and CUDA calls); the same
  // pointer until a resize outgrows it.
  U* data() { return reinterpret_cast<U*>(memory_.data()); }
  U const* data() const { return reinterpret_cast<U const*>(memory_.data()); }  // the same, read-only
  std::size_t size() const { return size_; }                                    // values held, not the capacity
  bool empty() const { return size_ == 0; }                                     // no values held
  // Where the memory was last allocated and will be freed (the default stream for host arrays).
  stream allocation_stream() const { return allocation_stream_; }
  // Where the memory lives, for apply() and remap() (reorder.hpp).
  span_in<U, Space> span() { return {data(), size_}; }

  // Overwrites the values from host memory, in place (the memory and data() stay the same);
  // returns when they have been read.
  void copy_from(std::span<U const> values, stream on = default_stream) {
    if (values.size() != size_) {
      detail::throw_error("array::copy_from needs exactly size() = " + std::to_string(size_) + " values, got " +
                          std::to_string(values.size()));
    }
    wait_for_allocation_stream(on);
    detail::copy_bytes(kind, memory_.data(), detail::memory_kind::host, values.data(), size_ * sizeof(U), on.handle());
  }
  // Keeps the first min(n, size()) values; values past the old size are zero. Grows the memory
  // (by at least half, allocated on `on`, the allocation stream from then on) only when n
  // exceeds what it holds, so data() stays while it fits.
  void resize(std::size_t n, stream on = default_stream) {
    wait_for_allocation_stream(on);
    std::size_t const held = memory_.size() / sizeof(U);
    if (n > held) {
      detail::check_not_freeing_inside_capture(memory_, allocation_stream_, on, "an array",
                                               "resize it before capturing, or make it inside the capture");
      detail::buffer grown(kind, bytes_for(std::max(n, held + held / 2)), on.handle());
      if (size_ > 0) detail::copy_bytes(kind, grown.data(), kind, memory_.data(), size_ * sizeof(U), on.handle());
      memory_.free_on(on.handle());  // after the copy that reads it
      memory_ = std::move(grown);
      keep_allocation_stream(on);
    }
    if (n > size_) detail::zero_bytes(kind, memory_.data() + size_ * sizeof(U), (n - size_) * sizeof(U), on.handle());
    size_ = n;
  }
  // The values, in host memory (waits for them).
  std::vector<U> to_host(stream on = default_stream) const {
    wait_for_allocation_stream(on);
    std::vector<U> out(size_);
    detail::copy_bytes(detail::memory_kind::host, out.data(), kind, memory_.data(), size_ * sizeof(U), on.handle());
    return out;
  }
  // Host arrays only: index from host code (a device array's values live in GPU memory).
  U& operator[](std::size_t i) {
    static_assert(std::is_same_v<Space, host>,
                  "coalesce: a device_array's values live in GPU memory; read them in a kernel through data(), or "
                  "copy them with to_host()");
    return data()[i];
  }
  // The same, read-only.
  U const& operator[](std::size_t i) const {
    static_assert(std::is_same_v<Space, host>,
                  "coalesce: a device_array's values live in GPU memory; read them in a kernel through data(), or "
                  "copy them with to_host()");
    return data()[i];
  }

 private:
  static std::size_t bytes_for(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(U)) {
      detail::throw_error("array: " + std::to_string(n) + " values of " + std::to_string(sizeof(U)) +
                          " bytes overflow a byte count; ask for fewer");
    }
    return n * sizeof(U);
  }
  void keep_allocation_stream(stream on) {
    allocation_stream_ = kind == detail::memory_kind::device ? on : default_stream;
  }
  void wait_for_allocation_stream(stream on) const {
    detail::wait_for_allocation_stream(allocation_stream_, on, "an array",
                                       "resize(n, s), copy_from(values, s), to_host(s)");
  }

  detail::buffer memory_;
  std::size_t size_ = 0;
  stream allocation_stream_{};
};

template <class U> using host_array = array<U, host>;      // values in host memory
template <class U> using device_array = array<U, device>;  // values in GPU memory (host memory without CUDA)

}  // namespace coalesce
