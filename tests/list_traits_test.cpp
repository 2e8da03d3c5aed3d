// Every neighbour list is read through one customization point (coalesce::list_traits,
// neighbors/list_traits.hpp): a verlet_list's view of each format, its as_neighbor_list()
// description, a user's padded lists in both storage orders (with and without counts) and csr
// lists of any index type, a counted list, and a list type of the user's own give for_each_neighbor
// the same rows; a type that is no list is not a neighbor_list_view.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

template <class List> rows_t rows_through_traversal(List const& list) {
  rows_t rows(coalesce::list_traits<List>::size(list));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    coalesce::for_each_neighbor(list, i, [&](std::uint32_t j) { rows[i].push_back(j); });
  }
  return rows;
}

template <class List> rows_t rows_through_count_and_neighbor(List const& list) {
  using traits = coalesce::list_traits<List>;
  rows_t rows(traits::size(list));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::uint32_t k = 0; k < traits::count(list, i); ++k) rows[i].push_back(traits::neighbor(list, i, k));
  }
  return rows;
}

// A list of the user's own: one std::vector per row. It joins by its traits, nothing else.
struct vector_rows {
  rows_t rows;
};

}  // namespace

template <> struct coalesce::list_traits<vector_rows> {
  static std::size_t size(vector_rows const& l) { return l.rows.size(); }
  static std::uint32_t count(vector_rows const& l, std::size_t i) {
    return static_cast<std::uint32_t>(l.rows[i].size());
  }
  static std::uint32_t neighbor(vector_rows const& l, std::size_t i, std::uint32_t k) { return l.rows[i][k]; }
};

static_assert(coalesce::neighbor_list_view<coalesce::verlet_list_ref<coalesce::padded_columns>>);
static_assert(coalesce::neighbor_list_view<coalesce::verlet_list_ref<coalesce::padded_rows>>);
static_assert(coalesce::neighbor_list_view<coalesce::verlet_list_ref<coalesce::csr>>);
static_assert(coalesce::neighbor_list_view<coalesce::verlet_list_ref<coalesce::clusters>>);
static_assert(coalesce::neighbor_list_view<coalesce::analysis::counted_list<coalesce::clusters>>);
static_assert(coalesce::neighbor_list_view<coalesce::host_neighbor_list<int>>);
static_assert(coalesce::neighbor_list_view<coalesce::device_csr_neighbor_list<std::uint64_t>>);
static_assert(coalesce::neighbor_list_view<vector_rows>);
static_assert(!coalesce::neighbor_list_view<std::vector<std::uint32_t>>);
static_assert(!coalesce::neighbor_list_view<rows_t>);

TEST_CASE_TEMPLATE("a library list's view, its counted list and its rows are one list through the traversal", Format,
                   coalesce::padded_columns, coalesce::padded_rows, coalesce::csr, coalesce::clusters) {
  auto p = random_particles(700, 0.f, 8.f, 11);
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {8, 8, 8}};
  if constexpr (std::is_same_v<Format, coalesce::clusters>) {  // the cluster build wants a spatial order
    p = spatially_sorted(std::move(p));
  }
  for (bool const half : {false, true}) {
    CAPTURE(half);
    coalesce::host_vector<Particle> v(p);
    coalesce::verlet_list<Format, coalesce::host> list({.cutoff = 0.9, .skin = 0.2, .half = half});
    list.build(v, &Particle::pos, b);
    rows_t const expected = brute_force(p, b, {true, true, true}, 1.1, half);
    auto const view = list.view(v);
    CHECK(view.half == half);
    CHECK(sorted_rows(rows_through_traversal(view)) == expected);
    CHECK(rows_through_traversal(view) == list.rows_on_host());
    CHECK(rows_through_count_and_neighbor(view) == list.rows_on_host());
    coalesce::analysis::counted_list<Format> const counted(list);
    CHECK(rows_through_traversal(counted) == list.rows_on_host());
    if constexpr (coalesce::detail::list_format_ops<Format>::padded) {
      CHECK(rows_through_traversal(list.as_neighbor_list()) == list.rows_on_host());
    }
  }
}

TEST_CASE("a user's padded and csr lists, in either order, with or without counts, of any index type") {
  // Three rows: {1, 2}, {}, {0}; four slots each.
  std::vector<int> column_major(12, -1), row_major(12, -1);
  std::vector<int> const counts{2, 0, 1};
  auto put = [&](std::size_t i, std::size_t k, int j) {
    column_major[k * 3 + i] = j;
    row_major[i * 4 + k] = j;
  };
  put(0, 0, 1);
  put(0, 1, 2);
  put(2, 0, 0);
  rows_t const expected{{1, 2}, {}, {0}};
  coalesce::host_neighbor_list<int> const by_columns{.indices = column_major.data(),
                                                     .particles = 3,
                                                     .max_neighbors = 4,
                                                     .order = coalesce::neighbor_order::column_major,
                                                     .counts = const_cast<int*>(counts.data())};
  coalesce::host_neighbor_list<int> const by_rows{.indices = row_major.data(),
                                                  .particles = 3,
                                                  .max_neighbors = 4,
                                                  .order = coalesce::neighbor_order::row_major,
                                                  .counts = const_cast<int*>(counts.data())};
  CHECK(rows_through_traversal(by_columns) == expected);
  CHECK(rows_through_traversal(by_rows) == expected);
  // Without counts every slot is a neighbour.
  std::vector<std::uint16_t> full{1, 2, 0, 2, 0, 1};  // row-major, two slots each
  coalesce::host_neighbor_list<std::uint16_t> const all_slots{
      .indices = full.data(), .particles = 3, .max_neighbors = 2, .order = coalesce::neighbor_order::row_major};
  CHECK(rows_through_traversal(all_slots) == rows_t{{1, 2}, {0, 2}, {0, 1}});
  std::vector<std::uint64_t> entries{1, 2, 0}, offsets{0, 2, 2, 3};
  coalesce::host_csr_neighbor_list<std::uint64_t> const packed{
      .indices = entries.data(), .offsets = offsets.data(), .particles = 3};
  CHECK(rows_through_traversal(packed) == expected);
  CHECK(rows_through_count_and_neighbor(packed) == expected);
  // An empty list has no rows.
  coalesce::host_csr_neighbor_list<std::uint32_t> const none{};
  CHECK(rows_through_traversal(none).empty());
}

TEST_CASE("a list type of the user's own joins through its list_traits alone") {
  vector_rows const mine{{{3}, {}, {0, 1, 2}, {2}}};
  CHECK(rows_through_traversal(mine) == mine.rows);
}
