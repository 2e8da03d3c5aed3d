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

// A leaf whose elements lie back to back (every soa column): a pointer and a length, usable as a
// range and by code that takes a raw array.
template <class E> class contiguous_column {
 public:
  using value_type = std::remove_const_t<E>;  // the leaf's type, without const
  // n elements from `data` (host or device memory).
  COALESCE_HOST_DEVICE contiguous_column(E* data, std::size_t n) : data_(data), size_(n) {}
  // Element i. Checked only where COALESCE_CHECK_BOUNDS is on: coalesce::error on the host, a
  // trap in a kernel.
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    return data_[i];
  }
  COALESCE_HOST_DEVICE E* data() const { return data_; }           // element 0's address: the raw array
  COALESCE_HOST_DEVICE E* first() const { return data_; }          // the same (every column kind has first())
  COALESCE_HOST_DEVICE E* begin() const { return data_; }          // element 0
  COALESCE_HOST_DEVICE E* end() const { return data_ + size_; }    // past the last element
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }  // elements (the view's size)

 private:
  E* data_;
  std::size_t size_;
};

// A leaf whose elements lie a constant `Stride` bytes apart (aos: the record's size).
template <class E, std::size_t Stride> class strided_column {
 public:
  using value_type = std::remove_const_t<E>;           // the leaf's type, without const
  static constexpr std::size_t stride_bytes = Stride;  // bytes from one element to the next
  // n elements, element 0 at `first` (host or device memory).
  COALESCE_HOST_DEVICE strided_column(E* first, std::size_t n) : first_(first), size_(n) {}
  // Element i. Checked only where COALESCE_CHECK_BOUNDS is on: coalesce::error on the host, a
  // trap in a kernel.
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    using byte = std::conditional_t<std::is_const_v<E>, std::byte const, std::byte>;
    return *reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + i * Stride);
  }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }  // elements (the view's size)
  // Element 0's address (null for an empty column over no memory).
  COALESCE_HOST_DEVICE E* first() const { return first_; }

 private:
  E* first_;
  std::size_t size_;
};

// A leaf stored in blocks (aosoa<W>): W elements back to back in each block, blocks BlockBytes
// bytes apart; element i is at (i / W) * BlockBytes + (i % W) * sizeof(E) from element 0.
template <class E, std::size_t W, std::size_t BlockBytes> class blocked_column {
 public:
  using value_type = std::remove_const_t<E>;  // the leaf's type, without const
  // n elements, element 0 at `first` (host or device memory).
  COALESCE_HOST_DEVICE blocked_column(E* first, std::size_t n) : first_(first), size_(n) {}
  // Element i. Checked only where COALESCE_CHECK_BOUNDS is on: coalesce::error on the host, a
  // trap in a kernel.
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    using byte = std::conditional_t<std::is_const_v<E>, std::byte const, std::byte>;
    return reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + (i / W) * BlockBytes)[i % W];
  }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }  // elements (the view's size)
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
  using value_type = std::remove_const_t<E>;  // the leaf's type, without const
  // n elements, element 0 at `first`, the others where `place` puts them (its offset is ignored:
  // `first` already includes it).
  COALESCE_HOST_DEVICE general_column(E* first, column_place place, std::size_t n)
      : first_(first), place_(place), size_(n) {
    place_.offset = 0;
  }
  // Element i (stride and blocks read at run time). Checked only where
  // COALESCE_CHECK_BOUNDS is on: coalesce::error on the host, a trap in a kernel.
  COALESCE_HOST_DEVICE COALESCE_INLINE E& operator[](std::size_t i) const {
    detail::check_index(i, size_);
    using byte = std::conditional_t<std::is_const_v<E>, std::byte const, std::byte>;
    return *reinterpret_cast<E*>(reinterpret_cast<byte*>(first_) + place_.at(i));
  }
  COALESCE_HOST_DEVICE std::size_t size() const { return size_; }  // elements (the view's size)
  COALESCE_HOST_DEVICE E* first() const { return first_; }         // element 0's address (null over no memory)

 private:
  E* first_;
  column_place place_;
  std::size_t size_;
};

}  // namespace coalesce
