// verlet_list<csr>::refill, the csr rebuild a CUDA graph can hold: rows staged at the last build's
// width and packed into the list's memory, nothing read back or allocated. Exact rows after moves
// (across staging chunks), and what check() reports: a row past the staging width, more entries
// than the list's memory holds (both cut, never read past), a position that is not finite. In host
// memory refill is build().
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "neighbor_cases.hpp"
#include "test_types.hpp"

using coalesce_test::Particle;
using namespace coalesce_test::neighbor_cases;

namespace {

// Rows of 97 per staging chunk, so a few thousand particles cross chunk boundaries.
struct small_chunks {
  std::size_t before = coalesce::detail::set_staged_chunk_rows(97);
  ~small_chunks() { coalesce::detail::set_staged_chunk_rows(before); }
};

// Row i of `cut` is the first entries of row i of `full`, entry for entry.
bool prefixes(rows_t const& cut, rows_t const& full) {
  if (cut.size() != full.size()) return false;
  for (std::size_t i = 0; i < cut.size(); ++i) {
    if (cut[i].size() > full[i].size() || !std::equal(cut[i].begin(), cut[i].end(), full[i].begin())) return false;
  }
  return true;
}

}  // namespace

TEST_CASE_TEMPLATE("csr refill: exact rows after moves; check() reports cut rows, a full memory, bad positions", Space,
                   coalesce::host, coalesce::device) {
  small_chunks const chunks;
  bool const deferred = coalesce::device_is_gpu && std::is_same_v<Space, coalesce::device>;
  coalesce::box const b{.lo = {0, 0, 0}, .hi = {10, 10, 10}};
  std::array<bool, 3> const all{true, true, true};
  coalesce::list_params const params{.cutoff = 1.0, .skin = 0.3};
  auto const start = random_particles(2000, 0.0f, 10.0f, 81);
  coalesce::vector<Particle, coalesce::soa, Space> v(start);
  coalesce::verlet_list<coalesce::csr, Space> list(params);
  CHECK_THROWS_WITH_AS(list.refill(v, &Particle::pos, b), doctest::Contains("needs a build()"), coalesce::error);
  list.build(v, &Particle::pos, b);
  std::uint64_t const allocations = list.allocations();

  // Every particle moves a little, some across the periodic faces: a fresh build's rows.
  auto moved = start;
  for (std::size_t i = 0; i < moved.size(); ++i) {
    moved[i].pos.x += 0.2f * std::sin(static_cast<float>(i));
    moved[i].pos.z -= 0.15f * std::cos(static_cast<float>(5 * i));
    if (i % 89 == 0) moved[i].pos.y = 9.99f;
  }
  coalesce::vector<Particle, coalesce::soa, Space> w(moved);
  list.refill(w, &Particle::pos, b);
  CHECK_NOTHROW(list.check());
  CHECK(list.allocations() == allocations);
  coalesce::verlet_list<coalesce::csr, Space> fresh(params);
  fresh.build(w, &Particle::pos, b);
  CHECK(list.rows_on_host() == fresh.rows_on_host());  // entry for entry
  CHECK(list.entries() == fresh.entries());
  CHECK(sorted_rows(list.rows_on_host()) == brute_force(moved, b, all, 1.3, false));
  CHECK_FALSE(list.needs_rebuild(w, &Particle::pos));

  // 80 particles crowded around one point: their rows outgrow the staging width.
  auto crowded = moved;
  for (std::size_t i = 0; i < 80; ++i)
    crowded[i].pos = {5.0f + 0.01f * static_cast<float>(i % 7), 5.0f + 0.01f * static_cast<float>(i % 5), 5.0f};
  coalesce::vector<Particle, coalesce::soa, Space> c(crowded);
  coalesce::verlet_list<coalesce::csr, Space> crowded_fresh(params);
  crowded_fresh.build(c, &Particle::pos, b);
  auto const crowded_rows = crowded_fresh.rows_on_host();
  list.refill(c, &Particle::pos, b);
  if (deferred) {
    CHECK_THROWS_WITH_AS(list.check(), doctest::Contains("more than the list's width"), coalesce::error);
    CHECK(list.widest() >= 79);
    CHECK_THROWS_WITH_AS((void)list.view(c), doctest::Contains("cut"), coalesce::error);
    CHECK(list.needs_rebuild(c, &Particle::pos));
    // Cut rows hold their first entries; nothing past a row or the memory is read.
    auto const cut = list.rows_on_host();
    CHECK(prefixes(cut, crowded_rows));
    CHECK(entries_of(cut) < entries_of(crowded_rows));
    CHECK(list.allocations() == allocations);
    list.build(c, &Particle::pos, b);  // room again
  } else {
    CHECK_NOTHROW(list.check());  // host memory: refill is build()
  }
  CHECK(list.rows_on_host() == crowded_rows);

  // Rows within the staging width but twice the entries in all: the memory (last build's entries
  // and an eighth) is full. The offsets stop at its end: the last rows are cut, nothing overflows.
  coalesce::verlet_list<coalesce::csr, Space> roomy(params);
  roomy.reserve_width(200);  // rows stage 200 wide: no row is cut for its width
  roomy.build(w, &Particle::pos, b);
  auto denser = moved;
  for (auto& q : denser) q.pos.x = std::fmod(q.pos.x + 10.0f, 10.0f) * 0.5f;  // half the box, twice the density
  coalesce::vector<Particle, coalesce::soa, Space> d(denser);
  coalesce::verlet_list<coalesce::csr, Space> denser_fresh(params);
  denser_fresh.build(d, &Particle::pos, b);
  auto const denser_rows = denser_fresh.rows_on_host();
  CHECK(denser_fresh.widest() < 200);
  roomy.refill(d, &Particle::pos, b);
  if (deferred) {
    CHECK_THROWS_WITH_AS(roomy.check(), doctest::Contains("neighbours in all"), coalesce::error);
    auto const cut = roomy.rows_on_host();
    CHECK(prefixes(cut, denser_rows));
    CHECK(entries_of(cut) < entries_of(denser_rows));
    CHECK(cut.front() == denser_rows.front());  // the first rows are whole
    CHECK_THROWS_AS(roomy.refill(d, &Particle::pos, b), coalesce::error);
    roomy.build(d, &Particle::pos, b);
  } else {
    CHECK_NOTHROW(roomy.check());
  }
  CHECK(roomy.rows_on_host() == denser_rows);

  // A position that is not finite: named by check() (GPU memory) or by refill itself.
  auto bad = moved;
  bad[1500].pos.z = std::numeric_limits<float>::infinity();
  coalesce::vector<Particle, coalesce::soa, Space> inf(bad);
  list.build(w, &Particle::pos, b);
  if (deferred) {
    list.refill(inf, &Particle::pos, b);
    CHECK_THROWS_WITH_AS(list.check(), doctest::Contains("particle 1500"), coalesce::error);
  } else {
    CHECK_THROWS_WITH_AS(list.refill(inf, &Particle::pos, b), doctest::Contains("particle 1500"), coalesce::error);
  }
}
