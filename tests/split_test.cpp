// Split layouts: chosen members packed (padded for one vector load), the rest under another
// mapping; views over a user's existing float4 array plus columns; the mapping facts that the
// proxies, copies and permutations rely on.
#include <cstdint>
#include <numeric>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

namespace {
struct float4_like {
  float x, y, z, w;
};
struct Atom {
  float4_like pos;  // x, y, z and the type in w, as MD codes keep it
  vec3 vel;
  float charge;
  std::uint32_t id;
};
using packed_pos = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
template <class T> bool all_same(std::vector<T> const& a, std::vector<T> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_bytes(a[i], b[i])) return false;
  }
  return true;
}
using unpadded_pos =
    coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa, coalesce::unpadded>;
using pos_and_id = coalesce::split<coalesce::fields<&Particle::id, &Particle::pos>, coalesce::aos, coalesce::soa>;
}  // namespace

TEST_CASE("a packed vec3 is padded to 16 bytes and stored whole; unpadded keeps 12") {
  using padded_storage = coalesce::layout_storage<Particle, packed_pos>;
  using unpadded_storage = coalesce::layout_storage<Particle, unpadded_pos>;
  static_assert(padded_storage::blob_count == 1 + 5);  // the positions, then vel.x .. id as columns
  constexpr coalesce::node_slot padded = padded_storage::node<0, 3>();
  static_assert(padded.alignment == 16 && padded.bytes == 16);  // one ld.global.v4 per position
  constexpr coalesce::node_slot unpadded = unpadded_storage::node<0, 3>();
  static_assert(unpadded.alignment == 4 && unpadded.bytes == 12);
  static_assert(padded_storage::node<3, 3>().alignment == 0);  // vel is columns: not stored whole
  padded_storage::mapping_type const m(100);
  CHECK(m.place(0, 0) == coalesce::column_place{0, 16, 0, 0});
  CHECK(m.place(2, 0) == coalesce::column_place{8, 16, 0, 0});
  CHECK(m.place(6, 0) == coalesce::column_place{0, 4, 0, 0});  // mass: a column of its own
  CHECK(m.blob_bytes(0) == 1600);
  // Members listed in any order are stored in member order: pos (12 bytes) then id -> 16 bytes.
  coalesce::layout_storage<Particle, pos_and_id>::mapping_type const both(10);
  CHECK(both.place(7, 0) == coalesce::column_place{12, 16, 0, 0});
  CHECK(both.blob_bytes(0) == 160);
}

TEST_CASE_TEMPLATE("split vectors: values, nested proxies, member pointers and conversions", S, coalesce::host,
                   coalesce::device) {
  std::vector<Particle> records(1001);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = make_particle(i);
  coalesce::vector<Particle, packed_pos, S> packed{std::span<Particle const>(records)};
  coalesce::vector<Particle, pos_and_id, S> other = packed;  // split -> another split
  coalesce::vector<Particle, coalesce::aosoa<6>, S> blocks = other;
  std::vector<Particle> back(records.size());
  blocks.copy_to(back);
  CHECK(all_same(back, records));
  coalesce::host_vector<Particle, packed_pos> h = packed;
  vec3 const p = h[500][&Particle::pos];
  CHECK(p.x == records[500].pos.x);
  auto [pos, vel, mass, id] = h[7];
  vec3 moved = pos;  // a whole-position load
  moved.x += 1.0f;
  pos = moved;
  CHECK(Particle(h[7]).pos.x == records[7].pos.x + 1.0f);
  CHECK(Particle(h[7]).vel.y == records[7].vel.y);  // a store of pos writes pos only
  (void)vel, (void)mass, (void)id;
}

TEST_CASE("a split view over a user's float4 positions and columns: no copy, writes land in the user's arrays") {
  std::size_t const n = 37;
  std::vector<float4_like> positions(n);
  std::vector<float> vx(n), vy(n), vz(n), charge(n);
  std::vector<std::uint32_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) {
    positions[i] = {float(i), 2.0f * i, 3.0f * i, 7.0f};
    vx[i] = 0.5f * i;
    charge[i] = -1.0f;
    ids[i] = static_cast<std::uint32_t>(i);
  }
  using keep_float4 = coalesce::split<coalesce::fields<&Atom::pos>, coalesce::aos, coalesce::soa>;
  auto atoms = coalesce::view<Atom, keep_float4>::over_blobs(
      n, {positions.data(), vx.data(), vy.data(), vz.data(), charge.data(), ids.data()});
  coalesce::for_each_index(coalesce::host{}, n, [=](std::size_t i) {
    auto [pos, vel, q, id] = atoms[i];
    auto [x, y, z, w] = pos;
    x += vel[&vec3::x];
    q = w + static_cast<float>(id);
  });
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(positions[i].x == float(i) + 0.5f * i);
    CHECK(charge[i] == 7.0f + i);
  }
  Atom const a = atoms[3];
  CHECK(a.pos.y == 6.0f);
  // Sizes are checked: a float4 array too short for n atoms is refused, naming the blob.
  CHECK_THROWS_WITH_AS((coalesce::view<Atom, keep_float4>::over_blobs(
                           n, {positions.data(), vx.data(), vy.data(), vz.data(), charge.data(), ids.data()},
                           {(n - 1) * 16, n * 4, n * 4, n * 4, n * 4, n * 4})),
                       doctest::Contains("blob 0"), coalesce::error);
}

TEST_CASE("keys and reorder on a split layout: positions packed, the permutation moves 16-byte records") {
  std::vector<Particle> records(5000);
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i] = make_particle(i);
    records[i].pos = {float((i * 7919) % 97), float((i * 104729) % 89), float(i % 83)};
    records[i].id = static_cast<std::uint32_t>(i);
  }
  coalesce::device_vector<Particle, packed_pos> d{std::span<Particle const>(records)};
  coalesce::device_vector<Particle, coalesce::soa> s{std::span<Particle const>(records)};
  coalesce::reorder_plan a, b;
  coalesce::box const box{.hi = {100, 100, 100}};
  coalesce::sort_by_key(d, coalesce::hilbert_keys(d, &Particle::pos, box, a), a);
  coalesce::sort_by_key(s, coalesce::hilbert_keys(s, &Particle::pos, box, b), b);
  std::vector<Particle> got(records.size()), want(records.size());
  d.copy_to(got);
  s.copy_to(want);
  CHECK(all_same(got, want));  // the same keys and the same stable order as on soa
}

TEST_CASE("analysis: a split layout's table is computed from its mapping, without allocating") {
  namespace ca = coalesce::analysis;
  auto const hopper = ca::device_model::hopper();
  std::vector<std::size_t> const pos = ca::leaves_of(&Particle::pos);
  auto const packed = ca::layout_table<Particle, packed_pos>(hopper, pos);
  auto const columns = ca::layout_table<Particle, coalesce::soa>(hopper, pos);
  CHECK(packed.layout == "split<member_indices<0>, aos, soa>");
  CHECK(coalesce::split<coalesce::fields<&Particle::vel, &Particle::mass>, coalesce::aos, coalesce::soa,
                        coalesce::unpadded>::name() == "split<member_indices<1, 2>, aos, soa, unpadded>");
  // Leaf by leaf, a warp reading x, y and z touches 3 x 16 sectors packed (16-byte stride), 3 x 4
  // on soa: soa wins for streaming; the packed layout wins for gathers (docs/performance.md).
  CHECK(packed.total.sectors == 48 * packed.warps);
  CHECK(columns.total.sectors == 12 * columns.warps);
  // 65536 warps of a 16 KiB record were 32 GiB of memory just to learn offsets: now nothing.
  auto const huge = ca::layout_table<Big, coalesce::soa>(hopper, {}, 65536);
  CHECK(huge.warps == 65536);
}

namespace {
template <class T> std::size_t reflect_extent(std::size_t leaf) {
  return coalesce::reflect::leaf_table_v<T>[leaf].extent;
}
}  // namespace

TEST_CASE("padding inside records and blocks is zeroed when storage is allocated; plain columns are not touched") {
  using padded_storage = coalesce::layout_storage<Particle, packed_pos>;
  padded_storage::mapping_type const m(10);
  CHECK(padded_storage::blob_has_gaps(m, 0));   // vec3 in a 16-byte slot
  CHECK(!padded_storage::blob_has_gaps(m, 1));  // the vel.x column
  using particles = coalesce::layout_storage<Particle, coalesce::aos>;
  using padded_records = coalesce::layout_storage<Padded, coalesce::aos>;
  CHECK(!particles::blob_has_gaps(particles::mapping_type(10), 0));           // 32 bytes, all members
  CHECK(padded_records::blob_has_gaps(padded_records::mapping_type(10), 0));  // float, double, float: gaps
  // aosoa: the slots past size() in a partly filled last block lie between used bytes, which a
  // copy of the blob's used range reads (initcheck saw them in a device -> host copy of 16 of 32).
  using blocked = coalesce::layout_storage<Particle, coalesce::aosoa<32>>;
  CHECK(blocked::blob_has_gaps(blocked::mapping_type(32), 0));
  // soa: the three sub-columns of Mixed's std::array<std::uint8_t, 3> share a blob, one after
  // another; the tails past size() of the first two lie between used bytes (initcheck saw them in a
  // host -> device upload of 171 of 171+ elements).
  using arrays = coalesce::layout_storage<Mixed, coalesce::soa>;
  constexpr std::size_t flags_leaf = 3;  // kind, charge, energy, flags
  CHECK(reflect_extent<Mixed>(flags_leaf) == 3);
  CHECK(arrays::blob_has_gaps(arrays::mapping_type(200), arrays::mapping_type::blob_of(flags_leaf)));
  CHECK(!arrays::blob_has_gaps(arrays::mapping_type(200), arrays::mapping_type::blob_of(0)));  // a plain column
  coalesce::host_vector<Particle, packed_pos> v(std::vector<Particle>(5, make_particle(3)));
  auto const* slot = reinterpret_cast<std::uint32_t const*>(v.storage().blobs[0]);
  bool padding_zero = true;
  for (std::size_t i = 0; i < 5; ++i) padding_zero = padding_zero && slot[4 * i + 3] == 0;  // word 3 of each slot
  CHECK(padding_zero);
}
