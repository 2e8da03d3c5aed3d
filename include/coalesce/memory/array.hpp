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
// The memory is one 256-byte aligned allocation; copies go through libcoalesce.
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

template <class U, class Space = host> class array {
  static_assert(std::is_trivially_copyable_v<U> && !std::is_const_v<U>,
                "coalesce: array<U> holds trivially copyable, non-const values; for structs use coalesce::vector<T>");
  static_assert(space<Space>, "coalesce: the space must be coalesce::host or coalesce::device");
  static constexpr detail::memory_kind kind = detail::kind_of_space<Space>;

 public:
  using value_type = U;
  using space_type = Space;

  array() = default;
  explicit array(std::size_t n) : memory_(kind, bytes_for(n)), size_(n) {
    detail::zero_bytes(kind, memory_.data(), n * sizeof(U));
  }
  // From values in host memory.
  explicit array(std::span<U const> values) : memory_(kind, bytes_for(values.size())), size_(values.size()) {
    detail::copy_bytes(kind, memory_.data(), detail::memory_kind::host, values.data(), size_ * sizeof(U));
  }
  explicit array(std::vector<U> const& values) : array(std::span<U const>(values)) {}
  array(array const& other) : memory_(kind, other.memory_.size()), size_(other.size_) {
    detail::copy_bytes(kind, memory_.data(), kind, other.memory_.data(), size_ * sizeof(U));
  }
  array(array&&) noexcept = default;
  array& operator=(array const& other) {
    if (this != &other) array(other).swap(*this);
    return *this;
  }
  array& operator=(array&&) noexcept = default;
  void swap(array& other) noexcept {
    memory_.swap(other.memory_);
    std::swap(size_, other.size_);
  }

  U* data() { return reinterpret_cast<U*>(memory_.data()); }
  U const* data() const { return reinterpret_cast<U const*>(memory_.data()); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Where the memory lives, for apply() and remap() (reorder.hpp).
  span_in<U, Space> span() { return {data(), size_}; }

  // Overwrites the values from host memory, in place (the memory and data() stay the same).
  void copy_from(std::span<U const> values) {
    if (values.size() != size_) {
      detail::throw_error("array::copy_from needs exactly size() = " + std::to_string(size_) + " values, got " +
                          std::to_string(values.size()));
    }
    detail::copy_bytes(kind, memory_.data(), detail::memory_kind::host, values.data(), size_ * sizeof(U));
  }
  // Keeps the first min(n, size()) values; values past the old size are zero. Grows the memory
  // (by at least half) only when n exceeds what it holds, so data() stays while it fits.
  void resize(std::size_t n) {
    std::size_t const held = memory_.size() / sizeof(U);
    if (n > held) {
      detail::buffer grown(kind, bytes_for(std::max(n, held + held / 2)));
      if (size_ > 0) detail::copy_bytes(kind, grown.data(), kind, memory_.data(), size_ * sizeof(U));
      memory_ = std::move(grown);
    }
    if (n > size_) detail::zero_bytes(kind, memory_.data() + size_ * sizeof(U), (n - size_) * sizeof(U));
    size_ = n;
  }
  std::vector<U> to_host() const {
    std::vector<U> out(size_);
    detail::copy_bytes(detail::memory_kind::host, out.data(), kind, memory_.data(), size_ * sizeof(U));
    return out;
  }
  // Host arrays only: index from host code (a device array's values live in GPU memory).
  U& operator[](std::size_t i) {
    static_assert(std::is_same_v<Space, host>,
                  "coalesce: a device_array's values live in GPU memory; read them in a kernel through data(), or "
                  "copy them with to_host()");
    return data()[i];
  }
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

  detail::buffer memory_;
  std::size_t size_ = 0;
};

template <class U> using host_array = array<U, host>;
template <class U> using device_array = array<U, device>;

}  // namespace coalesce
