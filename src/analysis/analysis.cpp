// The coalescing model: from a warp's lane addresses to L1 requests, sectors and lines.
// The rules are stated once, in include/coalesce/analysis/analysis.hpp; this file applies them.
#include <coalesce/analysis/analysis.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

namespace coalesce::analysis {

namespace {

using coalesce::detail::throw_error;
__extension__ typedef __int128 wide_int;  // lane addresses before they are known to fit in 64 bits

constexpr std::uint64_t max_address = std::numeric_limits<std::uint64_t>::max();

std::string str(std::int64_t v) { return std::to_string(v); }
std::string str(std::uint64_t v) { return std::to_string(v); }

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}
std::string fixed(double f, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, f);
  return buf;
}

void check_width(char const* where, char const* name, std::int64_t width) {
  if (width < 1 || width > max_width) {
    throw_error(std::string(where) + ": " + name + " must be 1.." + str(max_width) + " bytes (got " + str(width) +
                "); a lane reads a positive number of bytes");
  }
}

bool is_pow2(std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Counts one warp-wide access at a time and accumulates, optionally into histograms.
class warp_counter {
 public:
  explicit warp_counter(device_model const& model) : model_(model) {}

  // `lanes`: the addresses of the active lanes (any order, duplicates allowed), each the start of
  // `width` bytes that are known to fit below 2^64.
  void add(std::vector<std::uint64_t>& lanes, std::uint32_t width, access_stats& out,
           std::vector<std::uint64_t>* sectors_hist = nullptr, std::vector<std::uint64_t>* lines_hist = nullptr) {
    if (lanes.empty()) return;
    // The split rule: the widest power of two <= 16 dividing the width and every address.
    std::uint64_t bits = width;
    for (std::uint64_t a : lanes) bits |= a;
    std::uint32_t const g = std::min<std::uint32_t>(16, static_cast<std::uint32_t>(bits & (~bits + 1)));
    std::uint32_t const instructions = width / g;

    std::sort(lanes.begin(), lanes.end());
    auto const distinct = static_cast<std::uint64_t>(std::unique(lanes.begin(), lanes.end()) - lanes.begin());

    access_stats s;
    s.warps = 1;
    s.lanes = 0;  // set by the caller, who knows the lane count before duplicates were removed
    s.width = width;
    s.instruction_bytes = g;
    s.requests = instructions;
    s.bytes_useful = distinct * width;
    for (std::uint32_t k = 0; k < instructions; ++k) {
      // Chunks of g bytes aligned to g never straddle a sector (g <= 16 <= sector_bytes), and the
      // lane addresses are sorted, so sector and line numbers arrive in order.
      std::uint64_t sectors = 0, lines = 0;
      std::uint64_t last_sector = 0, last_line = 0;
      for (std::uint64_t i = 0; i < distinct; ++i) {
        std::uint64_t const a = lanes[i] + std::uint64_t{k} * g;
        std::uint64_t const sector = a / model_.sector_bytes, line = a / model_.line_bytes;
        if (i == 0 || sector != last_sector) ++sectors;
        if (i == 0 || line != last_line) ++lines;
        last_sector = sector;
        last_line = line;
      }
      s.sectors += sectors;
      s.lines += lines;
      if (sectors_hist != nullptr) ++(*sectors_hist)[std::min<std::uint64_t>(sectors, sectors_hist->size() - 1)];
      if (lines_hist != nullptr) ++(*lines_hist)[std::min<std::uint64_t>(lines, lines_hist->size() - 1)];
    }
    s.bytes_fetched =
        model_.fetch == fetch_unit::sector ? s.sectors * model_.sector_bytes : s.lines * model_.line_bytes;
    out += s;
  }

 private:
  device_model const& model_;
};

void add_lanes(warp_counter& counter, std::vector<std::uint64_t>& lanes, std::uint32_t width, access_stats& out,
               std::vector<std::uint64_t>* sh = nullptr, std::vector<std::uint64_t>* lh = nullptr) {
  std::uint64_t const n = lanes.size();
  access_stats one;
  counter.add(lanes, width, one, sh, lh);
  one.lanes = n;
  one.bytes_requested = n * width;
  out += one;
}

}  // namespace

// ---------------------------------------------------------------------------------- the device

void device_model::validate() const {
  std::string const where = "device_model '" + std::string(name) + "': ";
  if (warp_size < 1 || warp_size > 64)
    throw_error(where + "warp_size must be 1..64 (got " + str(std::uint64_t{warp_size}) + ")");
  if (!is_pow2(sector_bytes) || sector_bytes < 16 || sector_bytes > 4096) {
    throw_error(where + "sector_bytes must be a power of two in 16..4096 (got " + str(std::uint64_t{sector_bytes}) +
                ")");
  }
  if (!is_pow2(line_bytes) || line_bytes < sector_bytes || line_bytes > 4096) {
    throw_error(where + "line_bytes must be a power of two, at least sector_bytes and at most 4096 (got " +
                str(std::uint64_t{line_bytes}) + ")");
  }
  if (fetch != fetch_unit::sector && fetch != fetch_unit::line) throw_error(where + "fetch must be sector or line");
  if (sms < 1) throw_error(where + "sms must be at least 1");
  if (!(l1_tb_per_s > 0) || !(l2_tb_per_s > 0) || !(dram_tb_per_s > 0))
    throw_error(where + "l1_tb_per_s, l2_tb_per_s and dram_tb_per_s must be positive");
  if (!(pair_tests_per_ns > 0)) throw_error(where + "pair_tests_per_ns must be positive");
  if (cache_ways < 1 || cache_ways > 64)
    throw_error(where + "cache_ways must be 1..64 (got " + str(std::uint64_t{cache_ways}) + ")");
  if (l1_bytes < std::uint64_t{sector_bytes} * cache_ways || l2_bytes < std::uint64_t{sector_bytes} * cache_ways) {
    throw_error(where + "l1_bytes and l2_bytes must hold at least cache_ways sectors (got " + str(l1_bytes) + " and " +
                str(l2_bytes) + ")");
  }
}

std::string_view level_note() {
  return "L1 requests and sectors of global loads (Nsight Compute l1tex__t_requests/"
         "l1tex__t_sectors_pipe_lsu_mem_global_op_ld), not DRAM bytes";
}

std::uint64_t first_lanes(std::int64_t n) {
  if (n < 1 || n > 64) throw_error("first_lanes(): active lanes must be 1..64 (got " + str(n) + ")");
  return n == 64 ? all_lanes : (std::uint64_t{1} << n) - 1;
}

access_stats& access_stats::operator+=(access_stats const& o) {
  if (warps == 0) {
    width = o.width;
    instruction_bytes = o.instruction_bytes;
  } else if (o.warps != 0) {
    if (width != o.width) width = 0;
    if (instruction_bytes != o.instruction_bytes) instruction_bytes = 0;
  }
  warps += o.warps;
  lanes += o.lanes;
  requests += o.requests;
  sectors += o.sectors;
  lines += o.lines;
  bytes_requested += o.bytes_requested;
  bytes_useful += o.bytes_useful;
  bytes_fetched += o.bytes_fetched;
  return *this;
}

// --------------------------------------------------------------------------- one warp's access

namespace {
std::uint64_t lane_mask(device_model const& model, std::uint64_t active, char const* where) {
  std::uint64_t const warp = model.warp_size == 64 ? all_lanes : (std::uint64_t{1} << model.warp_size) - 1;
  if (active != all_lanes && (active & ~warp) != 0) {
    throw_error(std::string(where) + ": active lanes mask has lanes beyond the warp of " +
                str(std::uint64_t{model.warp_size}) + " lanes; clear the bits above lane " +
                str(std::uint64_t{model.warp_size - 1}));
  }
  active &= warp;
  if (active == 0) throw_error(std::string(where) + ": active lanes: no lane is active; set at least one bit");
  return active;
}

// The address of lane k, or a coalesce::error naming the parameter when it leaves 0..2^64.
std::uint64_t strided_address(strided_pattern const& p, unsigned k, char const* where) {
  wide_int const a = wide_int(p.offset) + wide_int(p.stride) * k;
  if (a < 0 || a + p.width - 1 > wide_int(max_address)) {
    throw_error(std::string(where) + ": stride: lane " + std::to_string(k) + " would read at offset " + str(p.offset) +
                " + " + std::to_string(k) + " x " + str(p.stride) +
                ", outside the 64-bit address space; use a smaller stride or offset");
  }
  return static_cast<std::uint64_t>(a);
}
}  // namespace

access_stats strided(device_model const& model, strided_pattern const& p) {
  model.validate();
  check_width("strided()", "width", p.width);
  std::uint64_t const active = lane_mask(model, p.active, "strided()");
  std::vector<std::uint64_t> lanes;
  for (unsigned k = 0; k < model.warp_size; ++k) {
    if ((active >> k) & 1) lanes.push_back(strided_address(p, k, "strided()"));
  }
  warp_counter counter(model);
  access_stats out;
  add_lanes(counter, lanes, static_cast<std::uint32_t>(p.width), out);
  return out;
}

access_stats addresses(device_model const& model, std::span<const std::uint64_t> lane_addresses, std::int64_t width) {
  model.validate();
  check_width("addresses()", "width", width);
  if (lane_addresses.empty()) throw_error("addresses(): lane_addresses is empty; give one address per active lane");
  if (lane_addresses.size() > model.warp_size) {
    throw_error("addresses(): lane_addresses has " + str(std::uint64_t{lane_addresses.size()}) +
                " addresses, more than the warp's " + str(std::uint64_t{model.warp_size}) + " lanes");
  }
  std::vector<std::uint64_t> lanes(lane_addresses.begin(), lane_addresses.end());
  for (std::size_t k = 0; k < lanes.size(); ++k) {
    if (lanes[k] > max_address - static_cast<std::uint64_t>(width - 1)) {
      throw_error("addresses(): lane_addresses[" + std::to_string(k) + "] + width overflows 64 bits");
    }
  }
  warp_counter counter(model);
  access_stats out;
  add_lanes(counter, lanes, static_cast<std::uint32_t>(width), out);
  return out;
}

std::string describe(access_stats const& s, device_model const& model) {
  std::ostringstream o;
  o << s.requests << (s.requests == 1 ? " request, " : " requests, ") << s.sectors << " sectors ("
    << fixed(s.sectors_per_request()) << " per request), " << s.lines << (s.lines == 1 ? " line" : " lines") << " of "
    << model.line_bytes << " B\n";
  o << s.bytes_requested << " B requested, " << s.bytes_fetched << " B fetched ("
    << (model.fetch == fetch_unit::sector ? "sectors of " + std::to_string(model.sector_bytes) + " B"
                                          : "lines of " + std::to_string(model.line_bytes) + " B")
    << "), efficiency " << percent(s.efficiency()) << "\n";
  o << "level: " << level_note() << "\n";
  return o.str();
}

// ------------------------------------------------------------------------ real index arrays

namespace {

std::uint64_t element_address(std::uint64_t index, std::int64_t element_size, char const* where, char const* name) {
  std::uint64_t a = 0;
  if (__builtin_mul_overflow(index, static_cast<std::uint64_t>(element_size), &a) ||
      a > max_address - static_cast<std::uint64_t>(element_size - 1)) {
    throw_error(std::string(where) + ": " + name + ": index " + str(index) + " x element_size " + str(element_size) +
                " overflows a 64-bit address; the index array is corrupt or read with the wrong element size");
  }
  return a;
}

report start_report(device_model const& model, std::int64_t element_size, char const* where) {
  model.validate();
  check_width(where, "element_size", element_size);
  report r;
  r.model = model;
  r.sectors_histogram.assign(model.warp_size + 1, 0);
  r.lines_histogram.assign(model.warp_size + 1, 0);
  return r;
}

template <class Index>
report gather_flat(device_model const& model, std::span<const Index> idx, std::int64_t element_size) {
  report r = start_report(model, element_size, "gather()");
  if (idx.empty()) throw_error("gather(): idx is empty; pass at least one index");
  warp_counter counter(model);
  std::vector<std::uint64_t> lanes, index_lanes;
  for (std::size_t first = 0; first < idx.size(); first += model.warp_size) {
    std::size_t const end = std::min<std::size_t>(idx.size(), first + model.warp_size);
    lanes.clear();
    index_lanes.clear();
    for (std::size_t i = first; i < end; ++i) {
      lanes.push_back(element_address(idx[i], element_size, "gather()", "idx"));
      index_lanes.push_back(i * sizeof(Index));
    }
    add_lanes(counter, lanes, static_cast<std::uint32_t>(element_size), r.data, &r.sectors_histogram,
              &r.lines_histogram);
    add_lanes(counter, index_lanes, sizeof(Index), r.index_loads);
  }
  r.what = "gather of " + str(element_size) + "-byte elements through " + str(std::uint64_t{idx.size()}) + " u" +
           std::to_string(8 * sizeof(Index)) + " indices (thread i reads in[idx[i]])";
  return r;
}

}  // namespace

report gather(device_model const& model, std::span<const std::uint32_t> idx, std::int64_t element_size) {
  return gather_flat(model, idx, element_size);
}
report gather(device_model const& model, std::span<const std::uint64_t> idx, std::int64_t element_size) {
  return gather_flat(model, idx, element_size);
}

report gather(device_model const& model, neighbor_list_ref const& list, std::int64_t element_size) {
  report r = start_report(model, element_size, "gather()");
  if (list.max_neighbors < 1)
    throw_error("gather(): max_neighbors must be at least 1 (got " + str(list.max_neighbors) + ")");
  if (list.indices.empty()) throw_error("gather(): the neighbour list's indices are empty; pass at least one row");
  auto const k_count = static_cast<std::uint64_t>(list.max_neighbors);
  if (list.indices.size() % k_count != 0) {
    throw_error("gather(): the neighbour list has " + str(std::uint64_t{list.indices.size()}) +
                " indices, not a multiple of max_neighbors = " + str(list.max_neighbors) +
                "; pad each row to the same length");
  }
  if (list.order != neighbor_order::row_major && list.order != neighbor_order::column_major) {
    throw_error("gather(): order must be row_major or column_major");
  }
  std::uint64_t const particles = list.indices.size() / k_count;
  warp_counter counter(model);
  std::vector<std::uint64_t> lanes, index_lanes;
  for (std::uint64_t first = 0; first < particles; first += model.warp_size) {
    std::uint64_t const end = std::min<std::uint64_t>(particles, first + model.warp_size);
    for (std::uint64_t k = 0; k < k_count; ++k) {
      lanes.clear();
      index_lanes.clear();
      for (std::uint64_t i = first; i < end; ++i) {
        std::uint64_t const slot = list.order == neighbor_order::row_major ? i * k_count + k : k * particles + i;
        index_lanes.push_back(slot * sizeof(std::uint32_t));
        std::uint32_t const j = list.indices[slot];
        if (list.empty_slot && j == *list.empty_slot) continue;
        lanes.push_back(element_address(j, element_size, "gather()", "neighbour list"));
      }
      add_lanes(counter, lanes, static_cast<std::uint32_t>(element_size), r.data, &r.sectors_histogram,
                &r.lines_histogram);
      add_lanes(counter, index_lanes, sizeof(std::uint32_t), r.index_loads);
    }
  }
  r.what = "pair-kernel gather of " + str(element_size) + "-byte elements: " + str(particles) + " particles x " +
           str(list.max_neighbors) + " neighbours, list stored " +
           (list.order == neighbor_order::row_major ? "row-major" : "column-major");
  return r;
}

std::string describe(report const& r) {
  std::ostringstream o;
  o << r.what << "\n";
  o << "data:  " << describe(r.data, r.model);
  o << "index: " << r.index_loads.requests << " requests, " << fixed(r.index_loads.sectors_per_request())
    << " sectors per request, efficiency " << percent(r.index_loads.efficiency()) << "\n";
  o << "sectors per gather request (histogram):\n";
  std::uint64_t peak = 0;
  for (std::uint64_t c : r.sectors_histogram) peak = std::max(peak, c);
  for (std::size_t s = 0; s < r.sectors_histogram.size(); ++s) {
    std::uint64_t const c = r.sectors_histogram[s];
    if (c == 0) continue;
    std::size_t const bar = peak == 0 ? 0 : static_cast<std::size_t>((40 * c + peak - 1) / peak);
    char head[64];
    std::snprintf(head, sizeof head, "  %3zu sectors %10llu  ", s, static_cast<unsigned long long>(c));
    o << head << std::string(bar, '#') << "\n";
  }
  return o.str();
}

namespace {
std::uint64_t read_le(std::byte const* p, unsigned bytes) {
  std::uint64_t v = 0;
  for (unsigned b = 0; b < bytes; ++b) v |= std::uint64_t(std::to_integer<unsigned char>(p[b])) << (8 * b);
  return v;
}
}  // namespace

std::vector<std::uint64_t> parse_indices(std::span<const std::byte> bytes, index_width width, std::string_view source) {
  if (width != index_width::u32 && width != index_width::u64) throw_error("parse_indices(): width must be u32 or u64");
  auto const w = static_cast<unsigned>(width);
  std::string const what(source);
  char const* const type = w == 4 ? "u32" : "u64";
  if (bytes.empty()) throw_error(what + " is empty; an index array needs at least one " + type + " index");
  if (bytes.size() % w != 0) {
    throw_error(what + " has " + str(std::uint64_t{bytes.size()}) + " bytes, not a multiple of " + std::to_string(w) +
                " (" + type + " indices): it is truncated" +
                (w == 8 ? " or holds u32 indices (use the u32 width)" : ""));
  }
  std::vector<std::uint64_t> out(bytes.size() / w);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = read_le(bytes.data() + i * w, w);
  // A u64 file read as u32 shows up as every odd value 0 (the high halves of indices < 2^32).
  // With 32 or more pairs that pattern does not arise in a real u32 index array by chance.
  if (w == 4 && out.size() >= 64 && out.size() % 2 == 0) {
    bool high_halves_zero = true, low_halves_zero = true;
    for (std::size_t i = 0; i < out.size(); i += 2) {
      high_halves_zero = high_halves_zero && out[i + 1] == 0;
      low_halves_zero = low_halves_zero && out[i] == 0;
    }
    if (high_halves_zero && !low_halves_zero) {
      throw_error(what +
                  " looks like u64 indices (every second 32-bit value is 0) but was read as u32; "
                  "use the u64 width");
    }
  }
  return out;
}

std::vector<std::uint64_t> read_index_file(std::string const& path, index_width width) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error("cannot open index file '" + path + "'; check the path and permissions");
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw_error("could not read index file '" + path + "'");
  auto const* p = reinterpret_cast<std::byte const*>(raw.data());
  return parse_indices(std::span<const std::byte>(p, raw.size()), width, "index file '" + path + "'");
}

// ------------------------------------------------------------------- a reflected struct T

}  // namespace coalesce::analysis

namespace coalesce::detail {

std::vector<std::size_t> leaves_in_bytes(reflect::leaf_info const* table, std::size_t count, std::size_t offset,
                                         std::size_t size) {
  std::vector<std::size_t> out;
  for (std::size_t l = 0; l < count; ++l) {
    if (table[l].offset >= offset && table[l].offset < offset + size) out.push_back(l);
  }
  if (out.empty()) {
    throw_error("leaves_of(): the member path (bytes " + std::to_string(offset) + ".." + std::to_string(offset + size) +
                ") does not contain a leaf of this struct");
  }
  return out;
}

analysis::layout_report analyse_columns(analysis::device_model const& model, std::string layout,
                                        std::size_t record_bytes, std::vector<column_desc> const& columns,
                                        std::uint64_t warps) {
  model.validate();
  analysis::layout_report r;
  r.model = model;
  r.layout = std::move(layout);
  r.record_bytes = record_bytes;
  r.warps = warps;
  analysis::warp_counter counter(model);
  std::vector<std::uint64_t> lanes;
  for (column_desc const& c : columns) {
    analysis::leaf_row row{c.path, c.leaf, c.sub, c.bytes, {}};
    for (std::uint64_t w = 0; w < warps; ++w) {
      lanes.clear();
      for (std::uint64_t i = w * model.warp_size; i < (w + 1) * model.warp_size; ++i) {
        lanes.push_back(c.block == 0 ? c.base + i * c.stride
                                     : c.base + (i / c.block) * c.block_stride + (i % c.block) * c.stride);
      }
      analysis::add_lanes(counter, lanes, static_cast<std::uint32_t>(c.bytes), row.stats);
    }
    r.total += row.stats;
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace coalesce::detail

namespace coalesce::analysis {

std::string leaf_path(reflect::leaf_info const& info, std::size_t sub) {
  std::string p;
  for (std::size_t d = 0; d < info.depth && d < info.path.size(); ++d) {
    if (d != 0) p += '.';
    p += std::to_string(info.path[d]);
  }
  if (info.extent > 1) p += "[" + std::to_string(sub) + "]";
  return p;
}

std::string describe(layout_report const& r) {
  std::ostringstream o;
  o << r.layout << " (record " << r.record_bytes << " B, " << r.warps << " warps of " << r.model.warp_size
    << " threads, thread i reads element i)\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-10s %6s %9s %12s %11s\n", "leaf", "bytes", "requests", "sectors/req",
                "efficiency");
  o << line;
  auto row_line = [&](std::string const& name, std::string const& bytes, access_stats const& s) {
    std::snprintf(line, sizeof line, "  %-10s %6s %9.2f %12.2f %11s\n", name.c_str(), bytes.c_str(),
                  double(s.requests) / double(r.warps == 0 ? 1 : r.warps), s.sectors_per_request(),
                  percent(s.efficiency()).c_str());
    o << line;
  };
  for (leaf_row const& row : r.rows) row_line(row.path, std::to_string(row.bytes), row.stats);
  row_line("all", "", r.total);
  o << "  (requests per warp; level: " << level_note() << ")\n";
  return o.str();
}

// ----------------------------------------------------------------------------- shared memory

namespace {
void validate_banks(bank_model const& b) {
  if (b.banks < 1 || b.banks > 64)
    throw_error("bank_model: banks must be 1..64 (got " + str(std::uint64_t{b.banks}) + ")");
  if (!is_pow2(b.bank_bytes) || b.bank_bytes > 16) {
    throw_error("bank_model: bank_bytes must be 1, 2, 4, 8 or 16 (got " + str(std::uint64_t{b.bank_bytes}) + ")");
  }
  if (b.warp_size < 1 || b.warp_size > 64) {
    throw_error("bank_model: warp_size must be 1..64 (got " + str(std::uint64_t{b.warp_size}) + ")");
  }
}
}  // namespace

bank_stats bank_conflicts(std::span<const std::uint64_t> lane_addresses, std::int64_t width, bank_model const& banks) {
  validate_banks(banks);
  if (width != 1 && width != 2 && width != 4 && width != 8 && width != 16) {
    throw_error("bank_conflicts(): width must be 1, 2, 4, 8 or 16 bytes, the shared-memory access sizes (got " +
                str(width) + ")");
  }
  if (lane_addresses.empty())
    throw_error("bank_conflicts(): lane_addresses is empty; give one address per active lane");
  if (lane_addresses.size() > banks.warp_size) {
    throw_error("bank_conflicts(): lane_addresses has more addresses than the warp has lanes");
  }
  // (bank, word) of every word a lane touches; the same word twice is a broadcast, not a conflict.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> words;
  for (std::size_t k = 0; k < lane_addresses.size(); ++k) {
    std::uint64_t const a = lane_addresses[k];
    if (a % static_cast<std::uint64_t>(width) != 0) {
      throw_error("bank_conflicts(): lane_addresses[" + std::to_string(k) + "] = " + str(a) +
                  " is not aligned to width " + str(width) + " (a misaligned shared-memory access faults)");
    }
    if (a > max_address - static_cast<std::uint64_t>(width - 1)) {
      throw_error("bank_conflicts(): lane_addresses[" + std::to_string(k) + "] + width overflows 64 bits");
    }
    for (std::uint64_t w = a / banks.bank_bytes; w <= (a + width - 1) / banks.bank_bytes; ++w) {
      words.emplace_back(w % banks.banks, w);
    }
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  bank_stats s;
  s.lanes = static_cast<std::uint32_t>(lane_addresses.size());
  for (std::size_t i = 0; i < words.size();) {
    std::size_t j = i;
    while (j < words.size() && words[j].first == words[i].first) ++j;
    if (j - i > s.wavefronts) {
      s.wavefronts = j - i;
      s.worst_bank = static_cast<std::uint32_t>(words[i].first);
    }
    i = j;
  }
  s.ideal_wavefronts = (words.size() + banks.banks - 1) / banks.banks;
  s.degree = (s.wavefronts + s.ideal_wavefronts - 1) / s.ideal_wavefronts;
  return s;
}

bank_stats bank_conflicts(strided_pattern const& p, bank_model const& banks) {
  validate_banks(banks);
  check_width("bank_conflicts()", "width", p.width);
  device_model lanes_only = device_model::sectored();
  lanes_only.warp_size = banks.warp_size;
  std::uint64_t const active = lane_mask(lanes_only, p.active, "bank_conflicts()");
  std::vector<std::uint64_t> lanes;
  for (unsigned k = 0; k < banks.warp_size; ++k) {
    if ((active >> k) & 1) lanes.push_back(strided_address(p, k, "bank_conflicts()"));
  }
  return bank_conflicts(lanes, p.width, banks);
}

bank_stats bank_conflicts(tile_access const& t, std::int64_t padding, bank_model const& banks) {
  validate_banks(banks);
  if (t.row_elements < 1 || t.row_elements > (std::int64_t{1} << 24)) {
    throw_error("bank_conflicts(): row_elements must be 1..2^24 (got " + str(t.row_elements) + ")");
  }
  if (t.element_bytes != 1 && t.element_bytes != 2 && t.element_bytes != 4 && t.element_bytes != 8 &&
      t.element_bytes != 16) {
    throw_error("bank_conflicts(): element_bytes must be 1, 2, 4, 8 or 16 (got " + str(t.element_bytes) + ")");
  }
  if (padding < 0 || padding > 4096)
    throw_error("bank_conflicts(): padding must be 0..4096 elements (got " + str(padding) + ")");
  device_model lanes_only = device_model::sectored();
  lanes_only.warp_size = banks.warp_size;
  std::uint64_t const active = lane_mask(lanes_only, t.active, "bank_conflicts()");
  std::vector<std::uint64_t> lanes;
  for (unsigned k = 0; k < banks.warp_size; ++k) {
    if (((active >> k) & 1) == 0) continue;
    wide_int const row = wide_int(t.row0) + wide_int(t.row_step) * k;
    wide_int const col = wide_int(t.col0) + wide_int(t.col_step) * k;
    if (row < 0 || row > (wide_int(1) << 24)) {
      throw_error("bank_conflicts(): row0/row_step put lane " + std::to_string(k) + " at row outside 0..2^24");
    }
    if (col < 0 || col >= t.row_elements) {
      throw_error("bank_conflicts(): col0/col_step put lane " + std::to_string(k) + " outside the row of " +
                  str(t.row_elements) + " elements");
    }
    wide_int const element = row * (t.row_elements + padding) + col;
    lanes.push_back(static_cast<std::uint64_t>(element * t.element_bytes));
  }
  return bank_conflicts(lanes, t.element_bytes, banks);
}

padding_choice best_padding(tile_access const& t, std::int64_t max_padding, bank_model const& banks) {
  if (max_padding < 0 || max_padding > 1024) {
    throw_error("best_padding(): max_padding must be 0..1024 elements (got " + str(max_padding) + ")");
  }
  padding_choice choice;
  for (std::int64_t p = 0; p <= max_padding; ++p) {
    choice.tried.push_back(bank_conflicts(t, p, banks));
    if (p == 0 || choice.tried.back().wavefronts < choice.stats.wavefronts) {
      choice.padding = p;
      choice.stats = choice.tried.back();
    }
  }
  return choice;
}

std::string describe(bank_stats const& s) {
  std::ostringstream o;
  o << s.lanes << " lanes, " << s.wavefronts << " wavefronts (conflict-free: " << s.ideal_wavefronts << "), ";
  if (s.degree <= 1) {
    o << "no bank conflict\n";
  } else {
    o << s.degree << "-way bank conflict (bank " << s.worst_bank << ")\n";
  }
  return o.str();
}

}  // namespace coalesce::analysis
