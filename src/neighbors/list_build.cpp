// The neighbour-list build (coalesce/neighbors/verlet_list.hpp): checks, the cell grid, and the
// steps (bin, fill, grow, fill again only when a row outgrew the width) on host or GPU memory.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include <coalesce/core/error.hpp>

#include "list_backend.hpp"

namespace coalesce::detail {

bool ensure_bytes(list_memory const& m, buffer& b, std::size_t bytes) {
  if (b.size() >= bytes && b.kind() == m.kind) return false;
  // An eighth more than asked: particle counts that wander between rebuilds (ghosts, migration)
  // then reuse the buffers instead of allocating at each new high.
  b = buffer(m.kind, std::max<std::size_t>(bytes + bytes / 8, 1));
  ++m.allocations;
  return true;
}

bool on_gpu_memory(memory_kind kind) { return device_is_gpu && kind == memory_kind::device; }

namespace {
std::atomic<std::size_t> chunk_rows_setting{0};
}  // namespace

std::size_t set_staged_chunk_rows(std::size_t rows) { return chunk_rows_setting.exchange(rows); }

std::size_t staged_chunk_rows(std::size_t rows, std::size_t width) {
  std::size_t chunk = chunk_rows_setting.load();
  if (chunk == 0) {
    // 256 MiB of staging, or 2^18 rows where that is more (a few waves of the fill kernel) as long
    // as they take no more than 1 GiB (a very dense list stages fewer rows).
    std::size_t const slots = std::size_t{64} << 20;
    chunk = std::max(slots / width, std::min<std::size_t>(std::size_t{1} << 18, 4 * slots / width));
  }
  // The staging kernels index a chunk's slots with 32-bit integers (CUB's item count is an int):
  // a chunk set through set_staged_chunk_rows never stages more slots than that.
  std::size_t const most_rows = std::size_t{0x7fffffff} / std::max<std::size_t>(width, 1);
  return std::max<std::size_t>(1, std::min({chunk, rows, most_rows}));
}

void check_geometry(list_geometry const& g) {
  if (!(std::isfinite(g.cutoff) && g.cutoff > 0)) {
    throw_error("neighbor list: the cutoff must be positive and finite, got " + std::to_string(g.cutoff));
  }
  if (!(std::isfinite(g.skin) && g.skin >= 0)) {
    throw_error("neighbor list: the skin must be zero or positive and finite, got " + std::to_string(g.skin));
  }
  for (unsigned a = 0; a < g.dims; ++a) {
    if (!(std::isfinite(g.lo[a]) && std::isfinite(g.hi[a]) && g.hi[a] > g.lo[a])) {
      throw_error("neighbor list: the box needs finite lo < hi on every axis; axis " + std::to_string(a) +
                  " has lo = " + std::to_string(g.lo[a]) + ", hi = " + std::to_string(g.hi[a]));
    }
    double const length = g.hi[a] - g.lo[a];
    if (g.periodic[a] && g.reach() > 0.5 * length) {
      throw_error("neighbor list: cutoff + skin = " + std::to_string(g.reach()) +
                  " is more than half the periodic box's length " + std::to_string(length) + " along axis " +
                  std::to_string(a) +
                  " (a particle would meet two images of one neighbour); use a larger box or a smaller cutoff");
    }
  }
}

[[noreturn]] void report_bad_particle(list_memory const& m, position_columns const& p, list_geometry const& g,
                                      std::size_t i) {
  std::string where = "(";
  std::string why = "is not finite";
  for (unsigned a = 0; a < g.dims; ++a) {
    double const x = read_position_coordinate(m.kind, p, a, i);
    where += (a ? ", " : "") + std::to_string(x);
    if (std::isfinite(x) && !g.periodic[a] && (x < g.lo[a] || x > g.hi[a])) {
      why = "lies outside the open box along axis " + std::to_string(a) + " ([" + std::to_string(g.lo[a]) + ", " +
            std::to_string(g.hi[a]) + "])";
    }
  }
  throw_error("neighbor list: particle " + std::to_string(i) + " at " + where + ") " + why +
              "; nothing was written (migrate or wrap positions into the box first, or make that axis periodic)");
}

namespace {

// A padded list's width: the widest row rounded up to 8 slots, at least 8 and at least what
// reserve_width asked for.
std::size_t padded_width(list_memory const& m, std::size_t widest) {
  return std::max({std::size_t{8}, (widest + 7) / 8 * 8, (m.least_width + 7) / 8 * 8});
}

// Queues a refill (refill_list): the same steps as a build's bin and fill, nothing read back.
template <class Real>
void refill_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g, void* stream) {
#if COALESCE_WITH_CUDA
  using gpu = cuda_list_backend;
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_grid<Real>(g, n, cell_count);
  (void)gpu::bin(m, p, n, g.dims, grid, cell_count, false, stream);
  if (m.particles > 0 && m.format == list_format::csr) {
    (void)gpu::fill_csr(m, m.particles, grid, m.staged_width, true, stream);
  } else if (m.particles > 0) {
    (void)gpu::fill(m, m.particles, grid, false, false, stream);
  }
  gpu::keep_reference(m, p, n, g.dims, false, stream);
  ++m.builds;
#else
  (void)m, (void)p, (void)n, (void)g, (void)stream;
#endif
}

// A csr list: on the host in one pass; in GPU memory staged at the last build's widest row where
// there was one (one pass), else counted, scanned and filled.
template <class Backend, class Real>
void build_csr(list_memory& m, std::size_t rows, cell_grid<Real> const& grid, void* stream) {
  ensure_bytes(m, m.offsets, (rows + 1) * sizeof(std::uint32_t));
  list_pass_result r{};
  if (rows == 0) zero_bytes(m.kind, m.offsets.data(), sizeof(std::uint32_t), stream);
  if constexpr (!Backend::gpu) {
    if (rows > 0) r = Backend::fill_csr(m, rows, grid);
  } else {
    auto const fill = [&](bool count_only) {
      if (rows == 0) return list_pass_result{};  // a rank with ghosts and no particle of its own
      return Backend::fill(m, rows, grid, count_only, true, stream);
    };
    // A rebuild stages rows at the last widest row (and 8 more) and packs them: one pass. Its counts
    // and offsets are exact either way; where a row outgrew the staging or the entries the list's
    // capacity, the rows are filled again at those offsets. A first build counts, scans and fills.
    if (rows > 0 && m.staged_width > 0) {
      r = Backend::fill_csr(m, rows, grid, m.staged_width, false, stream);
      if (r.widest > m.staged_width || r.entries > m.indices.size() / sizeof(std::uint32_t)) {
        ensure_bytes(m, m.indices, r.entries * sizeof(std::uint32_t));
        (void)fill(false);
      }
    } else {
      r = fill(true);
      if (rows > 0) Backend::offsets_from_counts(m, rows, stream);
      ensure_bytes(m, m.indices, r.entries * sizeof(std::uint32_t));
      (void)fill(false);
    }
  }
  // The list is whole here: it says so before the staging below may fail to allocate.
  m.entries = r.entries;
  m.widest = r.widest;
  m.width = 0;
  if constexpr (Backend::gpu) {
    // The next rebuild's staging is allocated now: a steady-state rebuild allocates nothing. The
    // staging width never shrinks while rows stay: a graph's captured refill stages at the width it
    // was captured with, and a later build keeps it valid unless the width grows (reshapes).
    std::size_t const staged =
        rows > 0 ? std::max({(r.widest + 7) / 8 * 8 + 8, (m.least_width + 7) / 8 * 8, m.staged_width}) : 0;
    if (staged != m.staged_width) ++m.reshapes;
    m.staged_width = staged;
    if (rows > 0) Backend::reserve_csr_staging(m, rows, m.staged_width);
  }
}

// A padded list: one pass into the width the list has; a row that did not fit grows every row and
// the pass runs again (never a truncated row).
template <class Backend, class Real>
void build_padded(list_memory& m, std::size_t rows, cell_grid<Real> const& grid, void* stream) {
  auto const fill = [&](bool count_only) {
    if (rows == 0) return list_pass_result{};  // a rank with ghosts and no particle of its own
    return Backend::fill(m, rows, grid, count_only, true, stream);
  };
  list_pass_result r{};
  if (m.width > 0 && m.indices.size() >= rows * m.width * sizeof(std::uint32_t)) {
    r = fill(false);
  } else {
    m.width = 0;
    r = fill(true);
  }
  if (r.widest > m.width || m.width < padded_width(m, 0)) {
    m.width = padded_width(m, r.widest);
    ++m.reshapes;  // a graph's captured refill writes rows at the width it was captured with
    // Slots past a row's count are never read by a traversal, but whole-list copies (remap's
    // description, rows_on_host, a user's cudaMemcpy) must not read bytes nothing wrote.
    if (ensure_bytes(m, m.indices, rows * m.width * sizeof(std::uint32_t)))
      zero_bytes(m.kind, m.indices.data(), m.indices.size(), stream);
    r = fill(false);
  }
  m.entries = r.entries;
  m.widest = r.widest;
}

template <class Backend, class Real> void build_in(list_memory& m, list_format format, position_columns const& p,
                                                   std::size_t n, std::size_t rows, list_geometry const& g,
                                                   void* stream) {
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_grid<Real>(g, n, cell_count);
  std::size_t const bad = Backend::bin(m, p, n, g.dims, grid, cell_count, true, stream);
  if (bad < n) report_bad_particle(m, p, g, bad);
  m.format = format;
  m.particles = rows;  // rows [0, rows); the fills index and stride by the row count
  m.built_over = n;
  ensure_bytes(m, m.counts, (rows + 1) * sizeof(std::uint32_t));
  if (format == list_format::csr) {
    build_csr<Backend>(m, rows, grid, stream);
  } else {
    build_padded<Backend>(m, rows, grid, stream);
  }
  Backend::keep_reference(m, p, n, g.dims, true, stream);
  ++m.builds;
}

}  // namespace

void build_list(list_memory& m, list_format format, position_columns const& position, std::size_t n, std::size_t rows,
                list_geometry const& g, void* stream) {
  if (start_build(m, g, n)) {
    m.format = format;
    return;
  }
  keeping_status_on_error(m, stream, [&] {
    with_list_backend(m.kind, position, [&](auto backend, auto real) {
      build_in<decltype(backend), decltype(real)>(m, format, position, n, rows, g, stream);
    });
  });
}

namespace {
template <class Backend, class Real>
std::uint64_t cell_keys_in(list_memory& m, position_columns const& p, std::size_t n, list_geometry const& g,
                           std::uint32_t* keys, std::array<std::uint32_t, 3>& grid_cells, void* stream) {
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_grid<Real>(g, n, cell_count);
  std::size_t const bad = Backend::cell_keys(m, p, n, g.dims, grid, keys, stream);
  if (bad < n) report_bad_particle(m, p, g, bad);
  for (unsigned a = 0; a < 3; ++a) grid_cells[a] = static_cast<std::uint32_t>(grid.cells[a]);
  return cell_count;
}
}  // namespace

std::uint64_t list_cell_keys(list_memory& m, position_columns const& position, std::size_t n, list_geometry const& g,
                             std::uint32_t* keys, std::array<std::uint32_t, 3>& grid, void* stream) {
  check_geometry(g);
  if (n >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list: " + std::to_string(n) + " particles do not fit 32-bit indices");
  }
  grid = {1, 1, 1};
  if (n == 0) return 1;
  return with_list_backend(m.kind, position, [&](auto backend, auto real) {
    return cell_keys_in<decltype(backend), decltype(real)>(m, position, n, g, keys, grid, stream);
  });
}

namespace {
// Each axis's length and periodicity, as the displacement passes take them (unused axes open).
struct displacement_axes {
  double length[3];
  bool periodic[3];
};
displacement_axes displacement_axes_of(list_geometry const& g) {
  displacement_axes out{};
  for (unsigned a = 0; a < 3; ++a) {
    out.length[a] = g.hi[a] - g.lo[a];
    out.periodic[a] = a < g.dims && g.periodic[a];
  }
  return out;
}
}  // namespace

void refill_list(list_memory& m, position_columns const& position, std::size_t n, std::size_t rows,
                 list_geometry const& g, void* stream) {
  if (!on_gpu_memory(m.kind) || n == 0) {
    build_list(m, m.format, position, n, rows, g, stream);  // host memory (or nothing to queue): a build
    return;
  }
  if (position.width == 4) {
    refill_in<float>(m, position, n, g, stream);
  } else {
    refill_in<double>(m, position, n, g, stream);
  }
}

list_status read_list_status(list_memory const& m, void* stream) {
#if COALESCE_WITH_CUDA
  if (on_gpu_memory(m.kind) && m.built_over > 0) return cuda_list_backend::read_status(m, stream);
#else
  (void)stream;
#endif
  return {m.built_over, m.widest, m.entries, m.entries};  // a host build knows its own
}

void set_condition_if_moved(list_memory const& m, position_columns const& position, std::size_t n,
                            list_geometry const& g, double threshold, std::uint64_t condition, void* stream) {
#if COALESCE_WITH_CUDA  // (graphs exist only with CUDA: neighbors/list_graph.hpp)
  displacement_axes const ax = displacement_axes_of(g);
  cuda_list_backend::set_condition_if_moved(m, position, n, g.dims, ax.length, ax.periodic, threshold, condition,
                                            stream);
#else
  (void)m, (void)position, (void)n, (void)g, (void)threshold, (void)condition, (void)stream;
#endif
}

bool start_build(list_memory& m, list_geometry const& g, std::size_t n) {
  check_geometry(g);
  if (n >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list: " + std::to_string(n) + " particles do not fit 32-bit indices");
  }
  if (n > 0) return false;
  // The status words exist even for an empty list: set_condition_if_moved writes them in a graph.
  status_words(m, nullptr);  // (an empty list: once, on the default stream)
  m.particles = 0;           // a rank may own no particle: an empty list, not an error
  m.built_over = 0;
  m.entries = 0;
  m.widest = 0;
  m.runs = 0;
  m.candidates = 0;
  ++m.builds;
  return true;
}

double max_displacement(list_memory const& m, position_columns const& position, std::size_t n, list_geometry const& g,
                        void* stream) {
  if (n == 0) return 0.0;
  displacement_axes const ax = displacement_axes_of(g);
  return std::sqrt(with_list_backend(m.kind, position, [&](auto backend, auto) {
    return decltype(backend)::max_displacement(m, position, n, g.dims, ax.length, ax.periodic, stream);
  }));
}

}  // namespace coalesce::detail
