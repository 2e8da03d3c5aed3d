// One proxy: every operator an element of a view takes, on real views (plain references, stored
// formats' converting references) and inside analysis::count_accesses, which counts through the
// same coalesce::reference over a computed storage (issue 48, item 4). Each case is one statement:
// on every view it must leave the records as the same statement on a plain struct does, and
// counted it must read and write exactly the columns it names, once per thread.
#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

namespace ca = coalesce::analysis;

namespace {

struct op_vec {
  float x, y, z;
};
struct op_particle {
  op_vec pos;
  float mass;
  std::uint32_t id;
  std::array<float, 2> q;
};
bool operator==(op_particle const& a, op_particle const& b) {
  return a.pos.x == b.pos.x && a.pos.y == b.pos.y && a.pos.z == b.pos.z && a.mass == b.mass && a.id == b.id &&
         a.q == b.q;
}
using P = op_particle;

// Every member converted: leaves, a nested struct, an array (half) and an integer (bit-packed).
using stored = coalesce::stored_as<coalesce::soa, coalesce::store<&P::pos, coalesce::half>,
                                   coalesce::store<&P::mass, coalesce::half>,
                                   coalesce::store<&P::id, coalesce::bits<20>>, coalesce::store<&P::q, coalesce::half>>;

// Columns of op_particle, in leaf order.
enum column : std::size_t { x, y, z, mass, id, q0, q1, columns };
using counts = std::array<std::uint64_t, columns>;
constexpr counts none{};
constexpr counts only(std::initializer_list<column> cs) {
  counts out{};
  for (column c : cs) out[c] = 1;
  return out;
}
constexpr counts every = {1, 1, 1, 1, 1, 1, 1};
constexpr counts twice(std::initializer_list<column> cs) {
  counts out{};
  for (column c : cs) out[c] = 2;
  return out;
}
constexpr counts every_twice = {2, 2, 2, 2, 2, 2, 2};

// What reads (`sink += ...`) leave, so that they are not dead code and their values are compared.
double sink = 0;

// The operators a leaf of type L takes (L = C& for a plain reference): compound assignments with an
// R, then ++ and -- both forms. A leaf proxy must take exactly those C& takes.
template <class L, class R> constexpr std::array<bool, 14> operators_taken() {
  bool const add = requires(L l, R r) { l += r; };
  bool const subtract = requires(L l, R r) { l -= r; };
  bool const multiply = requires(L l, R r) { l *= r; };
  bool const divide = requires(L l, R r) { l /= r; };
  bool const modulo = requires(L l, R r) { l %= r; };
  bool const bit_and = requires(L l, R r) { l &= r; };
  bool const bit_or = requires(L l, R r) { l |= r; };
  bool const bit_xor = requires(L l, R r) { l ^= r; };
  bool const shift_left = requires(L l, R r) { l <<= r; };
  bool const shift_right = requires(L l, R r) { l >>= r; };
  bool const post_increment = requires(L l) { l++; };
  bool const pre_increment = requires(L l) { ++l; };
  bool const post_decrement = requires(L l) { l--; };
  bool const pre_decrement = requires(L l) { --l; };
  return {add,     subtract,   multiply,    divide,         modulo,        bit_and,        bit_or,
          bit_xor, shift_left, shift_right, post_increment, pre_increment, post_decrement, pre_decrement};
}
template <class V> void check_leaf_operators(V const& v) {
  using id_ref = decltype(v[0][&P::id]);
  using mass_ref = decltype(v[0][&P::mass]);
  using q_ref = decltype(v[0][&P::q][0]);
  static_assert(operators_taken<id_ref, unsigned>() == operators_taken<std::uint32_t&, unsigned>());
  static_assert(operators_taken<id_ref, int>() == operators_taken<std::uint32_t&, int>());
  static_assert(operators_taken<mass_ref, float>() == operators_taken<float&, float>());
  static_assert(operators_taken<mass_ref, double>() == operators_taken<float&, double>());
  static_assert(operators_taken<mass_ref, int>() == operators_taken<float&, int>());
  static_assert(operators_taken<q_ref, float>() == operators_taken<float&, float>());
}

// One statement on element i: `proxy` on a view (real or counting), `plain` on the struct, and the
// columns it reads and writes.
template <class Proxy, class Plain> struct op_case {
  char const* name;
  Proxy proxy;
  Plain plain;
  counts reads, writes;
};
template <class Proxy, class Plain> op_case(char const*, Proxy, Plain, counts, counts) -> op_case<Proxy, Plain>;

// Small values every format holds exactly (half: multiples of 1/4 below 512; bits<20>).
std::vector<P> sample_records() {
  std::vector<P> out(8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    float const f = static_cast<float>(i);
    out[i] = P{{f, f + 0.25f, f + 0.5f}, 1.5f + f, static_cast<std::uint32_t>(100 + 3 * i), {0.5f * f, 2.0f - f}};
  }
  return out;
}

template <class Layout, class Case> void check_on_view(Case const& c, std::vector<P> const& expected, double sunk) {
  coalesce::host_vector<P, Layout> h(sample_records());
  auto const v = h.view();
  check_leaf_operators(v);
  sink = 0;
  for (std::size_t i = 0; i < v.size(); ++i) c.proxy(v, i);
  INFO(std::string(c.name) << " on " << ca::layout_name<Layout>());
  CHECK(sink == sunk);
  std::vector<P> out(h.size());
  h.copy_to(out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    INFO("element " << i);
    CHECK(out[i] == expected[i]);
  }
}

template <class Case> void check_case(Case const& c) {
  std::vector<P> expected = sample_records();
  sink = 0;
  for (auto& p : expected) c.plain(p, expected, static_cast<std::size_t>(&p - expected.data()));
  double const sunk = sink;

  check_on_view<coalesce::soa>(c, expected, sunk);
  check_on_view<coalesce::aos>(c, expected, sunk);
  check_on_view<coalesce::aosoa<4>>(c, expected, sunk);
  check_on_view<stored>(c, expected, sunk);

  std::vector<P> const sample = sample_records();
  auto const trace = ca::count_accesses<P>(c.name, sample, [&](auto w, std::size_t i) {
    check_leaf_operators(w);
    c.proxy(w, i);
  });
  INFO(std::string(c.name) << " counted");
  REQUIRE(trace.columns.size() == columns);
  std::uint64_t const n = sample.size();
  std::uint64_t accesses = 0;
  for (std::size_t k = 0; k < columns; ++k) {
    INFO("column " << k);
    CHECK(trace.columns[k].reads == n * c.reads[k]);
    CHECK(trace.columns[k].writes == n * c.writes[k]);
    accesses += n * (c.reads[k] + c.writes[k]);
  }
  CHECK(trace.accesses.size() == accesses);

  // Counted, the statement leaves the counted copy of the sample as it leaves the views (the last
  // thread reads it back, after every thread's statement).
  std::vector<P> counted_out;
  ca::count_accesses<P>(c.name, sample, [&](auto w, std::size_t i) {
    c.proxy(w, i);
    if (i + 1 == w.size()) {
      for (std::size_t k = 0; k < w.size(); ++k) counted_out.push_back(static_cast<P>(w[k]));
    }
  });
  REQUIRE(counted_out.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("counted element " << i);
    CHECK(counted_out[i] == expected[i]);
  }
}

template <class... Cases> void check_cases(Cases const&... cs) { (check_case(cs), ...); }

// Reads the previous element: a gather, so that an assignment between proxies reads another element.
std::size_t before(std::size_t i, std::size_t n) { return (i + n - 1) % n; }

}  // namespace

TEST_CASE("every operator of an integer leaf, on every view and counted: one read and one write each") {
  auto const rw = only({id});
  check_cases(
      op_case{"id = 7", [](auto v, std::size_t i) { v[i][&P::id] = 7u; }, [](P& p, auto&, std::size_t) { p.id = 7u; },
              none, rw},
      op_case{"read id", [](auto v, std::size_t i) { sink += v[i][&P::id]; },
              [](P& p, auto&, std::size_t) { sink += p.id; }, rw, none},
      op_case{"id += 6", [](auto v, std::size_t i) { v[i][&P::id] += 6u; },
              [](P& p, auto&, std::size_t) { p.id += 6u; }, rw, rw},
      op_case{"id -= 2", [](auto v, std::size_t i) { v[i][&P::id] -= 2u; },
              [](P& p, auto&, std::size_t) { p.id -= 2u; }, rw, rw},
      op_case{"id *= 3", [](auto v, std::size_t i) { v[i][&P::id] *= 3u; },
              [](P& p, auto&, std::size_t) { p.id *= 3u; }, rw, rw},
      op_case{"id /= 2", [](auto v, std::size_t i) { v[i][&P::id] /= 2u; },
              [](P& p, auto&, std::size_t) { p.id /= 2u; }, rw, rw},
      op_case{"id %= 7", [](auto v, std::size_t i) { v[i][&P::id] %= 7u; },
              [](P& p, auto&, std::size_t) { p.id %= 7u; }, rw, rw},
      op_case{"id &= 0xf0", [](auto v, std::size_t i) { v[i][&P::id] &= 0xf0u; },
              [](P& p, auto&, std::size_t) { p.id &= 0xf0u; }, rw, rw},
      op_case{"id |= 1", [](auto v, std::size_t i) { v[i][&P::id] |= 1u; },
              [](P& p, auto&, std::size_t) { p.id |= 1u; }, rw, rw},
      op_case{"id ^= 5", [](auto v, std::size_t i) { v[i][&P::id] ^= 5u; },
              [](P& p, auto&, std::size_t) { p.id ^= 5u; }, rw, rw},
      op_case{"id <<= 2", [](auto v, std::size_t i) { v[i][&P::id] <<= 2; },
              [](P& p, auto&, std::size_t) { p.id <<= 2; }, rw, rw},
      op_case{"id >>= 1", [](auto v, std::size_t i) { v[i][&P::id] >>= 1; },
              [](P& p, auto&, std::size_t) { p.id >>= 1; }, rw, rw},
      op_case{"id++", [](auto v, std::size_t i) { sink += v[i][&P::id]++; },
              [](P& p, auto&, std::size_t) { sink += p.id++; }, rw, rw},
      op_case{"++id", [](auto v, std::size_t i) { ++v[i][&P::id]; }, [](P& p, auto&, std::size_t) { ++p.id; }, rw, rw},
      op_case{"id--", [](auto v, std::size_t i) { sink += v[i][&P::id]--; },
              [](P& p, auto&, std::size_t) { sink += p.id--; }, rw, rw},
      op_case{"--id", [](auto v, std::size_t i) { --v[i][&P::id]; }, [](P& p, auto&, std::size_t) { --p.id; }, rw, rw});
}

TEST_CASE("every operator of a floating leaf, on every view and counted: one read and one write each") {
  auto const rw = only({mass});
  check_cases(op_case{"mass = 2.5", [](auto v, std::size_t i) { v[i][&P::mass] = 2.5f; },
                      [](P& p, auto&, std::size_t) { p.mass = 2.5f; }, none, rw},
              op_case{"read mass", [](auto v, std::size_t i) { sink += v[i][&P::mass]; },
                      [](P& p, auto&, std::size_t) { sink += p.mass; }, rw, none},
              op_case{"mass += 1.5", [](auto v, std::size_t i) { v[i][&P::mass] += 1.5f; },
                      [](P& p, auto&, std::size_t) { p.mass += 1.5f; }, rw, rw},
              op_case{"mass += 1 (int)", [](auto v, std::size_t i) { v[i][&P::mass] += 1; },
                      [](P& p, auto&, std::size_t) { p.mass += 1; }, rw, rw},
              op_case{"mass -= 0.5", [](auto v, std::size_t i) { v[i][&P::mass] -= 0.5f; },
                      [](P& p, auto&, std::size_t) { p.mass -= 0.5f; }, rw, rw},
              op_case{"mass *= 2.0 (double)", [](auto v, std::size_t i) { v[i][&P::mass] *= 2.0; },
                      [](P& p, auto&, std::size_t) { p.mass *= 2.0; }, rw, rw},
              op_case{"mass /= 4", [](auto v, std::size_t i) { v[i][&P::mass] /= 4.0f; },
                      [](P& p, auto&, std::size_t) { p.mass /= 4.0f; }, rw, rw},
              op_case{"mass++", [](auto v, std::size_t i) { sink += v[i][&P::mass]++; },
                      [](P& p, auto&, std::size_t) { sink += p.mass++; }, rw, rw},
              op_case{"++mass", [](auto v, std::size_t i) { ++v[i][&P::mass]; },
                      [](P& p, auto&, std::size_t) { ++p.mass; }, rw, rw},
              op_case{"mass--", [](auto v, std::size_t i) { sink += v[i][&P::mass]--; },
                      [](P& p, auto&, std::size_t) { sink += p.mass--; }, rw, rw},
              op_case{"--mass", [](auto v, std::size_t i) { --v[i][&P::mass]; },
                      [](P& p, auto&, std::size_t) { --p.mass; }, rw, rw},
              op_case{"mass = other element's mass",
                      [](auto v, std::size_t i) { v[i][&P::mass] = v[before(i, v.size())][&P::mass]; },
                      [](P& p, auto& all, std::size_t i) { p.mass = all[before(i, all.size())].mass; }, rw, rw},
              op_case{"get<1>() += 1", [](auto v, std::size_t i) { v[i].template get<1>() += 1.0f; },
                      [](P& p, auto&, std::size_t) { p.mass += 1.0f; }, rw, rw});
}

TEST_CASE("nested structs and std::array members, on every view and counted") {
  check_cases(
      op_case{"pos.x += 1", [](auto v, std::size_t i) { v[i][&P::pos][&op_vec::x] += 1.0f; },
              [](P& p, auto&, std::size_t) { p.pos.x += 1.0f; }, only({x}), only({x})},
      op_case{"read pos whole",
              [](auto v, std::size_t i) {
                op_vec const r = v[i][&P::pos];
                sink += r.y;
              },
              [](P& p, auto&, std::size_t) { sink += p.pos.y; }, only({x, y, z}), none},
      op_case{"write pos whole",
              [](auto v, std::size_t i) {
                v[i][&P::pos] = op_vec{1, 2, 3};
              },
              [](P& p, auto&, std::size_t) {
                p.pos = op_vec{1, 2, 3};
              },
              none, only({x, y, z})},
      op_case{"pos[1] *= 2 (an index chosen at run time)", [](auto v, std::size_t i) { v[i][&P::pos][1] *= 2.0f; },
              [](P& p, auto&, std::size_t) { p.pos.y *= 2.0f; }, only({y}), only({y})},
      op_case{"get<0>().get<2>() -= 1", [](auto v, std::size_t i) { v[i].template get<0>().template get<2>() -= 1.0f; },
              [](P& p, auto&, std::size_t) { p.pos.z -= 1.0f; }, only({z}), only({z})},
      op_case{"auto [x, y, z] = pos; x = y + z",
              [](auto v, std::size_t i) {
                auto [px, py, pz] = v[i][&P::pos];
                px = py + pz;
              },
              [](P& p, auto&, std::size_t) { p.pos.x = p.pos.y + p.pos.z; }, only({y, z}), only({x})},
      op_case{"swap(pos.x, pos.y)",
              [](auto v, std::size_t i) {
                using std::swap;
                swap(v[i][&P::pos][&op_vec::x], v[i][&P::pos][&op_vec::y]);
              },
              [](P& p, auto&, std::size_t) { std::swap(p.pos.x, p.pos.y); }, only({x, y}), only({x, y})},
      op_case{"q[1] += 1", [](auto v, std::size_t i) { v[i][&P::q][1] += 1.0f; },
              [](P& p, auto&, std::size_t) { p.q[1] += 1.0f; }, only({q1}), only({q1})},
      op_case{"read q[0]", [](auto v, std::size_t i) { sink += v[i][&P::q][0]; },
              [](P& p, auto&, std::size_t) { sink += p.q[0]; }, only({q0}), none},
      op_case{"q[0]++", [](auto v, std::size_t i) { v[i][&P::q][0]++; }, [](P& p, auto&, std::size_t) { p.q[0]++; },
              only({q0}), only({q0})},
      op_case{"read q whole",
              [](auto v, std::size_t i) {
                std::array<float, 2> const a = v[i][&P::q];
                sink += a[0] - a[1];
              },
              [](P& p, auto&, std::size_t) { sink += p.q[0] - p.q[1]; }, only({q0, q1}), none},
      op_case{"write q whole",
              [](auto v, std::size_t i) {
                v[i][&P::q] = std::array<float, 2>{1.0f, 2.0f};
              },
              [](P& p, auto&, std::size_t) {
                p.q = {1.0f, 2.0f};
              },
              none, only({q0, q1})});
}

TEST_CASE("whole records and structured bindings, on every view and counted") {
  check_cases(op_case{"read the record",
                      [](auto v, std::size_t i) {
                        P const r = v[i];
                        sink += r.id + r.q[1];
                      },
                      [](P& p, auto&, std::size_t) { sink += p.id + p.q[1]; }, every, none},
              op_case{"write the record",
                      [](auto v, std::size_t i) {
                        v[i] = P{{1, 2, 3}, 4, static_cast<std::uint32_t>(i), {5, 6}};
                      },
                      [](P& p, auto&, std::size_t i) {
                        p = P{{1, 2, 3}, 4, static_cast<std::uint32_t>(i), {5, 6}};
                      },
                      none, every},
              op_case{"v[i] = v[i - 1]", [](auto v, std::size_t i) { v[i] = v[before(i, v.size())]; },
                      [](P& p, auto& all, std::size_t i) { p = all[before(i, all.size())]; }, every, every},
              op_case{"auto [pos, mass, id, q] = v[i]; each changed",
                      [](auto v, std::size_t i) {
                        auto [pos, m, n, q] = v[i];
                        m *= 2.0f;
                        n ^= 3u;
                        q[0] -= 1.0f;
                        pos.template get<0>() += 1.0f;
                      },
                      [](P& p, auto&, std::size_t) {
                        p.mass *= 2.0f;
                        p.id ^= 3u;
                        p.q[0] -= 1.0f;
                        p.pos.x += 1.0f;
                      },
                      only({x, mass, id, q0}), only({x, mass, id, q0})},
              op_case{"auto [px, py, pz] = get<0>(); read",
                      [](auto v, std::size_t i) {
                        auto [px, py, pz] = v[i].template get<0>();
                        sink += px * 4.0f + pz;
                        (void)py;
                      },
                      [](P& p, auto&, std::size_t) { sink += p.pos.x * 4.0f + p.pos.z; }, only({x, z}), none});
}

// `using std::swap; swap(a, b)` on named proxies (structured bindings, `decltype(auto)`) where
// std::swap's template, taking T&, once beat the proxies' own swap (taking T const&): it swapped
// through copies of the proxies, in an order that wrote b's value to both (x = 1, y = 2 became 2, 2).
// A swap of two leaves is two reads and two writes.
TEST_CASE("using std::swap; swap(a, b) on named proxies swaps the values, on every view and counted") {
  check_cases(op_case{"decltype(auto) a = mass, b = pos.x; swap(a, b)",
                      [](auto v, std::size_t i) {
                        decltype(auto) a = v[i][&P::mass];
                        decltype(auto) b = v[i][&P::pos][&op_vec::x];
                        using std::swap;
                        swap(a, b);
                      },
                      [](P& p, auto&, std::size_t) { std::swap(p.mass, p.pos.x); }, only({x, mass}), only({x, mass})},
              op_case{"auto [pos, m, n, q] = v[i] and v[i - 1]; swap(m, m2); swap(n, n2)",
                      [](auto v, std::size_t i) {
                        auto [pa, ma, na, qa] = v[i];
                        auto [pb, mb, nb, qb] = v[before(i, v.size())];
                        using std::swap;
                        swap(ma, mb);
                        swap(na, nb);
                      },
                      [](P& p, auto& all, std::size_t i) {
                        std::swap(p.mass, all[before(i, all.size())].mass);
                        std::swap(p.id, all[before(i, all.size())].id);
                      },
                      twice({mass, id}), twice({mass, id})},
              op_case{"auto [pos, ...] = v[i] and v[i - 1]; swap(pos, pos2) (nested structs)",
                      [](auto v, std::size_t i) {
                        auto [pa, ma, na, qa] = v[i];
                        auto [pb, mb, nb, qb] = v[before(i, v.size())];
                        using std::swap;
                        swap(pa, pb);
                      },
                      [](P& p, auto& all, std::size_t i) { std::swap(p.pos, all[before(i, all.size())].pos); },
                      twice({x, y, z}), twice({x, y, z})},
              op_case{"auto [x, y, z] = pos; swap(x, z)",
                      [](auto v, std::size_t i) {
                        auto [px, py, pz] = v[i][&P::pos];
                        using std::swap;
                        swap(px, pz);
                      },
                      [](P& p, auto&, std::size_t) { std::swap(p.pos.x, p.pos.z); }, only({x, z}), only({x, z})},
              op_case{"decltype(auto) a = v[i], b = v[i - 1]; swap(a, b) (whole records)",
                      [](auto v, std::size_t i) {
                        decltype(auto) a = v[i];
                        decltype(auto) b = v[before(i, v.size())];
                        using std::swap;
                        swap(a, b);
                      },
                      [](P& p, auto& all, std::size_t i) { std::swap(p, all[before(i, all.size())]); }, every_twice,
                      every_twice},
              op_case{"decltype(auto) a = q[0], b = q[1]; swap(a, b) (array elements)",
                      [](auto v, std::size_t i) {
                        auto [pos, m, n, q] = v[i];
                        decltype(auto) a = q[0];
                        decltype(auto) b = q[1];
                        using std::swap;
                        swap(a, b);
                      },
                      [](P& p, auto&, std::size_t) { std::swap(p.q[0], p.q[1]); }, only({q0, q1}), only({q0, q1})},
              op_case{"auto [.., q] = v[i] and v[i - 1]; swap(q, q2) (whole std::array members)",
                      [](auto v, std::size_t i) {
                        auto [pa, ma, na, qa] = v[i];
                        auto [pb, mb, nb, qb] = v[before(i, v.size())];
                        using std::swap;
                        swap(qa, qb);
                      },
                      [](P& p, auto& all, std::size_t i) { std::swap(p.q, all[before(i, all.size())].q); },
                      twice({q0, q1}), twice({q0, q1})},
              op_case{"swap(named id, v[i - 1][&P::id]) (a named proxy and a temporary)",
                      [](auto v, std::size_t i) {
                        auto [pa, ma, na, qa] = v[i];
                        using std::swap;
                        swap(na, v[before(i, v.size())][&P::id]);
                        swap(v[before(i, v.size())][&P::mass], ma);
                      },
                      [](P& p, auto& all, std::size_t i) {
                        std::swap(p.id, all[before(i, all.size())].id);
                        std::swap(all[before(i, all.size())].mass, p.mass);
                      },
                      twice({mass, id}), twice({mass, id})},
              op_case{"std::ranges::swap on named leaves and records",
                      [](auto v, std::size_t i) {
                        decltype(auto) a = v[i][&P::pos][&op_vec::y];
                        decltype(auto) b = v[i][&P::mass];
                        std::ranges::swap(a, b);
                        decltype(auto) r = v[i];
                        decltype(auto) s = v[before(i, v.size())];
                        std::ranges::swap(r, s);
                      },
                      [](P& p, auto& all, std::size_t i) {
                        std::swap(p.pos.y, p.mass);
                        std::swap(p, all[before(i, all.size())]);
                      },
                      counts{2, 3, 2, 3, 2, 2, 2}, counts{2, 3, 2, 3, 2, 2, 2}});
}

TEST_CASE("swap on proxies of converted members: the values, between formats too; std::swap on plain leaves") {
  // The review's case: x = 1, y = 2 stored as half (and as bits<20>) became 2, 2.
  {
    coalesce::host_vector<P, stored> h(sample_records());
    auto const v = h.view();
    v[0][&P::mass] = 1.0f;
    v[1][&P::mass] = 2.0f;
    v[0][&P::id] = 5u;
    v[1][&P::id] = 9u;
    auto a = v[0][&P::mass];
    auto b = v[1][&P::mass];
    auto m = v[0][&P::id];
    auto n = v[1][&P::id];
    static_assert(!std::is_reference_v<decltype(a)> && !std::is_arithmetic_v<decltype(a)>);  // proxies
    using std::swap;
    swap(a, b);
    swap(m, n);
    CHECK(static_cast<float>(v[0][&P::mass]) == 2.0f);
    CHECK(static_cast<float>(v[1][&P::mass]) == 1.0f);
    CHECK(static_cast<std::uint32_t>(v[0][&P::id]) == 9u);
    CHECK(static_cast<std::uint32_t>(v[1][&P::id]) == 5u);
  }
  // Two formats of one type (bfloat16 and half): swapped through the value.
  {
    using mixed = coalesce::stored_as<coalesce::aos, coalesce::store<&P::mass, coalesce::bfloat16>,
                                      coalesce::store<&P::pos, coalesce::half>>;
    coalesce::host_vector<P, mixed> h(sample_records());
    auto const v = h.view();
    auto [pos, m, n, q] = v[3];
    auto [px, py, pz] = pos;
    using std::swap;
    swap(m, py);
    CHECK(static_cast<float>(v[3][&P::mass]) == sample_records()[3].pos.y);
    CHECK(static_cast<float>(v[3][&P::pos][&op_vec::y]) == sample_records()[3].mass);
  }
  // Plain references still take std::swap (soa: float&).
  {
    coalesce::host_vector<P, coalesce::soa> h(sample_records());
    auto const v = h.view();
    auto [pos, m, n, q] = v[2];
    static_assert(std::is_same_v<decltype(m), float&>);
    using std::swap;
    swap(m, q[1]);
    std::swap(n, v[5][&P::id]);
    std::ranges::swap(m, q[0]);
    std::vector<P> want = sample_records();
    std::swap(want[2].mass, want[2].q[1]);
    std::swap(want[2].id, want[5].id);
    std::swap(want[2].mass, want[2].q[0]);
    std::vector<P> out(h.size());
    h.copy_to(out);
    CHECK(out == want);
  }
}

template <class Layout> void check_sorts() {
  std::vector<P> records = sample_records();
  std::reverse(records.begin(), records.end());
  coalesce::host_vector<P, Layout> h(records);
  auto const v = h.view();
  auto const by_id = [](P const& a, P const& b) { return a.id < b.id; };
  std::iter_swap(v.begin() + 1, v.begin() + 6);
  std::iter_swap(records.begin() + 1, records.begin() + 6);
  std::vector<P> out(h.size());
  h.copy_to(out);
  CHECK(out == records);
  std::sort(v.begin(), v.end(), by_id);
  std::sort(records.begin(), records.end(), by_id);
  h.copy_to(out);
  CHECK(out == records);
  CHECK(out == sample_records());
  // The same through std::ranges (iter_swap, then sort by a comparison: P has no operator<).
  std::ranges::iter_swap(v.begin() + 2, v.begin() + 7);
  std::ranges::iter_swap(records.begin() + 2, records.begin() + 7);
  h.copy_to(out);
  CHECK(out == records);
  // After std::sort above: clang 14 once rejected this call there (view_iterator's operators took
  // iterators by value; the sanitizer build, clang, compiles this file).
  std::ranges::sort(v.begin(), v.end(), by_id);
  h.copy_to(out);
  CHECK(out == sample_records());
}

TEST_CASE("std::iter_swap and std::sort (and their std::ranges forms) over a view's iterators move whole records") {
  check_sorts<coalesce::soa>();
  check_sorts<coalesce::aos>();
  check_sorts<coalesce::aosoa<4>>();
  check_sorts<stored>();
}

TEST_CASE("counted, an index past a std::array member or a struct's components is an error") {
  std::vector<P> const sample = sample_records();
  CHECK_THROWS_WITH_AS(ca::count_accesses<P>("array", sample, [](auto v, std::size_t i) { sink += v[i][&P::q][2]; }),
                       doctest::Contains("index 2 of a std::array member of 2 elements"), coalesce::error);
  CHECK_THROWS_WITH_AS(
      ca::count_accesses<P>("component", sample, [](auto v, std::size_t i) { v[i][&P::pos][3 + i % 2] = 1.0f; }),
      doctest::Contains("index 3 of a struct member of 3 elements"), coalesce::error);
}
