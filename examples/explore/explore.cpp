// coalesce-explore: see how a warp's loads turn into L1 requests and 32-byte sectors.
//
//   coalesce-explore --stride 24 --width 4            # the x field of a 24-byte AoS record
//   coalesce-explore --stride 4 --offset 4             # one float of misalignment: 5 sectors
//   coalesce-explore --stride 128 --device line-based  # 128-byte lines (Fermi to Pascal)
//   coalesce-explore --stride 128 --banks               # and in shared memory: 32-way, pad +1
//   coalesce-explore --struct --fields 0,3              # a Particle's pos.x and vel.x per layout
//   coalesce-explore --index idx.bin --index-type u32 --element-size 4   # a real gather
//   coalesce-explore --advise                           # which layout the samples' kernels want
//   coalesce-explore ... --json                         # machine-readable
//
// Index files are raw little-endian unsigned integers, 4 bytes (u32) or 8 bytes (u64) each, no
// header: what `fwrite(idx.data(), sizeof idx[0], n, f)` writes on x86 and Arm.
// Exit status: 0 on success, 1 when the model rejects the input, 2 for bad command-line arguments.
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <coalesce/analysis/analysis.hpp>
#include <coalesce/analysis/advisor.hpp>
#include <coalesce/core/split.hpp>

#include "advise_samples.hpp"
#include "json_writer.hpp"
#include "warp_picture.hpp"

namespace ca = coalesce::analysis;

// The built-in example, as in DESIGN.md: 8 leaves of 4 bytes, a 32-byte record. In a named
// namespace: reflecting a type with internal linkage fails to link (coalesce's member_types.hpp
// declares a function it never defines, and gcc -O0 still references it for such types).
namespace explore {
struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};
}  // namespace explore
using explore::Particle;

namespace {

// Boost.PFR (1.81) cannot give member names, so the library speaks in index paths; the explorer
// knows its own example and shows both.
constexpr char const* particle_names[] = {"pos.x", "pos.y", "pos.z", "vel.x", "vel.y", "vel.z", "mass", "id"};

struct usage_error {
  std::string what;
};

struct options {
  std::int64_t width = 4;
  std::optional<std::int64_t> stride;
  std::uint64_t offset = 0;
  std::optional<std::int64_t> lanes;
  std::optional<std::uint64_t> mask;
  std::optional<std::size_t> threads;
  std::string device = "hopper";
  bool banks = false;
  bool structs = false;
  bool advise = false;
  std::size_t particles = 16384;
  std::size_t system = 4'194'304;  // the samples' own size: what the counted sample stands for
  std::vector<std::size_t> fields;
  std::optional<std::string> index_file;
  std::string index_type = "u32";
  std::int64_t element_size = 4;
  std::optional<std::int64_t> neighbours;
  std::string order = "row";
  std::optional<std::uint64_t> empty_slot;
  bool json = false;
  bool help = false;
};

constexpr char const* usage_text = R"(usage: coalesce-explore [options]

One warp-wide load (default):
  --width BYTES         bytes each lane loads (default 4)
  --stride BYTES        bytes between consecutive lanes, may be 0 or negative (default: width)
  --offset BYTES        address of lane 0; only its alignment matters (default 0)
  --lanes N             the first N lanes are active (default: all 32)
  --mask HEX            active lanes as a bit mask, e.g. 0xffff0000 (instead of --lanes)
  --device NAME         hopper | sectored | line-based (default hopper)
  --banks               also model the pattern in shared memory (32 banks of 4 bytes) and
                        search a row padding that removes bank conflicts
  --threads N           also a whole kernel of N threads, thread t loading at offset + t * stride,
                        through the cache model: L2 sectors and DRAM bytes read (full warps,
                        --stride >= 0, --width up to 16)
A reflected struct (built-in example: struct Particle { vec3 pos, vel; float mass; uint32 id; }):
  --struct              table per layout: aos, soa, aosoa<8>, aosoa<32>, split<pos>, split<pos, mass>
  --fields LIST         leaf indices the kernel reads, e.g. 0,1,2 (default: all 8)
A real index array (gather in[idx[i]]):
  --index FILE          raw little-endian unsigned integers, no header
  --index-type u32|u64  bytes per index in FILE: 4 or 8 (default u32)
  --element-size BYTES  bytes of each gathered element (default 4)
  --neighbours K        FILE is a neighbour list, K slots per particle (pair kernel)
  --order row|column    neighbour-list storage: row-major or column-major (default row)
  --empty VALUE         neighbour-list slots holding VALUE are padding, not loads
Layout advice for the samples' kernels (counted on the CPU, ranked by the sector model):
  --advise              neighbour forces (random and Hilbert order), the integrator step, a mix
  --particles N         particles of the sample (default 16384); above 65536 the sample is the
                        whole system and a window of 16384 threads of it is counted
  --system N            particles of the real system a sample of up to 65536 stands for (default
                        4194304, the neighbour sample's size; the L2 model is scaled by particles /
                        system)
Output:
  --json                machine-readable JSON on stdout
  --help                this text

Numbers are L1 requests and 32-byte sectors of global loads, what Nsight Compute counts as
l1tex__t_sectors_pipe_lsu_mem_global_op_ld; they are not DRAM bytes. A whole kernel (--threads,
--index) adds the cache model's L2 sectors and DRAM bytes read (lts__t_sectors_srcunit_tex_op_read,
dram__bytes_read), with every cache empty at the start, as Nsight Compute runs a kernel.
)";

template <class I> I parse_integer(std::string_view flag, std::string_view text) {
  I value{};
  int base = 10;
  std::string_view digits = text;
  bool negative = false;
  if constexpr (std::is_signed_v<I>) {
    if (!digits.empty() && digits[0] == '-') {
      negative = true;
      digits.remove_prefix(1);
    }
  }
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  std::string const signed_digits = (negative ? "-" : "") + std::string(digits);
  auto const [end, ec] =
      std::from_chars(signed_digits.data(), signed_digits.data() + signed_digits.size(), value, base);
  if (digits.empty() || ec != std::errc{} || end != signed_digits.data() + signed_digits.size()) {
    throw usage_error{std::string(flag) + ": '" + std::string(text) + "' is not " +
                      (std::is_signed_v<I> ? "an integer" : "a non-negative integer") +
                      (ec == std::errc::result_out_of_range ? " in range" : "") + " (decimal, or hex with 0x)"};
  }
  return value;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view const flag = argv[i];
    auto next = [&]() -> std::string_view {
      if (i + 1 >= argc) throw usage_error{std::string(flag) + " needs a value"};
      return argv[++i];
    };
    if (flag == "--width") {
      o.width = parse_integer<std::int64_t>(flag, next());
    } else if (flag == "--stride") {
      o.stride = parse_integer<std::int64_t>(flag, next());
    } else if (flag == "--offset") {
      o.offset = parse_integer<std::uint64_t>(flag, next());
    } else if (flag == "--lanes") {
      o.lanes = parse_integer<std::int64_t>(flag, next());
    } else if (flag == "--mask") {
      o.mask = parse_integer<std::uint64_t>(flag, next());
    } else if (flag == "--threads") {
      o.threads = parse_integer<std::size_t>(flag, next());
      if (*o.threads < 1) throw usage_error{"--threads: at least 1"};
    } else if (flag == "--device" || flag == "--model") {
      o.device = next();
    } else if (flag == "--banks") {
      o.banks = true;
    } else if (flag == "--advise") {
      o.advise = true;
    } else if (flag == "--system") {
      o.system = parse_integer<std::size_t>(flag, next());
      if (o.system < 1) throw usage_error{"--system: at least 1 particle"};
    } else if (flag == "--particles") {
      o.particles = parse_integer<std::size_t>(flag, next());
      if (o.particles < 64) throw usage_error{"--particles: at least 64 (two warps and a box of a few cells)"};
    } else if (flag == "--struct") {
      o.structs = true;
    } else if (flag == "--fields") {
      std::string_view list = next();
      while (!list.empty()) {
        std::size_t const comma = list.find(',');
        o.fields.push_back(parse_integer<std::size_t>(flag, list.substr(0, comma)));
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
      }
      if (o.fields.empty()) throw usage_error{"--fields needs at least one leaf index, e.g. 0,1,2"};
    } else if (flag == "--index") {
      o.index_file = std::string(next());
    } else if (flag == "--index-type") {
      o.index_type = next();
      if (o.index_type != "u32" && o.index_type != "u64") {
        throw usage_error{"--index-type: '" + o.index_type + "' is not u32 or u64"};
      }
    } else if (flag == "--element-size") {
      o.element_size = parse_integer<std::int64_t>(flag, next());
    } else if (flag == "--neighbours" || flag == "--neighbors") {
      o.neighbours = parse_integer<std::int64_t>(flag, next());
    } else if (flag == "--order") {
      o.order = next();
      if (o.order != "row" && o.order != "column") throw usage_error{"--order: '" + o.order + "' is not row or column"};
    } else if (flag == "--empty") {
      o.empty_slot = parse_integer<std::uint64_t>(flag, next());
    } else if (flag == "--json") {
      o.json = true;
    } else if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else {
      throw usage_error{"unknown argument '" + std::string(flag) + "' (see --help)"};
    }
  }
  if (o.lanes && o.mask) throw usage_error{"give --lanes or --mask, not both"};
  if (o.threads && (o.structs || o.index_file || o.advise)) {
    throw usage_error{
        "--threads is for one load pattern (--width, --stride, --offset); a gather's kernel is its index file"};
  }
  if (o.structs && o.index_file) throw usage_error{"give --struct or --index, not both"};
  if (o.neighbours && !o.index_file) throw usage_error{"--neighbours needs --index FILE"};
  return o;
}

ca::device_model device_named(std::string const& name) {
  if (name == "hopper") return ca::device_model::hopper();
  if (name == "sectored" || name == "volta") return ca::device_model::sectored();
  if (name == "line-based" || name == "line_based" || name == "lines") return ca::device_model::line_based();
  throw usage_error{"--device: '" + name + "' is not hopper, sectored or line-based"};
}

void write_model(explore::json_writer& j, ca::device_model const& m) {
  j.begin_object("device")
      .value("name", m.name)
      .value("warp_size", m.warp_size)
      .value("sector_bytes", m.sector_bytes)
      .value("line_bytes", m.line_bytes)
      .value("fetch", m.fetch == ca::fetch_unit::sector ? "sector" : "line")
      .end_object();
}

void write_stats(explore::json_writer& j, std::string_view key, ca::access_stats const& s) {
  j.begin_object(key)
      .value("warps", s.warps)
      .value("lanes", s.lanes)
      .value("width", s.width)
      .value("instruction_bytes", s.instruction_bytes)
      .value("requests", s.requests)
      .value("sectors", s.sectors)
      .value("lines", s.lines)
      .value("bytes_requested", s.bytes_requested)
      .value("bytes_useful", s.bytes_useful)
      .value("bytes_fetched", s.bytes_fetched)
      .value("sectors_per_request", s.sectors_per_request())
      .value("lines_per_request", s.lines_per_request())
      .value("efficiency", s.efficiency())
      .end_object();
}

void write_kernel(explore::json_writer& j, ca::kernel_prediction const& k) {
  j.begin_object("kernel_caches")
      .value("threads", k.threads)
      .value("l1_sectors", k.l1_sectors)
      .value("l2_sectors", k.l2_sectors)
      .value("dram_read_bytes", k.dram_bytes)
      .end_object();
}

std::string kernel_line(ca::kernel_prediction const& k) {
  return "whole kernel of " + std::to_string(k.threads) +
         " threads (caches empty at the start): " + std::to_string(k.l2_sectors) + " L2 sectors, " +
         std::to_string(k.dram_bytes) + " DRAM bytes read\n";
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}

// ------------------------------------------------------------------------------------ modes

int run_pattern(options const& o, ca::device_model const& model) {
  std::int64_t const stride = o.stride.value_or(o.width);
  std::uint64_t const mask = o.mask ? *o.mask : o.lanes ? ca::first_lanes(*o.lanes) : ca::all_lanes;
  ca::strided_pattern const p{o.width, stride, o.offset, mask};
  ca::access_stats const s = ca::strided(model, p);  // validates everything before we draw
  std::optional<ca::kernel_prediction> kernel;
  if (o.threads) {
    if (stride < 0 || o.width > 16 || o.mask || o.lanes) {
      throw usage_error{"--threads: a kernel of full warps loading up to 16 bytes at a stride >= 0"};
    }
    ca::plain_load const load{static_cast<std::uint32_t>(o.width), static_cast<std::uint64_t>(stride), o.offset, {}};
    kernel = ca::predict_loads(model, std::span(&load, 1), *o.threads);
  }

  std::vector<std::uint64_t> addresses(model.warp_size, 0);
  std::vector<bool> active(model.warp_size, false);
  for (std::uint32_t k = 0; k < model.warp_size; ++k) {
    active[k] = ((mask >> k) & 1) != 0;
    if (active[k]) addresses[k] = o.offset + static_cast<std::uint64_t>(stride) * k;  // checked by strided()
  }
  std::optional<ca::bank_stats> banks;
  std::optional<ca::padding_choice> padding;
  if (o.banks) {
    banks = ca::bank_conflicts(p);
    // Read as a column of a tile whose rows are `stride` bytes: the classic fix is to pad rows.
    if (stride > 0 && stride % o.width == 0 &&
        (o.width == 1 || o.width == 2 || o.width == 4 || o.width == 8 || o.width == 16)) {
      ca::tile_access t;
      t.row_elements = stride / o.width;
      t.element_bytes = o.width;
      t.col0 = static_cast<std::int64_t>(o.offset % static_cast<std::uint64_t>(stride)) / o.width;
      t.row0 = static_cast<std::int64_t>(o.offset / static_cast<std::uint64_t>(stride));
      t.active = mask;
      if (t.row_elements <= (std::int64_t{1} << 20) && t.row0 < (std::int64_t{1} << 20) && o.offset % o.width == 0) {
        padding = ca::best_padding(t);
      }
    }
  }

  if (o.json) {
    explore::json_writer j;
    j.begin_object().value("mode", "pattern");
    write_model(j, model);
    char mask_hex[24];
    std::snprintf(
        mask_hex, sizeof mask_hex, "0x%llx",
        static_cast<unsigned long long>(mask & (model.warp_size == 64 ? ~0ull : (1ull << model.warp_size) - 1)));
    j.begin_object("pattern")
        .value("width", o.width)
        .value("stride", stride)
        .value("offset", o.offset)
        .value("active_mask", std::string_view(mask_hex))
        .value("active_lanes", s.lanes)
        .end_object();
    j.value("level", ca::level_note());
    write_stats(j, "load", s);
    j.value("requests", s.requests)
        .value("sectors", s.sectors)
        .value("sectors_per_request", s.sectors_per_request())
        .value("efficiency", s.efficiency());
    j.value("predicted_ncu_sectors_per_request", s.sectors_per_request());
    if (kernel) write_kernel(j, *kernel);
    j.begin_array("lane_addresses");
    for (std::uint32_t k = 0; k < model.warp_size; ++k) {
      if (active[k]) j.element(addresses[k]);
    }
    j.end_array();
    if (banks) {
      j.begin_object("shared_memory")
          .value("wavefronts", banks->wavefronts)
          .value("ideal_wavefronts", banks->ideal_wavefronts)
          .value("degree", banks->degree);
      if (padding)
        j.value("best_padding_elements", padding->padding).value("degree_with_padding", padding->stats.degree);
      j.end_object();
    }
    j.end_object();
    std::cout << j.str() << "\n";
    return 0;
  }

  std::cout << "one warp-wide load on " << model.name << " (" << model.warp_size << " lanes, " << model.sector_bytes
            << "-byte sectors, " << model.line_bytes << "-byte lines, fetches "
            << (model.fetch == ca::fetch_unit::sector ? "sectors" : "whole lines") << ")\n";
  std::cout << "pattern: " << s.lanes << " active lanes x " << o.width << " B, stride " << stride << " B, offset "
            << o.offset << " B";
  if (s.requests > 1)
    std::cout << "; split into " << s.requests << " loads of " << s.instruction_bytes << " B per lane";
  std::cout << "\n\n" << explore::warp_picture(model, addresses, active, static_cast<std::uint64_t>(o.width)) << "\n";
  std::cout << ca::describe(s, model);
  if (banks) {
    std::cout << "\nshared memory (32 banks x 4 B): " << ca::describe(*banks);
    if (padding && banks->degree > 1) {
      if (padding->stats.degree < banks->degree) {
        std::cout << "  as a column of a tile with " << stride / o.width << "-element rows: pad each row by +"
                  << padding->padding << " element" << (padding->padding == 1 ? "" : "s") << " -> "
                  << ca::describe(padding->stats);
      } else {
        std::cout << "  no row padding of 0..8 elements helps this pattern\n";
      }
    }
  }
  if (kernel) std::cout << kernel_line(*kernel);
  return 0;
}

using split_pos = coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, coalesce::soa>;
using split_pos_mass = coalesce::split<coalesce::fields<&Particle::pos, &Particle::mass>, coalesce::aos, coalesce::soa>;

int run_struct(options const& o, ca::device_model const& model) {
  auto tables = ca::compare_layouts<Particle>(model, o.fields);
  // The splits a neighbour-force kernel wants: positions (and mass) packed, the rest as columns.
  tables.push_back(ca::layout_table<Particle, split_pos>(model, o.fields));
  tables.back().layout = "split<pos: aos, soa>";
  tables.push_back(ca::layout_table<Particle, split_pos_mass>(model, o.fields));
  tables.back().layout = "split<pos, mass: aos, soa>";
  if (o.json) {
    explore::json_writer j;
    j.begin_object().value("mode", "struct").value("type", "Particle { vec3 pos; vec3 vel; float mass; uint32_t id; }");
    write_model(j, model);
    j.value("level", ca::level_note());
    j.begin_array("layouts");
    for (auto const& t : tables) {
      j.begin_object().value("layout", t.layout).value("record_bytes", t.record_bytes).value("warps", t.warps);
      j.begin_array("rows");
      for (auto const& row : t.rows) {
        j.begin_object()
            .value("path", row.path)
            .value("name", particle_names[row.leaf])
            .value("leaf", row.leaf)
            .value("bytes", row.bytes)
            .value("requests_per_warp", double(row.stats.requests) / double(t.warps))
            .value("sectors_per_request", row.stats.sectors_per_request())
            .value("efficiency", row.stats.efficiency())
            .end_object();
      }
      j.end_array();
      write_stats(j, "total", t.total);
      j.end_object();
    }
    j.end_array().end_object();
    std::cout << j.str() << "\n";
    return 0;
  }
  std::cout << "struct Particle { vec3 pos; vec3 vel; float mass; uint32_t id; } on " << model.name
            << "; leaves as index paths (Boost.PFR gives no names):\n  ";
  for (std::size_t l = 0; l < 8; ++l) {
    std::cout << ca::leaf_path(coalesce::reflect::leaf_table_v<Particle>[l], 0) << " = " << particle_names[l]
              << (l == 7 ? "\n\n" : ", ");
  }
  for (auto const& t : tables) std::cout << ca::describe(t) << "\n";
  std::cout << "(split: the packed group is a 16-byte record, read here leaf by leaf; a kernel that loads a packed\n"
               " position whole touches the same sectors in one 16-byte request per lane: coalesce-explore --advise\n"
               " ranks layouts for whole kernels)\n";
  std::cout << "summary (all selected leaves):";
  for (auto const& t : tables) {
    std::cout << "  " << t.layout << " " << percent(t.total.efficiency());
  }
  std::cout << "\n";
  return 0;
}

int run_index(options const& o, ca::device_model const& model) {
  ca::index_width const w = o.index_type == "u64" ? ca::index_width::u64 : ca::index_width::u32;
  std::vector<std::uint64_t> const idx = ca::read_index_file(*o.index_file, w);
  ca::report r;
  if (o.neighbours) {
    std::vector<std::uint32_t> narrow(idx.size());
    for (std::size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] > 0xFFFFFFFFull)
        throw usage_error{"--neighbours: neighbour lists hold u32 indices; entry " + std::to_string(i) + " is larger"};
      narrow[i] = static_cast<std::uint32_t>(idx[i]);
    }
    ca::neighbor_list_ref list{
        narrow, *o.neighbours,
        o.order == "row" ? coalesce::neighbor_order::row_major : coalesce::neighbor_order::column_major, o.empty_slot};
    r = ca::gather(model, list, o.element_size);
  } else if (w == ca::index_width::u32) {
    std::vector<std::uint32_t> narrow(idx.begin(), idx.end());
    r = ca::gather(model, narrow, o.element_size);
  } else {
    r = ca::gather(model, idx, o.element_size);
  }
  ca::access_stats const kernel = r.kernel();
  // The gather kernel through the caches: thread t loads idx[t], then in[idx[t]].
  std::optional<ca::kernel_prediction> caches;
  if (!o.neighbours && o.element_size >= 1 && o.element_size <= 16) {
    auto const index_bytes = static_cast<std::uint32_t>(w);
    auto const element = static_cast<std::uint32_t>(o.element_size);
    std::array<ca::plain_load, 2> const loads{ca::plain_load{index_bytes, index_bytes, 0, {}},
                                              ca::plain_load{element, element, 0, idx}};
    caches = ca::predict_loads(model, loads, idx.size());
  }
  if (o.json) {
    explore::json_writer j;
    j.begin_object()
        .value("mode", "gather")
        .value("file", *o.index_file)
        .value("index_type", o.index_type)
        .value("indices", idx.size())
        .value("element_size", o.element_size)
        .value("what", r.what);
    write_model(j, model);
    j.value("level", ca::level_note());
    write_stats(j, "data", r.data);
    write_stats(j, "index_loads", r.index_loads);
    write_stats(j, "kernel", kernel);
    j.begin_array("sectors_histogram");
    for (auto c : r.sectors_histogram) j.element(c);
    j.end_array();
    j.value("sectors_per_request", r.sectors_per_request()).value("efficiency", r.efficiency());
    // ncu sums over every global load of the kernel: the index loads and the gathered ones.
    j.value("predicted_ncu_sectors_per_request", kernel.sectors_per_request());
    if (caches) write_kernel(j, *caches);
    j.end_object();
    std::cout << j.str() << "\n";
    return 0;
  }
  std::cout << ca::describe(r);
  std::cout << "kernel (index + data loads): " << kernel.requests << " requests, " << kernel.sectors << " sectors, "
            << kernel.sectors_per_request() << " sectors per request\n";
  if (caches) std::cout << kernel_line(*caches);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    options const o = parse(argc, argv);
    if (o.help) {
      std::cout << usage_text;
      return 0;
    }
    ca::device_model const model = device_named(o.device);
    if (o.advise) return advise_samples(model, o.json, o.particles, o.system);
    if (o.structs) return run_struct(o, model);
    if (o.index_file) return run_index(o, model);
    return run_pattern(o, model);
  } catch (usage_error const& e) {
    std::cerr << "coalesce-explore: " << e.what << "\n";
    return 2;
  } catch (coalesce::error const& e) {
    std::cerr << "coalesce-explore: " << e.what() << "\n";
    return 1;
  } catch (std::exception const& e) {
    std::cerr << "coalesce-explore: " << e.what() << "\n";
    return 1;
  }
}
