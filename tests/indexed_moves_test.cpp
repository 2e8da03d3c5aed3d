// The host paths of a message's packs and sums (coalesce/reorder/indexed_moves.hpp), each against
// one element at a time: the sums of a reverse (add_columns_indexed) for every owner shape it has
// a loop of its own for (a record's leaves side by side, packed columns, blocked columns a power
// of two wide with leaves evenly apart, any other blocking or order), float and double, one to
// four columns, message columns aligned or not, owners aligned or not; the gathers and range
// copies of packs (move_columns_indexed) over aos records of few and many leaves and blocked
// columns of any block; the leavers of a migration (find_leavers) with a bad destination anywhere.
// Every byte a call should not touch is checked to be left alone.
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
  std::vector<std::size_t> shifted = in_a_row;  // records at an odd address: no typed access
  for (auto& o : shifted) o += 1;
  s.push_back({"records at an odd address", e * (count + 3), 0, 0, shifted});
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

namespace {
// A column of `count` elements of `width` bytes in `bytes`, at `offset`, as a shape says (stride,
// blocks); element i's address.
struct column_in {
  std::size_t offset, stride, block, block_stride;
  std::size_t at(std::size_t i) const {
    return block == 0 ? offset + i * stride : offset + (i / block) * block_stride + (i % block) * stride;
  }
  column_ref ref(std::byte* base) const {
    column_ref r{base + offset, stride};
    if (block != 0) {
      r.block = block;
      r.block_stride = block_stride;
      r.block_shift = (block & (block - 1)) == 0 ? static_cast<unsigned>(__builtin_ctzll(block)) : 64;
    }
    return r;
  }
};

// move_columns_indexed of `columns` (width bytes each) for elements k in [0, n): destination
// dst_map.at(k) from source src_map.at(k), against a byte-by-byte copy.
void check_moves(std::vector<column_in> const& from, std::vector<column_in> const& to, std::size_t width, std::size_t n,
                 index_map src_map, index_map dst_map, std::size_t src_bytes, std::size_t dst_bytes) {
  std::vector<std::byte> src(src_bytes), dst(dst_bytes);
  for (std::size_t b = 0; b < src.size(); ++b) src[b] = static_cast<std::byte>(b * 13 + 1);
  for (std::size_t b = 0; b < dst.size(); ++b) dst[b] = static_cast<std::byte>(b * 7 + 3);
  std::vector<std::byte> expected = dst;
  std::vector<coalesce::detail::column_copy> copies;
  for (std::size_t c = 0; c < from.size(); ++c) {
    copies.push_back({to[c].ref(dst.data()), from[c].ref(src.data()), width});
    for (std::size_t k = 0; k < n; ++k) {
      std::memcpy(expected.data() + to[c].at(dst_map.at(k)), src.data() + from[c].at(src_map.at(k)), width);
    }
  }
  coalesce::detail::move_columns_indexed(memory_kind::host, copies.data(), copies.size(), n, src_map, dst_map, nullptr);
  CHECK(dst == expected);
}
}  // namespace

TEST_CASE("a pack's gathers and range copies move what one element at a time moves") {
  std::size_t const n = 300;
  std::vector<std::uint32_t> index(n);
  std::iota(index.begin(), index.end(), 0u);
  std::mt19937 rng(5);
  std::shuffle(index.begin(), index.end(), rng);
  index.resize(97);
  for (std::size_t leaves :
       {std::size_t{2}, std::size_t{3}, std::size_t{8}, std::size_t{12}, std::size_t{14}, std::size_t{20}}) {
    for (std::size_t width : {std::size_t{4}, std::size_t{8}}) {
      CAPTURE(leaves);
      CAPTURE(width);
      std::size_t const record = width * leaves + 4;  // a record's leaves and 4 bytes of something else
      std::vector<column_in> records, message, soa;
      for (std::size_t c = 0; c < leaves; ++c) {
        records.push_back({4 + c * width, record, 0, 0});
        message.push_back({c * index.size() * width, width, 0, 0});
        soa.push_back({(leaves - 1 - c) * n * width, width, 0, 0});  // columns in descending order
      }
      // A gather (a pack from owners anywhere) from aos records and from soa columns.
      check_moves(records, message, width, index.size(), index_map{index.data(), 0}, index_map{nullptr, 0}, n * record,
                  leaves * index.size() * width);
      check_moves(soa, message, width, index.size(), index_map{index.data(), 0}, index_map{nullptr, 0},
                  leaves * n * width, leaves * index.size() * width);
    }
  }
  // Ranges between blocked columns (aosoa of 16, blocks of 6) and packed message columns, both ways,
  // starting inside a block and ending inside one, or at a block's end.
  for (std::size_t block : {std::size_t{16}, std::size_t{6}}) {
    for (std::size_t first : {std::size_t{0}, std::size_t{5}, std::size_t{16}}) {
      for (std::size_t count : {std::size_t{1}, std::size_t{11}, std::size_t{64}, 3 * block - first % block}) {
        CAPTURE(block);
        CAPTURE(first);
        CAPTURE(count);
        std::size_t const width = 4, leaves = 3, block_stride = block * width * (leaves + 1);
        std::vector<column_in> blocked, packed;
        for (std::size_t c = 0; c < leaves; ++c) {
          blocked.push_back({c * block * width, width, block, block_stride});
          packed.push_back({c * 100 * width, width, 0, 0});
        }
        std::size_t const blocked_bytes = (n / block + 1) * block_stride, packed_bytes = leaves * 100 * width;
        check_moves(blocked, packed, width, count, index_map{nullptr, first}, index_map{nullptr, 0}, blocked_bytes,
                    packed_bytes);
        check_moves(packed, blocked, width, count, index_map{nullptr, 0}, index_map{nullptr, first}, packed_bytes,
                    blocked_bytes);
      }
    }
  }
}

TEST_CASE("find_leavers lists every leaver in order and finds a bad destination wherever it lies") {
  std::size_t const n = 1000;
  int const ranks = 5, self = 2;
  std::mt19937 rng(11);
  for (double leaving : {0.0, 0.02, 0.3, 1.0}) {
    CAPTURE(leaving);
    std::vector<int> dest(n, self);
    std::uniform_real_distribution<double> u(0, 1);
    for (auto& d : dest) {
      if (u(rng) >= leaving) continue;
      int const r = static_cast<int>(rng() % (ranks - 1));  // another rank than self
      d = r >= self ? r + 1 : r;
    }
    std::vector<std::uint32_t> want;
    std::vector<std::size_t> want_counts(ranks, 0);
    for (std::size_t i = 0; i < n; ++i) {
      ++want_counts[static_cast<std::size_t>(dest[i])];
      if (dest[i] != self) want.push_back(static_cast<std::uint32_t>(i));
    }
    std::vector<std::uint32_t> leavers(n);
    std::vector<std::size_t> counts(ranks);
    std::size_t first_bad = 0;
    int bad_value = 0;
    std::size_t const m = coalesce::detail::find_leavers(dest.data(), n, self, ranks, leavers.data(), counts.data(),
                                                         first_bad, bad_value);
    CHECK(first_bad == coalesce::detail::no_element);
    REQUIRE(m == want.size());
    CHECK(std::vector<std::uint32_t>(leavers.begin(), leavers.begin() + static_cast<std::ptrdiff_t>(m)) == want);
    CHECK(counts == want_counts);
    // A bad destination in a block where nobody else leaves, inside a block with leavers, in the
    // tail past the last whole block of 32, negative or too large: the lowest is named.
    for (std::size_t at : {std::size_t{0}, std::size_t{37}, std::size_t{500}, std::size_t{990}}) {
      for (int bad : {-1, ranks, 1 << 30}) {
        std::vector<int> wrong = dest;
        wrong[at] = bad;
        if (at + 3 < n) wrong[at + 3] = ranks + 7;  // a later bad one is not the one named
        coalesce::detail::find_leavers(wrong.data(), n, self, ranks, leavers.data(), counts.data(), first_bad,
                                       bad_value);
        CHECK(first_bad == at);
        CHECK(bad_value == bad);
      }
    }
  }
}
