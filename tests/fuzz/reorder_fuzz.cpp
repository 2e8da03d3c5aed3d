// libFuzzer target for the reorder: random keys (few distinct values, random bit ranges, 32 or
// 64 bits), random layouts, random flat index arrays and neighbour lists (row-major,
// column-major, CSR) with occasional bad entries. Invariants: a sort is a stable permutation
// of the records; bad input throws coalesce::error and changes nothing; remap of a valid array
// keeps it valid and pointing at the same records.
//
//   build (see tests/fuzz/CMakeLists.txt, -DCOALESCE_BUILD_FUZZERS=ON with clang), then
//   ./coalesce_reorder_fuzz -max_total_time=60 -max_len=4096
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <vector>

#include <coalesce/coalesce.hpp>

namespace reorder_fuzz {

struct vec3 {
  float x, y, z;
};
struct atom {
  vec3 pos;
  std::uint8_t kind;
  double charge;
  std::uint32_t id;
};

// Reads the fuzzer's bytes as a stream of numbers; zeros once exhausted.
struct input {
  std::uint8_t const* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint64_t take(unsigned bytes) {
    std::uint64_t v = 0;
    for (unsigned b = 0; b < bytes; ++b) v |= std::uint64_t{at < size ? data[at++] : std::uint8_t{0}} << (8 * b);
    return v;
  }
};

void require(bool ok) {
  if (!ok) std::abort();  // an invariant broke: libFuzzer saves the input
}

template <class T, class V> std::vector<T> records_of(V const& v) {
  std::vector<T> out(v.size());
  v.copy_to(out);
  return out;
}

bool same(atom const& a, atom const& b) {
  return std::memcmp(&a.pos, &b.pos, sizeof a.pos) == 0 && a.kind == b.kind && a.charge == b.charge && a.id == b.id;
}

template <class Key, class Vec>
void sort_case(input& in, Vec& v, std::vector<atom>& model, coalesce::reorder_plan& plan) {
  std::size_t const n = model.size();
  int const bits = 8 * sizeof(Key);
  int const begin_bit = static_cast<int>(in.take(1) % 4);
  int const end_bit = std::max(begin_bit, bits - static_cast<int>(in.take(1) % bits));
  std::uint64_t const distinct = 1 + in.take(1) % 7;  // many duplicates
  std::vector<Key> keys(n);
  for (auto& k : keys)
    k = static_cast<Key>((in.take(1) % distinct) * (std::uint64_t{1} << begin_bit) * 3 + in.take(1) % 2);
  bool const bad_key = n > 0 && end_bit < bits && in.take(1) % 5 == 0;
  std::size_t const bad_at = n > 0 ? in.take(2) % n : 0;
  if (bad_key) keys[bad_at] = static_cast<Key>(Key{1} << end_bit);
  // Keys that legitimately exceed end_bit are rejected too: compute what must happen.
  bool expect_throw = false;
  if (end_bit < bits) {
    for (auto const k : keys) expect_throw = expect_throw || (static_cast<std::uint64_t>(k) >> end_bit) != 0;
  }
  coalesce::key_array<Key, typename Vec::space_type> array{keys.data(), n, begin_bit, end_bit};
  std::size_t const plan_size = plan.size();
  try {
    coalesce::sort_by_key(v, array, plan);
    require(!expect_throw);
  } catch (coalesce::error const&) {
    require(expect_throw);
    require(plan.size() == plan_size);
    auto const now = records_of<atom>(v);
    for (std::size_t i = 0; i < n; ++i) require(same(now[i], model[i]));
    return;
  }
  // Stable order on the significant bits.
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return (keys[a] >> begin_bit) < (keys[b] >> begin_bit); });
  auto const got = records_of<atom>(v);
  auto const perm = plan.permutation();
  auto const inv = plan.inverse();
  require(got.size() == n && perm.size() == n && inv.size() == n);
  std::vector<atom> next(n);
  for (std::size_t i = 0; i < n; ++i) {
    require(perm[i] == order[i]);
    require(inv[perm[i]] == i);
    require(same(got[i], model[order[i]]));
    next[i] = model[order[i]];
  }
  model = next;
}

template <class Index> void remap_case(input& in, std::vector<atom> const& model, coalesce::reorder_plan& plan,
                                       std::vector<std::uint32_t> const& ids_before) {
  std::size_t const n = model.size();
  std::size_t const count = in.take(1) % 40;
  std::vector<Index> flat(count);
  for (auto& x : flat)
    x = static_cast<Index>(in.take(1) % (n + 2)) - (std::is_signed_v<Index> && in.take(1) % 9 == 0 ? 5 : 0);
  bool valid = true;
  for (auto const x : flat) valid = valid && static_cast<std::int64_t>(x) >= 0 && static_cast<std::size_t>(x) < n;
  auto const original = flat;
  try {
    coalesce::remap(flat, plan);
    require(valid);
  } catch (coalesce::error const&) {
    require(!valid);
    require(flat == original);
    return;
  }
  // Entry pointed at the record with id ids_before[x]; it must still (model is after the sort).
  for (std::size_t k = 0; k < count; ++k) {
    require(static_cast<std::size_t>(flat[k]) < n);
    require(model[flat[k]].id == ids_before[original[k]]);
  }
}

void neighbor_case(input& in, std::vector<atom> const& model, coalesce::reorder_plan& plan,
                   std::vector<std::uint32_t> const& ids_before) {
  std::size_t const n = model.size();
  std::size_t const max = 1 + in.take(1) % 5;
  int const format = static_cast<int>(in.take(1) % 3);
  std::vector<std::uint32_t> counts(n), offsets(n + 1, 0), fixed(n * max, 7), csr;
  bool valid = true;
  for (std::size_t i = 0; i < n; ++i) {
    counts[i] = static_cast<std::uint32_t>(in.take(1) % (max + (in.take(1) % 17 == 0 ? 2 : 1)));
    valid = valid && counts[i] <= max;
    for (std::size_t k = 0; k < std::min<std::size_t>(counts[i], max); ++k) {
      auto const j = static_cast<std::uint32_t>(in.take(1) % (n + (in.take(1) % 23 == 0 ? 3 : 0)));
      valid = valid && j < n;
      (format == 0 ? fixed[i * max + k] : fixed[k * n + i]) = j;
      csr.push_back(j);
    }
    offsets[i + 1] = static_cast<std::uint32_t>(csr.size());
  }
  if (format == 2) valid = true;  // counts above max do not exist in CSR; recheck entries only
  if (format == 2) {
    for (auto const j : csr) valid = valid && j < n;
  }
  // The per-particle neighbour id sets before, by particle id.
  std::vector<std::multiset<std::uint32_t>> want(n);
  auto const collect = [&](std::vector<std::uint32_t> const& idx, std::vector<std::uint32_t> const& cnt,
                           std::vector<std::uint32_t> const& off, std::vector<std::uint32_t> const& id_of) {
    std::vector<std::multiset<std::uint32_t>> sets(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (format == 2) {
        for (std::uint32_t e = off[i]; e < off[i + 1]; ++e) sets[id_of[i]].insert(id_of[idx[e]]);
      } else {
        for (std::size_t k = 0; k < cnt[i]; ++k)
          sets[id_of[i]].insert(id_of[idx[format == 0 ? i * max + k : k * n + i]]);
      }
    }
    return sets;
  };
  auto const fixed0 = fixed, counts0 = counts, csr0 = csr, offsets0 = offsets;
  try {
    if (format == 2) {
      coalesce::remap(coalesce::csr_neighbor_list<std::uint32_t, coalesce::host>{csr.data(), offsets.data(), n}, plan);
    } else {
      coalesce::remap(
          coalesce::neighbor_list<std::uint32_t, coalesce::host>{
              fixed.data(), n, max,
              format == 0 ? coalesce::neighbor_order::row_major : coalesce::neighbor_order::column_major,
              counts.data()},
          plan);
    }
    require(valid);
  } catch (coalesce::error const& e) {
    if (valid) std::fprintf(stderr, "unexpected: %s\n", e.what());
    require(!valid);
    require(fixed == fixed0 && counts == counts0 && csr == csr0 && offsets == offsets0);
    return;
  }
  std::vector<std::uint32_t> id_now(n);
  for (std::size_t i = 0; i < n; ++i) id_now[i] = model[i].id;
  if (format == 2) {
    require(collect(csr0, counts0, offsets0, ids_before) == collect(csr, counts, offsets, id_now));
  } else {
    require(collect(fixed0, counts0, offsets0, ids_before) == collect(fixed, counts, offsets, id_now));
  }
}

template <class Layout, class Space> void run(input& in) {
  std::size_t const n = in.take(2) % 300;
  std::vector<atom> model(n);
  for (std::size_t i = 0; i < n; ++i) {
    model[i] = {{float(in.take(1)), float(i), -1.0f},
                static_cast<std::uint8_t>(in.take(1)),
                0.5 * double(i),
                static_cast<std::uint32_t>(i)};
  }
  coalesce::vector<atom, Layout, Space> v{std::span<atom const>(model)};
  coalesce::reorder_plan plan;
  for (int round = 0; round < 3 && in.at < in.size; ++round) {
    std::vector<std::uint32_t> ids_before(n);
    for (std::size_t i = 0; i < n; ++i) ids_before[i] = model[i].id;
    std::size_t const sorted_before = plan.size();
    if (in.take(1) % 2) {
      sort_case<std::uint32_t>(in, v, model, plan);
    } else {
      sort_case<std::uint64_t>(in, v, model, plan);
    }
    if (plan.size() == 0 && sorted_before == 0 && n > 0) continue;  // nothing sorted yet
    // ids_before holds the ids at the time of the last successful sort's input only when it
    // succeeded this round; recompute them from the permutation to stay exact.
    std::vector<std::uint32_t> ids_at_sort(n);
    auto const perm = plan.permutation();
    if (perm.size() != n) continue;
    for (std::size_t i = 0; i < n; ++i) ids_at_sort[perm[i]] = model[i].id;
    if (in.take(1) % 2) {
      remap_case<std::uint32_t>(in, model, plan, ids_at_sort);
    } else {
      remap_case<std::int32_t>(in, model, plan, ids_at_sort);
    }
    neighbor_case(in, model, plan, ids_at_sort);
  }
}

}  // namespace reorder_fuzz

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using namespace reorder_fuzz;
  input in{data, size};
  switch (in.take(1) % 4) {
    case 0:
      run<coalesce::aos, coalesce::host>(in);
      break;
    case 1:
      run<coalesce::soa, coalesce::device>(in);
      break;
    case 2:
      run<coalesce::aosoa<8>, coalesce::host>(in);
      break;
    default:
      run<coalesce::aosoa<8>, coalesce::device>(in);
      break;
  }
  return 0;
}
