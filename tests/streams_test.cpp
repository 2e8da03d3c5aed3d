// Streams, check policies and plan memory (issue: streams and async everywhere). The CPU build
// runs these with empty streams, the CUDA build's CPU suite on GPU memory with real ones;
// tests/gpu/streams_test.cu adds two streams at once and a captured CUDA graph.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;
using coalesce::detail::memory_kind;

namespace {

std::vector<Particle> some_particles(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.0f, 10.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {u(rng), u(rng), 1.0f}, u(rng), static_cast<std::uint32_t>(i)};
  return out;
}

std::vector<std::uint32_t> random_indices(std::size_t count, std::size_t n, std::mt19937& rng) {
  std::vector<std::uint32_t> out(count);
  for (auto& j : out) j = static_cast<std::uint32_t>(rng() % n);
  return out;
}

coalesce::box const box10{.lo = {0, 0, 0}, .hi = {10, 10, 10}};

}  // namespace

TEST_CASE_TEMPLATE("remap into a second list gives what remap in place gives, and leaves the source as it was", S,
                   coalesce::host, coalesce::device) {
  std::mt19937 rng(3);
  std::size_t const n = 257, max = 5;
  auto const records = some_particles(n, rng);
  auto const entries = random_indices(n * max, n, rng);
  std::vector<std::uint32_t> counts(n);
  for (auto& c : counts) c = static_cast<std::uint32_t>(rng() % (max + 1));
  std::vector<std::uint32_t> offsets(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) offsets[i + 1] = offsets[i] + counts[i];
  std::vector<std::uint32_t> csr(entries.begin(), entries.begin() + offsets[n]);

  coalesce::vector<Particle, coalesce::soa, S> v{std::span<Particle const>(records)};
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, coalesce::hilbert_keys(v, &Particle::pos, box10, plan), plan);

  for (auto order : {coalesce::neighbor_order::row_major, coalesce::neighbor_order::column_major}) {
    space_array<std::uint32_t, S> in_place(entries), in_place_counts(counts), source(entries), source_counts(counts);
    space_array<std::uint32_t, S> target(std::vector<std::uint32_t>(n * max, 7)),
        target_counts(std::vector<std::uint32_t>(n, 7));
    coalesce::neighbor_list<std::uint32_t, S> const a{in_place.data(), n, max, order, in_place_counts.data()};
    coalesce::neighbor_list<std::uint32_t, S> const from{source.data(), n, max, order, source_counts.data()};
    coalesce::neighbor_list<std::uint32_t, S> const to{target.data(), n, max, order, target_counts.data()};
    coalesce::remap(a, plan);
    coalesce::remap(from, to, plan);
    CHECK(target.read() == in_place.read());
    CHECK(target_counts.read() == in_place_counts.read());
    CHECK(source.read() == entries);
    CHECK(source_counts.read() == counts);
    // The destination must have the source's shape, and other memory.
    coalesce::neighbor_list<std::uint32_t, S> const no_counts{target.data(), n, max, order};
    CHECK_THROWS_WITH_AS(coalesce::remap(from, no_counts, plan),
                         doctest::Contains("the source's order, max_neighbors and counts"), coalesce::error);
    CHECK_THROWS_WITH_AS(coalesce::remap(from, from, plan), doctest::Contains("shares memory"), coalesce::error);
  }
  space_array<std::uint32_t, S> in_place(csr), in_place_offsets(offsets), source(csr), source_offsets(offsets);
  space_array<std::uint32_t, S> target(std::vector<std::uint32_t>(csr.size(), 7)),
      target_offsets(std::vector<std::uint32_t>(n + 1, 7));
  coalesce::remap(coalesce::csr_neighbor_list<std::uint32_t, S>{in_place.data(), in_place_offsets.data(), n}, plan);
  coalesce::remap(coalesce::csr_neighbor_list<std::uint32_t, S>{source.data(), source_offsets.data(), n},
                  coalesce::csr_neighbor_list<std::uint32_t, S>{target.data(), target_offsets.data(), n}, plan);
  CHECK(target.read() == in_place.read());
  CHECK(target_offsets.read() == in_place_offsets.read());
  CHECK(source.read() == csr);
  CHECK(source_offsets.read() == offsets);
}

TEST_CASE_TEMPLATE("deferred checks report at plan.check(); checks off report nothing and never read out of range", S,
                   coalesce::host, coalesce::device) {
  std::mt19937 rng(8);
  std::size_t const n = 100, max = 3;
  auto const records = some_particles(n, rng);
  coalesce::vector<Particle, coalesce::aos, S> v{std::span<Particle const>(records)};
  coalesce::reorder_plan plan(coalesce::stream{}, coalesce::check_policy::deferred);
  CHECK(plan.checks() == coalesce::check_policy::deferred);
  coalesce::sort_by_key(v, coalesce::morton_keys(v, &Particle::pos, box10, plan), plan);
  plan.check();  // nothing bad so far

  auto entries = random_indices(n * max, n, rng);
  entries[40 * max + 2] = 5000;  // row-major slot 122
  space_array<std::uint32_t, S> list(entries);
  coalesce::neighbor_list<std::uint32_t, S> const nbr{list.data(), n, max, coalesce::neighbor_order::row_major};
  coalesce::remap(nbr, plan);  // does not wait, does not throw
  auto const remapped = list.read();
  std::size_t const new_row = plan.inverse_on_host()[40];
  CHECK(remapped[new_row * max + 2] == 5000);  // copied as it was, not read through
  CHECK_THROWS_WITH_AS(plan.check(), doctest::Contains("slot 122"), coalesce::error);
  plan.check();  // reported once

  plan.set_checks(coalesce::check_policy::off);
  entries = random_indices(n * max, n, rng);
  entries[7] = 0xffffffffu;
  space_array<std::uint32_t, S> unchecked(entries);
  coalesce::remap(
      coalesce::neighbor_list<std::uint32_t, S>{unchecked.data(), n, max, coalesce::neighbor_order::row_major}, plan);
  plan.check();
  auto const after = unchecked.read();
  CHECK(std::count(after.begin(), after.end(), 0xffffffffu) == 1);
  auto const inverse = plan.inverse_on_host();
  std::size_t renumbered = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t const old = plan.permutation_on_host()[i];
    for (std::size_t k = 0; k < max; ++k) {
      std::uint32_t const e = entries[old * max + k];
      if (e != 0xffffffffu) renumbered += after[i * max + k] == inverse[e];
    }
  }
  CHECK(renumbered == n * max - 1);

  // Index spans: deferred records, the next check reports.
  plan.set_checks(coalesce::check_policy::deferred);
  space_array<std::uint32_t, S> bonds(std::vector<std::uint32_t>{1, 2, 300, 4});
  coalesce::remap(bonds.span(), plan);
  CHECK_THROWS_WITH_AS(plan.check(), doctest::Contains("slot 2"), coalesce::error);
}

TEST_CASE_TEMPLATE("a steady-state loop over eight arrays of eight sizes allocates nothing after its first step", S,
                   coalesce::host, coalesce::device) {
  std::mt19937 rng(21);
  std::size_t const n = 999;
  auto const records = some_particles(n, rng);
  coalesce::vector<Particle, coalesce::soa, S> particles{std::span<Particle const>(records)};
  coalesce::vector<Particle, coalesce::aos, S> copies{std::span<Particle const>(records)};
  coalesce::vector<Particle, coalesce::aosoa<8>, S> blocks{std::span<Particle const>(records)};
  space_array<float, S> charge(std::vector<float>(n, 1.0f));
  space_array<double, S> energy(std::vector<double>(n, 2.0));
  space_array<std::uint16_t, S> species(std::vector<std::uint16_t>(n, 3));
  auto const list_entries = random_indices(n * 6, n, rng);
  space_array<std::uint32_t, S> list(list_entries), counts(std::vector<std::uint32_t>(n, 4));
  space_array<std::uint32_t, S> bonds(random_indices(2 * 301, n, rng));
  coalesce::neighbor_list<std::uint32_t, S> const nbr{list.data(), n, 6, coalesce::neighbor_order::column_major,
                                                      counts.data()};
  coalesce::reorder_plan plan;
  std::size_t allocations = 0;
  for (int step = 0; step < 5; ++step) {
    auto const keys = coalesce::hilbert_keys(particles, &Particle::pos, box10, plan);
    coalesce::sort_by_key(particles, keys, plan);
    coalesce::apply(plan, copies, blocks, charge.span(), energy.span(), species.span());
    coalesce::remap(nbr, plan);
    coalesce::remap(bonds.span(), plan);
    if (step == 0) allocations = plan.allocations();
    INFO("step " << step);
    CHECK(plan.allocations() == allocations);
  }
  // Nothing was lost on the way: every vector holds the particles of the same ids.
  std::vector<Particle> a(n), b(n), c(n);
  particles.copy_to(a);
  copies.copy_to(b);
  blocks.copy_to(c);
  bool same = true;
  for (std::size_t i = 0; i < n; ++i) same = same && a[i].id == b[i].id && a[i].id == c[i].id;
  CHECK(same);
  plan.release();
  CHECK(plan.bytes_held() == 0);
}

TEST_CASE("a plan keeps its stream and policy through release(); loops and copies take a stream") {
  coalesce::stream const s{};
  coalesce::reorder_plan plan(s, coalesce::check_policy::off);
  plan.release();
  CHECK(plan.stream() == s);
  CHECK(plan.checks() == coalesce::check_policy::off);
  plan.set_stream(coalesce::stream{});
  plan.set_checks(coalesce::check_policy::before_writing);
  CHECK(plan.checks() == coalesce::check_policy::before_writing);

  std::mt19937 rng(2);
  auto const records = some_particles(64, rng);
  coalesce::device_vector<Particle> d(std::span<Particle const>(records), s);
  coalesce::device_vector<Particle, coalesce::aos> e(d, s);
  coalesce::host_vector<Particle> h;
  h.assign(e, s);
  std::vector<Particle> back(64);
  h.copy_to(back, s);
  coalesce::synchronize(s);
  bool same = true;
  for (std::size_t i = 0; i < back.size(); ++i) same = same && same_bytes(back[i], records[i]);
  CHECK(same);
}

// Made on a stream (the default one here; a real one in tests/gpu/streams_test.cu): zeroed,
// grown with its contents kept, and reporting the stream its storage is queued on.
TEST_CASE_TEMPLATE("a vector made on a stream is zeroed, grows and keeps its elements", S, coalesce::host,
                   coalesce::device) {
  coalesce::stream const s{};
  coalesce::vector<Particle, coalesce::aosoa<8>, S> v(13, s);
  CHECK(v.size() == 13);
  CHECK(v.allocation_stream() == s);
  std::mt19937 rng(5);
  auto const records = some_particles(13, rng);
  coalesce::vector<Particle, coalesce::aosoa<8>, S> filled{std::span<Particle const>(records), s};
  filled.resize(30, records[3]);
  coalesce::synchronize(filled.allocation_stream());
  coalesce::host_vector<Particle> zeros = v, grown = filled;
  bool same = grown.size() == 30;
  for (std::size_t i = 0; i < 30 && same; ++i) same = same_bytes(Particle(grown[i]), records[i < 13 ? i : 3]);
  CHECK(same);
  bool zero = true;
  for (std::size_t i = 0; i < 13; ++i) zero = zero && same_bytes(Particle(zeros[i]), Particle{});
  CHECK(zero);
}

// The _async forms (coalesce/reorder/async.hpp) on a plan that checks before writing: the same results
// as the waiting calls, the plan's policy unchanged afterwards, and bad input reported by the
// next check() instead of a throw from the call.
TEST_CASE_TEMPLATE("_async forms give what the waiting calls give and report bad input at plan.check()", S,
                   coalesce::host, coalesce::device) {
  std::mt19937 rng(12);
  std::size_t const n = 301, max = 4;
  auto const records = some_particles(n, rng);
  auto const entries = random_indices(n * max, n, rng);
  coalesce::vector<Particle, coalesce::aosoa<8>, S> waited{std::span<Particle const>(records)}, queued = waited;
  space_array<std::uint32_t, S> waited_list(entries), queued_list(entries);
  std::vector<float> extras(n);
  std::iota(extras.begin(), extras.end(), 0.5f);
  space_array<float, S> waited_extra(extras), queued_extra(extras);
  coalesce::reorder_plan waiting, not_waiting;

  coalesce::sort_by_key(waited, coalesce::hilbert_keys(waited, &Particle::pos, box10, waiting), waiting);
  coalesce::remap(
      coalesce::neighbor_list<std::uint32_t, S>{waited_list.data(), n, max, coalesce::neighbor_order::column_major},
      waiting);
  coalesce::apply(waiting, waited_extra.span());
  coalesce::sort_by_key_async(queued, coalesce::hilbert_keys_async(queued, &Particle::pos, box10, not_waiting),
                              not_waiting);
  coalesce::remap_async(
      coalesce::neighbor_list<std::uint32_t, S>{queued_list.data(), n, max, coalesce::neighbor_order::column_major},
      not_waiting);
  coalesce::apply_async(not_waiting, queued_extra.span());
  coalesce::apply_inverse_async(not_waiting, queued_extra.span());
  coalesce::apply_async(not_waiting, queued_extra.span());
  not_waiting.check();
  CHECK(not_waiting.checks() == coalesce::check_policy::before_writing);
  CHECK(not_waiting.permutation_on_host() == waiting.permutation_on_host());
  CHECK(queued_list.read() == waited_list.read());
  coalesce::host_vector<Particle> a = waited, b = queued;
  bool same = a.size() == b.size();
  for (std::size_t i = 0; i < a.size() && same; ++i) same = same_bytes(Particle(a[i]), Particle(b[i]));
  CHECK(same);
  CHECK(queued_extra.read() == waited_extra.read());

  space_array<std::uint32_t, S> bonds(std::vector<std::uint32_t>{1, 2, 3, 900, 4});
  CHECK_NOTHROW(coalesce::remap_async(bonds.span(), not_waiting));
  CHECK_THROWS_WITH_AS(not_waiting.check(), doctest::Contains("slot 3"), coalesce::error);
  CHECK_THROWS_WITH_AS(coalesce::remap(bonds.span(), not_waiting), doctest::Contains("entry 3 is 900"),
                       coalesce::error);
}

// An _async call's findings on a plan that checks before writing are reported once: by the next
// call that waits (before it does anything) or by check(), never lost and never blamed on a
// later call's good input.
TEST_CASE_TEMPLATE("what an _async call found is reported by the next waiting call, once", S, coalesce::host,
                   coalesce::device) {
  std::mt19937 rng(14);
  std::size_t const n = 50;
  auto const records = some_particles(n, rng);
  coalesce::vector<Particle, coalesce::soa, S> v{std::span<Particle const>(records)};
  coalesce::reorder_plan plan;
  coalesce::sort_by_key(v, coalesce::morton_keys(v, &Particle::pos, box10, plan), plan);
  space_array<std::uint32_t, S> bad(std::vector<std::uint32_t>{1, 2, 700, 4}),
      good(std::vector<std::uint32_t>{1, 2, 3, 4});

  coalesce::remap_async(bad.span(), plan);
  CHECK_THROWS_WITH_AS(coalesce::remap(good.span(), plan), doctest::Contains("slot 2"), coalesce::error);
  CHECK(good.read() == std::vector<std::uint32_t>{1, 2, 3, 4});  // the waiting call stopped before writing
  CHECK_NOTHROW(plan.check());                                   // reported once

  coalesce::remap_async(good.span(), plan);
  CHECK_THROWS_WITH_AS(coalesce::remap(bad.span(), plan), doctest::Contains("entry 2 is 700"), coalesce::error);
  CHECK_NOTHROW(plan.check());  // the good _async call found nothing to blame
}

// The one stream rule (coalesce/memory/stream.hpp): every call that runs work takes the stream
// last, and the default stream can be named. Named here in every such call, each must give what
// the call without a stream gives, and the vectors' allocation stream stays the default one.
TEST_CASE_TEMPLATE("every call that runs work takes the default stream by name, last, as when it is left out", S,
                   coalesce::host, coalesce::device) {
  auto const named = coalesce::default_stream;
  CHECK(named == coalesce::stream{});
  std::mt19937 rng(21);
  std::size_t const n = 77;
  auto const records = some_particles(n, rng);

  coalesce::vector<Particle, coalesce::aosoa<8>, S> zeros(n, named), filled(n, records[5], named);
  coalesce::vector<Particle, coalesce::soa, S> from_records{std::span<Particle const>(records), named};
  coalesce::vector<Particle, coalesce::aos, S> converted(from_records, named), assigned;
  assigned.assign(converted, named);
  assigned.reserve(2 * n, named);
  assigned.resize(n + 3, records[7], named);
  assigned.resize(n + 5, named);
  assigned.shrink_to_fit(named);
  filled.resize(n + 1, named);
  CHECK(zeros.allocation_stream() == named);
  CHECK(assigned.allocation_stream() == named);
  CHECK(assigned.capacity() == n + 5);

  std::vector<Particle> out(n + 5);
  assigned.copy_to(out, named);
  bool same = true;
  for (std::size_t i = 0; i < n; ++i) same = same && same_bytes(out[i], records[i]);
  same = same && same_bytes(out[n], records[7]) && same_bytes(out[n + 2], records[7]) &&
         same_bytes(out[n + 3], Particle{}) && same_bytes(out[n + 4], Particle{});
  CHECK(same);
  std::vector<Particle> fill_out(n + 1);
  filled.copy_to(fill_out, named);
  bool fills = true;
  for (std::size_t i = 0; i < n; ++i) fills = fills && same_bytes(fill_out[i], records[5]);
  CHECK(fills);
  CHECK(same_bytes(fill_out[n], Particle{}));

  coalesce::reorder_plan by_name(named), left_out;
  CHECK(by_name.stream() == left_out.stream());
  coalesce::vector<Particle, coalesce::soa, S> a{std::span<Particle const>(records)}, b = a;
  coalesce::sort_by_key(a, coalesce::hilbert_keys(a, &Particle::pos, box10, by_name), by_name);
  coalesce::sort_by_key(b, coalesce::hilbert_keys(b, &Particle::pos, box10, left_out), left_out);
  CHECK(by_name.permutation_on_host() == left_out.permutation_on_host());

  std::vector<std::uint32_t> visited(n, 0);
  coalesce::for_each_index(
      coalesce::host{}, n, [&](std::size_t i) { visited[i] += 1; }, named);
  CHECK(std::count(visited.begin(), visited.end(), 1u) == static_cast<std::ptrdiff_t>(n));
  coalesce::synchronize(named);
}

// _async forms defer one call's checks without touching the plan's policy (checks() reads the
// same before, after, and when the call throws on a mistake of its arguments).
TEST_CASE("an _async call leaves the plan's policy as it was, also when it throws") {
  coalesce::reorder_plan plan;
  std::vector<Particle> records(3);
  coalesce::host_vector<Particle> v{std::span<Particle const>(records)};
  std::vector<std::uint32_t> const two_keys{1, 0};  // one key short
  CHECK_THROWS_AS(coalesce::sort_by_key_async(v, std::span<std::uint32_t const>(two_keys), plan), coalesce::error);
  CHECK(plan.checks() == coalesce::check_policy::before_writing);
  plan.set_checks(coalesce::check_policy::off);
  auto const keys = coalesce::morton_keys_async(v, &Particle::pos, box10, plan);
  CHECK(keys.size == 3);
  CHECK(plan.checks() == coalesce::check_policy::off);
}
