// coalesce/analysis/advisor.hpp - which layout a kernel mix wants: count each kernel's field accesses on
// the CPU, predict every candidate layout's memory traffic with the sector model, recommend one.
//
//   namespace ca = coalesce::analysis;
//   std::vector<Particle> sample = legacy;                       // a sample of the real data
//   auto forces = ca::count_accesses<Particle>("forces", sample, [&](auto v, std::size_t i) {
//     vec3 const p = v[i][&Particle::pos];                       // the kernel body, unchanged:
//     (void)p;                                                   // v is a counting view here
//   });
//   auto integrate = ca::count_accesses<Particle>("integrate", sample, [&](auto v, std::size_t i) {
//     v[i][&Particle::pos][&vec3::x] += dt * v[i][&Particle::vel][&vec3::x];
//   });
//   ca::advice const a = ca::advise<Particle>({{forces, 1.0}, {integrate, 2.0}});
//   std::cout << ca::describe(a);                                // ranking, reasons, the C++ type
//
// Counting: the kernel body runs on the host, once per thread i in [0, threads), over a counting
// view of a copy of the sample. v[i] is a view's own proxy (coalesce::reference) over a storage
// that records each access (detail::counting_storage), so every operator a view's element takes
// works and is counted: v[i][&T::m]..., v[i] as a whole record, structured bindings
// (auto [pos, vel] = v[i]), std::array members (v[i][&T::a][k]), compound assignments, ++ and --
// (a read and a write each). Leaves are proxies there where a view hands out plain references (a
// body that takes a leaf's address or binds it to a float& does not compile there). Every leaf read or
// written is recorded in program order, with the element it touched: an access to an element
// other than i is a gather (through an index), and the element indices seen make the prediction
// measure the gather's locality instead of assuming it.
//
// Arrays the body reads beside the view (a neighbour list, its counts) are counted when it reads
// them through analysis::counted (a template parameter of the body: a raw pointer on the GPU).
//
// Prediction (per candidate mapping): each recorded access becomes the instructions the compiler
// issues for it under the mapping (a struct read whole is one vector load where the mapping's
// slot allows it, as the reference does; anything else one load per leaf), replayed warp by warp
// (32 consecutive threads; the k-th instruction of each lane is one warp instruction) against the
// addresses the mapping gives each leaf, and through a model of the caches (an L1 share per block
// of 8 warps, loads in flight, one L2 partition scaled to the share of the real system the sample
// is: access_trace::system_elements; DRAM read 64 bytes at a time). Out come requests, L1 sectors,
// L2 sectors and DRAM bytes per kernel, and a time: the slowest of the three levels at the
// device's rates, which candidates are ranked by (ties: fewer DRAM bytes, fewer L1 sectors, the
// simpler type). docs/analysis.md holds the model against Nsight Compute on the H200.
// Candidates: aos, soa, aosoa<8>, aosoa<32>, and split layouts packing one or two top-level
// members, padded and unpadded (all pairs for structs of up to 8 members), plus the user's own
// mappings (advise<T, Extra...>).
//
// Bad input (a kernel that touches an element outside the sample, an empty sample, weights that
// sum to zero or are negative) throws coalesce::error saying what was wrong.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "analysis.hpp"
#include "../core/layout_storage.hpp"
#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../core/reference.hpp"
#include "../core/reflect.hpp"
#include "../core/split.hpp"
#include "../core/stored_as.hpp"

namespace coalesce::analysis {

// One leaf access of a counted kernel: which 1-D column (leaf_table's first_column + sub), of
// which element, read or write.
struct field_access {
  std::uint32_t column = 0;   // the element type's 1-D column, or a counted array's (after element_columns)
  std::uint32_t element = 0;  // the element (a counted array's entry); within the window when windowed
  bool write = false;         // a write; false: a read
  // Bytes of the C++ access this leaf access starts (a vec3 read whole: 12, on its first leaf;
  // a float: 4); 0 on the other leaves of that access. The replay issues a read of a struct as one
  // vector load where the mapping's slot allows it, as coalesce's reference does on the GPU.
  std::uint32_t access_bytes = 0;
};

// Per column: how often the kernel read and wrote it, and how many of those went through an
// index (an element other than the thread's own).
struct column_use {
  std::uint64_t reads = 0,  // reads by all threads
      writes = 0,           // writes by all threads
      gathered_reads = 0,   // of the reads: those of another thread's element
      gathered_writes = 0;  // of the writes: those to another thread's element
};

// What counting one kernel found.
struct access_trace {
  std::string kernel;        // the name given to count_accesses
  std::size_t elements = 0;  // sample size
  // Elements of the real system the sample stands for (0: the sample is the system). The L2 and
  // DRAM figures scale the L2 by elements / system_elements, so that the sample's arrays fill it
  // as the real arrays fill the real one.
  std::size_t system_elements = 0;
  std::size_t threads = 0;                // threads counted: kernel(v, i) calls
  std::vector<field_access> accesses;     // every thread's accesses, thread after thread, in order
  std::vector<std::size_t> thread_begin;  // accesses of thread i: [thread_begin[i], thread_begin[i + 1])
  std::vector<column_use> columns;        // per 1-D column of the element type, then per counted array
  // Arrays the kernel read through analysis::counted (an index list, a neighbour list, counts), in
  // the order it first read them: their loads are columns after the element type's own.
  struct array_info {
    std::string name;               // as given to analysis::counted
    std::size_t element_bytes = 0;  // bytes of one entry
    std::size_t size = 0;           // entries
  };
  std::vector<array_info> arrays;   // the counted arrays, in the order first read
  std::size_t element_columns = 0;  // columns of the element type (the arrays' columns follow)
  // The whole sample's size when count_accesses counted a window of it (0: every thread counted).
  std::size_t counted_from = 0;
  // Distance tests a neighbour traversal made for the kernel outside its body (the cluster
  // format's candidates, counted by analysis::counted_list): compute, timed at
  // device_model::pair_tests_per_ns.
  std::uint64_t pair_tests = 0;
};

// A kernel and how often it runs per step (e.g. forces once, integrate twice: weights 1 and 2).
struct kernel_use {
  access_trace const* trace = nullptr;  // the counted kernel; not owned, kept alive by the caller
  double weight = 1.0;                  // runs per step, relative to the other kernels' (>= 0)
  // Implicit, so a trace or {trace, weight} goes wherever a kernel_use is asked for.
  kernel_use(access_trace const& t, double w = 1.0) : trace(&t), weight(w) {}  // NOLINT(google-explicit-constructor)
};

// One kernel under one layout.
struct kernel_prediction {
  std::string kernel;                    // the trace's kernel name
  std::uint64_t sectors = 0;             // distinct sectors per warp, summed over warps (reads + writes)
  std::uint64_t l1_sectors = 0;          // sectors per instruction, summed
  std::uint64_t requests = 0;            // warp-wide instructions (a vector load of a packed slot is one)
  std::uint64_t l2_sectors = 0;          // sectors L2 serves: L1 read misses and every written sector
  std::uint64_t dram_bytes = 0;          // L2 misses and write-backs, in bytes
  std::uint64_t pair_tests = 0;          // the trace's (access_trace::pair_tests)
  double bytes_per_thread() const;       // sectors x sector bytes / threads
  double dram_bytes_per_thread() const;  // dram_bytes / threads
  // Picoseconds per thread at the whole device's rates: the slowest of L1 sectors, L2 sectors and
  // DRAM bytes over the model's throughput of that level, and of pair tests (a cluster list's
  // candidates) over theirs; and which it was.
  double time_ps_per_thread = 0;
  std::string_view bound = "DRAM";  // the limit that set the time: "L1", "L2", "DRAM" or "tests"
  std::size_t threads = 0;          // the trace's threads, what the per-thread figures divide by
  // Threads the replay counted: all of them, or for a trace above the replay's budget (4M accesses)
  // those of a few windows spread over it, the counts above scaled to the whole trace.
  std::size_t replayed_threads = 0;
  std::uint32_t sector_bytes = 32;  // bytes per fetch under the model (device_model::fetch_bytes())
};

// One candidate layout's prediction for the whole mix: advice::ranking holds one per candidate.
struct layout_prediction {
  std::string layout;    // as layout_name<L>() prints it
  std::string cpp_type;  // a type to paste (member indices; member names when advise() was given them)
  std::vector<kernel_prediction> kernels;     // one per kernel of the mix, in the mix's order
  double weighted_bytes_per_thread = 0;       // the mix: sum over kernels of weight x bytes per thread
  double weighted_l1_sectors = 0;             // the same with each kernel's L1 sectors (all threads)
  double weighted_dram_bytes_per_thread = 0;  // the same with the cache model's DRAM bytes
  double weighted_time_ps = 0;                // the mix's time estimate: what candidates are ranked by
};

// A member stored in a narrower number format (core/stored_as.hpp) under soa: what the mix would
// take, and the error it introduces. Listed beside the ranking, never recommended in its place:
// the numbers a kernel computes change.
struct precision_option {
  std::string member;            // the member's name as given to advise(), else "member K"
  std::string format;            // "half" or "float" (for a double member)
  std::string cpp_type;          // the layout to paste
  double time_vs_best = 0;       // its mix time over the recommended layout's
  double time_vs_soa = 0;        // over the same members at full precision in soa
  double relative_error = 0;     // the largest relative rounding error of a stored value (normal range)
  std::string error;             // the error and the range, in words
  layout_prediction prediction;  // the prediction for cpp_type
};

// What advise() found: the candidates ranked by the mix's predicted time, the reasons for the first,
// and the narrower number formats beside them.
struct advice {
  device_model model{};                    // the device the predictions are for
  std::vector<layout_prediction> ranking;  // best first
  std::vector<std::string> reasons;        // in words, for the recommendation
  // Floating members the mix reads or writes, each stored narrower (fastest first).
  std::vector<precision_option> precision;
  // The recommended layout: the ranking's first (advise() always ranks several).
  layout_prediction const& best() const { return ranking.front(); }
};

// Text for a terminal: the ranking as a table (each kernel's time and bound, the mix's time, DRAM
// bytes), the recommended type, the reasons and the precision options.
std::string describe(advice const& a);
// The same as one JSON object, every kernel's counts included: for scripts and CI.
std::string to_json(advice const& a);

// A kernel of plain loads, no struct and no mapping, through the same replay and cache model as
// the advisor's candidates: every thread issues `loads` in order; load k of thread t reads
// `width` bytes of element e = t (or e = index[t], a gather) at offset + e * stride of its own
// array (arrays 256-byte aligned and far apart). What coalesce-explore predicts for whole kernels
// of its patterns, held against Nsight Compute by examples/explore/ncu_compare.sh.
struct plain_load {
  std::uint32_t width = 4;                 // bytes per lane, one instruction: 1 to 16
  std::uint64_t stride = 4;                // bytes from one element to the next
  std::uint64_t offset = 0;                // bytes before element 0
  std::span<const std::uint64_t> index{};  // thread t reads element index[t]; empty: element t
};
// Throws coalesce::error for a width outside 1..16, a stride of 0 with no index, an index array
// shorter than `threads`, or an element at or above 2^32.
kernel_prediction predict_loads(device_model const& model, std::span<const plain_load> loads, std::size_t threads);

}  // namespace coalesce::analysis

namespace coalesce::detail {

// What a counting view records into; one per count_accesses call.
struct counting_state {
  analysis::access_trace* trace = nullptr;
  std::byte* data = nullptr;  // the sample's copy, records back to back
  std::size_t record_bytes = 0;
  std::size_t elements = 0;
  std::size_t thread = 0;               // the thread running now
  std::vector<std::int32_t> column_at;  // per byte of a record: its 1-D column, -1 for padding
  // A window of threads [first, first + window) counted for a larger system (0: every thread):
  // elements are recorded as (element - first) mod window, a miniature system of window elements
  // whose gathers fall as the real ones do (near ones stay near, random ones spread over it).
  std::size_t first = 0, window = 0;

  std::uint32_t recorded(std::size_t element) const {
    if (window == 0) return static_cast<std::uint32_t>(element);
    return static_cast<std::uint32_t>((element % window + window - first % window) % window);
  }
  void record(std::size_t element, std::size_t offset, std::size_t bytes, bool write) {
    std::int32_t last = -1;
    std::uint32_t starts = static_cast<std::uint32_t>(bytes);  // on the first leaf of this access only
    std::uint32_t const at = recorded(element);
    for (std::size_t b = offset; b < offset + bytes; ++b) {
      std::int32_t const c = column_at[b];
      if (c < 0 || c == last) continue;
      last = c;
      trace->accesses.push_back({static_cast<std::uint32_t>(c), at, write, starts});
      starts = 0;
      auto& use = trace->columns[static_cast<std::size_t>(c)];
      bool const gathered = element != thread;
      (write ? use.writes : use.reads) += 1;
      if (gathered) (write ? use.gathered_writes : use.gathered_reads) += 1;
    }
  }
  [[noreturn]] void out_of_range(std::size_t element) const;

  // A read of entry k of a counted array (analysis::counted), registered on its first read.
  void record_array(void const* key, std::string const& name, std::size_t element_bytes, std::size_t size,
                    std::size_t k) {
    std::size_t id = 0;
    while (id < array_keys.size() && array_keys[id] != key) ++id;
    if (id == array_keys.size()) {
      array_keys.push_back(key);
      trace->arrays.push_back({name, element_bytes, size});
      trace->columns.emplace_back();
    }
    if (k >= size) array_out_of_range(name, k, size);
    if (k > UINT32_MAX) array_out_of_range(name, k, std::size_t{UINT32_MAX} + 1);  // the trace keeps 32-bit indices
    std::size_t const column = trace->element_columns + id;
    trace->accesses.push_back({static_cast<std::uint32_t>(column), static_cast<std::uint32_t>(k), false,
                               static_cast<std::uint32_t>(element_bytes)});
    trace->columns[column].reads += 1;
  }
  [[noreturn]] void array_out_of_range(std::string const& name, std::size_t k, std::size_t size) const;
  void record_pair_tests(std::uint64_t tests) { trace->pair_tests += tests; }
  std::vector<void const*> array_keys;
};

// The count_accesses call under way on this thread (null outside one): where counted arrays record.
inline counting_state*& current_counting() {
  thread_local counting_state* state = nullptr;
  return state;
}

// The storage a counted kernel body's proxies go through: a computed storage (core/reference.hpp),
// so that v[i] is the real proxy, coalesce::reference, with every operator a view's element takes;
// only its leaves are proxies where a view's are plain references. Each access it is handed (the
// bytes of a U at `offset` in element `element`'s record: a leaf, a std::array member or a struct
// read or written whole) is recorded, then done on the sample's copy.
struct counting_storage {
  static constexpr bool computed = true;
  counting_state* state = nullptr;

  template <class U> U read(std::size_t element, std::size_t offset) const {
    state->record(element, offset, sizeof(U), false);
    U value;
    std::memcpy(&value, address(element, offset), sizeof(U));
    return value;
  }
  template <class U> void write(std::size_t element, std::size_t offset, U const& value) const {
    state->record(element, offset, sizeof(U), true);
    std::memcpy(address(element, offset), &value, sizeof(U));
  }
  void check_subscript(std::size_t k, std::size_t extent, bool array) const {
    if (k >= extent) {
      throw_error("count_accesses: index " + std::to_string(k) + " of " +
                  (array ? "a std::array member of " : "a struct member of ") + std::to_string(extent) + " elements");
    }
  }

 private:
  std::byte* address(std::size_t element, std::size_t offset) const {
    return state->data + element * state->record_bytes + offset;
  }
};

// The counted view of element type T: what a kernel body sees as `v` while it is counted.
template <class T> class counting_view {
 public:
  using reference = coalesce::reference<T, aos, T, static_node<0, 0>, false, counting_storage>;
  explicit counting_view(counting_state* state) : state_(state) {}
  std::size_t size() const { return state_->elements; }
  reference operator[](std::size_t element) const {
    if (element >= state_->elements) state_->out_of_range(element);
    return reference(counting_storage{state_}, element);
  }

 private:
  counting_state* state_;
};

// The width of the one vector load that reads `bytes` of leaves [first_leaf, first_leaf + leaves)
// as a struct, or 0 where the leaves are read one by one: the rule of detail::load_packed
// (reference.hpp), asked of the mapping's packed() slot.
using vector_load_rule = std::uint32_t (*)(std::size_t first_leaf, std::size_t leaves, std::size_t bytes);
template <class T, class Layout>
std::uint32_t vector_load_bytes(std::size_t first_leaf, std::size_t leaves, std::size_t bytes) {
  using mapping = typename layout_storage<T, Layout>::mapping_type;
  if constexpr (requires { mapping::packed(std::size_t{}, std::size_t{}); }) {
    if (leaves < 2) return 0;  // a lone leaf is an ordinary load of its own width
    node_slot const slot = mapping::packed(first_leaf, leaves);
    if (slot.alignment >= 16 && slot.bytes >= 16 && bytes > 8 && bytes <= 16) return 16;
    if (slot.alignment >= 8 && slot.bytes >= 8 && bytes > 4 && bytes <= 8) return 8;
  }
  return 0;
}

// Replays a trace against per-column placements (analysis.cpp's column_desc: base offset of the
// blob, stride, blocks): counts sectors per warp and per instruction, and runs the instructions'
// sectors through the L1 and L2 model for L2 sectors and DRAM bytes (src/advisor.cpp). A trace of
// more than replay_budget accesses is replayed on windows spread over its threads, its counts
// scaled to the whole (kernel_prediction::replayed_threads); tests pass a larger budget to compare.
inline constexpr std::size_t default_replay_budget = 4'000'000;
analysis::kernel_prediction predict_trace(analysis::device_model const& model, analysis::access_trace const& trace,
                                          std::vector<column_desc> const& columns, vector_load_rule vector_rule,
                                          std::size_t replay_budget = default_replay_budget);

template <class T> std::vector<std::int32_t> column_map() {
  std::vector<std::int32_t> at(sizeof(T), -1);
  auto const& table = reflect::leaf_table_v<T>;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    for (std::size_t b = 0; b < table[l].size; ++b) {
      at[table[l].offset + j * table[l].size + b] = static_cast<std::int32_t>(table[l].first_column + j);
    }
  });
  return at;
}

// The 1-D columns of T under Layout at capacity n, as the replay needs them.
template <class T, class Layout> std::vector<column_desc> columns_under(std::size_t n) {
  using storage = layout_storage<T, Layout>;
  using mapping = typename storage::mapping_type;
  mapping const m(n);
  std::array<std::uint64_t, storage::blob_count> blob_start{};
  for (std::size_t b = 1; b < storage::blob_count; ++b) {
    blob_start[b] = blob_start[b - 1] + round_up(m.blob_bytes(b - 1), column_alignment);
  }
  std::vector<column_desc> out;
  auto const& table = reflect::leaf_table_v<T>;
  reflect::for_each_column<T>([&](std::size_t l, std::size_t j) {
    std::size_t const slot = storage::slot_leaf(l);  // a bit-packed field: its carrier's word
    column_place const p = m.place(slot, j);
    out.push_back({analysis::leaf_path(table[l], j), l, j, storage::leaf_bytes(slot),
                   blob_start[mapping::blob_of(slot)] + p.offset, p.stride, p.block_stride, p.block});
  });
  return out;
}

// The counted arrays' columns, placed after the particles' storage (each 256-byte aligned, as a
// coalesce::array's is): a plain stride of the element size, whatever the layout.
void append_array_columns(std::vector<column_desc>& columns, analysis::access_trace const& trace,
                          std::size_t storage_bytes);

// Rank and explain (src/advisor.cpp).
analysis::advice rank_layouts(analysis::device_model const& model, std::vector<analysis::layout_prediction> candidates,
                              std::span<analysis::kernel_use const> mix, std::vector<reflect::leaf_info> const& leaves,
                              std::vector<std::size_t> const& member_of_leaf,
                              std::vector<std::string> const& member_names);

template <class T, class Layout> analysis::layout_prediction predict_layout(analysis::device_model const& model,
                                                                            std::span<analysis::kernel_use const> mix,
                                                                            std::string cpp_type) {
  analysis::layout_prediction out;
  out.layout = layout_name_of<Layout>();
  out.cpp_type = std::move(cpp_type);
  for (auto const& use : mix) {
    auto columns = columns_under<T, Layout>(std::max<std::size_t>(use.trace->elements, 1));
    append_array_columns(columns, *use.trace,
                         layout_storage<T, Layout>::bytes(std::max<std::size_t>(use.trace->elements, 1)));
    out.kernels.push_back(predict_trace(model, *use.trace, columns, &vector_load_bytes<T, Layout>));
    out.weighted_bytes_per_thread += use.weight * out.kernels.back().bytes_per_thread();
    out.weighted_l1_sectors += use.weight * static_cast<double>(out.kernels.back().l1_sectors);
    out.weighted_dram_bytes_per_thread += use.weight * out.kernels.back().dram_bytes_per_thread();
    out.weighted_time_ps += use.weight * out.kernels.back().time_ps_per_thread;
  }
  return out;
}

template <class T> std::vector<std::size_t> member_of_each_leaf() {
  std::vector<std::size_t> out;
  for (auto const& info : reflect::leaf_table_v<T>) out.push_back(info.path[0]);
  return out;
}

// "coalesce::member_indices<0, 2>", or "coalesce::fields<&Particle::pos, &Particle::mass>" given
// the names ("Particle::pos", ...).
std::string member_list(std::vector<std::size_t> const& members, std::vector<std::string> const& names);

}  // namespace coalesce::detail

namespace coalesce::analysis {

// An array the kernel reads beside the view (a neighbour list, its counts, an index list), read
// like a pointer (list[k * n + i]): inside count_accesses each read is recorded as a load of its
// own column, so the prediction counts the list's bytes too; outside it is a plain read. The
// kernel body takes the array's type as a template parameter (a raw pointer on the GPU, this in
// the count).
template <class U> class counted {
  static_assert(std::is_trivially_copyable_v<U>, "coalesce: counted<U> holds plain values (indices, counts)");

 public:
  // Over values that stay alive while it is read (it keeps a span); `name` labels the array in the
  // advice and in errors.
  counted(std::span<U const> values, std::string name) : values_(values), name_(std::move(name)) {}
  // The same over a vector's values.
  counted(std::vector<U> const& values, std::string name) : counted(std::span<U const>(values), std::move(name)) {}
  // Entry k, a recorded load inside count_accesses; throws coalesce::error for k >= size().
  U operator[](std::size_t k) const {
    if (detail::counting_state* const state = detail::current_counting()) {
      state->record_array(values_.data(), name_, sizeof(U), values_.size(), k);
    } else if (k >= values_.size()) {
      detail::throw_error("counted array '" + name_ + "': index " + std::to_string(k) + " of " +
                          std::to_string(values_.size()) + " entries");
    }
    return values_[k];
  }
  std::size_t size() const { return values_.size(); }  // entries; asking is not a recorded load

 private:
  std::span<U const> values_;
  std::string name_;
};

// How many threads count_accesses counts of a large system, and from how large a system on: the
// size the cache model was held against Nsight Compute with (16,384 counted threads standing for
// 4M particles, docs/analysis.md), a window of it when the sample has more than four times that.
inline constexpr std::size_t counted_window = 16384;
inline constexpr std::size_t window_from = 4 * counted_window;  // larger samples are counted in a window

// Runs kernel(v, i) for i in [0, threads) (default: one thread per sample element) over a
// counting view of a copy of `sample`, recording every field access. The sample's copy may be
// changed by the kernel's writes; `sample` itself is not.
//
// Sampling: with threads left 0 and a sample of more than window_from elements (the whole system:
// 4M particles and their real neighbour list), only a window of counted_window threads in the
// middle of it is run, as a miniature system: the elements they touch are recorded modulo the
// window, system_elements is set to the sample's size (the L2 scales as the model was
// calibrated), and the advice says so. Counting and prediction then take about as long as for a
// sample of that size, whatever the system's. Pass threads = sample.size() to count every thread.
template <class T, class Kernel> access_trace count_accesses(std::string kernel_name, std::span<T const> sample,
                                                             Kernel&& kernel, std::size_t threads = 0) {
  if (sample.empty()) {
    detail::throw_error("count_accesses('" + kernel_name +
                        "'): the sample is empty; give it some elements of the real data");
  }
  if (sample.size() > UINT32_MAX) {
    detail::throw_error("count_accesses('" + kernel_name + "'): a sample of " + std::to_string(sample.size()) +
                        " elements; the trace indexes elements with 32 bits: count a smaller sample");
  }
  bool const windowed = threads == 0 && sample.size() > window_from;
  std::size_t const first = windowed ? (sample.size() - counted_window) / 2 / 32 * 32 : 0;  // warp-aligned
  if (threads == 0) threads = windowed ? counted_window : sample.size();
  access_trace trace;
  trace.kernel = std::move(kernel_name);
  trace.elements = windowed ? counted_window : sample.size();
  trace.system_elements = windowed ? sample.size() : 0;
  trace.counted_from = windowed ? sample.size() : 0;
  trace.threads = threads;
  trace.columns.resize(reflect::column_count_v<T>);
  trace.element_columns = reflect::column_count_v<T>;
  trace.thread_begin.reserve(threads + 1);
  std::vector<T> copy(sample.begin(), sample.end());
  detail::counting_state state;
  state.trace = &trace;
  state.data = reinterpret_cast<std::byte*>(copy.data());
  state.record_bytes = sizeof(T);
  state.elements = copy.size();
  state.column_at = detail::column_map<T>();
  state.first = first;
  state.window = windowed ? counted_window : 0;
  detail::counting_view<T> const view(&state);
  struct current {  // counted arrays record into this call's trace, also when the kernel throws
    detail::counting_state* before;
    explicit current(detail::counting_state* now) : before(detail::current_counting()) {
      detail::current_counting() = now;
    }
    ~current() { detail::current_counting() = before; }
  } const counting(&state);
  for (std::size_t t = 0; t < threads; ++t) {
    state.thread = first + t;
    trace.thread_begin.push_back(trace.accesses.size());
    kernel(view, first + t);
  }
  trace.thread_begin.push_back(trace.accesses.size());
  return trace;
}
// The same over a std::vector sample.
template <class T, class Kernel> access_trace count_accesses(std::string kernel_name, std::vector<T> const& sample,
                                                             Kernel&& kernel, std::size_t threads = 0) {
  return count_accesses<T>(std::move(kernel_name), std::span<T const>(sample), std::forward<Kernel>(kernel), threads);
}

// The prediction for one layout (any mapping, the user's own too).
template <class T, class Layout>
layout_prediction predict(std::span<kernel_use const> mix, device_model const& model = device_model::hopper()) {
  return detail::predict_layout<T, Layout>(model, mix, layout_name<Layout>());
}

}  // namespace coalesce::analysis

namespace coalesce::detail {
// One candidate's prediction, run later: advise() predicts its candidates on all cores
// (run_predictions, src/analysis/advisor.cpp), each a pure function of the counted traces.
using prediction_job = std::function<analysis::layout_prediction()>;
// The jobs' results in the jobs' order, computed on up to std::thread::hardware_concurrency()
// threads (one where threads cannot be started); the first job's exception, if any, is rethrown.
std::vector<analysis::layout_prediction> run_predictions(std::vector<prediction_job> const& jobs);

template <class T, class Layout> prediction_job predict_later(analysis::device_model const& model,
                                                              std::span<analysis::kernel_use const> mix,
                                                              std::string cpp_type) {
  return [&model, mix, cpp_type = std::move(cpp_type)] { return predict_layout<T, Layout>(model, mix, cpp_type); };
}

template <class T, std::size_t... K>
std::string split_type(std::vector<std::string> const& names, bool unpadded = false) {
  std::vector<std::size_t> const members{K...};
  return "coalesce::split<" + detail::member_list(members, names) + ", coalesce::aos, coalesce::soa" +
         (unpadded ? ", coalesce::unpadded>" : ">");
}
// One member packed, padded to the vector-load width and not (the unpadded group moves fewer
// bytes in streaming kernels; the padded one gathers in one load).
template <class T, std::size_t A> void add_single(std::vector<prediction_job>& out, analysis::device_model const& model,
                                                  std::span<analysis::kernel_use const> mix,
                                                  std::vector<std::string> const& names) {
  out.push_back(predict_later<T, split<member_indices<A>, aos, soa>>(model, mix, split_type<T, A>(names)));
  out.push_back(
      predict_later<T, split<member_indices<A>, aos, soa, unpadded>>(model, mix, split_type<T, A>(names, true)));
}
// Two members packed; unpadded too where the mix gathers both (a gathered group is where the
// padding's one vector load and the unpadded slot's fewer bytes pull apart).
template <class T, std::size_t A, std::size_t B>
void add_pair(std::vector<prediction_job>& out, analysis::device_model const& model,
              std::span<analysis::kernel_use const> mix, std::vector<std::string> const& names,
              std::vector<bool> const& gathered) {
  if constexpr (A < B) {
    out.push_back(predict_later<T, split<member_indices<A, B>, aos, soa>>(model, mix, split_type<T, A, B>(names)));
    if (gathered[A] && gathered[B]) {
      out.push_back(predict_later<T, split<member_indices<A, B>, aos, soa, unpadded>>(
          model, mix, split_type<T, A, B>(names, true)));
    }
  }
}
template <class T, std::size_t A, std::size_t Members>
void add_pairs(std::vector<prediction_job>& out, analysis::device_model const& model,
               std::span<analysis::kernel_use const> mix, std::vector<std::string> const& names,
               std::vector<bool> const& gathered) {
  [&]<std::size_t... B>(std::index_sequence<B...>) { (add_pair<T, A, B>(out, model, mix, names, gathered), ...); }
  (std::make_index_sequence<Members>{});
}
// The narrower format advise() offers for top-level member K: half where every leaf is a float,
// float where every leaf is floating and one is a double; none for any other member.
enum class narrower { none, half, single };
template <class T, std::size_t K> constexpr narrower narrower_format() {
  using M = typename reflect::members<T>::template type<K>;
  constexpr std::size_t first = reflect::first_leaf_of_member<T, K>();
  constexpr std::size_t leaves = reflect::leaves_in<M>();
  if constexpr (leaves == 0) {
    return narrower::none;
  } else {
    return [&]<std::size_t... L>(std::index_sequence<L...>) {
      constexpr bool all_float = (std::is_same_v<typename reflect::leaf_t<T, first + L>::type, float> && ...);
      constexpr bool all_floating = ((std::is_same_v<typename reflect::leaf_t<T, first + L>::type, float> ||
                                      std::is_same_v<typename reflect::leaf_t<T, first + L>::type, double>)&&...);
      return all_float ? narrower::half : all_floating ? narrower::single : narrower::none;
    }
    (std::make_index_sequence<leaves>{});
  }
}
// Which top-level members have a column that some kernel of the mix used as `used(column)` says.
template <class T, class Used>
std::vector<bool> members_where(std::span<analysis::kernel_use const> mix, Used const& used) {
  std::vector<bool> out(reflect::members<T>::count, false);
  for (auto const& use : mix) {
    for (auto const& leaf : reflect::leaf_table_v<T>) {
      for (std::size_t j = 0; j < leaf.extent; ++j) {
        if (used(use.trace->columns[leaf.first_column + j])) out[leaf.path[0]] = true;
      }
    }
  }
  return out;
}
// Which top-level members some kernel of the mix reads or writes.
template <class T> std::vector<bool> touched_members(std::span<analysis::kernel_use const> mix) {
  return members_where<T>(mix, [](auto const& c) { return c.reads + c.writes > 0; });
}
// One precision candidate per touched floating member, remembered beside its job.
struct precision_candidate {
  std::size_t member;
  narrower format;
};
template <class T, std::size_t K>
void add_precision(std::vector<prediction_job>& jobs, std::vector<precision_candidate>& candidates,
                   analysis::device_model const& model, std::span<analysis::kernel_use const> mix,
                   std::vector<std::string> const& names, std::vector<bool> const& touched) {
  constexpr narrower f = narrower_format<T, K>();
  if constexpr (f != narrower::none) {
    if (!touched[K]) return;
    using Format = std::conditional_t<f == narrower::half, coalesce::half, float>;
    std::string const member = names.empty() ? "store_index<" + std::to_string(K) + ", " : "store<&" + names[K] + ", ";
    std::string const type = "coalesce::stored_as<coalesce::soa, coalesce::" + member +
                             (f == narrower::half ? "coalesce::half" : "float") + ">>";
    jobs.push_back(
        predict_later<T, coalesce::stored_as<coalesce::soa, coalesce::store_index<K, Format>>>(model, mix, type));
    candidates.push_back({K, f});
  }
}
analysis::precision_option describe_precision(precision_candidate const& c, analysis::layout_prediction prediction,
                                              analysis::layout_prediction const& best,
                                              analysis::layout_prediction const& soa_prediction,
                                              std::vector<std::string> const& names);

// Which top-level members some kernel of the mix gathers (reads or writes of an element other than
// the thread's own).
template <class T> std::vector<bool> gathered_members(std::span<analysis::kernel_use const> mix) {
  return members_where<T>(mix, [](auto const& c) { return c.gathered_reads + c.gathered_writes > 0; });
}
}  // namespace coalesce::detail

namespace coalesce::analysis {

// Predicts every candidate (aos, soa, aosoa<8>, aosoa<32>, splits packing one top-level member,
// padded and unpadded, or two, unpadded too where the mix gathers both, and Extra...) for the
// weighted mix and ranks them, best first, with the reasons.
// Beside the ranking (advice::precision): each floating member the mix uses stored as half (float
// members) or float (double members) under soa, with its predicted time and the error it adds;
// never the recommendation, since it changes the numbers.
// member_names (optional, in member order, qualified: "Particle::pos") make the pasted type name
// the members (coalesce::fields<&Particle::pos>) instead of their indices.
template <class T, class... Extra> advice advise(std::span<kernel_use const> mix,
                                                 std::vector<std::string> member_names = {},
                                                 device_model const& model = device_model::hopper()) {
  if (mix.empty()) detail::throw_error("advise: no kernels; count at least one kernel with count_accesses");
  double total = 0;
  for (auto const& use : mix) {
    if (!(use.weight >= 0))
      detail::throw_error("advise: kernel '" + use.trace->kernel + "' has a negative or NaN weight");
    total += use.weight;
  }
  if (!(total > 0))
    detail::throw_error("advise: the kernels' weights sum to zero; give each kernel how often it runs per step");
  constexpr std::size_t members = reflect::members<T>::count;
  if (!member_names.empty() && member_names.size() != members) {
    detail::throw_error("advise: " + std::to_string(member_names.size()) + " member names for a struct of " +
                        std::to_string(members) + " members");
  }
  model.validate();
  std::vector<detail::prediction_job> jobs;
  jobs.push_back(detail::predict_later<T, aos>(model, mix, "coalesce::aos"));
  jobs.push_back(detail::predict_later<T, soa>(model, mix, "coalesce::soa"));
  jobs.push_back(detail::predict_later<T, aosoa<8>>(model, mix, "coalesce::aosoa<8>"));
  jobs.push_back(detail::predict_later<T, aosoa<32>>(model, mix, "coalesce::aosoa<32>"));
  if constexpr (members > 1) {
    [&]<std::size_t... A>(std::index_sequence<A...>) {
      (detail::add_single<T, A>(jobs, model, mix, member_names), ...);
      if constexpr (members <= 8) {
        auto const gathered = detail::gathered_members<T>(mix);
        (detail::add_pairs<T, A, members>(jobs, model, mix, member_names, gathered), ...);
      }
    }
    (std::make_index_sequence<members>{});
  }
  (jobs.push_back(detail::predict_later<T, Extra>(model, mix, layout_name<Extra>())), ...);
  // Narrower formats of the floating members the mix uses: predicted with the layouts, ranked apart.
  std::size_t const layouts = jobs.size();
  std::vector<detail::precision_candidate> narrower;
  {
    auto const touched = detail::touched_members<T>(mix);
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (detail::add_precision<T, K>(jobs, narrower, model, mix, member_names, touched), ...);
    }
    (std::make_index_sequence<members>{});
  }
  auto predictions = detail::run_predictions(jobs);
  std::vector<layout_prediction> narrowed(std::make_move_iterator(predictions.begin() + layouts),
                                          std::make_move_iterator(predictions.end()));
  predictions.resize(layouts);
  layout_prediction const soa_prediction = predictions[1];  // jobs[1] is soa
  auto const& table = reflect::leaf_table_v<T>;
  advice out = detail::rank_layouts(model, std::move(predictions), mix,
                                    std::vector<reflect::leaf_info>(table.begin(), table.end()),
                                    detail::member_of_each_leaf<T>(), member_names);
  for (std::size_t c = 0; c < narrower.size(); ++c) {
    out.precision.push_back(
        detail::describe_precision(narrower[c], std::move(narrowed[c]), out.best(), soa_prediction, member_names));
  }
  std::stable_sort(
      out.precision.begin(), out.precision.end(),
      [](precision_option const& a, precision_option const& b) { return a.time_vs_best < b.time_vs_best; });
  return out;
}
// The same with the mix as a braced list: advise<Particle>({{forces, 1.0}, {integrate, 2.0}}).
template <class T, class... Extra> advice advise(std::initializer_list<kernel_use> mix,
                                                 std::vector<std::string> member_names = {},
                                                 device_model const& model = device_model::hopper()) {
  return advise<T, Extra...>(std::span<kernel_use const>(mix.begin(), mix.size()), std::move(member_names), model);
}

}  // namespace coalesce::analysis
