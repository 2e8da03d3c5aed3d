// coalesce/core/column.hpp - one leaf of every element, as a 1-D array.
//
//   auto xs = v.column(&Particle::pos, &vec3::x);   // soa: contiguous_column<float>
//   xs[i] += 1.0f;  float* raw = xs.data();          // soa columns hand out raw pointers
//   auto ys = a.column(&Particle::pos, &vec3::y);   // aos: strided_column<float, sizeof(Particle)>
//   auto zs = b.column(&Particle::pos, &vec3::z);   // aosoa<W>: blocked_column<float, W, block bytes>
//
// Each kind is trivially copyable and usable in kernels; the kind and its stride come from the
// layout's mapping at compile time. general_column (stride and blocks as values) is what a
// member path gives when leaves of its type are placed differently (a split layout).
#pragma once
#include <cstddef>
#include <type_traits>

#include "config.hpp"
#include "error.hpp"
#include "layout.hpp"

namespace coalesce {

template <class E> class contiguous_column {
 public:
  using value_type = std::remove_const_t<E>;
  COALESCE_HOST_DEVICE contiguous_column(E* data, std::size_t n) : data_(data), size_(n) {}
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    return data_[i];
  }
  COALESCE_HOST_DEVICE E* data() const { return data_; }
  COALESCE_HOST_DEVICE E* first() const { return data_; }
  COALESCE_HOST_DEVICE E* begin() const { return data_; }
  COALESCE_HOST_DEVICE E* end() const { return data_ + size_; }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }

 private:
  E* data_;
  std::size_t size_;
};

template <class E, std::size_t Stride> class strided_column {
 public:
  using value_type = std::remove_const_t<E>;
  static constexpr std::size_t stride_bytes = Stride;
  COALESCE_HOST_DEVICE strided_column(E* first, std::size_t n) : first_(first), size_(n) {}
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    using byte = std::conditional_t<std::is_const_v<E>, std::byte const, std::byte>;
    return *reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + i * Stride);
  }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }
  // Element 0's address (null for an empty column over no memory).
  COALESCE_HOST_DEVICE E* first() const { return first_; }

 private:
  E* first_;
  std::size_t size_;
};

template <class E, std::size_t W, std::size_t BlockBytes> class blocked_column {
 public:
  using value_type = std::remove_const_t<E>;
  COALESCE_HOST_DEVICE blocked_column(E* first, std::size_t n) : first_(first), size_(n) {}
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    using byte = std::conditional_t<std::is_const_v<E>, std::byte const, std::byte>;
    return reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + (i / W) * BlockBytes)[i % W];
  }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }
  // Element 0's address (null for an empty column over no memory).
  COALESCE_HOST_DEVICE E* first() const { return first_; }

 private:
  E* first_;
  std::size_t size_;
};

// A column whose stride and blocks are values: what v.column(&A::b, &B::c) gives when leaves of
// that element type are placed differently (a split layout), so that one type serves them all.
template <class E> class general_column {
 public:
  using value_type = std::remove_const_t<E>;
  COALESCE_HOST_DEVICE general_column(E* first, column_place place, std::size_t n)
      : first_(first), place_(place), size_(n) {
    place_.offset = 0;
  }
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    using byte = std::conditional_t<std::is_const_v<E>, std::byte const, std::byte>;
    return *reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + place_.at(i));
  }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }
  COALESCE_HOST_DEVICE E* first() const { return first_; }

 private:
  E* first_;
  column_place place_;
  std::size_t size_;
};

}  // namespace coalesce
