// The neighbour-list build (coalesce/neighbors/verlet_list.hpp): checks, the cell grid, and the
// steps (bin, fill, grow, fill again only when a row outgrew the width) on host or GPU memory.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <coalesce/core/error.hpp>

#include "list_backend.hpp"

namespace coalesce::detail {

bool ensure_bytes(list_memory const& m, buffer& b, std::size_t bytes) {
  if (b.size() >= bytes && b.kind() == m.kind) return false;
  b = buffer(m.kind, std::max<std::size_t>(bytes, 1));
  return true;
}

namespace {

bool on_gpu_memory(memory_kind kind) { return device_is_gpu && kind == memory_kind::device; }

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

// Cells at least `reach` wide; no more cells than a few per particle (a tiny cutoff in a large box
// would otherwise make the empty cells the cost).
template <class Real> cell_grid<Real> make_grid(list_geometry const& g, std::size_t n, std::size_t& cell_count) {
  cell_grid<Real> out{};
  double cells[3] = {1, 1, 1};
  for (unsigned a = 0; a < 3; ++a) {
    bool const used = a < g.dims;
    double const length = used ? g.hi[a] - g.lo[a] : 1.0;
    cells[a] = used ? std::max(1.0, std::floor(length / g.reach())) : 1.0;
    out.lo[a] = static_cast<Real>(used ? g.lo[a] : 0.0);
    out.length[a] = static_cast<Real>(length);
    out.periodic[a] = used && g.periodic[a];
  }
  double const most = std::max<double>(64.0, 4.0 * static_cast<double>(n));
  while (cells[0] * cells[1] * cells[2] > most) {
    for (double& c : cells) c = std::max(1.0, std::floor(c / 2));
  }
  cell_count = 1;
  for (unsigned a = 0; a < 3; ++a) {
    out.cells[a] = static_cast<int>(cells[a]);
    // cells per unit length, rounded down a little so a coordinate at hi still lands in the last cell
    out.cells_per_length[a] = static_cast<Real>(cells[a] / static_cast<double>(out.length[a]));
    cell_count *= static_cast<std::size_t>(cells[a]);
  }
  out.reach2 = static_cast<Real>(g.reach() * g.reach());
  out.half = g.half;
  return out;
}

double read_coordinate(memory_kind kind, column_ref const& c, unsigned width, std::size_t i) {
  std::byte bytes[8] = {};
  copy_bytes(memory_kind::host, bytes, kind, c.address(i), width);
  if (width == 4) {
    float v;
    std::memcpy(&v, bytes, 4);
    return v;
  }
  double v;
  std::memcpy(&v, bytes, 8);
  return v;
}

[[noreturn]] void report_bad_particle(list_memory const& m, position_columns const& p, list_geometry const& g,
                                      std::size_t i) {
  std::string where = "(";
  std::string why = "is not finite";
  for (unsigned a = 0; a < g.dims; ++a) {
    double const x = read_coordinate(m.kind, p.axis[a], p.width, i);
    where += (a ? ", " : "") + std::to_string(x);
    if (std::isfinite(x) && !g.periodic[a] && (x < g.lo[a] || x > g.hi[a])) {
      why = "lies outside the open box along axis " + std::to_string(a) + " ([" + std::to_string(g.lo[a]) + ", " +
            std::to_string(g.hi[a]) + "])";
    }
  }
  throw_error("neighbor list: particle " + std::to_string(i) + " at " + where + ") " + why +
              "; nothing was written (migrate or wrap positions into the box first, or make that axis periodic)");
}

template <class Real> void build_in(list_memory& m, list_format format, position_columns const& p, std::size_t n,
                                    list_geometry const& g, void* stream) {
  std::size_t cell_count = 0;
  cell_grid<Real> const grid = make_grid<Real>(g, n, cell_count);
  bool const gpu = on_gpu_memory(m.kind);
  std::size_t const bad = gpu ? cuda_lists::bin(m, p, n, g.dims, grid, cell_count, stream)
                              : host_lists::bin(m, p, n, g.dims, grid, cell_count);
  if (bad < n) report_bad_particle(m, p, g, bad);
  m.format = format;
  m.particles = n;
  ensure_bytes(m, m.counts, (n + 1) * sizeof(std::uint32_t));
  auto const fill = [&](bool count_only) {
    return gpu ? cuda_lists::fill(m, n, grid, count_only, stream) : host_lists::fill(m, n, grid, count_only);
  };
  if (format == list_format::csr) {
    list_pass_result const counted = fill(true);
    ensure_bytes(m, m.offsets, (n + 1) * sizeof(std::uint32_t));
    std::size_t const total = counted.entries;
    if (gpu) {
      (void)cuda_lists::offsets_from_counts(m, n, stream);
    } else {
      host_lists::offsets_from_counts(m, n);
    }
    ensure_bytes(m, m.indices, total * sizeof(std::uint32_t));
    m.entries = total;
    m.widest = counted.widest;
    m.width = 0;
    (void)fill(false);
  } else {
    // Padded: one pass into the width the list has; a row that did not fit grows every row and
    // the pass runs again (never a truncated row).
    list_pass_result r{};
    if (m.width > 0 && m.indices.size() >= n * m.width * sizeof(std::uint32_t)) {
      r = fill(false);
    } else {
      m.width = 0;
      r = fill(true);
    }
    if (r.widest > m.width || m.width == 0) {
      m.width = std::max<std::size_t>(8, (r.widest + 7) / 8 * 8);
      // Slots past a row's count are never read by a traversal, but whole-list copies (remap's
      // description, rows_on_host, a user's cudaMemcpy) must not read bytes nothing wrote.
      if (ensure_bytes(m, m.indices, n * m.width * sizeof(std::uint32_t)))
        zero_bytes(m.kind, m.indices.data(), m.indices.size(), stream);
      r = fill(false);
    }
    m.entries = r.entries;
    m.widest = r.widest;
  }
  if (gpu) {
    cuda_lists::keep_reference(m, p, n, g.dims, stream);
  } else {
    host_lists::keep_reference(m, p, n, g.dims);
  }
  ++m.builds;
}

}  // namespace

void build_list(list_memory& m, list_format format, position_columns const& position, std::size_t n,
                list_geometry const& g, void* stream) {
  check_geometry(g);
  if (n >= std::size_t{0xffffffffu}) {
    throw_error("neighbor list: " + std::to_string(n) + " particles do not fit 32-bit indices");
  }
  if (n == 0) {  // a rank may own no particle: an empty list, not an error
    m.format = format;
    m.particles = 0;
    m.entries = 0;
    m.widest = 0;
    ++m.builds;
    return;
  }
  if (position.width == 4) {
    build_in<float>(m, format, position, n, g, stream);
  } else {
    build_in<double>(m, format, position, n, g, stream);
  }
}

double max_displacement(list_memory const& m, position_columns const& position, std::size_t n, list_geometry const& g,
                        void* stream) {
  if (n == 0) return 0.0;
  double length[3];
  bool periodic[3];
  for (unsigned a = 0; a < 3; ++a) {
    length[a] = g.hi[a] - g.lo[a];
    periodic[a] = a < g.dims && g.periodic[a];
  }
  double const d2 = on_gpu_memory(m.kind)
                        ? cuda_lists::max_displacement(m, position, n, g.dims, length, periodic, stream)
                        : host_lists::max_displacement(m, position, n, g.dims, length, periodic);
  return std::sqrt(d2);
}

}  // namespace coalesce::detail
