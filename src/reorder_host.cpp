// Reorder primitives in host memory (and in device memory when libcoalesce is built without
// CUDA, where device kind runs on all cores): Thrust's stable_sort_by_key with the OpenMP
// policy, and plain loops.
#ifdef _OPENMP
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_OMP
#else
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP  // keeps Thrust from including CUDA here
#endif
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include <thrust/sort.h>
#include <thrust/system/cpp/execution_policy.h>
#ifdef _OPENMP
#include <thrust/system/omp/execution_policy.h>
#endif

#include "column_chunks.hpp"
#include "reorder_host_loops.hpp"
#include "reorder_state.hpp"

namespace coalesce::detail {
COALESCE_HOST_IMPL_INLINE namespace host_impl {

namespace {

// Thrust's temporary storage comes from blocks the plan keeps, so a steady-state sort
// allocates nothing (Thrust would otherwise malloc and free its buffers on every call).
struct block_allocator {
  using value_type = char;
  reorder_state* s;

  char* allocate(std::ptrdiff_t bytes) {
    auto const want = static_cast<std::size_t>(bytes);
    for (std::size_t b = 0; b < s->host_blocks.size(); ++b) {
      if (!s->host_block_used[b] && s->host_blocks[b].size() >= want) {
        s->host_block_used[b] = true;
        return reinterpret_cast<char*>(s->host_blocks[b].data());
      }
    }
    s->host_blocks.emplace_back(memory_kind::host, std::max<std::size_t>(want, 1));
    s->host_block_used.push_back(true);
    ++s->allocations;
    return reinterpret_cast<char*>(s->host_blocks.back().data());
  }
  void deallocate(char* p, std::size_t) {
    for (std::size_t b = 0; b < s->host_blocks.size(); ++b) {
      if (reinterpret_cast<char*>(s->host_blocks[b].data()) == p) s->host_block_used[b] = false;
    }
  }
};

template <class Key> struct above_begin_bit {
  int shift;
  bool operator()(Key a, Key b) const { return (a >> shift) < (b >> shift); }
};

template <class Key> void sort_typed(bool parallel, reorder_state& s, std::size_t n, int begin_bit) {
  auto* keys = reinterpret_cast<Key*>(s.keys.data());
  auto* values = reinterpret_cast<std::uint32_t*>(s.perm.data());
  block_allocator alloc{&s};
  // Bits below begin_bit do not take part (as in a radix sort over [begin_bit, end_bit)).
  above_begin_bit<Key> const less{begin_bit};
#ifdef _OPENMP
  if (parallel) {
    thrust::stable_sort_by_key(thrust::omp::par(alloc), keys, keys + n, values, less);
    return;
  }
#else
  (void)parallel;
#endif
  thrust::stable_sort_by_key(thrust::cpp::par(alloc), keys, keys + n, values, less);
}

template <std::size_t W> void gather_range(column_copy const& c, std::uint32_t const* perm, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) std::memcpy(c.dst.address(i), c.src.address(perm[i]), W);
}

}  // namespace

void sort_pairs(memory_kind kind, reorder_state& s, std::size_t n, int begin_bit, int /*end_bit*/) {
  if (n < 2) return;
  bool const parallel = kind == memory_kind::device;
  if (s.key_bytes == 4) {
    sort_typed<std::uint32_t>(parallel, s, n, begin_bit);
  } else {
    sort_typed<std::uint64_t>(parallel, s, n, begin_bit);
  }
}

std::size_t first_key_above(memory_kind kind, void const* keys, unsigned key_bytes, std::size_t n, int end_bit,
                            reorder_state&) {
  bool const parallel = kind == memory_kind::device;
  if (key_bytes == 4) {
    auto const* k = static_cast<std::uint32_t const*>(keys);
    return first_where(parallel, n, [&](std::size_t i) { return (std::uint64_t{k[i]} >> end_bit) != 0; });
  }
  auto const* k = static_cast<std::uint64_t const*>(keys);
  return first_where(parallel, n, [&](std::size_t i) { return end_bit < 64 && (k[i] >> end_bit) != 0; });
}

void gather_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n,
                    std::uint32_t const* perm) {
  if (n == 0 || count == 0) return;
  auto const parts = chunked(columns, count);
  constexpr std::size_t block = 4096;
  // Blocks of elements, all columns of a block before the next: perm[i] stays in cache.
  for_each(kind == memory_kind::device, (n + block - 1) / block, [&](std::size_t b) {
    std::size_t const begin = b * block, end = std::min(n, begin + block);
    for (auto const& c : parts) {
      with_chunk_width(c.width, [&](auto w) { gather_range<decltype(w)::value>(c, perm, begin, end); });
    }
  });
}

void iota(memory_kind kind, std::uint32_t* v, std::size_t n) {
  for_each(kind == memory_kind::device, n, [=](std::size_t i) { v[i] = static_cast<std::uint32_t>(i); });
}

void invert(memory_kind kind, std::uint32_t const* perm, std::uint32_t* inverse, std::size_t n) {
  for_each(kind == memory_kind::device, n, [=](std::size_t i) { inverse[perm[i]] = static_cast<std::uint32_t>(i); });
}

std::size_t first_at_least(memory_kind kind, std::uint32_t const* v, std::size_t n, std::uint64_t bound, reorder_state&) {
  return first_where(kind == memory_kind::device, n, [=](std::size_t i) { return v[i] >= bound; });
}

std::size_t first_bad_entry(memory_kind kind, neighbor_desc const& list, std::uint64_t bound, reorder_state& s) {
  bool const parallel = kind == memory_kind::device;
  if (list.format == list_format::csr) return host_impl::first_at_least(kind, list.indices, list.offsets[list.particles], bound, s);
  std::size_t const max = list.max_neighbors, rows = list.particles;
  return first_where(parallel, rows * max, [&](std::size_t slot) {
    std::size_t const i = list.format == list_format::row_major ? slot / max : slot % rows;
    std::size_t const k = list.format == list_format::row_major ? slot % max : slot / rows;
    std::size_t const used = list.counts ? list.counts[i] : max;
    return k < used && list.indices[slot] >= bound;
  });
}

std::size_t first_offset_drop(memory_kind kind, std::uint32_t const* offsets, std::size_t particles, reorder_state&) {
  return first_where(kind == memory_kind::device, particles, [=](std::size_t i) { return offsets[i + 1] < offsets[i]; });
}

void map_indices(memory_kind kind, std::uint32_t* v, std::size_t n, std::uint32_t const* inverse) {
  for_each(kind == memory_kind::device, n, [=](std::size_t i) { v[i] = inverse[v[i]]; });
}

void remap_fixed(memory_kind kind, neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                 std::uint32_t* out, std::uint32_t* out_counts) {
  std::size_t const max = list.max_neighbors, rows = list.particles;
  bool const row_major = list.format == list_format::row_major;
  for_each(kind == memory_kind::device, rows, [&](std::size_t i) {
    std::size_t const old = perm[i];
    std::size_t const used = list.counts ? list.counts[old] : max;
    if (out_counts) out_counts[i] = list.counts[old];
    for (std::size_t k = 0; k < max; ++k) {
      std::uint32_t const entry = list.indices[row_major ? old * max + k : k * rows + old];
      out[row_major ? i * max + k : k * rows + i] = k < used ? inverse[entry] : entry;
    }
  });
}

void csr_permuted_offsets(memory_kind kind, std::uint32_t const* offsets, std::uint32_t const* perm, std::size_t particles,
                          std::uint32_t* new_offsets, reorder_state&) {
  for_each(kind == memory_kind::device, particles,
           [=](std::size_t i) { new_offsets[i] = offsets[perm[i] + 1] - offsets[perm[i]]; });
  // The scan is sequential: it is a small part of the work next to the rows themselves.
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < particles; ++i) {
    std::uint32_t const length = new_offsets[i];
    new_offsets[i] = sum;
    sum += length;
  }
  new_offsets[particles] = sum;
}

void remap_csr(memory_kind kind, neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
               std::uint32_t const* new_offsets, std::uint32_t* out) {
  for_each(kind == memory_kind::device, list.particles, [&](std::size_t i) {
    std::uint32_t const from = list.offsets[perm[i]];
    std::uint32_t const length = new_offsets[i + 1] - new_offsets[i];
    for (std::uint32_t k = 0; k < length; ++k) out[new_offsets[i] + k] = inverse[list.indices[from + k]];
  });
}

std::pair<double, std::uint64_t> locality_sum(memory_kind kind, neighbor_desc const& list, reorder_state&) {
  bool const parallel = kind == memory_kind::device;
  double sum = 0;
  std::uint64_t count = 0;
  auto const distance = [](std::size_t i, std::uint32_t j) {
    return static_cast<double>(i > j ? i - j : j - i);
  };
  if (list.format == list_format::csr) {
    std::ptrdiff_t const rows = static_cast<std::ptrdiff_t>(list.particles);
    COALESCE_OMP("omp parallel for reduction(+ : sum, count) schedule(static) if (parallel)")
    for (std::ptrdiff_t r = 0; r < rows; ++r) {
      auto const i = static_cast<std::size_t>(r);
      for (std::uint32_t e = list.offsets[i]; e < list.offsets[i + 1]; ++e) sum += distance(i, list.indices[e]);
      count += list.offsets[i + 1] - list.offsets[i];
    }
  } else {
    std::size_t const max = list.max_neighbors;
    bool const row_major = list.format == list_format::row_major;
    std::ptrdiff_t const rows = static_cast<std::ptrdiff_t>(list.particles);
    COALESCE_OMP("omp parallel for reduction(+ : sum, count) schedule(static) if (parallel)")
    for (std::ptrdiff_t r = 0; r < rows; ++r) {
      auto const i = static_cast<std::size_t>(r);
      std::size_t const used = list.counts ? list.counts[i] : max;
      for (std::size_t k = 0; k < used; ++k) sum += distance(i, list.indices[row_major ? i * max + k : k * list.particles + i]);
      count += used;
    }
  }
  (void)parallel;
  return {sum, count};
}

void cell_starts(memory_kind kind, void const* sorted_keys, unsigned key_bytes, std::size_t n, std::uint64_t cells,
                 std::uint32_t* starts) {
  auto const key = [=](std::size_t i) -> std::uint64_t {
    return key_bytes == 4 ? static_cast<std::uint32_t const*>(sorted_keys)[i] : static_cast<std::uint64_t const*>(sorted_keys)[i];
  };
  // Element i starts every cell in (key[i - 1], key[i]]; one extra index n closes the tail.
  for_each(kind == memory_kind::device, n + 1, [&](std::size_t i) {
    std::uint64_t const first = i == 0 ? 0 : key(i - 1) + 1;
    std::uint64_t const last = i == n ? cells : key(i);
    for (std::uint64_t c = first; c <= last; ++c) starts[c] = static_cast<std::uint32_t>(i);
  });
}

}  // namespace host_impl
}  // namespace coalesce::detail
