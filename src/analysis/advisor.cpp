// The layout advisor's engine (coalesce/analysis/advisor.hpp): a counted kernel's accesses replayed warp
// by warp against each candidate's addresses, sectors counted, candidates ranked and explained.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <coalesce/analysis/advisor.hpp>
#include <coalesce/core/error.hpp>

#include "cache_model.hpp"

namespace coalesce {
namespace {

std::string fixed(double v, int digits = 2) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string json_string(std::string const& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A pasted type without the namespace, for tables: split<fields<&Particle::pos>, aos, soa>.
std::string short_type(std::string type) {
  for (std::size_t at = type.find("coalesce::"); at != std::string::npos; at = type.find("coalesce::"))
    type.erase(at, 10);
  return type;
}

}  // namespace
}  // namespace coalesce

namespace coalesce::analysis {

double kernel_prediction::bytes_per_thread() const {
  return threads == 0 ? 0.0 : static_cast<double>(sectors) * sector_bytes / static_cast<double>(threads);
}
double kernel_prediction::dram_bytes_per_thread() const {
  return threads == 0 ? 0.0 : static_cast<double>(dram_bytes) / static_cast<double>(threads);
}

std::string describe(advice const& a) {
  std::ostringstream o;
  layout_prediction const& best = a.best();
  o << "layout advice (" << a.model.name << " model: each kernel's time per thread is the slowest of its L1 "
    << "sectors, L2 sectors and DRAM bytes at the device's rates; kernels weighted). GPU advice: on a CPU "
    << "every layout but aosoa is within 5 % for these kernels (docs/layouts.md)\n";
  // The name column is as wide as the longest name: every printed type is whole (it compiles).
  std::size_t width = 20;
  for (auto const& p : a.ranking) width = std::max(width, short_type(p.cpp_type).size());
  auto const cell = [&](std::string const& text, std::size_t w) {
    o << " " << std::string(w > text.size() ? w - text.size() : 0, ' ') << text;
  };
  o << "  " << std::string(width, ' ');
  for (auto const& k : best.kernels) cell(k.kernel + " ps", 14);
  o << "   mix ps/thread  x best  DRAM B/thread\n";
  for (auto const& p : a.ranking) {
    std::string const name = short_type(p.cpp_type);
    o << "  " << name << std::string(width - name.size(), ' ');
    for (auto const& k : p.kernels) cell(fixed(k.time_ps_per_thread, 1) + " " + std::string(k.bound), 14);
    cell(fixed(p.weighted_time_ps, 1), 16);
    cell(fixed(p.weighted_time_ps / best.weighted_time_ps), 7);
    cell(fixed(p.weighted_dram_bytes_per_thread, 1), 14);
    o << "\n";
  }
  o << "recommended: " << best.cpp_type << "\n";
  for (auto const& r : a.reasons) o << "  - " << r << "\n";
  if (!a.precision.empty()) {
    o << "precision options (not recommended: each changes the numbers the kernels compute):\n";
    for (auto const& p : a.precision) {
      o << "  " << short_type(p.cpp_type) << ": " << fixed(p.time_vs_best) << "x the recommended layout's time ("
        << fixed(p.time_vs_soa) << "x soa at full precision); " << p.member << " as " << p.format << ": " << p.error
        << "\n";
    }
  }
  return o.str();
}

std::string to_json(advice const& a) {
  std::ostringstream o;
  o << "{\"model\": " << json_string(std::string(a.model.name))
    << ", \"recommended\": " << json_string(a.best().cpp_type) << ", \"reasons\": [";
  for (std::size_t r = 0; r < a.reasons.size(); ++r) o << (r ? ", " : "") << json_string(a.reasons[r]);
  o << "], \"ranking\": [";
  for (std::size_t i = 0; i < a.ranking.size(); ++i) {
    auto const& p = a.ranking[i];
    o << (i ? ", " : "") << "{\"layout\": " << json_string(p.layout) << ", \"type\": " << json_string(p.cpp_type)
      << ", \"mix_bytes_per_thread\": " << p.weighted_bytes_per_thread
      << ", \"mix_dram_bytes_per_thread\": " << p.weighted_dram_bytes_per_thread
      << ", \"mix_time_ps_per_thread\": " << p.weighted_time_ps << ", \"kernels\": [";
    for (std::size_t k = 0; k < p.kernels.size(); ++k) {
      auto const& kp = p.kernels[k];
      o << (k ? ", " : "") << "{\"kernel\": " << json_string(kp.kernel) << ", \"sectors\": " << kp.sectors
        << ", \"l1_sectors\": " << kp.l1_sectors << ", \"requests\": " << kp.requests
        << ", \"l2_sectors\": " << kp.l2_sectors << ", \"dram_bytes\": " << kp.dram_bytes
        << ", \"pair_tests\": " << kp.pair_tests << ", \"time_ps_per_thread\": " << kp.time_ps_per_thread
        << ", \"bound\": " << json_string(std::string(kp.bound)) << ", \"bytes_per_thread\": " << kp.bytes_per_thread()
        << ", \"threads\": " << kp.threads << ", \"replayed_threads\": " << kp.replayed_threads << "}";
    }
    o << "]}";
  }
  o << "], \"precision\": [";
  for (std::size_t i = 0; i < a.precision.size(); ++i) {
    auto const& p = a.precision[i];
    o << (i ? ", " : "") << "{\"member\": " << json_string(p.member) << ", \"format\": " << json_string(p.format)
      << ", \"type\": " << json_string(p.cpp_type) << ", \"time_vs_best\": " << p.time_vs_best
      << ", \"time_vs_soa\": " << p.time_vs_soa << ", \"relative_error\": " << p.relative_error
      << ", \"error\": " << json_string(p.error) << "}";
  }
  o << "]}";
  return o.str();
}

}  // namespace coalesce::analysis

namespace coalesce::detail {

analysis::precision_option describe_precision(precision_candidate const& c, analysis::layout_prediction prediction,
                                              analysis::layout_prediction const& best,
                                              analysis::layout_prediction const& soa_prediction,
                                              std::vector<std::string> const& names) {
  analysis::precision_option o;
  o.member = names.empty() ? "member " + std::to_string(c.member) : names[c.member];
  o.cpp_type = prediction.cpp_type;
  o.time_vs_best = best.weighted_time_ps > 0 ? prediction.weighted_time_ps / best.weighted_time_ps : 1.0;
  o.time_vs_soa =
      soa_prediction.weighted_time_ps > 0 ? prediction.weighted_time_ps / soa_prediction.weighted_time_ps : 1.0;
  if (c.format == narrower::half) {
    o.format = "half";
    o.relative_error = std::ldexp(1.0, -11);  // round to nearest even, 11 significant bits
    o.error =
        "each stored value rounded to 11 significant bits (relative error up to 4.9e-04, every write; "
        "below 6.1e-05 in magnitude the absolute error is up to 3.0e-08); magnitudes above 65504 are "
        "refused (half_format<coalesce::saturate> clamps); bfloat16 keeps float's range at 8 bits "
        "(3.9e-03)";
  } else {
    o.format = "float";
    o.relative_error = std::ldexp(1.0, -24);
    o.error =
        "each stored value rounded to float (relative error up to 6.0e-08, every write); magnitudes "
        "above 3.4e+38 are refused";
  }
  o.prediction = std::move(prediction);
  return o;
}

void counting_state::out_of_range(std::size_t element) const {
  throw_error("count_accesses('" + trace->kernel + "'): thread " + std::to_string(thread) + " touched element " +
              std::to_string(element) + " of a sample of " + std::to_string(elements) +
              " elements; the kernel's indices (a neighbour list, a cell list) must point into the sample: build "
              "them from the sample, or count with a sample that holds every element they name");
}

namespace {

// Calibrated on the H200 with Nsight Compute (tests/data/h200_ncu_neighbor_layouts_2026-12-01.txt):
// a sector from DRAM is in flight for the warp's next 2 instructions (pending_read), and DRAM is
// read 64 bytes at a time.
constexpr std::size_t in_flight_instructions = 2;
constexpr std::uint64_t dram_fetch_sectors = 2;

// A read that missed L1 and went to L2: until its sector arrives, a hit on it in the L1 model is a
// miss that goes to L2 again. Which reads find it still in flight (calibrated against Nsight
// Compute's L2 sectors on the H200, both orders of the neighbour kernel): the same warp's next
// instruction when the sector came from DRAM (a struct's second member read right after the first,
// in random order; from L2 it has arrived, as after a spatial sort). Another warp's read of it
// waits for the same fill, counted as an L1 hit (Nsight Compute on coalesce_ncu_patterns'
// offset_float: the sector two warps of a block share goes to L2 once).
struct pending_read {
  std::size_t warp = 0;         // the warp, counted from the kernel's first
  std::size_t instruction = 0;  // its k-th instruction
  bool from_dram = false;
  bool arrived_for(std::size_t reader_warp, std::size_t reader_instruction) const {
    return reader_warp != warp || !from_dram || reader_instruction >= instruction + in_flight_instructions;
  }
};

// The share of the real L2 the sample's replay gets. Random gathers (and streams) reuse an element
// after the whole array has gone by: reuse distances grow as the system, so the L2 shrinks by
// elements / system_elements. Gathers in a spatial order reuse an element after the neighbours
// along the curve have gone by, a distance that grows as the system's surface, (elements /
// system_elements)^(2/3) in 3-D. Which one: the median distance between a gathering thread and
// the element it reads, over the sample (under a tenth of it: spatial order).
double l2_share(analysis::access_trace const& trace) {
  if (trace.system_elements <= trace.elements || trace.elements == 0) return 1.0;
  double const ratio = static_cast<double>(trace.elements) / static_cast<double>(trace.system_elements);
  std::vector<std::uint32_t> distance;
  std::size_t const step = std::max<std::size_t>(1, trace.threads / 4096);  // a few thousand threads are enough
  for (std::size_t t = 0; t < trace.threads; t += step) {
    for (std::size_t a = trace.thread_begin[t]; a < trace.thread_begin[t + 1]; ++a) {
      auto const& x = trace.accesses[a];
      if (x.column >= trace.element_columns || x.element == t % trace.elements) continue;
      std::size_t const d = x.element > t ? x.element - t : t - x.element;
      distance.push_back(static_cast<std::uint32_t>(std::min(d, trace.elements - d % trace.elements)));
    }
  }
  if (distance.empty()) return ratio;
  auto const middle = distance.begin() + static_cast<std::ptrdiff_t>(distance.size() / 2);
  std::nth_element(distance.begin(), middle, distance.end());
  bool const spatial = *middle < trace.elements / 10;
  return spatial ? std::pow(ratio, 2.0 / 3.0) : ratio;
}

// l2_share depends on the trace alone, and one advise() asks it of every trace once per candidate
// (a scan of a few thousand threads' accesses and a median each time: a tenth of the replay at
// small samples). run_predictions keeps one answer per trace for the duration of its jobs: each of
// its threads points here at the call's memo (the traces outlive the call; nothing else shares it).
struct share_memo {
  std::mutex lock;
  std::vector<std::pair<analysis::access_trace const*, double>> shares;
};
thread_local share_memo* current_share_memo = nullptr;

double remembered_l2_share(analysis::access_trace const& trace) {
  share_memo* const memo = current_share_memo;
  if (memo == nullptr) return l2_share(trace);
  {
    std::lock_guard<std::mutex> hold(memo->lock);
    for (auto const& [t, share] : memo->shares) {
      if (t == &trace) return share;
    }
  }
  double const share = l2_share(trace);  // the same value whichever thread computes it first
  std::lock_guard<std::mutex> hold(memo->lock);
  memo->shares.emplace_back(&trace, share);
  return share;
}

// One instruction of one lane: the access it starts (its address is that leaf's) and its width.
struct lane_instruction {
  std::size_t access;
  std::uint32_t width;
};

// A lane's accesses as the instructions the compiler issues for them under this mapping: a read of
// a struct whose slot allows it is one vector load (vector_rule), anything else one instruction per leaf.
void instructions_of(analysis::access_trace const& trace, std::size_t thread, std::vector<column_desc> const& columns,
                     vector_load_rule vector_rule, std::vector<lane_instruction>& out) {
  out.clear();
  std::size_t const end = trace.thread_begin[thread + 1];
  for (std::size_t at = trace.thread_begin[thread]; at < end;) {
    analysis::field_access const& a = trace.accesses[at];
    std::size_t last = at + 1;  // the leaves of this C++ access: [at, last)
    while (last < end && trace.accesses[last].access_bytes == 0) ++last;
    column_desc const& first = columns[a.column];
    std::size_t const leaves = columns[trace.accesses[last - 1].column].leaf - first.leaf + 1;
    std::uint32_t const vector = !a.write && first.sub == 0 && last - at > 1 && a.access_bytes > 0
                                     ? vector_rule(first.leaf, leaves, a.access_bytes)
                                     : 0;
    if (vector != 0) {
      out.push_back({at, vector});
    } else {
      for (std::size_t k = at; k < last; ++k)
        out.push_back({k, static_cast<std::uint32_t>(columns[trace.accesses[k].column].bytes)});
    }
    at = last;
  }
}

// The distinct sectors one warp touches: an open-addressing set emptied per warp by a new
// generation (no clearing of the table), grown when half full.
class distinct_sectors {
 public:
  void clear() {
    count_ = 0;
    if (++generation_ == 0) {  // wrapped: stamps of the past could match again
      std::fill(stamps_.begin(), stamps_.end(), 0);
      generation_ = 1;
    }
  }
  void insert(std::uint64_t sector) {
    if (2 * (count_ + 1) > keys_.size()) grow();
    std::size_t const mask = keys_.size() - 1;
    for (std::size_t at = hash(sector) & mask;; at = (at + 1) & mask) {
      if (stamps_[at] != generation_) {
        stamps_[at] = generation_;
        keys_[at] = sector;
        ++count_;
        return;
      }
      if (keys_[at] == sector) return;
    }
  }
  std::uint64_t size() const { return count_; }

 private:
  static std::size_t hash(std::uint64_t x) {
    x *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(x ^ (x >> 32));
  }
  void grow() {
    std::vector<std::uint64_t> old_keys;
    std::vector<std::uint32_t> old_stamps;
    old_keys.swap(keys_);
    old_stamps.swap(stamps_);
    std::uint32_t const old_generation = generation_;
    keys_.assign(std::max<std::size_t>(1024, 2 * old_keys.size()), 0);
    stamps_.assign(keys_.size(), 0);
    generation_ = 1;
    count_ = 0;
    for (std::size_t k = 0; k < old_keys.size(); ++k) {
      if (old_stamps[k] == old_generation) insert(old_keys[k]);
    }
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> stamps_;
  std::uint32_t generation_ = 1;
  std::uint64_t count_ = 0;
};

// What analysis::addresses() says of one warp instruction (requests, sectors, lines), for lanes
// the replay made (no checks, no allocation); sorts `lanes` and drops duplicates, which the
// caller's sector walk then reads in order.
struct instruction_stats {
  std::uint64_t requests = 0, sectors = 0, lines = 0;
};
instruction_stats warp_instruction(analysis::device_model const& model, std::vector<std::uint64_t>& lanes,
                                   std::uint32_t width) {
  instruction_stats s;
  if (lanes.empty()) return s;
  // The split rule of analysis::addresses(): the widest power of two <= 16 dividing the width and
  // every address.
  std::uint64_t bits = width;
  for (std::uint64_t a : lanes) bits |= a;
  std::uint32_t const g = std::min<std::uint32_t>(16, static_cast<std::uint32_t>(bits & (~bits + 1)));
  std::uint32_t const instructions = width / g;
  std::sort(lanes.begin(), lanes.end());
  lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
  s.requests = instructions;
  // Sector and line sizes are powers of two (device_model::validate): shifts, not divisions.
  int const sector_shift = std::countr_zero(model.sector_bytes), line_shift = std::countr_zero(model.line_bytes);
  for (std::uint32_t k = 0; k < instructions; ++k) {
    std::uint64_t last_sector = 0, last_line = 0;
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      std::uint64_t const a = lanes[i] + std::uint64_t{k} * g;
      std::uint64_t const sector = a >> sector_shift, line = a >> line_shift;
      s.sectors += i == 0 || sector != last_sector;
      s.lines += i == 0 || line != last_line;
      last_sector = sector;
      last_line = line;
    }
  }
  return s;
}

}  // namespace

void counting_state::array_out_of_range(std::string const& name, std::size_t k, std::size_t size) const {
  throw_error("count_accesses('" + trace->kernel + "'): thread " + std::to_string(thread) + " read entry " +
              std::to_string(k) + " of the counted array '" + name + "', which has " + std::to_string(size) +
              " entries; count with the array the kernel really reads (its sample's list)");
}

void append_array_columns(std::vector<column_desc>& columns, analysis::access_trace const& trace,
                          std::size_t storage_bytes) {
  std::uint64_t at = round_up(storage_bytes, column_alignment);
  for (auto const& a : trace.arrays) {
    columns.push_back({a.name, 0, 0, a.element_bytes, at, a.element_bytes, 0, 0});
    at += round_up(a.element_bytes * a.size, column_alignment);
  }
}

// The replay's cost grows with the counted accesses (about 1.1 us per access for all candidates on
// two cores). A trace above the budget (default_replay_budget accesses) is replayed in
// replay_windows_per_trace windows spread over its threads, each a warm-up (the L2 filled with what
// the threads before it leave there, nothing counted) and a counted part, together about the
// budget: the advice on a whole neighbour-force kernel of 73,728 threads then takes seconds, not
// a minute, and its figures stay within 1 % of the whole replay's (tests/advisor_test.cpp).
// Counts are scaled to the whole trace; kernel_prediction::replayed_threads says how many threads
// were counted. Traces up to the budget are replayed whole, bit for bit as before.
constexpr std::size_t replay_windows_per_trace = 4;
struct replay_window {
  std::size_t begin, end;  // threads, whole blocks (the L1's unit)
  bool counted;
};
std::vector<replay_window> replay_windows(analysis::access_trace const& trace, std::size_t block_threads,
                                          std::size_t replay_budget) {
  std::size_t const threads = trace.threads, accesses = trace.accesses.size();
  if (accesses <= replay_budget || threads < 12 * replay_windows_per_trace * block_threads) return {{0, threads, true}};
  // Threads the budget buys, split per window into a counted part and a warm-up of half its length;
  // at least 4 blocks counted per window whatever the budget (shorter windows, after a shorter
  // warm-up, miss the L2 reuse of a spatial order: DRAM bytes 2-4 % off at 2 blocks).
  double const budget_threads = static_cast<double>(threads) * replay_budget / static_cast<double>(accesses);
  std::size_t const counted_blocks = std::max<std::size_t>(
      4, static_cast<std::size_t>(budget_threads / (1.5 * replay_windows_per_trace * block_threads)));
  std::size_t const counted = counted_blocks * block_threads, warm = (counted_blocks + 1) / 2 * block_threads;
  std::vector<replay_window> out;
  for (std::size_t k = 0; k < replay_windows_per_trace; ++k) {
    // The counted part centred in the k-th of replay_windows_per_trace equal stretches of the trace.
    std::size_t const centre = (2 * k + 1) * threads / (2 * replay_windows_per_trace);
    std::size_t const begin = (centre - std::min(centre, counted / 2)) / block_threads * block_threads;
    std::size_t const warm_begin = begin - std::min(begin, warm);
    if (warm_begin < begin) out.push_back({warm_begin, begin, false});
    out.push_back({begin, std::min(threads, begin + counted), true});
  }
  return out;
}

// What the replay counts per warp, summed.
struct replay_tally {
  std::uint64_t sectors = 0, l1_sectors = 0, requests = 0, l2_sectors = 0, dram_sectors = 0;
};

analysis::kernel_prediction predict_trace(analysis::device_model const& model, analysis::access_trace const& trace,
                                          std::vector<column_desc> const& columns, vector_load_rule vector_rule,
                                          std::size_t replay_budget) {
  model.validate();  // predict() may be handed a hand-built model: no cache of zero ways
  analysis::kernel_prediction out;
  out.kernel = trace.kernel;
  out.threads = trace.threads;
  out.pair_tests = trace.pair_tests;
  out.sector_bytes = model.fetch_bytes();
  auto const address = [&](analysis::field_access const& a) {
    column_desc const& c = columns[a.column];
    std::uint64_t const j = a.element;
    if (c.block == 0) return c.base + j * c.stride;
    if ((c.block & (c.block - 1)) == 0) {  // aosoa<W> of a power of two: no division per access
      int const shift = std::countr_zero(static_cast<std::uint64_t>(c.block));
      return c.base + (j >> shift) * c.block_stride + (j & (c.block - 1)) * c.stride;
    }
    return c.base + (j / c.block) * c.block_stride + (j % c.block) * c.stride;
  };
  std::uint64_t const fetch = model.fetch_bytes();
  int const fetch_shift = std::countr_zero(fetch);  // a power of two (validate)
  // The caches. L1: each block of 8 warps (256 threads) gets a fresh share of an SM's L1, the
  // share of one of the 8 such blocks an SM keeps resident (in a large system those blocks are
  // far apart in the particle order and share no data). L2: one, scaled to the share of the real
  // system the sample is, so that the sample's arrays fill it as the real arrays fill the real L2.
  double const share = remembered_l2_share(trace);
  std::uint64_t const min_cache = std::uint64_t{fetch} * model.cache_ways;
  std::uint64_t const l2_bytes =
      std::max<std::uint64_t>(static_cast<std::uint64_t>(static_cast<double>(model.l2_bytes) * share), min_cache);
  sector_cache<> l2(l2_bytes, fetch, model.cache_ways);
  std::size_t const warps_per_block = 8, blocks_per_sm = 8;
  std::uint64_t const l1_share = std::max<std::uint64_t>(model.l1_bytes / blocks_per_sm, min_cache);
  // Each L1 slot notes the last read that sent its sector to L2 (this block's warps): until it
  // arrives, a hit there is a miss (pending_read). Every L1 slot is taken by a read that then goes
  // to L2 and writes the note, so a hit always finds one.
  sector_cache<pending_read> block_l1(l1_share, fetch, model.cache_ways);

  // Per warp: the distinct sectors it reads and writes; per k-th instruction the lanes' addresses
  // grouped by (column, direction, width): a few groups, searched linearly.
  distinct_sectors read_sectors, written_sectors;
  std::vector<std::uint64_t> instruction_sectors;
  struct group {
    std::uint32_t column;
    bool write;
    std::uint32_t width;
    std::vector<std::uint64_t> lanes;
  };
  std::vector<group> groups;
  std::vector<std::vector<lane_instruction>> lanes(model.warp_size);
  bool const count_sectors = model.fetch == analysis::fetch_unit::sector;
  // What the replay counts: a warm-up window's warps pass through the caches into a tally that is
  // dropped (replay_windows).
  replay_tally counted, warm_up;
  auto const replay_warp = [&](std::size_t first, replay_tally& tally) {
    std::size_t const last = std::min<std::size_t>(trace.threads, first + model.warp_size);
    std::size_t const warp = first / model.warp_size;
    if (warp % warps_per_block == 0) block_l1.reset();
    read_sectors.clear();
    written_sectors.clear();
    std::size_t longest = 0;
    for (std::size_t i = first; i < last; ++i) {
      instructions_of(trace, i, columns, vector_rule, lanes[i - first]);
      longest = std::max(longest, lanes[i - first].size());
    }
    for (std::size_t k = 0; k < longest; ++k) {
      for (auto& g : groups) g.lanes.clear();
      std::size_t used = 0;
      for (std::size_t i = first; i < last; ++i) {
        auto const& mine = lanes[i - first];
        if (k >= mine.size()) continue;
        analysis::field_access const& a = trace.accesses[mine[k].access];
        std::uint32_t const width = mine[k].width;
        std::uint64_t const addr = address(a);
        std::size_t g = 0;
        while (g < used && !(groups[g].column == a.column && groups[g].write == a.write && groups[g].width == width))
          ++g;
        if (g == used) {
          if (used == groups.size()) groups.push_back({});
          groups[used].column = a.column;
          groups[used].write = a.write;
          groups[used].width = width;
          ++used;
        }
        groups[g].lanes.push_back(addr);
      }
      for (std::size_t g = 0; g < used; ++g) {
        auto const stats = warp_instruction(model, groups[g].lanes, groups[g].width);
        tally.l1_sectors += count_sectors ? stats.sectors : stats.lines;
        tally.requests += stats.requests;
        // The instruction's distinct sectors through the caches: reads look in the SM's L1 and go
        // to L2 on a miss; writes pass L1 by (write-through) and land in L2 (write-back). The
        // lanes are sorted (warp_instruction), so their sectors arrive in order.
        instruction_sectors.clear();
        for (std::uint64_t const addr : groups[g].lanes) {
          std::uint64_t const end = (addr + groups[g].width - 1) >> fetch_shift;
          for (std::uint64_t sector = addr >> fetch_shift; sector <= end; ++sector) {
            if (instruction_sectors.empty() || instruction_sectors.back() != sector)
              instruction_sectors.push_back(sector);
          }
        }
        bool const write = groups[g].write;
        auto& warp_sectors = write ? written_sectors : read_sectors;  // distinct per warp
        for (std::uint64_t const sector : instruction_sectors) {
          warp_sectors.insert(sector);
          pending_read* note = nullptr;
          if (!write) {
            auto const in_l1 = block_l1.access(sector);
            if (in_l1.hit && in_l1.note->arrived_for(warp, k)) continue;
            note = in_l1.note;
          }
          ++tally.l2_sectors;
          auto const in_l2 = l2.access(sector, write);
          if (note != nullptr) *note = {warp, k, !in_l2.hit};
          if (!in_l2.hit && !write) {
            // DRAM is read in aligned pairs of sectors: the other one lands in L2 too.
            tally.dram_sectors += dram_fetch_sectors;
            std::uint64_t const pair = sector - sector % dram_fetch_sectors;
            for (std::uint64_t other = pair; other < pair + dram_fetch_sectors; ++other) {
              if (other != sector && l2.access(other).evicted_dirty) ++tally.dram_sectors;
            }
          }
          if (in_l2.evicted_dirty) ++tally.dram_sectors;
        }
      }
    }
    tally.sectors += read_sectors.size() + written_sectors.size();
  };
  std::vector<replay_window> const windows = replay_windows(trace, model.warp_size * warps_per_block, replay_budget);
  std::size_t counted_threads = 0;
  for (replay_window const& w : windows) {
    for (std::size_t first = w.begin; first < w.end; first += model.warp_size)
      replay_warp(first, w.counted ? counted : warm_up);
    if (w.counted) counted_threads += w.end - w.begin;
  }
  // A sampled replay stands for the whole trace: its counts scaled by threads over counted threads
  // (the write-backs after the kernel are the cache's state at the end, counted once).
  double const scale =
      counted_threads == 0 ? 1.0 : static_cast<double>(trace.threads) / static_cast<double>(counted_threads);
  auto const scaled = [scale](std::uint64_t v) {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(v) * scale));
  };
  out.sectors = scaled(counted.sectors);
  out.l1_sectors = scaled(counted.l1_sectors);
  out.requests = scaled(counted.requests);
  out.l2_sectors = scaled(counted.l2_sectors);
  out.replayed_threads = counted_threads;
  std::uint64_t dram_sectors = scaled(counted.dram_sectors);
  dram_sectors += l2.dirty();  // written back after the kernel
  out.dram_bytes = dram_sectors * fetch;
  if (out.threads > 0) {
    double const per_thread = 1.0 / static_cast<double>(out.threads);
    double const l1 = static_cast<double>(out.l1_sectors * fetch) * per_thread / model.l1_tb_per_s;
    double const l2_time = static_cast<double>(out.l2_sectors * fetch) * per_thread / model.l2_tb_per_s;
    double const dram = static_cast<double>(out.dram_bytes) * per_thread / model.dram_tb_per_s;
    double const tests = static_cast<double>(trace.pair_tests) * per_thread / model.pair_tests_per_ns * 1000.0;
    out.time_ps_per_thread = std::max({l1, l2_time, dram, tests});
    out.bound = out.time_ps_per_thread == tests     ? "tests"
                : out.time_ps_per_thread == dram    ? "DRAM"
                : out.time_ps_per_thread == l2_time ? "L2"
                                                    : "L1";
  }
  return out;
}

std::string member_list(std::vector<std::size_t> const& members, std::vector<std::string> const& names) {
  std::string out = names.empty() ? "coalesce::member_indices<" : "coalesce::fields<";
  for (std::size_t k = 0; k < members.size(); ++k) {
    out += k ? ", " : "";
    out += names.empty() ? std::to_string(members[k]) : "&" + names[members[k]];
  }
  return out + ">";
}

namespace {

struct member_use {
  std::uint64_t reads = 0, writes = 0, gathered = 0;
  std::vector<std::string> kernels;  // kernels that touch it
};

std::string member_name(std::size_t m, std::vector<std::string> const& names) {
  if (names.empty()) return "member " + std::to_string(m);
  std::string const& n = names[m];
  auto const colon = n.rfind("::");
  return colon == std::string::npos ? n : n.substr(colon + 2);
}

}  // namespace

// Its own std::threads, not the OpenMP device system's detail::share_among_threads: the analysis
// runs in CUDA builds too, where libcoalesce is not built with OpenMP, and the jobs take up to
// seconds each and differ in length (a queue taken one job at a time, not fixed blocks).
std::vector<analysis::layout_prediction> run_predictions(std::vector<prediction_job> const& jobs) {
  std::vector<analysis::layout_prediction> out(jobs.size());
  std::vector<std::exception_ptr> errors(jobs.size());
  std::atomic<std::size_t> next{0};
  share_memo memo;
  auto const work = [&] {
    current_share_memo = &memo;
    struct forget {  // the memo dies with this call
      ~forget() { current_share_memo = nullptr; }
    } const forget_memo;
    for (std::size_t k = next++; k < jobs.size(); k = next++) {
      try {
        out[k] = jobs[k]();
      } catch (...) {
        errors[k] = std::current_exception();
      }
    }
  };
  std::size_t const cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < std::min(cores, jobs.size()); ++t) {
    try {
      helpers.emplace_back(work);
    } catch (std::system_error const&) {
      break;  // no more threads to be had: the ones started and this one do the rest
    }
  }
  work();
  for (auto& h : helpers) h.join();
  for (auto const& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

analysis::advice rank_layouts(analysis::device_model const& model, std::vector<analysis::layout_prediction> candidates,
                              std::span<analysis::kernel_use const> mix, std::vector<reflect::leaf_info> const& leaves,
                              std::vector<std::size_t> const& member_of_leaf,
                              std::vector<std::string> const& member_names) {
  analysis::advice a;
  a.model = model;
  // Shortest predicted time for the mix first; within 1 %, fewer predicted DRAM bytes, then fewer L1 sectors
  // (fewer, wider requests), then the simpler type (fewer template arguments, then the shorter
  // name) first. "Within 1 %" is not transitive, so it cannot be a sort's comparator
  // (std::stable_sort needs a strict weak ordering): sort by bytes, then let a candidate move ahead
  // of its predecessors while it is within 1 % of them in time and better on the tie-breakers
  // (an insertion pass over a lexicographic order: deterministic, whatever the input order).
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](auto const& x, auto const& y) { return x.weighted_time_ps < y.weighted_time_ps; });
  auto const close = [](double a, double b) { return std::abs(a - b) <= 0.01 * std::max(a, b); };
  auto const simplicity = [](std::string const& type) {
    return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(std::count(type.begin(), type.end(), '<')),
                                               type.size());
  };
  // Each tie-breaker decides only past 1 % (the cache model's set mapping moves DRAM bytes by a
  // fraction of that between layouts that store the gathered bytes alike).
  auto const better_tie = [&](analysis::layout_prediction const& x, analysis::layout_prediction const& y) {
    if (!close(x.weighted_dram_bytes_per_thread, y.weighted_dram_bytes_per_thread))
      return x.weighted_dram_bytes_per_thread < y.weighted_dram_bytes_per_thread;
    if (!close(x.weighted_l1_sectors, y.weighted_l1_sectors)) return x.weighted_l1_sectors < y.weighted_l1_sectors;
    return simplicity(x.cpp_type) < simplicity(y.cpp_type);
  };
  for (std::size_t k = 1; k < candidates.size(); ++k) {
    for (std::size_t m = k; m > 0; --m) {
      auto& ahead = candidates[m - 1];
      auto& here = candidates[m];
      if (!close(ahead.weighted_time_ps, here.weighted_time_ps) || !better_tie(here, ahead)) break;
      std::swap(ahead, here);
    }
  }
  a.ranking = std::move(candidates);

  // What each top-level member sees over the mix, for the reasons.
  std::size_t const members =
      member_of_leaf.empty() ? 0 : *std::max_element(member_of_leaf.begin(), member_of_leaf.end()) + 1;
  std::vector<member_use> use(members);
  for (auto const& k : mix) {
    for (std::size_t l = 0; l < leaves.size(); ++l) {
      for (std::size_t j = 0; j < leaves[l].extent; ++j) {
        auto const& c = k.trace->columns[leaves[l].first_column + j];
        member_use& m = use[member_of_leaf[l]];
        m.reads += c.reads;
        m.writes += c.writes;
        m.gathered += c.gathered_reads + c.gathered_writes;
        if (c.reads + c.writes > 0 &&
            std::find(m.kernels.begin(), m.kernels.end(), k.trace->kernel) == m.kernels.end()) {
          m.kernels.push_back(k.trace->kernel);
        }
      }
    }
  }
  auto const& best = a.best();
  for (std::size_t m = 0; m < members; ++m) {
    std::uint64_t const touched = use[m].reads + use[m].writes;
    std::string const name = member_name(m, member_names);
    if (touched == 0) {
      a.reasons.push_back(name +
                          ": touched by no kernel of the mix; any layout that keeps it out of the packed records "
                          "(a column) costs nothing");
    } else if (use[m].gathered * 10 >= touched * 5) {
      a.reasons.push_back(
          "pack " + name + ": " +
          fixed(100.0 * static_cast<double>(use[m].gathered) / static_cast<double>(touched), 0) +
          "% of its accesses are gathers through an index, and a packed record is one sector per gathered element");
    } else if (use[m].kernels.size() < mix.size()) {
      std::string list;
      for (auto const& k : use[m].kernels) list += (list.empty() ? "" : ", ") + k;
      a.reasons.push_back(name + ": touched by " + std::to_string(use[m].kernels.size()) + " of " +
                          std::to_string(mix.size()) + " kernels (" + list +
                          "); as a column it costs the others nothing");
    } else {
      a.reasons.push_back(name + ": streamed by every kernel, read " + std::to_string(use[m].reads) + " and written " +
                          std::to_string(use[m].writes) +
                          " times in the sample: columns keep each warp's accesses contiguous");
    }
  }
  // How far the figures can move: the cache model was held against the H200 with 16,384 counted
  // threads standing for 4M (docs/analysis.md); a smaller sample of a gathering kernel fits in the
  // L1 share of a few blocks, and its gathers then hit where the real ones miss.
  for (auto const& k : mix) {
    if (k.trace->counted_from > 0) {
      a.reasons.push_back("kernel '" + k.trace->kernel + "' was counted on a window of " +
                          std::to_string(k.trace->threads) + " threads of its " +
                          std::to_string(k.trace->counted_from) +
                          " (a miniature system of that size standing for the whole, the size the model was held "
                          "against the H200 with)");
    }
    std::size_t const at = static_cast<std::size_t>(&k - mix.data());
    if (!a.ranking.empty() && at < a.ranking.front().kernels.size()) {
      auto const& replayed = a.ranking.front().kernels[at];
      if (replayed.replayed_threads < replayed.threads) {
        a.reasons.push_back("kernel '" + k.trace->kernel + "' (" + std::to_string(k.trace->accesses.size()) +
                            " accesses) was replayed on " + std::to_string(replayed.replayed_threads) + " of its " +
                            std::to_string(replayed.threads) +
                            " threads, in windows spread over them, and its counts scaled to the whole (within 1 % "
                            "of a whole replay)");
      }
    }
    std::uint64_t gathers = 0;
    for (auto const& c : k.trace->columns) gathers += c.gathered_reads + c.gathered_writes;
    if (gathers > 0 && k.trace->elements < 16384) {
      a.reasons.push_back("kernel '" + k.trace->kernel + "' gathers over a sample of " +
                          std::to_string(k.trace->elements) +
                          " elements: its cache figures are optimistic below 16,384 (count a larger sample)");
    }
    if (gathers > 0 && k.trace->system_elements == 0) {
      a.reasons.push_back("kernel '" + k.trace->kernel +
                          "': system_elements is not set, so the sample is taken as the whole system (set it to "
                          "the real particle count for its L2 and DRAM figures)");
    }
  }
  if (a.ranking.size() > 1) {
    auto const& second = a.ranking[1];
    std::string bounds;
    for (auto const& k : best.kernels) bounds += (bounds.empty() ? "" : ", ") + k.kernel + ": " + std::string(k.bound);
    a.reasons.push_back(short_type(best.cpp_type) + " is predicted at " + fixed(best.weighted_time_ps, 1) +
                        " ps per thread for the mix (bound by " + bounds + "), moving " +
                        fixed(best.weighted_dram_bytes_per_thread, 1) + " DRAM bytes per thread; the next, " +
                        short_type(second.cpp_type) + ", " + fixed(second.weighted_time_ps, 1) + " ps (" +
                        fixed(second.weighted_time_ps / best.weighted_time_ps) + "x)");
  }
  return a;
}

}  // namespace coalesce::detail

namespace coalesce::analysis {

kernel_prediction predict_loads(device_model const& model, std::span<const plain_load> loads, std::size_t threads) {
  access_trace trace;
  trace.kernel = "plain loads";
  trace.threads = threads;
  trace.element_columns = loads.size();
  std::vector<detail::column_desc> columns;
  std::uint64_t region = 0;  // each array in its own gigabyte-aligned region
  std::size_t elements = 0;
  for (std::size_t k = 0; k < loads.size(); ++k) {
    plain_load const& l = loads[k];
    std::string const which = "predict_loads: load " + std::to_string(k);
    if (l.width < 1 || l.width > 16)
      detail::throw_error(which + " is " + std::to_string(l.width) + " bytes wide; 1 to 16");
    if (l.stride == 0 && l.index.empty()) detail::throw_error(which + " has stride 0; give a stride or an index");
    if (!l.index.empty() && l.index.size() < threads) {
      detail::throw_error(which + " has " + std::to_string(l.index.size()) + " indices for " + std::to_string(threads) +
                          " threads");
    }
    std::uint64_t largest = threads == 0 ? 0 : threads - 1;
    if (!l.index.empty() && threads > 0) largest = *std::max_element(l.index.begin(), l.index.begin() + threads);
    if (largest >= (std::uint64_t{1} << 32)) {
      detail::throw_error(which + " reads element " + std::to_string(largest) +
                          "; the replay takes elements below 2^32");
    }
    elements = std::max<std::size_t>(elements, static_cast<std::size_t>(largest) + 1);
    columns.push_back({"load " + std::to_string(k), k, 0, l.width, region + l.offset, l.stride, 0, 0});
    std::uint64_t const bytes = l.offset + (largest + 1) * l.stride + l.width;
    region += detail::round_up(bytes, std::uint64_t{1} << 30);
  }
  trace.elements = elements;
  trace.columns.resize(loads.size());
  trace.accesses.reserve(threads * loads.size());
  trace.thread_begin.reserve(threads + 1);
  for (std::size_t t = 0; t < threads; ++t) {
    trace.thread_begin.push_back(trace.accesses.size());
    for (std::size_t k = 0; k < loads.size(); ++k) {
      auto const e = static_cast<std::uint32_t>(loads[k].index.empty() ? t : loads[k].index[t]);
      trace.accesses.push_back({static_cast<std::uint32_t>(k), e, false, loads[k].width});
    }
  }
  for (auto& c : trace.columns) c.reads = threads;
  trace.thread_begin.push_back(trace.accesses.size());
  // Every access is one leaf: never a vector of several.
  return detail::predict_trace(model, trace, columns,
                               [](std::size_t, std::size_t, std::size_t) -> std::uint32_t { return 0; });
}

}  // namespace coalesce::analysis
