// coalesce/analysis/analysis.hpp - see the waste: how a warp's addresses turn into L1 requests and sectors.
//
//   namespace ca = coalesce::analysis;
//   auto const model = ca::device_model::hopper();            // 32 lanes, 32-byte sectors
//   ca::access_stats a = ca::strided(model, 4, 24);             // float x of a 24-byte AoS record
//   a.sectors == 24;  a.efficiency() == 128.0 / 768;             // 1 request, 16.7% of bytes used
//   auto rows = ca::compare_layouts<Particle>(model, ca::leaves_of(&Particle::pos, &vec3::x));
//   ca::report r = ca::gather(model, neighbour_list, sizeof(float));  // real index arrays
//   std::size_t const worst = r.sectors_histogram[32];         // warps that touched 32 sectors
//   ca::bank_stats b = ca::bank_conflicts(ca::tile_access{.row_elements = 32}, 0);  // 32-way
//   ca::best_padding(ca::tile_access{.row_elements = 32}).padding == 1;             // the fix
//
// Which level the numbers describe: the L1 (L1TEX) side of a global load. A request is one warp-
// wide load instruction; sectors are the distinct 32-byte sectors it touches, which is what Nsight
// Compute counts as l1tex__t_sectors_pipe_lsu_mem_global_op_ld (and the requests as
// l1tex__t_requests_pipe_lsu_mem_global_op_ld). Bytes fetched are sectors x 32 on sectored devices
// (Volta and later, Hopper included) or lines x 128 on line-based devices (Fermi to Pascal caching
// global loads in L1). This is not DRAM traffic: later instructions reuse sectors that earlier ones
// brought into L1 and L2, so L1 sector counts overstate DRAM bytes for AoS (see docs/analysis.md).
//
// How an access is split (the rule; the hardware has only 1, 2, 4, 8 and 16-byte loads, each
// naturally aligned, and faults otherwise): a lane access of `width` bytes becomes width / g
// instructions of g bytes, where g is the largest power of two <= 16 that divides the width and
// every active lane's address. That is what a compiler emits when it knows the alignment (a
// 24-byte record of doubles: 3 x 8 bytes; a vec3 of floats: 3 x 4 bytes; a float at an odd
// 2-byte offset in a packed struct: 2 x 2 bytes). Aligned 1, 2, 4, 8 and 16-byte accesses are one
// instruction and are modelled exactly. Each instruction is one request; sectors and lines are
// counted per request, then summed.
//
// Bad input (zero or negative widths, addresses that overflow 64 bits, empty index arrays, index
// files that are truncated or of the wrong element size) throws coalesce::error naming the
// parameter.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../memory/index_arrays.hpp"
#include "../core/reference.hpp"
#include "../core/reflect.hpp"
#include "../core/layout_storage.hpp"

namespace coalesce::analysis {

// ----------------------------------------------------------------------------------- the device

// What a device fetches for a load: independent 32-byte sectors (Volta and later), or whole
// 128-byte lines (Fermi to Pascal, global loads cached in L1).
enum class fetch_unit { sector, line };

// A GPU as the model sees it: the warp, what one fetch moves, and the caches and rates behind the
// advisor's L2, DRAM and time figures. The presets below cover the usual devices (hopper() is every
// call's default); validate() checks a hand-built one.
struct device_model {
  std::string_view name = "sectored";     // printed in reports and the advice ("hopper", "line-based", ...)
  std::uint32_t warp_size = 32;           // lanes per warp, 1..64
  std::uint32_t sector_bytes = 32;        // power of two, 16..4096
  std::uint32_t line_bytes = 128;         // power of two, a multiple of sector_bytes, at most 4096
  fetch_unit fetch = fetch_unit::sector;  // sectors fetched on their own, or whole lines
  // The caches behind the L1 requests, for the advisor's L2 and DRAM figures
  // (coalesce/analysis/advisor.hpp): each SM's L1 data cache as global loads see it (stores pass
  // through to L2), the L2 all SMs share, and the ways of the set-associative model of both.
  // The L1 is what an LRU model needs to match Nsight Compute's L2 sectors on the H200 (half of its
  // 256 KiB of L1 and shared memory; 192 KiB left sorted gathers 11-16 % short, docs/analysis.md).
  std::uint32_t sms = 132;
  std::uint64_t l1_bytes = 128 * 1024;        // per SM: the L1 data cache global loads see
  std::uint64_t l2_bytes = 25 * 1024 * 1024;  // the L2 the replay models (hopper(): one partition)
  std::uint32_t cache_ways = 16;              // associativity of the L1 and L2 models
  // Whole-device throughput of each level, TB/s, for the advisor's time estimate: the slowest of
  // L1 sectors, L2 sectors and DRAM bytes over its rate (H200: 132 SMs x 128 B per clock at
  // 1.98 GHz; L2 and HBM3e as calibrated on the neighbour-force kernel, docs/analysis.md).
  double l1_tb_per_s = 33.0;
  double l2_tb_per_s = 10.0;   // L2 sectors served, as bytes
  double dram_tb_per_s = 4.8;  // DRAM (HBM) bytes read and written back
  // The cluster neighbour format's candidate tests (with the body calls they lead to) per ns, whole
  // device: the one cost of a kernel the advisor counts that is not bytes. H200: the LJ benchmark's
  // 4.19M particles x 17 chunks of 32 candidates (514 candidates per cluster) in 7.67 ms
  // (benchmarks/neighbor_build with the warp tile, 2026-12-02).
  double pair_tests_per_ns = 297.0;

  // Volta and later: 32-byte sectors of 128-byte lines, each sector fetched on its own.
  static constexpr device_model sectored() { return {"sectored", 32, 32, 128, fetch_unit::sector}; }
  // The H200 this project measures on (sm_90): the sectored model, 132 SMs, and of its 50 MiB of
  // L2 one 25 MiB partition (what the calibration against Nsight Compute found, docs/analysis.md).
  static constexpr device_model hopper() { return {"hopper", 32, 32, 128, fetch_unit::sector}; }
  // An A100 (sm_80): 108 SMs, 40 MiB of L2 (not calibrated against Nsight Compute yet).
  static constexpr device_model ampere() {
    // pair tests: the H200's scaled by SMs x clock (108 x 1.41 GHz against 132 x 1.98 GHz)
    return {"ampere", 32, 32, 128, fetch_unit::sector, 108, 192 * 1024, 40 * 1024 * 1024, 16, 19.5, 5.0, 2.0, 173.0};
  }
  // Fermi to Pascal with global loads cached in L1: a touched line is fetched whole.
  static constexpr device_model line_based() { return {"line-based", 32, 32, 128, fetch_unit::line}; }

  // Bytes one fetch moves: sector_bytes, or line_bytes on a line-based device.
  constexpr std::uint32_t fetch_bytes() const { return fetch == fetch_unit::sector ? sector_bytes : line_bytes; }
  // Throws coalesce::error when a field is out of range (for hand-built models).
  void validate() const;
};

// One line saying which level the numbers describe, for printed output.
std::string_view level_note();

// --------------------------------------------------------------------------- one warp's access

// Every lane of the warp (bits above warp_size are ignored only in this value).
inline constexpr std::uint64_t all_lanes = ~std::uint64_t{0};
// The mask of lanes [0, n), 1 <= n <= 64; throws otherwise ("active lanes").
std::uint64_t first_lanes(std::int64_t n);

// Counts for one or more warp-wide accesses (summed when several are analysed).
struct access_stats {
  std::uint64_t warps = 0;              // warp-wide accesses analysed (each one or more requests)
  std::uint64_t lanes = 0;              // active lane accesses, summed
  std::uint32_t width = 0;              // bytes per lane (0 when accesses of several widths were summed)
  std::uint32_t instruction_bytes = 0;  // bytes per lane per instruction after splitting (0 when mixed)
  std::uint64_t requests = 0;           // L1 requests: warp-wide load instructions
  std::uint64_t sectors = 0;            // distinct sectors per request, summed
  std::uint64_t lines = 0;              // distinct lines per request, summed
  std::uint64_t bytes_requested = 0;    // lanes x width: what the threads asked for
  std::uint64_t bytes_useful = 0;       // distinct bytes asked for (a broadcast counts once)
  std::uint64_t bytes_fetched = 0;      // sectors x sector bytes, or lines x line bytes (line-based)

  // Mean distinct sectors per request (0 with no request): 4 for 32 lanes reading consecutive
  // aligned floats, 32 when every lane hits a sector of its own.
  double sectors_per_request() const { return requests == 0 ? 0.0 : double(sectors) / double(requests); }
  // Mean distinct lines per request (0 with no request).
  double lines_per_request() const { return requests == 0 ? 0.0 : double(lines) / double(requests); }
  // Useful bytes over fetched bytes, 0..1: 1 is perfectly coalesced.
  double efficiency() const { return bytes_fetched == 0 ? 0.0 : double(bytes_useful) / double(bytes_fetched); }

  // Adds other's counts; width and instruction_bytes become 0 where the two differ (mixed widths).
  access_stats& operator+=(access_stats const& other);
};
// The two summed, as += sums them.
inline access_stats operator+(access_stats a, access_stats const& b) { return a += b; }

// Lane k (for each set bit k of `active`) reads `width` bytes at offset + k * stride.
struct strided_pattern {
  std::int64_t width = 4;            // bytes per lane, 1..max_width
  std::int64_t stride = 4;           // bytes between consecutive lanes; may be 0 (broadcast) or negative
  std::uint64_t offset = 0;          // address of lane 0 (only its alignment matters to the count)
  std::uint64_t active = all_lanes;  // bit k set: lane k takes part (bits above the warp must be 0)
};
inline constexpr std::int64_t max_width = 4096;  // bytes per lane accepted by the model

// The counts for one warp-wide strided access. Throws coalesce::error for a width outside
// 1..max_width, no active lane, lanes beyond the warp, or an address outside 64 bits.
access_stats strided(device_model const& model, strided_pattern const& pattern);
// The same with the pattern's fields given in order: strided(model, 4, 24) is float x of a 24-byte record.
inline access_stats strided(device_model const& model, std::int64_t width, std::int64_t stride,
                            std::uint64_t offset = 0, std::uint64_t active = all_lanes) {
  return strided(model, strided_pattern{width, stride, offset, active});
}

// One warp-wide access from explicit addresses: lane k reads `width` bytes at lane_addresses[k];
// 1 to warp_size addresses (fewer means the remaining lanes are inactive).
access_stats addresses(device_model const& model, std::span<const std::uint64_t> lane_addresses, std::int64_t width);

// Multi-line text: counts, sectors per request, efficiency, and the level note.
std::string describe(access_stats const& stats, device_model const& model);

// ------------------------------------------------------------------------ real index arrays

// A neighbour list of `neighbours` slots per particle, as stored for a pair kernel in which
// thread i loops over its slots k and reads in[list(i, k)]: row-major keeps a particle's slots
// together (indices[i * neighbours + k]), column-major keeps slot k of all particles together
// (indices[k * particles + i]). The storage order changes the loads of the list itself, not the
// gather; both are reported.
// The same neighbor_order as coalesce::neighbor_list (neighbor_list.hpp), and as there it must be stated.
struct neighbor_list_ref {
  std::span<const std::uint32_t> indices;         // every slot: particles x max_neighbors of them
  std::int64_t max_neighbors = 1;                 // slots per particle; divides indices.size()
  coalesce::detail::stated_neighbor_order order;  // row_major or column_major, no default
  std::optional<std::uint64_t> empty_slot{};      // slots holding this value are skipped (padding)
};

// The coalescing of a gather through an index array, warp by warp.
struct report {
  device_model model{};                          // the device the counts are for
  std::string what;                              // what was analysed, in words
  access_stats data;                             // the gathered loads, in[idx]
  access_stats index_loads;                      // the loads of the index array itself
  std::vector<std::uint64_t> sectors_histogram;  // [s]: gather requests that touched s sectors
  std::vector<std::uint64_t> lines_histogram;    // [l]: gather requests that touched l lines

  double efficiency() const { return data.efficiency(); }                    // the gather's, 0..1
  double sectors_per_request() const { return data.sectors_per_request(); }  // the gather's
  // Everything the gather kernel loads (index and data): what Nsight Compute sums over the kernel.
  access_stats kernel() const { return data + index_loads; }
};

// Thread i reads in[idx[i]] (elements of element_size bytes, `in` 256-byte aligned); warp w
// is threads [w * warp_size, (w + 1) * warp_size), the last warp may be partial.
report gather(device_model const& model, std::span<const std::uint32_t> idx, std::int64_t element_size);
// The same through 64-bit indices.
report gather(device_model const& model, std::span<const std::uint64_t> idx, std::int64_t element_size);
// A pair kernel's gather: thread i reads in[j] for each neighbour j in its row (empty slots skipped),
// one warp-wide load per slot k; index_loads are the loads of the slots, in the list's storage order.
report gather(device_model const& model, neighbor_list_ref const& list, std::int64_t element_size);

// Multi-line text: what was analysed, the gather's counts, the index loads and a histogram of
// sectors per gather request.
std::string describe(report const& r);

// Index files: raw little-endian unsigned integers, 4 bytes each (u32) or 8 bytes each (u64),
// no header. Empty files and sizes that are not a multiple of the element size throw.
enum class index_width { u32 = 4, u64 = 8 };
// The indices in `bytes`; `source` names them in the error. Also throws for 32-bit reads of what
// looks like u64 data (every second value 0).
std::vector<std::uint64_t> parse_indices(std::span<const std::byte> bytes, index_width width,
                                         std::string_view source = "index data");
// The indices of the file at `path`, as parse_indices reads them; throws when it cannot be read.
std::vector<std::uint64_t> read_index_file(std::string const& path, index_width width);

// ------------------------------------------------------------------- a reflected struct T

// One row of a layout table: one 1-D column (a leaf, or sub-column `sub` of a std::array leaf),
// read by thread i for element i, summed over `warps` consecutive warps.
struct leaf_row {
  std::string path;       // member indices from the root: "0.2" is pos.z of Particle; "3[1]" a sub-column
  std::size_t leaf = 0;   // index in T's leaf table (what leaves_of returns)
  std::size_t sub = 0;    // element of a std::array leaf; 0 for a scalar leaf
  std::size_t bytes = 0;  // bytes of one element of the leaf
  access_stats stats;     // the column's loads over all the warps
};
// How a kernel reading the selected columns of T coalesces under one layout (layout_table).
struct layout_report {
  device_model model{};          // the device the counts are for
  std::string layout;            // "aos", "soa", "aosoa<32>"
  std::size_t record_bytes = 0;  // bytes of one element as stored (a member kept as half: 2 per leaf)
  std::uint64_t warps = 0;       // consecutive warps analysed (32: every alignment phase repeats within it)
  std::vector<leaf_row> rows;    // one per column read, in the order of the selected leaves
  access_stats total;            // all rows together: one kernel reading all the selected leaves
};
// A table: requests per warp, sectors per request and efficiency of each row, then of all rows.
std::string describe(layout_report const& r);

// Leaves selected by a member path: leaves_of(&Particle::pos) -> {0, 1, 2} (pos.x, .y, .z),
// leaves_of(&Particle::pos, &vec3::x) -> {0}, leaves_of(&Particle::mass) -> {6}.
template <class T, class M, class... Rest> std::vector<std::size_t> leaves_of(M T::*member, Rest... rest);

// The table for T stored as Layout, when a kernel reads the leaves `selected` (all when empty)
// of elements [0, warps * warp_size), thread i reading element i.
template <class T, class Layout> layout_report layout_table(device_model const& model,
                                                            std::span<const std::size_t> selected = {},
                                                            std::uint64_t warps = 32);
// The same with the leaves as a braced list: layout_table<Particle, soa>(model, {0, 1, 2}).
template <class T, class Layout> layout_report layout_table(device_model const& model,
                                                            std::initializer_list<std::size_t> selected,
                                                            std::uint64_t warps = 32) {
  return layout_table<T, Layout>(model, std::span<const std::size_t>(selected.begin(), selected.size()), warps);
}
// aos, soa and aosoa<W> for each W given (aosoa<8> and aosoa<32> when none is).
template <class T, std::size_t... W>
std::vector<layout_report> compare_layouts(device_model const& model, std::span<const std::size_t> selected = {});

// The name reports give Layout: its static name() ("aos", "soa", "aosoa<32>", "split<...>"), else "custom".
template <class Layout> std::string layout_name();

// ----------------------------------------------------------------------------- shared memory

// Shared memory: `banks` banks of `bank_bytes` each; a warp's access takes as many wavefronts as
// the largest number of distinct words any one bank must deliver (the same word is broadcast).
struct bank_model {
  std::uint32_t banks = 32;      // 1..64
  std::uint32_t bank_bytes = 4;  // bytes a bank delivers per pass: 1, 2, 4, 8 or 16
  std::uint32_t warp_size = 32;  // lanes per warp, 1..64
};
// The passes one warp's shared-memory access takes (bank_conflicts).
struct bank_stats {
  std::uint32_t lanes = 0;             // active lanes
  std::uint64_t wavefronts = 0;        // passes the access takes
  std::uint64_t ideal_wavefronts = 0;  // passes a conflict-free access of the same words takes
  std::uint64_t degree = 0;            // wavefronts / ideal, rounded up: 1 = no conflict, 32 = 32-way
  std::uint32_t worst_bank = 0;        // a bank that needed `wavefronts` passes
};

// Lane k reads `width` bytes (1, 2, 4, 8 or 16, naturally aligned) at byte address lane_addresses[k].
bank_stats bank_conflicts(std::span<const std::uint64_t> lane_addresses, std::int64_t width,
                          bank_model const& banks = {});
// The same for a strided access (lane k at offset + k * stride; each lane naturally aligned).
bank_stats bank_conflicts(strided_pattern const& pattern, bank_model const& banks = {});

// A 2-D tile in shared memory, E tile[rows][row_elements + padding]; lane k reads element
// (row0 + k * row_step, col0 + k * col_step). Reading a column of a 32 x 32 float tile (the
// transpose) is tile_access{.row_elements = 32}: row_step 1, col_step 0.
struct tile_access {
  std::int64_t row_elements = 32;    // elements per row before padding, 1..2^24
  std::int64_t element_bytes = 4;    // 1, 2, 4, 8 or 16
  std::int64_t row0 = 0,             // lane 0's row
      col0 = 0;                      // lane 0's column, < row_elements
  std::int64_t row_step = 1,         // rows from one lane to the next
      col_step = 0;                  // columns from one lane to the next (every lane within the row)
  std::uint64_t active = all_lanes;  // bit k set: lane k takes part
};
// The tile's access with padding_elements (0..4096) extra elements per row. Throws coalesce::error
// for a lane outside the tile or a field out of range.
bank_stats bank_conflicts(tile_access const& tile, std::int64_t padding_elements, bank_model const& banks = {});

// What best_padding chose, and every padding it tried.
struct padding_choice {
  std::int64_t padding = 0;       // elements per row added
  bank_stats stats;               // the access with that padding
  std::vector<bank_stats> tried;  // tried[p]: the access with padding p
};
// Tries paddings 0..max_padding (at most 1024) elements per row; picks the smallest with the fewest
// wavefronts.
padding_choice best_padding(tile_access const& tile, std::int64_t max_padding = 8, bank_model const& banks = {});

// One line: lanes, wavefronts against the conflict-free count, and the conflict's degree and bank.
std::string describe(bank_stats const& stats);

// A leaf's member path as indices from the root, e.g. "0.2" for pos.z, "3[1]" for sub-column 1 of
// an array member: the names the reports use.
std::string leaf_path(reflect::leaf_info const& info, std::size_t sub);

// =============================================================================== implementation

}  // namespace coalesce::analysis

namespace coalesce::detail {

// A 1-D column as the analysis sees it: layout_storage's column_ref with the base as an offset
// from the start of a 256-byte aligned allocation.
struct column_desc {
  std::string path;
  std::size_t leaf, sub, bytes;
  std::uint64_t base, stride, block_stride;
  std::uint64_t block;  // elements per block, 0: unblocked
};
analysis::layout_report analyse_columns(analysis::device_model const& model, std::string layout,
                                        std::size_t record_bytes, std::vector<column_desc> const& columns,
                                        std::uint64_t warps);
std::vector<std::size_t> leaves_in_bytes(reflect::leaf_info const* table, std::size_t count, std::size_t offset,
                                         std::size_t size);

struct member_span {
  std::size_t offset, size;
};
template <class U, class M> member_span path_span(M U::*member) {
  return {coalesce::detail::member_offset(member), sizeof(M)};
}
// The next pointer must be a member of the previous member's type: the chain is type-checked.
template <class U, class M, class N, class... Rest> member_span path_span(M U::*member, N M::*next, Rest... rest) {
  member_span s = path_span(next, rest...);
  s.offset += coalesce::detail::member_offset(member);  // reference.hpp's, one definition
  return s;
}

}  // namespace coalesce::detail

namespace coalesce::analysis {

template <class Layout> std::string layout_name() { return coalesce::detail::layout_name_of<Layout>(); }

template <class T, class M, class... Rest> std::vector<std::size_t> leaves_of(M T::*member, Rest... rest) {
  static_assert(reflect::reflectable<T>, "coalesce: leaves_of() needs a member path of a reflectable struct");
  detail::member_span const s = detail::path_span(member, rest...);
  constexpr auto const& table = reflect::leaf_table_v<T>;
  return detail::leaves_in_bytes(table.data(), table.size(), s.offset, s.size);
}

template <class T, class Layout>
layout_report layout_table(device_model const& model, std::span<const std::size_t> selected, std::uint64_t warps) {
  model.validate();
  constexpr auto const& table = reflect::leaf_table_v<T>;
  for (std::size_t l : selected) {
    if (l >= table.size()) {
      coalesce::detail::throw_error("layout_table(): leaves: leaf index " + std::to_string(l) +
                                    " is out of range; the struct has " + std::to_string(table.size()) +
                                    " leaves (0.." + std::to_string(table.size() - 1) + ")");
    }
  }
  if (warps == 0 || warps > (std::uint64_t{1} << 16)) {
    coalesce::detail::throw_error("layout_table(): warps must be 1..65536 (got " + std::to_string(warps) + ")");
  }
  // Column addresses come from the layout's mapping itself, with blobs carved as a vector
  // carves them from one 256-byte aligned allocation, so the table can never disagree with
  // where the views put the data (and nothing is allocated to learn it).
  using storage = layout_storage<T, Layout>;
  using mapping = typename storage::mapping_type;
  std::size_t const capacity = static_cast<std::size_t>(warps) * model.warp_size;
  mapping const m(capacity);
  std::array<std::uint64_t, storage::blob_count> blob_start{};
  for (std::size_t b = 1; b < storage::blob_count; ++b) {
    blob_start[b] = blob_start[b - 1] + coalesce::detail::round_up(m.blob_bytes(b - 1), column_alignment);
  }
  std::vector<detail::column_desc> columns;
  for (std::size_t k = 0; k < (selected.empty() ? table.size() : selected.size()); ++k) {
    std::size_t const l = selected.empty() ? k : selected[k];
    // A bit-packed field is read and written as its word, which lies in its carrier's slot.
    std::size_t const slot = storage::slot_leaf(l);
    for (std::size_t j = 0; j < table[l].extent; ++j) {
      column_place const p = m.place(slot, j);
      columns.push_back({analysis::leaf_path(table[l], j), l, j, storage::leaf_bytes(slot),
                         blob_start[mapping::blob_of(slot)] + p.offset, p.stride, p.block_stride, p.block});
    }
  }
  // Stored bytes: a member kept in half counts 2 bytes per leaf (core/stored_as.hpp).
  return detail::analyse_columns(model, layout_name<Layout>(), storage::shape::record_bytes, columns, warps);
}

template <class T, std::size_t... W>
std::vector<layout_report> compare_layouts(device_model const& model, std::span<const std::size_t> selected) {
  std::vector<layout_report> out;
  out.push_back(layout_table<T, aos>(model, selected));
  out.push_back(layout_table<T, soa>(model, selected));
  if constexpr (sizeof...(W) == 0) {
    out.push_back(layout_table<T, aosoa<8>>(model, selected));
    out.push_back(layout_table<T, aosoa<32>>(model, selected));
  } else {
    (out.push_back(layout_table<T, aosoa<W>>(model, selected)), ...);
  }
  return out;
}

}  // namespace coalesce::analysis
