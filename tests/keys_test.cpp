// Keys: how long a key_array stays valid, and the bit ranges of the curves. A key_array points
// into the plan that computed it; using it after a later computation overwrote it must be an
// error (it was a heap-use-after-free and silently wrong cell offsets), never a wrong result.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;

namespace {
std::vector<Particle> scattered(std::size_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {{u(rng), u(rng), u(rng)}, {}, 1.0f, static_cast<std::uint32_t>(i)};
  return out;
}
coalesce::box const box10{.hi = {10, 10, 10}};
}  // namespace

TEST_CASE_TEMPLATE("keys overwritten by a later key computation on the same plan are refused", S, coalesce::host,
                   coalesce::device) {
  auto const records = scattered(1000);
  coalesce::vector<Particle, coalesce::soa, S> v{std::span<Particle const>(records)};
  coalesce::reorder_plan plan;
  auto const morton = coalesce::morton_keys(v, &Particle::pos, box10, plan);
  auto const hilbert = coalesce::hilbert_keys<std::uint64_t>(v, &Particle::pos, box10, plan);  // reallocates the keys
  CHECK_THROWS_WITH_AS(coalesce::sort_by_key(v, morton, plan), doctest::Contains("these keys are gone"),
                       coalesce::error);
  CHECK(plan.size() == 0);                  // nothing was sorted
  coalesce::sort_by_key(v, hilbert, plan);  // the newest keys are fine
  CHECK(plan.size() == 1000);
  // A sort consumes the keys: sorting them again would sort already-sorted contents.
  CHECK_THROWS_WITH_AS(coalesce::sort_by_key(v, hilbert, plan), doctest::Contains("these keys are gone"),
                       coalesce::error);
  // Keys of one plan are not keys of another.
  coalesce::reorder_plan other;
  auto const mine = coalesce::morton_keys(v, &Particle::pos, box10, other);
  CHECK_THROWS_WITH_AS(coalesce::sort_by_key(v, mine, plan), doctest::Contains("another plan"), coalesce::error);
  // release() frees the keys' memory: the keys are gone too.
  auto const released = coalesce::morton_keys(v, &Particle::pos, box10, plan);
  plan.release();
  CHECK_THROWS_AS(coalesce::sort_by_key(v, released, plan), coalesce::error);
  auto const records_after = [&] {
    std::vector<Particle> out(v.size());
    v.copy_to(out);
    return out;
  }();
  std::vector<std::uint32_t> seen(1000, 0);
  for (auto const& p : records_after) ++seen[p.id];
  CHECK(std::count(seen.begin(), seen.end(), 1u) == 1000);  // still a permutation
}

TEST_CASE_TEMPLATE("cell offsets need the sorted cell keys of the plan's last sort", S, coalesce::host,
                   coalesce::device) {
  auto const records = scattered(500);
  coalesce::vector<Particle, coalesce::soa, S> v{std::span<Particle const>(records)};
  coalesce::reorder_plan plan;
  auto const cells = coalesce::cell_keys(v, &Particle::pos, box10, 2.5, plan);
  CHECK_THROWS_WITH_AS((void)coalesce::cell_offsets(plan, cells), doctest::Contains("sort_by_key"), coalesce::error);
  coalesce::sort_by_key(v, cells, plan);
  CHECK(coalesce::cell_offsets(plan, cells).size() == 65);
  // A later key computation overwrites the sorted keys that cell_offsets reads: refused.
  auto const morton = coalesce::morton_keys(v, &Particle::pos, box10, plan);
  (void)morton;
  CHECK_THROWS_WITH_AS((void)coalesce::cell_offsets(plan, cells), doctest::Contains("overwrote the sorted keys"),
                       coalesce::error);
  // Cell keys of another plan, or the caller's own keys dressed up as cell keys, are not the plan's sort.
  coalesce::reorder_plan other;
  auto const other_cells = coalesce::cell_keys(v, &Particle::pos, box10, 2.5, other);
  coalesce::sort_by_key(v, other_cells, other);
  CHECK_THROWS_AS((void)coalesce::cell_offsets(plan, other_cells), coalesce::error);
}

TEST_CASE("2-D 64-bit curves use all 32 levels per axis; 3-D 64-bit ones 21") {
  struct point {
    double x, y;
  };
  struct body {
    point p;
    std::uint32_t id;
  };
  std::vector<body> corner = {{{0.0, 0.0}, 0}, {{0.999999999, 0.999999999}, 1}};
  coalesce::host_vector<body> v(corner);
  coalesce::reorder_plan plan;
  coalesce::box const unit{.lo = {0, 0, 0}, .hi = {1, 1, 1}, .edges = coalesce::boundary::open};
  auto const m = coalesce::morton_keys<std::uint64_t>(v, &body::p, unit, plan);
  CHECK(m.end_bit == 64);
  CHECK(m.data[0] == 0);
  CHECK((m.data[1] >> 62) == 3);  // the top cell of both axes: bits 62 and 63 are both set
  auto const h = coalesce::hilbert_keys<std::uint64_t>(v, &body::p, unit, plan, 32);
  CHECK(h.end_bit == 64);
  CHECK((h.data[1] >> 62) != 0);  // 32 levels: the far corner lies in the top quarter of the curve
  CHECK_THROWS_WITH_AS((void)coalesce::morton_keys<std::uint64_t>(v, &body::p, unit, plan, 33),
                       doctest::Contains("do not fit"), coalesce::error);
}

TEST_CASE_TEMPLATE("an empty bit range orders nothing: the stable sort is the identity", S, coalesce::host,
                   coalesce::device) {
  auto const records = scattered(300);
  coalesce::vector<Particle, coalesce::soa, S> v{std::span<Particle const>(records)};
  std::vector<std::uint32_t> keys(300);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<std::uint32_t>(299 - i);
  constexpr auto kind = coalesce::detail::kind_of_space<S>;
  coalesce::detail::buffer device_keys(kind, keys.size() * 4);
  coalesce::detail::copy_bytes(kind, device_keys.data(), coalesce::detail::memory_kind::host, keys.data(),
                               keys.size() * 4);
  coalesce::reorder_plan plan;
  auto const* data = reinterpret_cast<std::uint32_t const*>(device_keys.data());
  coalesce::sort_by_key(v, coalesce::key_array<std::uint32_t, S>{data, 300, 32, 32}, plan);
  std::vector<Particle> out(300);
  v.copy_to(out);
  bool identity = true;
  for (std::size_t i = 0; i < out.size(); ++i) identity = identity && out[i].id == i;
  CHECK(identity);
}

TEST_CASE_TEMPLATE("positions stored as 4-member structs (float4: x, y, z and a type in w) give 3-D keys", S,
                   coalesce::host, coalesce::device) {
  struct float4_like {
    float x, y, z, w;
  };
  struct atom {
    float4_like pos;
    std::uint32_t id;
  };
  struct plain {
    vec3 pos;
    std::uint32_t id;
  };
  std::vector<atom> atoms(300);
  std::vector<plain> plains(300);
  for (std::size_t i = 0; i < atoms.size(); ++i) {
    float const x = float((i * 37) % 100) / 10.0f, y = float((i * 11) % 100) / 10.0f, z = float(i % 100) / 10.0f;
    atoms[i] = {{x, y, z, float(i % 3)}, static_cast<std::uint32_t>(i)};  // w varies: it must not matter
    plains[i] = {{x, y, z}, static_cast<std::uint32_t>(i)};
  }
  coalesce::vector<atom, coalesce::soa, S> a{std::span<atom const>(atoms)};
  coalesce::vector<plain, coalesce::soa, S> p{std::span<plain const>(plains)};
  coalesce::reorder_plan pa, pp;
  auto const ka = coalesce::hilbert_keys(a, &atom::pos, box10, pa);
  auto const kp = coalesce::hilbert_keys(p, &plain::pos, box10, pp);
  CHECK(ka.end_bit == kp.end_bit);  // 3 axes of 10 levels
  coalesce::sort_by_key(a, ka, pa);
  coalesce::sort_by_key(p, kp, pp);
  CHECK(pa.permutation_on_host() == pp.permutation_on_host());  // the same order as for the vec3 positions
}

namespace {
struct quad {
  float x, y, z, w;
};
struct user_atom {
  quad pos;
  float charge;
  std::uint32_t id;
};
using keep_quads = coalesce::split<coalesce::fields<&user_atom::pos>, coalesce::aos, coalesce::soa>;

std::vector<user_atom> user_atoms(std::size_t n) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  std::vector<user_atom> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng), float(i % 5)}, -float(i), static_cast<std::uint32_t>(i)};
  return out;
}
}  // namespace

// Reorder without owning: a program that keeps its float4 positions and its other columns in
// its own memory sorts them in place through a view, the same order as a coalesce::vector.
TEST_CASE_TEMPLATE("keys and sort_by_key on views over user memory give the vector's order, every column following", S,
                   coalesce::host, coalesce::device) {
  std::size_t const n = 997;
  auto const records = user_atoms(n);
  std::vector<quad> positions(n);
  std::vector<float> charges(n);
  std::vector<std::uint32_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) {
    positions[i] = records[i].pos;
    charges[i] = records[i].charge;
    ids[i] = records[i].id;
  }
  // The reference: the same records owned by a coalesce::vector, sorted along the Hilbert curve.
  coalesce::vector<user_atom, keep_quads, S> owned{std::span<user_atom const>(records)};
  coalesce::reorder_plan reference;
  coalesce::sort_by_key(owned, coalesce::hilbert_keys(owned, &user_atom::pos, box10, reference), reference);
  std::vector<user_atom> want(n);
  owned.copy_to(want);
  auto const same_atom = [](user_atom const& a, user_atom const& b) {
    return a.pos.x == b.pos.x && a.pos.y == b.pos.y && a.pos.z == b.pos.z && a.pos.w == b.pos.w &&
           a.charge == b.charge && a.id == b.id;
  };

  SUBCASE("split view: the user's quads as they are, charges and ids as columns") {
    coalesce::array<quad, S> pos(positions);
    coalesce::array<float, S> charge(charges);
    coalesce::array<std::uint32_t, S> id(ids);
    auto atoms = coalesce::view<user_atom, keep_quads>::over_blobs(n, {pos.data(), charge.data(), id.data()});
    coalesce::reorder_plan plan;
    coalesce::sort_by_key(S{}, atoms, coalesce::hilbert_keys(S{}, atoms, &user_atom::pos, box10, plan), plan);
    CHECK(plan.permutation_on_host() == reference.permutation_on_host());
    auto const p = pos.to_host();
    auto const q = charge.to_host();
    auto const k = id.to_host();
    bool all_same = true;
    for (std::size_t i = 0; i < n; ++i) all_same = all_same && same_atom({p[i], q[i], k[i]}, want[i]);
    CHECK(all_same);
  }
  SUBCASE("aos view over the user's records, Morton and cell keys too") {
    coalesce::array<user_atom, S> mine(records);
    coalesce::view<user_atom, coalesce::aos> atoms(mine.data(), n);
    coalesce::reorder_plan plan, vector_plan;
    auto const cells = coalesce::cell_keys(S{}, atoms, &user_atom::pos, box10, 1.0, plan);
    coalesce::vector<user_atom, coalesce::aos, S> copy{std::span<user_atom const>(records)};
    auto const vector_cells = coalesce::cell_keys(copy, &user_atom::pos, box10, 1.0, vector_plan);
    CHECK(cells.end_bit == vector_cells.end_bit);
    coalesce::sort_by_key(S{}, atoms, cells, plan);
    coalesce::sort_by_key(copy, vector_cells, vector_plan);
    CHECK(plan.permutation_on_host() == vector_plan.permutation_on_host());
    coalesce::sort_by_key(S{}, atoms, coalesce::morton_keys(S{}, atoms, &user_atom::pos, box10, plan), plan);
    coalesce::sort_by_key(S{}, atoms, coalesce::hilbert_keys(S{}, atoms, &user_atom::pos, box10, plan), plan);
    auto const got = mine.to_host();
    bool all_same = true;
    for (std::size_t i = 0; i < n; ++i) all_same = all_same && same_atom(got[i], want[i]);
    CHECK(all_same);  // Hilbert order whatever order the records were in before
  }
  SUBCASE("bad input: keys of another length, memory in the other space") {
    coalesce::array<user_atom, S> mine(records);
    coalesce::view<user_atom, coalesce::aos> atoms(mine.data(), n);
    coalesce::view<user_atom, coalesce::aos> fewer(mine.data(), n - 1);
    coalesce::reorder_plan plan;
    auto const keys = coalesce::hilbert_keys(S{}, atoms, &user_atom::pos, box10, plan);
    CHECK_THROWS_WITH_AS(coalesce::sort_by_key(S{}, fewer, keys, plan), doctest::Contains("the key array has 997"),
                         coalesce::error);
    if constexpr (coalesce::device_is_gpu && std::is_same_v<S, coalesce::device>) {
      std::vector<user_atom> on_host = records;
      coalesce::view<user_atom, coalesce::aos> wrong(on_host.data(), n);
      CHECK_THROWS_AS((void)coalesce::hilbert_keys(S{}, wrong, &user_atom::pos, box10, plan), coalesce::error);
    }
  }
}

// A view over the first n elements of larger storage: sorting it touches nothing past n (the
// std::array sub-columns and the last aosoa block hold slots that are not the view's), and a
// device{s} naming another stream than the plan's is refused instead of ignored.
namespace {
struct binned {
  vec3 pos;
  std::array<float, 3> bins;
};
}  // namespace
TEST_CASE_TEMPLATE("sort_by_key on a view of the first n elements leaves the slots past n alone", L, coalesce::soa,
                   coalesce::aosoa<8>) {
  std::size_t const capacity = 64, n = 37;
  std::vector<binned> records(capacity);
  for (std::size_t i = 0; i < capacity; ++i) {
    float const f = static_cast<float>(i);
    records[i] = {{float((i * 7) % 10), float((i * 3) % 10), f / 10.0f}, {f, -f, 2 * f}};
  }
  coalesce::vector<binned, L> all{std::span<binned const>(records)};
  coalesce::view<binned, L> first(all.storage(), n);
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(coalesce::host{}, first,
                        coalesce::morton_keys(coalesce::host{}, first, &binned::pos, box10, plan), plan);
  std::vector<binned> after(capacity);
  all.copy_to(after);
  bool tail_kept = true;
  for (std::size_t i = n; i < capacity; ++i)
    tail_kept = tail_kept && after[i].bins == records[i].bins && after[i].pos.x == records[i].pos.x;
  CHECK(tail_kept);
  auto const order = plan.permutation_on_host();
  bool moved = true;
  for (std::size_t i = 0; i < n; ++i) moved = moved && after[i].bins == records[order[i]].bins;
  CHECK(moved);
}
