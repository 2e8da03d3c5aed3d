// coalesce::member_arrays: a legacy code's separate, padded per-member arrays (x[i * 4 + d], the
// same for v and f, a dense int array) adopted by a view without a copy, on every access form.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <coalesce/coalesce.hpp>

namespace {
struct dvec3 {
  double x, y, z;
};
struct Atom {
  dvec3 x;
  dvec3 v;
  dvec3 f;
  int type;
};
using legacy = coalesce::member_arrays<coalesce::member_stride<&Atom::x, 32>, coalesce::member_stride<&Atom::v, 32>,
                                       coalesce::member_stride<&Atom::f, 32>>;
constexpr int PAD = 4;
}  // namespace

TEST_CASE("member_arrays adopts separate padded per-member arrays without a copy") {
  std::size_t const n = 1001;
  std::vector<double> x(n * PAD), v(n * PAD), f(n * PAD, 0.0);
  std::vector<int> type(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) {
      x[i * PAD + d] = static_cast<double>(i) + 0.25 * d;
      v[i * PAD + d] = 1.0 + 0.5 * d;
    }
    x[i * PAD + 3] = -7.0;  // the padding slot: never touched
    type[i] = static_cast<int>(i % 3);
  }
  auto atoms = coalesce::view<Atom, legacy>::over_blobs(n, {x.data(), v.data(), f.data(), type.data()},
                                                        {x.size() * 8, v.size() * 8, f.size() * 8, type.size() * 4});
  // Member pointers, run-time index, structured bindings and whole-record loads read the arrays.
  CHECK(atoms[10][&Atom::x][&dvec3::y] == x[10 * PAD + 1]);
  CHECK(atoms[10][&Atom::x][2] == x[10 * PAD + 2]);
  CHECK(atoms[11][&Atom::type] == 2);
  Atom const a = atoms[12];
  CHECK(a.v.z == v[12 * PAD + 2]);
  CHECK(a.type == 0);
  // A kernel writes through them: the legacy arrays see it.
  coalesce::for_each_index(coalesce::host{}, n, [=](std::size_t i) {
    auto [pos, vel, force, kind] = atoms[i];
    for (int d = 0; d < 3; ++d) force[d] = pos[d] * vel[d] + kind;
  });
  bool same = true;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) same = same && f[i * PAD + d] == x[i * PAD + d] * v[i * PAD + d] + type[i];
    same = same && x[i * PAD + 3] == -7.0 && f[i * PAD + 3] == 0.0;
  }
  CHECK(same);
  // Too little memory for the strides is refused.
  CHECK_THROWS_WITH_AS(
      (coalesce::view<Atom, legacy>::over_blobs(n, {x.data(), v.data(), f.data(), type.data()},
                                                {n * 24, v.size() * 8, f.size() * 8, type.size() * 4})),
      doctest::Contains("blob 0"), coalesce::error);
}

TEST_CASE("member_arrays is a mapping like the others: vectors, conversions, names") {
  std::vector<Atom> records(77);
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i] = {{1.0 * i, 2.0, 3.0}, {4.0, 5.0 * i, 6.0}, {0, 0, 0}, static_cast<int>(i)};
  }
  coalesce::host_vector<Atom, legacy> h(records);
  coalesce::host_vector<Atom> soa(h);  // conversion to soa and back
  coalesce::host_vector<Atom, legacy> back(soa);
  std::vector<Atom> out(records.size());
  back.copy_to(out);
  // Member by member: Atom has 4 bytes of tail padding that no copy promises to keep.
  bool same = true;
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto const& a = out[i];
    auto const& b = records[i];
    same = same && a.x.x == b.x.x && a.x.y == b.x.y && a.x.z == b.x.z && a.v.x == b.v.x && a.v.y == b.v.y &&
           a.v.z == b.v.z && a.f.x == b.f.x && a.f.y == b.f.y && a.f.z == b.f.z && a.type == b.type;
  }
  CHECK(same);
  CHECK(legacy::name() == "member_arrays<stride 32, stride 32, stride 32>");
}
