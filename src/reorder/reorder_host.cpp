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
#include <mutex>
#include <new>

#include <thrust/sort.h>
#include <thrust/system/cpp/execution_policy.h>
#ifdef _OPENMP
#include <thrust/system/omp/execution_policy.h>
#endif

#include "../memory/column_chunks.hpp"
#include "reorder_host_loops.hpp"
#include "reorder_state.hpp"

namespace coalesce::detail {
namespace {

// Thrust's temporary storage comes from blocks the plan keeps, so a steady-state sort
// allocates nothing (Thrust would otherwise malloc and free its buffers on every call).
// Thrust's OpenMP stable sort asks for scratch from inside its parallel region, one request per
// thread at once: the blocks are handed out under a lock (without it, 7 threads on 2 cores
// corrupted the block list: crashes, and sorts that lost or repeated elements).
struct block_allocator {
  using value_type = char;
  reorder_state* s;
  std::mutex* lock;

  char* allocate(std::ptrdiff_t bytes) {
    std::lock_guard<std::mutex> const hold(*lock);
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
    std::lock_guard<std::mutex> const hold(*lock);
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
  std::mutex lock;
  block_allocator alloc{&s, &lock};
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

template <std::size_t W>
void gather_range(column_copy const& c, std::uint32_t const* perm, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) std::memcpy(c.dst.address(i), c.src.address(perm[i]), W);
}

}  // namespace

void host_backend::reset_flags(std::uint64_t* flags) {
  for (unsigned w = 0; w < check_words; ++w) flags[w] = ~std::uint64_t{0};
}

void host_backend::sort_pairs(reorder_state& s, std::size_t n, int begin_bit, int /*end_bit*/) {
  if (n < 2) return;
  if (s.key_bytes == 4) {
    sort_typed<std::uint32_t>(parallel_, s, n, begin_bit);
  } else {
    sort_typed<std::uint64_t>(parallel_, s, n, begin_bit);
  }
}

void host_backend::find_key_above(void const* keys, unsigned key_bytes, std::size_t n, int end_bit,
                                  std::uint64_t* flags) {
  std::size_t bad = none;
  if (key_bytes == 4) {
    auto const* k = static_cast<std::uint32_t const*>(keys);
    bad = first_where(parallel_, n, [&](std::size_t i) { return (std::uint64_t{k[i]} >> end_bit) != 0; });
  } else {
    auto const* k = static_cast<std::uint64_t const*>(keys);
    bad = first_where(parallel_, n, [&](std::size_t i) { return end_bit < 64 && (k[i] >> end_bit) != 0; });
  }
  record_first(flags, bad_entry, bad);
}

void host_backend::gather_columns(column_copy const* columns, std::size_t count, std::size_t n,
                                  std::uint32_t const* perm) {
  if (n == 0 || count == 0) return;
  auto const parts = chunked(columns, count);
  constexpr std::size_t block = 4096;
  // Blocks of elements, all columns of a block before the next: perm[i] stays in cache.
  for_each(parallel_, (n + block - 1) / block, [&](std::size_t b) {
    std::size_t const begin = b * block, end = std::min(n, begin + block);
    for (auto const& c : parts) {
      with_chunk_width(c.width, [&](auto w) { gather_range<decltype(w)::value>(c, perm, begin, end); });
    }
  });
}

void host_backend::iota(std::uint32_t* v, std::size_t n) {
  for_each(parallel_, n, [=](std::size_t i) { v[i] = static_cast<std::uint32_t>(i); });
}

void host_backend::invert(std::uint32_t const* perm, std::uint32_t* inverse, std::size_t n) {
  for_each(parallel_, n, [=](std::size_t i) { inverse[perm[i]] = static_cast<std::uint32_t>(i); });
}

void host_backend::find_at_least(std::uint32_t const* v, std::size_t n, std::uint64_t bound, std::uint64_t* flags) {
  record_first(flags, bad_entry, first_where(parallel_, n, [=](std::size_t i) { return v[i] >= bound; }));
}

void host_backend::map_indices(std::uint32_t* v, std::size_t n, std::uint32_t const* inverse, std::uint64_t bound,
                               std::uint64_t* flags) {
  std::size_t const bad = first_where(parallel_, n, [=](std::size_t i) {
    if (v[i] >= bound) return true;
    v[i] = inverse[v[i]];
    return false;
  });
  record_first(flags, bad_entry, bad);
}

void host_backend::remap_fixed(neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                               std::uint64_t bound, std::uint32_t* out, std::uint32_t* out_counts,
                               std::uint64_t* flags) {
  std::size_t const max = list.max_neighbors, rows = list.particles;
  bool const row_major = list.format == list_format::row_major;
  std::size_t bad_row = none, bad_slot = none;
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(rows);
  bool const parallel = parallel_;
  COALESCE_OMP("omp parallel for reduction(min : bad_row, bad_slot) schedule(static) if (parallel)")
  for (std::ptrdiff_t r = 0; r < count; ++r) {
    auto const i = static_cast<std::size_t>(r);
    std::size_t const old = perm[i];
    std::size_t used = list.counts ? list.counts[old] : max;
    if (used > max) {
      bad_row = std::min(bad_row, old);
      used = max;
    }
    if (out_counts) out_counts[i] = list.counts[old];
    for (std::size_t k = 0; k < max; ++k) {
      std::size_t const slot = row_major ? old * max + k : k * rows + old;
      std::uint32_t const entry = list.indices[slot];
      bool const renumber = k < used && entry < bound;
      if (k < used && entry >= bound) bad_slot = std::min(bad_slot, slot);
      out[row_major ? i * max + k : k * rows + i] = renumber ? inverse[entry] : entry;
    }
  }
  (void)parallel;
  record_first(flags, bad_count, bad_row);
  record_first(flags, bad_entry, bad_slot);
}

void host_backend::check_csr_offsets(std::uint32_t const* offsets, std::size_t particles, std::uint64_t* flags) {
  std::size_t bad = offsets[0] != 0
                        ? 0
                        : first_where(parallel_, particles, [=](std::size_t i) { return offsets[i + 1] < offsets[i]; });
  if (bad != none && offsets[0] == 0) bad += 1;  // the offset that drops
  record_first(flags, bad_offset, bad);
  if (flags != nullptr) flags[list_entries] = offsets[particles];
}

void host_backend::csr_permuted_offsets(std::uint32_t const* offsets, std::uint32_t const* perm, std::size_t particles,
                                        std::uint32_t* new_offsets, reorder_state&) {
  for_each(parallel_, particles, [=](std::size_t i) { new_offsets[i] = offsets[perm[i] + 1] - offsets[perm[i]]; });
  // The scan is sequential: it is a small part of the work next to the rows themselves.
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i < particles; ++i) {
    std::uint32_t const length = new_offsets[i];
    new_offsets[i] = sum;
    sum += length;
  }
  new_offsets[particles] = sum;
}

void host_backend::remap_csr(neighbor_desc const& list, std::uint32_t const* perm, std::uint32_t const* inverse,
                             std::uint64_t bound, std::uint32_t const* new_offsets, std::uint32_t* out,
                             std::uint64_t* flags) {
  std::size_t bad = none;
  std::ptrdiff_t const rows = static_cast<std::ptrdiff_t>(list.particles);
  bool const parallel = parallel_;
  COALESCE_OMP("omp parallel for reduction(min : bad) schedule(static) if (parallel)")
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    auto const i = static_cast<std::size_t>(r);
    std::uint32_t const from = list.offsets[perm[i]];
    std::uint32_t const length = new_offsets[i + 1] - new_offsets[i];
    for (std::uint32_t k = 0; k < length; ++k) {
      std::uint32_t const entry = list.indices[from + k];
      if (entry >= bound) bad = std::min<std::size_t>(bad, from + k);
      out[new_offsets[i] + k] = entry < bound ? inverse[entry] : entry;
    }
  }
  (void)parallel;
  record_first(flags, bad_entry, bad);
}

std::pair<double, std::uint64_t> host_backend::locality_sum(neighbor_desc const& list, reorder_state&) {
  bool const parallel = parallel_;
  double sum = 0;
  std::uint64_t count = 0;
  auto const distance = [](std::size_t i, std::uint32_t j) { return static_cast<double>(i > j ? i - j : j - i); };
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
      std::size_t const used = list.counts ? std::min<std::size_t>(list.counts[i], max) : max;
      for (std::size_t k = 0; k < used; ++k)
        sum += distance(i, list.indices[row_major ? i * max + k : k * list.particles + i]);
      count += used;
    }
  }
  (void)parallel;
  return {sum, count};
}

void host_backend::cell_starts(void const* sorted_keys, unsigned key_bytes, std::size_t n, std::uint64_t cells,
                               std::uint32_t* starts) {
  auto const key = [=](std::size_t i) -> std::uint64_t {
    return key_bytes == 4 ? static_cast<std::uint32_t const*>(sorted_keys)[i]
                          : static_cast<std::uint64_t const*>(sorted_keys)[i];
  };
  // Element i starts every cell in (key[i - 1], key[i]]; one extra index n closes the tail.
  for_each(parallel_, n + 1, [&](std::size_t i) {
    std::uint64_t const first = i == 0 ? 0 : key(i - 1) + 1;
    std::uint64_t const last = i == n ? cells : std::min(key(i), cells);
    for (std::uint64_t c = first; c <= last; ++c) starts[c] = static_cast<std::uint32_t>(i);
  });
}

}  // namespace coalesce::detail
