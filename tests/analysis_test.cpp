// The coalescing model against textbook cases, reflected layouts, index arrays, shared-memory banks,
// and every kind of bad input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/analysis/analysis.hpp>

#include "test_types.hpp"

using namespace coalesce_test;
namespace ca = coalesce::analysis;

namespace {

constexpr auto hopper = ca::device_model::hopper();
constexpr auto lines128 = ca::device_model::line_based();

// The message of the coalesce::error that f throws, or "" when it throws nothing.
std::string error_of(std::function<void()> const& f) {
  try {
    f();
  } catch (coalesce::error const& e) {
    return e.what();
  }
  return "";
}

// Every error starts with "coalesce: " and names what was wrong.
void check_error(std::function<void()> const& f, std::string const& names) {
  std::string const what = error_of(f);
  INFO("message: ", what);
  CHECK(what.rfind("coalesce: ", 0) == 0);
  CHECK(what.find(names) != std::string::npos);
}

// A brute-force count of distinct 32-byte sectors for one request of 4-byte loads, independent
// of the model's sorted walk.
std::uint64_t distinct_sectors(std::vector<std::uint64_t> const& addresses) {
  std::vector<std::uint64_t> s;
  for (auto a : addresses) s.push_back(a / 32);
  std::sort(s.begin(), s.end());
  return static_cast<std::uint64_t>(std::unique(s.begin(), s.end()) - s.begin());
}

}  // namespace

TEST_CASE("32 consecutive floats: 4 sectors (1 line), 100%") {
  ca::access_stats const s = ca::strided(hopper, 4, 4);
  CHECK(s.requests == 1);
  CHECK(s.sectors == 4);
  CHECK(s.lines == 1);
  CHECK(s.bytes_requested == 128);
  CHECK(s.bytes_fetched == 128);
  CHECK(s.efficiency() == 1.0);

  ca::access_stats const l = ca::strided(lines128, 4, 4);
  CHECK(l.requests == 1);
  CHECK(l.lines == 1);
  CHECK(l.bytes_fetched == 128);
  CHECK(l.efficiency() == 1.0);
}

TEST_CASE("a stride of one sector or more: 32 sectors, 12.5% sectored, 3.1% on 128-byte lines") {
  for (std::int64_t stride : {32, 64, 128, 4096}) {
    CAPTURE(stride);
    ca::access_stats const s = ca::strided(hopper, 4, stride);
    CHECK(s.sectors == 32);
    CHECK(s.sectors_per_request() == 32.0);
    CHECK(s.efficiency() == doctest::Approx(0.125));
  }
  ca::access_stats const l32 = ca::strided(lines128, 4, 32);
  CHECK(l32.lines == 8);
  CHECK(l32.efficiency() == doctest::Approx(0.125));
  ca::access_stats const l128 = ca::strided(lines128, 4, 128);
  CHECK(l128.lines == 32);
  CHECK(l128.bytes_fetched == 4096);
  CHECK(l128.efficiency() == doctest::Approx(128.0 / 4096));  // 3.1%
  // Strides below a sector share sectors: 8 bytes -> 8 sectors, 16 -> 16.
  CHECK(ca::strided(hopper, 4, 8).sectors == 8);
  CHECK(ca::strided(hopper, 4, 16).sectors == 16);
}

TEST_CASE("the x field of a 24-byte AoS record spans 24 sectors") {
  ca::access_stats const s = ca::strided(hopper, 4, 24);
  CHECK(s.requests == 1);
  CHECK(s.sectors == 24);
  CHECK(s.efficiency() == doctest::Approx(128.0 / 768));
  CHECK(ca::strided(hopper, 4, 40).sectors == 32);  // a 40-byte record: every lane in its own sector
}

TEST_CASE("an offset of one float adds one sector, or one line") {
  CHECK(ca::strided(hopper, 4, 4, 4).sectors == 5);
  CHECK(ca::strided(hopper, 4, 4, 4).efficiency() == doctest::Approx(128.0 / 160));
  CHECK(ca::strided(lines128, 4, 4, 4).lines == 2);
  CHECK(ca::strided(lines128, 4, 4, 4).efficiency() == doctest::Approx(0.5));
  // A whole sector of offset shifts the access without adding a sector.
  CHECK(ca::strided(hopper, 4, 4, 32).sectors == 4);
}

TEST_CASE("vector loads: 8 and 16-byte lanes are one request each") {
  ca::access_stats const f2 = ca::strided(hopper, 8, 8);
  CHECK(f2.requests == 1);
  CHECK(f2.sectors == 8);
  ca::access_stats const f4 = ca::strided(hopper, 16, 16);
  CHECK(f4.requests == 1);
  CHECK(f4.sectors == 16);  // as Nsight Compute counts on the H200 (docs/analysis.md)
  CHECK(f4.lines == 4);
  CHECK(f4.instruction_bytes == 16);
  CHECK(f4.efficiency() == 1.0);
}

TEST_CASE("wide and misaligned accesses are split as the compiler would") {
  // 24 bytes aligned to 8: three 8-byte loads, each touching 24 sectors.
  ca::access_stats const rec = ca::strided(hopper, 24, 24);
  CHECK(rec.instruction_bytes == 8);
  CHECK(rec.requests == 3);
  CHECK(rec.sectors == 72);
  CHECK(rec.efficiency() == doctest::Approx(768.0 / (72 * 32)));
  // 32 bytes aligned to 32: two 16-byte loads.
  CHECK(ca::strided(hopper, 32, 32).requests == 2);
  CHECK(ca::strided(hopper, 32, 32).sectors == 64);  // each 16-byte load: a half of 32 sectors
  CHECK(ca::strided(hopper, 32, 32).efficiency() == doctest::Approx(0.5));
  // A float at a 2-byte offset: two 2-byte loads; the second one spills into a fifth sector.
  ca::access_stats const odd = ca::strided(hopper, 4, 4, 2);
  CHECK(odd.instruction_bytes == 2);
  CHECK(odd.requests == 2);
  CHECK(odd.sectors == 4 + 5);
  // 12 bytes of a float vec3 at a 12-byte stride: three 4-byte loads of 12 sectors each.
  ca::access_stats const v3 = ca::strided(hopper, 12, 12);
  CHECK(v3.requests == 3);
  CHECK(v3.sectors == 36);
  // 1 and 2-byte lanes are exact single requests.
  CHECK(ca::strided(hopper, 1, 1).sectors == 1);
  CHECK(ca::strided(hopper, 2, 2).sectors == 2);
  CHECK(ca::strided(hopper, 1, 1).requests == 1);
}

TEST_CASE("active lanes and broadcasts") {
  CHECK(ca::strided(hopper, 4, 4, 0, ca::first_lanes(8)).sectors == 1);
  CHECK(ca::strided(hopper, 4, 4, 0, ca::first_lanes(9)).sectors == 2);
  ca::access_stats const ends = ca::strided(hopper, 4, 4, 0, (std::uint64_t{1} << 31) | 1u);
  CHECK(ends.lanes == 2);
  CHECK(ends.sectors == 2);
  CHECK(ends.efficiency() == doctest::Approx(8.0 / 64));
  ca::access_stats const bcast = ca::strided(hopper, 4, 0);
  CHECK(bcast.sectors == 1);
  CHECK(bcast.bytes_requested == 128);
  CHECK(bcast.bytes_useful == 4);
  CHECK(bcast.efficiency() == doctest::Approx(4.0 / 32));
  // Negative strides are legal while every address stays at or above 0.
  CHECK(ca::strided(hopper, 4, -4, 124).sectors == 4);
}

TEST_CASE("explicit addresses agree with the strided form and with a brute-force count") {
  std::vector<std::uint64_t> addrs;
  for (std::uint64_t k = 0; k < 32; ++k) addrs.push_back(1000 + 24 * k);
  ca::access_stats const a = ca::addresses(hopper, addrs, 4);
  ca::access_stats const s = ca::strided(hopper, 4, 24, 1000);
  CHECK(a.sectors == s.sectors);
  CHECK(a.sectors == distinct_sectors(addrs));

  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::uint64_t> r;
    for (int k = 0; k < 32; ++k) r.push_back((rng() % 4096) * 4);
    CHECK(ca::addresses(hopper, r, 4).sectors == distinct_sectors(r));
  }
  // Fewer addresses than lanes: the rest are inactive.
  std::vector<std::uint64_t> three{0, 64, 128};
  CHECK(ca::addresses(hopper, three, 4).sectors == 3);
  CHECK(ca::addresses(hopper, three, 4).lanes == 3);
  CHECK(ca::addresses(lines128, three, 4).lines == 2);
}

TEST_CASE("describe() says which level the numbers describe") {
  std::string const text = ca::describe(ca::strided(hopper, 4, 32), hopper);
  CHECK(text.find("32 sectors") != std::string::npos);
  CHECK(text.find("12.5%") != std::string::npos);
  CHECK(text.find("L1") != std::string::npos);
  CHECK(text.find("not DRAM") != std::string::npos);
}

// ------------------------------------------------------------------------------ struct tables

TEST_CASE("leaves_of() selects leaves by member path") {
  CHECK(ca::leaves_of(&Particle::pos) == std::vector<std::size_t>{0, 1, 2});
  CHECK(ca::leaves_of(&Particle::vel, &vec3::y) == std::vector<std::size_t>{4});
  CHECK(ca::leaves_of(&Particle::mass) == std::vector<std::size_t>{6});
  CHECK(ca::leaves_of(&Mixed::force, &vec3::z) == std::vector<std::size_t>{6});
}

TEST_CASE("a Particle's x under aos, soa and aosoa") {
  static_assert(sizeof(Particle) == 32);
  auto const x = ca::leaves_of(&Particle::pos, &vec3::x);
  ca::layout_report const a = ca::layout_table<Particle, coalesce::aos>(hopper, x);
  REQUIRE(a.rows.size() == 1);
  CHECK(a.rows[0].path == "0.0");
  CHECK(a.rows[0].bytes == 4);
  CHECK(a.rows[0].stats.requests == a.warps);
  CHECK(a.rows[0].stats.sectors_per_request() == 32.0);  // 32-byte records: one sector per lane
  CHECK(a.rows[0].stats.efficiency() == doctest::Approx(0.125));

  for (auto const& r :
       {ca::layout_table<Particle, coalesce::soa>(hopper, x), ca::layout_table<Particle, coalesce::aosoa<8>>(hopper, x),
        ca::layout_table<Particle, coalesce::aosoa<32>>(hopper, x)}) {
    CAPTURE(r.layout);
    CHECK(r.rows[0].stats.sectors_per_request() == 4.0);
    CHECK(r.rows[0].stats.efficiency() == 1.0);
  }
  CHECK(ca::layout_table<Particle, coalesce::aosoa<8>>(hopper, x).layout == "aosoa<8>");
}

TEST_CASE("all of a Particle under each layout, and the paths of every leaf") {
  auto const tables = ca::compare_layouts<Particle>(hopper);
  REQUIRE(tables.size() == 4);
  CHECK(tables[0].layout == "aos");
  CHECK(tables[1].layout == "soa");
  CHECK(tables[2].layout == "aosoa<8>");
  CHECK(tables[3].layout == "aosoa<32>");
  std::vector<std::string> paths;
  for (auto const& row : tables[0].rows) paths.push_back(row.path);
  CHECK(paths == std::vector<std::string>{"0.0", "0.1", "0.2", "1.0", "1.1", "1.2", "2", "3"});
  // aos: every leaf's load touches 32 sectors (L1 view; L2 and DRAM see reuse between loads).
  CHECK(tables[0].total.requests == 8 * tables[0].warps);
  CHECK(tables[0].total.sectors_per_request() == 32.0);
  for (std::size_t t = 1; t < 4; ++t) {
    CHECK(tables[t].total.sectors_per_request() == 4.0);
    CHECK(tables[t].total.efficiency() == 1.0);
  }
  std::string const text = ca::describe(tables[0]);
  CHECK(text.find("aos") != std::string::npos);
  CHECK(text.find("0.2") != std::string::npos);
  CHECK(text.find("L1") != std::string::npos);
}

TEST_CASE("std::array leaves, opaque leaves and odd widths in a table") {
  auto const t = ca::layout_table<Mixed, coalesce::soa>(hopper, {3, 8});  // flags[3] and wrapped (12 bytes)
  REQUIRE(t.rows.size() == 4);
  CHECK(t.rows[0].path == "3[0]");
  CHECK(t.rows[2].path == "3[2]");
  CHECK(t.rows[0].stats.sectors_per_request() == 1.0);  // 32 bytes, one sector
  CHECK(t.rows[3].path == "6");
  CHECK(t.rows[3].bytes == 12);
  CHECK(t.rows[3].stats.requests == 3 * t.warps);  // 12 bytes: three 4-byte loads
  CHECK(t.rows[3].stats.sectors_per_request() == 12.0);
  // In aos the 1-byte kind of a 72-byte record: every lane its own sector.
  static_assert(sizeof(Mixed) == 72);
  auto const a = ca::layout_table<Mixed, coalesce::aos>(hopper, {0});
  CHECK(a.rows[0].stats.sectors_per_request() == 32.0);
}

// --------------------------------------------------------------------------------- gathers

TEST_CASE("gather: identity indices are perfectly coalesced, random ones are not") {
  std::vector<std::uint32_t> idx(1 << 14);
  std::iota(idx.begin(), idx.end(), 0u);
  ca::report const id = ca::gather(hopper, idx, sizeof(float));
  CHECK(id.data.requests == idx.size() / 32);
  CHECK(id.sectors_per_request() == 4.0);
  CHECK(id.efficiency() == 1.0);
  CHECK(id.sectors_histogram[4] == idx.size() / 32);
  CHECK(id.index_loads.sectors_per_request() == 4.0);
  CHECK(id.kernel().requests == 2 * idx.size() / 32);

  std::mt19937 rng(7);
  std::vector<std::uint32_t> perm = idx;
  std::shuffle(perm.begin(), perm.end(), rng);
  ca::report const rnd = ca::gather(hopper, perm, sizeof(float));
  CHECK(rnd.sectors_per_request() > 31.0);  // two of 32 random lanes rarely share one of 2048 sectors
  CHECK(rnd.efficiency() < 0.13);
  std::uint64_t counted = 0;
  for (std::size_t s = 0; s < rnd.sectors_histogram.size(); ++s) counted += rnd.sectors_histogram[s] * s;
  CHECK(counted == rnd.data.sectors);
  CHECK(rnd.sectors_histogram[32] > rnd.data.requests / 2);

  // "Reorder" the random gather: sorting each warp's indices does not change the set of sectors,
  // sorting the whole array restores the identity.
  std::vector<std::uint32_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  CHECK(ca::gather(hopper, sorted, sizeof(float)).data.sectors == id.data.sectors);
  // Against a brute-force count, warp by warp.
  std::uint64_t brute = 0;
  for (std::size_t w = 0; w < perm.size() / 32; ++w) {
    std::vector<std::uint64_t> a;
    for (std::size_t k = 0; k < 32; ++k) a.push_back(std::uint64_t{perm[w * 32 + k]} * 4);
    brute += distinct_sectors(a);
  }
  CHECK(rnd.data.sectors == brute);
}

TEST_CASE("gather: u64 indices, partial last warp, wide elements") {
  std::vector<std::uint64_t> idx(40);
  std::iota(idx.begin(), idx.end(), std::uint64_t{0});
  ca::report const r = ca::gather(hopper, idx, 4);
  CHECK(r.data.warps == 2);
  CHECK(r.data.lanes == 40);
  CHECK(r.data.sectors == 4 + 1);
  CHECK(r.index_loads.sectors == 8 + 2);               // 8-byte indices
  ca::report const rec = ca::gather(hopper, idx, 24);  // whole 24-byte records: 3 loads each
  CHECK(rec.data.requests == 6);
  CHECK(rec.data.instruction_bytes == 8);
  CHECK(ca::describe(r).find("histogram") != std::string::npos);
}

TEST_CASE("gather through a neighbour list, row-major vs column-major") {
  constexpr std::size_t n = 256, k = 8;
  std::mt19937 rng(3);
  std::vector<std::uint32_t> row(n * k), col(n * k);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < k; ++j) {
      std::uint32_t const neighbour = static_cast<std::uint32_t>((i + j + 1 + rng() % 4) % n);
      row[i * k + j] = neighbour;
      col[j * n + i] = neighbour;
    }
  }
  ca::report const r = ca::gather(hopper, ca::neighbor_list_ref{row, k, coalesce::neighbor_order::row_major}, 4);
  ca::report const c = ca::gather(hopper, ca::neighbor_list_ref{col, k, coalesce::neighbor_order::column_major}, 4);
  CHECK(r.data.sectors == c.data.sectors);  // same gathers, in the same order
  CHECK(r.data.requests == (n / 32) * k);
  CHECK(r.data.sectors_per_request() <= 6.0);          // neighbours of nearby particles are nearby
  CHECK(r.index_loads.sectors_per_request() == 32.0);  // row-major: lanes 32 bytes apart
  CHECK(c.index_loads.sectors_per_request() == 4.0);   // column-major: contiguous
  CHECK(r.what.find("row-major") != std::string::npos);

  // Empty slots are skipped.
  std::vector<std::uint32_t> padded(64, 0xFFFFFFFFu);
  padded[0] = 5;
  ca::neighbor_list_ref list{padded, 2, coalesce::neighbor_order::row_major, 0xFFFFFFFFu};
  ca::report const p = ca::gather(hopper, list, 4);
  CHECK(p.data.lanes == 1);
  CHECK(p.data.requests == 1);
  CHECK(p.index_loads.lanes == 64);
}

TEST_CASE("the design doc's call compiles and runs on a neighbour list") {
  std::vector<std::uint32_t> neighbour_list(64);
  std::iota(neighbour_list.begin(), neighbour_list.end(), 0u);
  auto const model = ca::device_model::hopper();
  coalesce::analysis::report r = coalesce::analysis::gather(model, neighbour_list, sizeof(float));
  CHECK(r.efficiency() == 1.0);
}

TEST_CASE("index files: u32 and u64, little-endian") {
  std::vector<std::byte> bytes{std::byte{1}, std::byte{0}, std::byte{0}, std::byte{0},
                               std::byte{0}, std::byte{1}, std::byte{0}, std::byte{0}};
  CHECK(ca::parse_indices(bytes, ca::index_width::u32) == std::vector<std::uint64_t>{1, 256});
  CHECK(ca::parse_indices(bytes, ca::index_width::u64) == std::vector<std::uint64_t>{1 + (std::uint64_t{1} << 40)});

  std::string const path = "analysis_test_indices.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (std::uint32_t i = 0; i < 101; ++i) out.write(reinterpret_cast<char const*>(&i), 4);  // x86: little-endian
  }
  auto const idx = ca::read_index_file(path, ca::index_width::u32);
  CHECK(idx.size() == 101);  // 404 bytes: not a multiple of 8
  CHECK(idx[100] == 100);
  check_error([&] { ca::read_index_file(path, ca::index_width::u64); }, "not a multiple of 8");
  std::remove(path.c_str());
}

// ------------------------------------------------------------------------------ shared memory

TEST_CASE("a 32 x 32 float transpose tile: 32-way conflict, fixed by one float of padding") {
  ca::tile_access const column{.row_elements = 32};  // lane k reads tile[k][0]
  ca::bank_stats const bad = ca::bank_conflicts(column, 0);
  CHECK(bad.wavefronts == 32);
  CHECK(bad.degree == 32);
  CHECK(ca::bank_conflicts(column, 1).degree == 1);
  ca::padding_choice const fix = ca::best_padding(column);
  CHECK(fix.padding == 1);
  CHECK(fix.stats.degree == 1);
  CHECK(fix.tried.size() == 9);
  CHECK(fix.tried[2].degree == 2);  // +2 floats: lanes k and k + 16 share a bank
  CHECK(ca::describe(bad).find("32-way") != std::string::npos);

  ca::tile_access const row{.row_elements = 32, .row_step = 0, .col_step = 1};  // tile[0][k]
  CHECK(ca::bank_conflicts(row, 0).degree == 1);
  // Doubles: 2 wavefronts are the minimum; the column read is 16-way until padded by one double.
  ca::tile_access const dcol{.row_elements = 32, .element_bytes = 8};
  CHECK(ca::bank_conflicts(dcol, 0).degree == 16);
  CHECK(ca::best_padding(dcol).padding == 1);
  CHECK(ca::best_padding(dcol).stats.wavefronts == 2);
}

TEST_CASE("bank conflicts of strided and explicit accesses") {
  CHECK(ca::bank_conflicts(ca::strided_pattern{4, 4}).degree == 1);
  CHECK(ca::bank_conflicts(ca::strided_pattern{4, 8}).degree == 2);
  CHECK(ca::bank_conflicts(ca::strided_pattern{4, 0}).wavefronts == 1);  // broadcast
  CHECK(ca::bank_conflicts(ca::strided_pattern{16, 16}).wavefronts == 4);
  CHECK(ca::bank_conflicts(ca::strided_pattern{16, 16}).degree == 1);
  std::vector<std::uint64_t> two{0, 128};
  CHECK(ca::bank_conflicts(two, 4).degree == 2);
  CHECK(ca::bank_conflicts(two, 4).worst_bank == 0);
}

// ------------------------------------------------------------------------------- bad input

TEST_CASE("bad input throws coalesce::error naming the parameter") {
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  constexpr std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  check_error([] { ca::strided(hopper, 0, 4); }, "width");
  check_error([] { ca::strided(hopper, -4, 4); }, "width");
  check_error([] { ca::strided(hopper, ca::max_width + 1, 4); }, "width");
  check_error([] { ca::strided(hopper, 4, big); }, "stride");
  check_error([] { ca::strided(hopper, 4, 4, top - 8); }, "stride");
  check_error([] { ca::strided(hopper, 4, -4, 0); }, "stride");
  check_error([] { ca::strided(hopper, 4, 4, 0, 0); }, "active lanes");
  check_error([] { ca::strided(hopper, 4, 4, 0, std::uint64_t{1} << 40); }, "active lanes");
  check_error([] { ca::first_lanes(0); }, "active lanes");
  check_error([] { ca::first_lanes(65); }, "active lanes");
  check_error([] { ca::addresses(hopper, {}, 4); }, "lane_addresses");
  check_error([] { ca::addresses(hopper, std::vector<std::uint64_t>(33, 0), 4); }, "lane_addresses");
  check_error([] { ca::addresses(hopper, std::vector<std::uint64_t>{top}, 4); }, "lane_addresses");
  check_error([] { ca::addresses(hopper, std::vector<std::uint64_t>{0}, 0); }, "width");

  ca::device_model broken = hopper;
  broken.warp_size = 0;
  check_error([&] { ca::strided(broken, 4, 4); }, "warp_size");
  broken = hopper;
  broken.sector_bytes = 24;
  check_error([&] { ca::strided(broken, 4, 4); }, "sector_bytes");
  broken = hopper;
  broken.line_bytes = 16;
  check_error([&] { ca::strided(broken, 4, 4); }, "line_bytes");

  std::vector<std::uint32_t> const none;
  check_error([&] { ca::gather(hopper, none, 4); }, "idx is empty");
  check_error([&] { ca::gather(hopper, std::span<const std::uint64_t>(), 4); }, "idx is empty");
  std::vector<std::uint32_t> const some{1, 2, 3};
  check_error([&] { ca::gather(hopper, some, 0); }, "element_size");
  check_error([&] { ca::gather(hopper, some, -1); }, "element_size");
  std::vector<std::uint64_t> const huge{top / 2};
  check_error([&] { ca::gather(hopper, huge, 4); }, "idx");
  check_error(
      [&] {
        ca::gather(hopper, ca::neighbor_list_ref{none, 4, coalesce::neighbor_order::row_major}, 4);
      },
      "indices are empty");
  check_error(
      [&] {
        ca::gather(hopper, ca::neighbor_list_ref{some, 0, coalesce::neighbor_order::row_major}, 4);
      },
      "max_neighbors");
  check_error(
      [&] {
        ca::gather(hopper, ca::neighbor_list_ref{some, 2, coalesce::neighbor_order::row_major}, 4);
      },
      "max_neighbors");

  check_error([] { ca::parse_indices({}, ca::index_width::u32); }, "empty");
  std::vector<std::byte> five(5);
  check_error([&] { ca::parse_indices(five, ca::index_width::u32); }, "truncated");
  std::vector<std::byte> twelve(12);
  check_error([&] { ca::parse_indices(twelve, ca::index_width::u64); }, "u32");
  std::vector<std::byte> u64_file(8 * 64);
  for (std::size_t i = 0; i < 64; ++i) u64_file[8 * i] = std::byte{static_cast<unsigned char>(i + 1)};
  check_error([&] { ca::parse_indices(u64_file, ca::index_width::u32); }, "looks like u64");
  CHECK(ca::parse_indices(u64_file, ca::index_width::u64).size() == 64);
  check_error([] { ca::read_index_file("/nonexistent/coalesce/indices.bin", ca::index_width::u32); }, "cannot open");

  check_error([] { ca::layout_table<Particle, coalesce::soa>(hopper, {8}); }, "leaves");
  check_error([] { ca::layout_table<Particle, coalesce::soa>(hopper, {}, 0); }, "warps");

  check_error([] { ca::bank_conflicts(ca::strided_pattern{3, 3}); }, "width");
  check_error([] { ca::bank_conflicts(std::vector<std::uint64_t>{2}, 4); }, "aligned");
  check_error([] { ca::bank_conflicts(ca::tile_access{.row_elements = 0}, 0); }, "row_elements");
  check_error([] { ca::bank_conflicts(ca::tile_access{.row_elements = 32, .col0 = 1, .col_step = 1}, 0); },
              "col0/col_step");
  check_error([] { ca::bank_conflicts(ca::tile_access{.row_elements = 32}, -1); }, "padding");
  check_error([] { ca::best_padding(ca::tile_access{}, -1); }, "max_padding");
  ca::bank_model bad_banks;
  bad_banks.banks = 0;
  check_error([&] { ca::bank_conflicts(ca::strided_pattern{}, bad_banks); }, "banks");
}
