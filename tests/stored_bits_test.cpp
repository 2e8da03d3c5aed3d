// Bit-packed integer and bool members (coalesce::bits<N>, coalesce::signed_bits<N> in a stored_as
// mapping): the fields of a record share 32-bit words, and every mover (conversions, copies, fills,
// sorts) keeps each field's bits exact and leaves the other fields of its word alone. Every kind of
// inner mapping (soa: a field's own column holds no bytes, the word is its carrier's), host and
// device memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace {

struct vec3f {
  float x, y, z;
};
struct Atom {
  vec3f pos;
  std::uint32_t type;   // 0 .. 7
  bool ghost;           // one bit
  std::int32_t charge;  // -8 .. 7
  std::uint16_t tag;    // kept as it is
  std::uint8_t flags;   // 0 .. 31
};
bool operator==(Atom const& a, Atom const& b) {
  return a.pos.x == b.pos.x && a.pos.y == b.pos.y && a.pos.z == b.pos.z && a.type == b.type && a.ghost == b.ghost &&
         a.charge == b.charge && a.tag == b.tag && a.flags == b.flags;
}
Atom make_atom(std::size_t i) {
  return {{static_cast<float>(i), 0.5f, -1.0f},
          static_cast<std::uint32_t>(i % 8),
          i % 3 == 0,
          static_cast<std::int32_t>(i % 16) - 8,
          static_cast<std::uint16_t>(i),
          static_cast<std::uint8_t>((i * 7) % 32)};
}
std::vector<Atom> atoms(std::size_t n) {
  std::vector<Atom> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = make_atom(i);
  return out;
}
using coalesce_test::records_of;

using coalesce::bits;
using coalesce::signed_bits;
using coalesce::store;
using coalesce::stored_as;
// type, ghost, charge and flags in one word (3 + 1 + 4 + 5 bits).
template <class Inner> using one_word = stored_as<Inner, store<&Atom::type, bits<3>>, store<&Atom::ghost, bits<1>>,
                                                  store<&Atom::charge, signed_bits<4>>, store<&Atom::flags, bits<5>>>;
// Two words: type and ghost (20 + 1 bits), then charge and flags (16 + 12), which do not fit the first.
template <class Inner> using two_words =
    stored_as<Inner, store<&Atom::type, bits<20>>, store<&Atom::ghost, bits<1>>, store<&Atom::charge, signed_bits<16>>,
              store<&Atom::flags, bits<12>>>;
using one_word_soa = one_word<coalesce::soa>;
using two_words_aos = two_words<coalesce::aos>;
using one_word_aosoa = one_word<coalesce::aosoa<8>>;
// The word's carrier (type) in the packed group, the other fields in columns of their own.
using one_word_split =
    one_word<coalesce::split<coalesce::fields<&Atom::pos, &Atom::type>, coalesce::aos, coalesce::soa>>;
using two_words_user = two_words<coalesce_test::reversed_columns>;
// charge (a field without bytes of its own) alone in a blocked group, the rest records in which
// flags (no bytes either) lies between tag and the end: members told apart by index, not offset.
using one_word_split_rest =
    one_word<coalesce::split<coalesce::fields<&Atom::charge>, coalesce::aosoa<4>, coalesce::aos>>;
using two_words_soa = two_words<coalesce::soa>;  // two runs of contiguous words: a GPU launch each
#define PACKED_LAYOUTS \
  one_word_soa, two_words_aos, one_word_aosoa, one_word_split, two_words_user, one_word_split_rest, two_words_soa

}  // namespace

TEST_CASE("bit-packed fields share words: a record's bytes, the formats' places, their names") {
  using S = coalesce::layout_storage<Atom, one_word_soa>;
  // pos 12 bytes, the word 4, tag 2; type's leaf carries the word, the other fields no bytes.
  std::size_t bytes = 0;
  for (std::size_t l = 0; l < S::leaves; ++l) bytes += S::leaf_bytes(l);
  CHECK(bytes == 18);
  CHECK(S::leaf_bytes(3) == 4);
  CHECK(S::leaf_bytes(4) == 0);
  CHECK(S::slot_leaf(4) == 3);
  CHECK(S::slot_leaf(7) == 3);
  CHECK(S::format(5).bit_offset == 4);
  CHECK(S::format(7).bit_offset == 8);
  using W = coalesce::layout_storage<Atom, two_words_aos>;
  CHECK(W::slot_leaf(4) == 3);
  CHECK(W::slot_leaf(5) == 5);  // charge starts the second word
  CHECK(W::slot_leaf(7) == 5);
  CHECK(W::format(7).bit_offset == 16);
  CHECK(sizeof(Atom) == 28);  // the struct itself: type 4, ghost 1 (+3), charge 4, flags 1 (+1)
  CHECK(W::leaf_bytes(3) + W::leaf_bytes(5) == 8);
  CHECK(one_word_soa::name() ==
        "stored_as<soa, store_index<1, bits<3>>, store_index<2, bits<1>>, store_index<3, signed_bits<4>>, "
        "store_index<5, bits<5>>>");
}

TEST_CASE_TEMPLATE("bit-packed fields round-trip exactly through every mover, host and device memory", Layout,
                   PACKED_LAYOUTS) {
  for (std::size_t n : {0u, 1u, 37u, 5003u}) {  // 5003: past the host's parallel threshold, odd blocks
    INFO("n = " << n);
    auto const want = atoms(n);
    coalesce::host_vector<Atom> plain{std::span<Atom const>(want)};
    coalesce::host_vector<Atom, Layout> h = plain;
    coalesce::device_vector<Atom, Layout> d = plain;
    CHECK(records_of(h) == want);
    CHECK(records_of(d) == want);
    // Between two packings (other words, other places): field by field.
    coalesce::device_vector<Atom, one_word_soa> a = d;
    coalesce::device_vector<Atom, two_words_aos> b = a;
    coalesce::host_vector<Atom, Layout> back = b;
    CHECK(records_of(a) == want);
    CHECK(records_of(b) == want);
    CHECK(records_of(back) == want);
    // The same layout: words copied whole.
    coalesce::device_vector<Atom, Layout> copy = d;
    CHECK(records_of(copy) == want);
  }
}

TEST_CASE_TEMPLATE("fills, growth and sorts move every field of a packed word", Layout, PACKED_LAYOUTS) {
  auto want = atoms(33);
  coalesce::host_vector<Atom, Layout> v{std::span<Atom const>(want)};
  v.resize(40, make_atom(13));
  want.resize(40, make_atom(13));
  v.push_back(make_atom(6));
  want.push_back(make_atom(6));
  CHECK(records_of(v) == want);

  std::mt19937 rng(5);
  coalesce::reorder_plan plan;
  for (std::size_t n : {1u, 9u, 333u}) {
    auto const records = atoms(n);
    coalesce::device_vector<Atom, Layout> d{std::span<Atom const>(records)};
    std::vector<std::uint32_t> keys(n);
    for (auto& k : keys) k = rng() % 17;
    coalesce_test::space_array<std::uint32_t, coalesce::device> device_keys(keys);
    coalesce::sort_by_key(d, std::span<std::uint32_t const>(device_keys.data(), n), plan);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    std::vector<Atom> sorted(n);
    for (std::size_t i = 0; i < n; ++i) sorted[i] = records[order[i]];
    INFO("n = " << n);
    CHECK(records_of(d) == sorted);
  }
}

TEST_CASE_TEMPLATE("a packed field's proxy reads and writes its bits only", Layout, PACKED_LAYOUTS) {
  auto const want = atoms(20);
  coalesce::host_vector<Atom, Layout> v{std::span<Atom const>(want)};
  auto w = v.view();
  w[5][&Atom::charge] = -8;
  w[5][&Atom::type] = 7u;
  w[5][&Atom::ghost] = true;
  w[5][&Atom::flags] = static_cast<std::uint8_t>(31);
  Atom const a = w[5];
  CHECK(a.charge == -8);
  CHECK(a.type == 7u);
  CHECK(a.ghost);
  CHECK(a.flags == 31);
  CHECK(a.tag == 5);
  w[5][&Atom::flags] = static_cast<std::uint8_t>(0);  // its bits cleared, the others kept
  Atom const b = w[5];
  CHECK(b.flags == 0);
  CHECK(b.charge == -8);
  CHECK(b.type == 7u);
  CHECK(b.ghost);
  // A value the field cannot hold is refused and changes nothing of the word.
  if constexpr (std::is_same_v<Layout, one_word_soa>) {
    CHECK_THROWS_WITH_AS(w[6][&Atom::type] = 8u, doctest::Contains("bits<3>"), coalesce::error);
    CHECK_THROWS_WITH_AS(w[6][&Atom::charge] = 8, doctest::Contains("signed_bits<4>"), coalesce::error);
    CHECK(static_cast<Atom>(w[6]) == want[6]);
  }
  Atom c = want[7];
  c.type = 1;
  c.flags = 2;
  w[7] = c;  // a whole record
  CHECK(static_cast<Atom>(w[7]) == c);
  CHECK(records_of(v)[8] == want[8]);
}

TEST_CASE("values a packed field cannot hold name the element and the member, or saturate") {
  auto records = atoms(100);
  records[41].charge = 8;  // signed_bits<4> holds -8 .. 7
  coalesce::host_vector<Atom> plain{std::span<Atom const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Atom, one_word_soa>(plain)),
                       doctest::Contains("element 41's leaf 5 (member 3) cannot be stored as signed_bits<4>"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Atom, one_word_soa>(plain)),
                       doctest::Contains("element 41's leaf 5 (member 3) cannot be stored as signed_bits<4>"),
                       coalesce::error);
  records[41].charge = 0;
  records[42].type = 8;  // bits<3> holds 0 .. 7
  coalesce::host_vector<Atom> plain2{std::span<Atom const>(records)};
  CHECK_THROWS_WITH_AS((coalesce::device_vector<Atom, one_word_aosoa>(plain2)),
                       doctest::Contains("element 42's leaf 3 (member 1) cannot be stored as bits<3>"),
                       coalesce::error);
  CHECK_THROWS_WITH_AS((coalesce::host_vector<Atom, one_word_soa>(1, records[42])), doctest::Contains("bits<3>"),
                       coalesce::error);

  using clamped = stored_as<coalesce::soa, store<&Atom::type, bits<3, coalesce::saturate>>,
                            store<&Atom::charge, signed_bits<4, coalesce::saturate>>>;
  auto extremes = atoms(4);
  extremes[0].type = 9, extremes[0].charge = 100;
  extremes[1].type = 0xffffffffu, extremes[1].charge = -100;
  coalesce::host_vector<Atom> wide{std::span<Atom const>(extremes)};
  coalesce::device_vector<Atom, clamped> c = wide;
  auto const got = records_of(c);
  CHECK(got[0].type == 7);
  CHECK(got[0].charge == 7);
  CHECK(got[1].type == 7);
  CHECK(got[1].charge == -8);
  CHECK(got[2] == extremes[2]);
  coalesce::host_vector<Atom, clamped> h(4);
  h.view()[3][&Atom::charge] = -9;
  CHECK(static_cast<Atom>(h.view()[3]).charge == -8);
}

TEST_CASE("atomic_add into a bit-packed field is refused") {
  coalesce::host_vector<Atom, one_word_soa> v(4);
  CHECK_THROWS_WITH_AS(coalesce::atomic_add(v.view()[1][&Atom::type], 1u), doctest::Contains("bits<3>"),
                       coalesce::error);
}

TEST_CASE("the analysis reads a packed field as its word: 4 bytes per element, where the carrier's column lies") {
  auto const model = coalesce::analysis::device_model::hopper();
  // flags alone (leaf 7): the kernel loads the word, 4 bytes per element, one sector per 8 lanes.
  auto const flags = coalesce::analysis::layout_table<Atom, one_word_soa>(model, std::vector<std::size_t>{7});
  REQUIRE(flags.rows.size() == 1);
  CHECK(flags.rows[0].bytes == 4);
  auto const type = coalesce::analysis::layout_table<Atom, one_word_soa>(model, std::vector<std::size_t>{3});
  CHECK(flags.rows[0].stats.sectors == type.rows[0].stats.sectors);
  CHECK(flags.rows[0].stats.sectors > 0);
  // The record: pos 12, the word 4, tag 2 (aos: 18 rounded to the word's alignment, 20).
  CHECK(coalesce::analysis::layout_table<Atom, one_word<coalesce::aos>>(model).record_bytes == 20);
}

namespace {
// The formats' edges: 32-bit fields, 64-bit members, a bool in several bits, an unsigned member
// in signed_bits (0 .. 127), a signed member in 2 bits.
struct Wide {
  std::int64_t big;    // signed_bits<32>: a word of its own
  std::uint64_t ubig;  // bits<32>: the next word
  bool flag;           // bits<3>
  std::uint32_t u;     // signed_bits<8>
  std::int32_t s;      // signed_bits<2>: -2 .. 1
};
bool operator==(Wide const& a, Wide const& b) {
  return a.big == b.big && a.ubig == b.ubig && a.flag == b.flag && a.u == b.u && a.s == b.s;
}
template <class Inner> using wide_bits =
    stored_as<Inner, store<&Wide::big, signed_bits<32>>, store<&Wide::ubig, bits<32>>, store<&Wide::flag, bits<3>>,
              store<&Wide::u, signed_bits<8>>, store<&Wide::s, signed_bits<2>>>;
std::vector<Wide> wide_values() {
  std::int64_t const lo = -(std::int64_t{1} << 31), hi = (std::int64_t{1} << 31) - 1;
  std::uint64_t const top = (std::uint64_t{1} << 32) - 1;
  return {{lo, top, true, 127, -2}, {hi, 0, false, 0, 1}, {0, 1, true, 64, 0}, {-1, top - 1, false, 1, -1}};
}
}  // namespace

TEST_CASE_TEMPLATE("bit-packed fields at the formats' edges: 32 bits, 64-bit members, bools, unsigned in signed_bits",
                   Inner, coalesce::soa, coalesce::aos) {
  using S = coalesce::layout_storage<Wide, wide_bits<Inner>>;
  CHECK(S::slot_leaf(0) == 0);
  CHECK(S::slot_leaf(1) == 1);  // 32 + 32 bits: two words
  CHECK(S::slot_leaf(2) == 2);
  CHECK(S::slot_leaf(4) == 2);
  auto const want = wide_values();
  coalesce::host_vector<Wide> plain{std::span<Wide const>(want)};
  coalesce::host_vector<Wide, wide_bits<Inner>> h = plain;
  coalesce::device_vector<Wide, wide_bits<Inner>> d = plain;
  CHECK(records_of<Wide>(h) == want);
  CHECK(records_of<Wide>(d) == want);
  auto w = h.view();
  w[2][&Wide::big] = std::int64_t{-5};
  w[2][&Wide::ubig] = std::uint64_t{0xfffffffeu};
  CHECK(static_cast<Wide>(w[2]).big == -5);
  CHECK(static_cast<Wide>(w[2]).ubig == 0xfffffffeu);
  CHECK(static_cast<Wide>(w[2]).u == 64);
  // One past each edge: refused, in conversions and in proxies.
  auto const refused = [&](auto change, char const* format) {
    auto bad = want;
    change(bad[3]);
    coalesce::host_vector<Wide> p{std::span<Wide const>(bad)};
    CHECK_THROWS_WITH_AS((coalesce::host_vector<Wide, wide_bits<Inner>>(p)), doctest::Contains(format),
                         coalesce::error);
  };
  refused([](Wide& x) { x.big = std::int64_t{1} << 31; },
          "element 3's leaf 0 (member 0) cannot be stored as signed_bits<32>");
  refused([](Wide& x) { x.ubig = std::uint64_t{1} << 32; },
          "element 3's leaf 1 (member 1) cannot be stored as bits<32>");
  refused([](Wide& x) { x.u = 128; }, "element 3's leaf 3 (member 3) cannot be stored as signed_bits<8>");
  refused([](Wide& x) { x.s = 2; }, "element 3's leaf 4 (member 4) cannot be stored as signed_bits<2>");
  CHECK_THROWS_AS(w[1][&Wide::u] = 200u, coalesce::error);
  CHECK(static_cast<Wide>(w[1]) == want[1]);
}

TEST_CASE_TEMPLATE("apply, reserve, shrink and erase keep every packed field", Layout, PACKED_LAYOUTS) {
  auto const records = atoms(300);
  coalesce::device_vector<Atom, Layout> v{std::span<Atom const>(records)};
  coalesce::device_vector<Atom, Layout> companion = v;
  std::vector<std::uint32_t> keys(records.size());
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<std::uint32_t>((i * 37) % 11);
  coalesce_test::space_array<std::uint32_t, coalesce::device> device_keys(keys);
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, std::span<std::uint32_t const>(device_keys.data(), keys.size()), plan);
  coalesce::apply(plan, companion);
  CHECK(records_of(companion) == records_of(v));

  coalesce::host_vector<Atom, Layout> h{std::span<Atom const>(records)};
  h.reserve(1000);
  CHECK(records_of(h) == records);
  h.erase(10, 20);
  auto want = records;
  want.erase(want.begin() + 10, want.begin() + 20);
  CHECK(records_of(h) == want);
  h.shrink_to_fit();
  CHECK(records_of(h) == want);
}

TEST_CASE("a word written both from unpacked columns and from another packing keeps every field") {
  // type and ghost packed alike on both sides (moved packed to packed), charge and flags packed
  // from their own columns into the same word: neither part may clear the other's fields (on the
  // GPU the four-at-a-time pack composes a word from zero only when it writes all of its fields).
  using half_packed = stored_as<coalesce::soa, store<&Atom::type, bits<3>>, store<&Atom::ghost, bits<1>>>;
  for (std::size_t n : {1u, 4u, 37u, 5003u}) {
    INFO("n = " << n);
    auto const want = atoms(n);
    coalesce::device_vector<Atom, half_packed> source{std::span<Atom const>(want)};
    coalesce::device_vector<Atom, one_word_soa> packed = source;
    CHECK(records_of(packed) == want);
    coalesce::device_vector<Atom, half_packed> back = packed;
    CHECK(records_of(back) == want);
    coalesce::host_vector<Atom, one_word_soa> on_host = source;
    CHECK(records_of(on_host) == want);
  }
}

TEST_CASE("a word composed from unpacked columns holds nothing but its fields") {
  // The destination's words first hold other values (every bit set where a field lies): the
  // conversion overwrites each field whole, on the GPU without reading the old word.
  auto const want = atoms(4099);
  std::vector<Atom> other(want.size(), Atom{{0, 0, 0}, 7u, true, -1, 0, 31});
  coalesce::device_vector<Atom, one_word_soa> packed{std::span<Atom const>(other)};
  coalesce::device_vector<Atom> plain{std::span<Atom const>(want)};
  packed.assign(plain);
  CHECK(records_of(packed) == want);
}

namespace {
// Nineteen packed fields in one word (18 flags and an 8-bit type: 26 bits): more columns than one
// GPU conversion launch takes (16), so the word's run is cut and each part reads the word.
struct many_flags {
  float x;
  bool f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17;
  std::uint32_t type;
};
bool operator==(many_flags const& a, many_flags const& b) { return std::memcmp(&a, &b, sizeof a) == 0; }
template <auto... M> using flags_in_bits =
    stored_as<coalesce::soa, store<M, bits<1>>..., store<&many_flags::type, bits<8>>>;
using all_flags_packed =
    flags_in_bits<&many_flags::f0, &many_flags::f1, &many_flags::f2, &many_flags::f3, &many_flags::f4, &many_flags::f5,
                  &many_flags::f6, &many_flags::f7, &many_flags::f8, &many_flags::f9, &many_flags::f10,
                  &many_flags::f11, &many_flags::f12, &many_flags::f13, &many_flags::f14, &many_flags::f15,
                  &many_flags::f16, &many_flags::f17>;
many_flags flags_of(std::size_t i) {
  many_flags m{};  // zeroed padding: records compare by bytes
  m.x = static_cast<float>(i);
  bool* const f = &m.f0;
  for (std::size_t k = 0; k < 18; ++k) f[k] = ((i >> (k % 7)) + k) % 2 == 1;
  m.type = static_cast<std::uint32_t>((i * 13) % 256);
  return m;
}
}  // namespace

TEST_CASE("a word of more packed fields than one GPU launch converts keeps every field") {
  using S = coalesce::layout_storage<many_flags, all_flags_packed>;
  CHECK(S::slot_leaf(19) == 1);  // one word, carried by f0
  for (std::size_t n : {1u, 4u, 37u, 5003u}) {
    INFO("n = " << n);
    std::vector<many_flags> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = flags_of(i);
    coalesce::device_vector<many_flags> plain{std::span<many_flags const>(want)};
    coalesce::device_vector<many_flags, all_flags_packed> packed = plain;
    coalesce::device_vector<many_flags> back = packed;
    std::vector<many_flags> got(n);
    back.copy_to(got);
    CHECK(got == want);
    packed.copy_to(got);
    CHECK(got == want);
  }
}

namespace {
// The GPU's common word batch (one run of k packed fields, up to eight 2- and 4-byte copied columns)
// has a kernel of its own for each k; any other batch takes the general word kernel. Octet: eight
// small fields and five copied columns; nine_floats: more copied columns than that kernel takes.
struct Octet {
  float x, y, z;
  std::uint16_t tag;
  std::uint8_t f0, f1, f2, f3, f4, f5, f6, f7;
  std::int32_t spare;
};
bool operator==(Octet const& a, Octet const& b) { return std::memcmp(&a, &b, sizeof a) == 0; }
Octet octet_of(std::size_t i) {
  Octet o{};
  o.x = static_cast<float>(i), o.y = -static_cast<float>(i), o.z = 0.25f;
  o.tag = static_cast<std::uint16_t>(i * 3);
  std::uint8_t* const f = &o.f0;
  for (std::size_t k = 0; k < 8; ++k) f[k] = static_cast<std::uint8_t>((i + 3 * k) % 16);
  o.spare = static_cast<std::int32_t>(i) - 7;
  return o;
}
template <auto... M> using octet_packed = stored_as<coalesce::soa, store<M, bits<4>>...>;
using one_field = octet_packed<&Octet::f0>;
using three_fields = octet_packed<&Octet::f0, &Octet::f1, &Octet::f2>;
using eight_fields =
    octet_packed<&Octet::f0, &Octet::f1, &Octet::f2, &Octet::f3, &Octet::f4, &Octet::f5, &Octet::f6, &Octet::f7>;
// f5 clamps to 0 .. 15, the others are refused.
using eight_fields_f5_clamped =
    stored_as<coalesce::soa, store<&Octet::f0, bits<4>>, store<&Octet::f1, bits<4>>, store<&Octet::f2, bits<4>>,
              store<&Octet::f3, bits<4>>, store<&Octet::f4, bits<4>>, store<&Octet::f5, bits<4, coalesce::saturate>>,
              store<&Octet::f6, bits<4>>, store<&Octet::f7, bits<4>>>;

struct nine_floats {
  float a, b, c, d, e, f, g, h, i;
  std::uint8_t kind;
  bool ghost;
};
bool operator==(nine_floats const& a, nine_floats const& b) { return std::memcmp(&a, &b, sizeof a) == 0; }
using nine_floats_packed =
    stored_as<coalesce::soa, store<&nine_floats::kind, bits<7>>, store<&nine_floats::ghost, bits<1>>>;

template <class Layout> void octets_round_trip(std::size_t n) {
  std::vector<Octet> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = octet_of(i);
  coalesce::device_vector<Octet> plain{std::span<Octet const>(want)};
  coalesce::device_vector<Octet, Layout> packed = plain;
  coalesce::device_vector<Octet> back = packed;
  std::vector<Octet> got(n);
  back.copy_to(got);
  CHECK(got == want);
  coalesce::host_vector<Octet, Layout> on_host = packed;
  on_host.copy_to(got);
  CHECK(got == want);
}
}  // namespace

TEST_CASE("words of 1 to 8 packed fields beside copied columns convert exactly at every size, both ways") {
  for (std::size_t n : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 4099u}) {  // whole quads and every tail length
    INFO("n = " << n);
    octets_round_trip<one_field>(n);
    octets_round_trip<three_fields>(n);
    octets_round_trip<eight_fields>(n);
    std::vector<nine_floats> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      nine_floats r{};
      float* const v = &r.a;
      for (int k = 0; k < 9; ++k) v[k] = static_cast<float>(i * 9 + static_cast<std::size_t>(k));
      r.kind = static_cast<std::uint8_t>(i % 128);
      r.ghost = i % 5 == 1;
      want[i] = r;
    }
    coalesce::device_vector<nine_floats> plain{std::span<nine_floats const>(want)};
    coalesce::device_vector<nine_floats, nine_floats_packed> packed = plain;
    coalesce::device_vector<nine_floats> back = packed;
    std::vector<nine_floats> got(n);
    back.copy_to(got);
    CHECK(got == want);
  }
}

TEST_CASE("a word run beside half columns converts exactly in one pass, both ways") {
  // x, y as half (exact for the integers up to 2048 they hold here), three fields in bits, the rest kept.
  using mixed = stored_as<coalesce::soa, store<&Octet::x, coalesce::half>, store<&Octet::y, coalesce::half>,
                          store<&Octet::f0, bits<4>>, store<&Octet::f1, bits<4>>, store<&Octet::f2, bits<4>>>;
  for (std::size_t n : {1u, 6u, 2047u}) {
    INFO("n = " << n);
    octets_round_trip<mixed>(n);
  }
}

TEST_CASE("a value a field of an eight-field word cannot hold is named, in a whole quad and in the tail") {
  for (std::size_t bad : {5u, 4098u}) {  // 4099 elements: 4098 lies past the last whole quad
    INFO("element " << bad);
    std::vector<Octet> records(4099);
    for (std::size_t i = 0; i < records.size(); ++i) records[i] = octet_of(i);
    records[bad].f6 = 16;
    coalesce::device_vector<Octet> plain{std::span<Octet const>(records)};
    std::string const message = "element " + std::to_string(bad) + "'s leaf 10 (member 10) cannot be stored as bits<4>";
    CHECK_THROWS_WITH_AS((coalesce::device_vector<Octet, eight_fields>(plain)), doctest::Contains(message.c_str()),
                         coalesce::error);
    records[bad].f6 = 1;
    records[bad].f5 = 200;
    coalesce::device_vector<Octet> plain2{std::span<Octet const>(records)};
    coalesce::device_vector<Octet, eight_fields_f5_clamped> clamped = plain2;
    std::vector<Octet> got(records.size());
    clamped.copy_to(got);
    records[bad].f5 = 15;
    CHECK(got == records);
  }
}
