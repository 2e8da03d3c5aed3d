// The host sums of a reverse (coalesce::detail::add_columns_indexed): every shape of owner columns
// it has a loop of its own for (a record's leaves side by side, packed columns, blocked columns a
// power of two wide with leaves evenly apart, any other blocking or order) adds exactly what one
// element at a time adds, for float and double, two to four columns, message columns aligned or
// not, and leaves every byte it should not touch alone.
#include <doctest/doctest.h>

#include <coalesce/reorder/indexed_moves.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {
using coalesce::column_ref;
using coalesce::detail::column_sum;
using coalesce::detail::index_map;
using coalesce::detail::memory_kind;
using coalesce::detail::scalar_type;

// Where leaf c of element i of the owners lies, in bytes from the owners' start.
struct owner_shape {
  std::string name;
  std::size_t stride = 0;                // bytes between elements (inside a block)
  std::size_t block = 0;                 // elements per block, 0: unblocked
  std::size_t block_stride = 0;          // bytes between blocks
  std::vector<std::size_t> leaf_offset;  // leaf c's offset of element 0
  std::size_t offset(std::size_t c, std::size_t i) const {
    if (block == 0) return leaf_offset[c] + i * stride;
    return leaf_offset[c] + (i / block) * block_stride + (i % block) * stride;
  }
  column_ref column(std::byte* base, std::size_t c) const {
    column_ref r{base + leaf_offset[c], stride};
    if (block != 0) {
      r.block = block;
      r.block_stride = block_stride;
      bool const power_of_two = (block & (block - 1)) == 0;
      r.block_shift = power_of_two ? static_cast<unsigned>(__builtin_ctzll(block)) : 64;
    }
    return r;
  }
};

// The shapes, for C leaves of E bytes.
std::vector<owner_shape> shapes_of(std::size_t e, std::size_t count, std::size_t n) {
  std::vector<owner_shape> s;
  std::vector<std::size_t> in_a_row(count), backwards(count), columns(count), rows(count), rows6(count);
  for (std::size_t c = 0; c < count; ++c) {
    in_a_row[c] = e * (1 + c);           // a member after one leaf of something else
    backwards[c] = e * (count - c) * 2;  // the last leaf first, a leaf's width between them
    columns[c] = c * n * e;              // soa: one packed column each
    rows[c] = e * 16 * (2 + c);          // aosoa<16>: leaf rows 2, 3, ... of a block
    rows6[c] = e * 6 * (1 + c);          // blocks of 6
  }
  s.push_back({"a record's leaves side by side (aos)", e * (count + 3), 0, 0, in_a_row});
  s.push_back({"leaves of a record backwards, apart", e * (2 * count + 1), 0, 0, backwards});
  s.push_back({"packed columns (soa)", e, 0, 0, columns});
  s.push_back({"aosoa<16>, leaves evenly apart", e, 16, e * 16 * (count + 3), rows});
  s.push_back({"blocks of 6 (not a power of two)", e, 6, e * 6 * (count + 2), rows6});
  return s;
}

template <class E> void check_sums(std::size_t count, std::size_t message_shift) {
  std::size_t const n = 1000, m = 437;  // owners, summed elements (distinct owners, any order)
  std::mt19937 rng(static_cast<unsigned>(count * 7 + message_shift));
  std::vector<std::uint32_t> index(n);
  std::iota(index.begin(), index.end(), 0u);
  std::shuffle(index.begin(), index.end(), rng);
  index.resize(m);
  std::size_t const first = 3;  // the message's elements start at `first`
  // The message: count columns of (first + m) elements each, shifted by message_shift bytes.
  std::vector<std::byte> message_bytes(count * (first + m) * sizeof(E) + 64);
  std::byte* const message = message_bytes.data() + message_shift;
  for (std::size_t c = 0; c < count; ++c) {
    for (std::size_t k = 0; k < first + m; ++k) {
      E const v = static_cast<E>(0.5 + static_cast<double>(c * 1000 + k) * 0.25);
      std::memcpy(message + (c * (first + m) + k) * sizeof(E), &v, sizeof(E));
    }
  }
  for (auto const& shape : shapes_of(sizeof(E), count, n)) {
    CAPTURE(shape.name);
    std::size_t bytes = 0;
    for (std::size_t c = 0; c < count; ++c) bytes = std::max(bytes, shape.offset(c, n - 1) + sizeof(E));
    std::vector<std::byte> owners(bytes + 16);
    for (std::size_t b = 0; b < owners.size(); ++b) owners[b] = static_cast<std::byte>(b * 31 + 7);
    for (std::size_t c = 0; c < count; ++c) {  // the leaves start as numbers, not byte patterns
      for (std::size_t i = 0; i < n; ++i) {
        E const v = static_cast<E>(static_cast<double>(i) * 0.125 - static_cast<double>(c));
        std::memcpy(owners.data() + shape.offset(c, i), &v, sizeof(E));
      }
    }
    std::vector<std::byte> expected = owners;
    for (std::size_t k = 0; k < m; ++k) {
      for (std::size_t c = 0; c < count; ++c) {
        E a, b;
        std::memcpy(&a, expected.data() + shape.offset(c, index[k]), sizeof(E));
        std::memcpy(&b, message + (c * (first + m) + first + k) * sizeof(E), sizeof(E));
        a += b;
        std::memcpy(expected.data() + shape.offset(c, index[k]), &a, sizeof(E));
      }
    }
    std::vector<column_sum> sums;
    for (std::size_t c = 0; c < count; ++c) {
      sums.push_back({shape.column(owners.data(), c), column_ref{message + c * (first + m) * sizeof(E), sizeof(E)},
                      sizeof(E) == 4 ? scalar_type::f32 : scalar_type::f64});
    }
    coalesce::detail::add_columns_indexed(memory_kind::host, sums.data(), count, m, index_map{nullptr, first},
                                          index_map{index.data(), 0}, nullptr);
    CHECK(owners == expected);
  }
}
}  // namespace

TEST_CASE("a reverse's host sums add what one element at a time adds, for every owner shape") {
  for (std::size_t count = 1; count <= 4; ++count) {
    for (std::size_t shift : {std::size_t{0}, std::size_t{4}, std::size_t{2}}) {
      CAPTURE(count);
      CAPTURE(shift);
      check_sums<float>(count, shift);
      check_sums<double>(count, shift);
    }
  }
}
