// Columns that change number format on the way, in GPU memory: the columns sorted into batches for
// the kernels (conversion_elements.cuh: any column, an element per thread; conversion_quads.cuh:
// contiguous 2- and 4-byte columns, four elements per thread; conversion_words.cuh: runs of
// bit-packed fields), one launch per batch; the first element a format could not hold is kept as
// (column << failure_element_bits | element) with atomicMin and read back once.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <coalesce/memory/buffer.hpp>

#include "../core/cuda_check.hpp"
#include "conversion_words.cuh"
#include "convert_columns.hpp"

namespace coalesce::detail {
namespace {
quad_op quad_op_for(column_conversion const& c) {
  bool const contiguous =
      c.src.block_shift == 63 && c.dst.block_shift == 63 && c.src.stride == c.from.bytes && c.dst.stride == c.to.bytes;
  bool const aligned =
      reinterpret_cast<std::uintptr_t>(c.src.base) % 16 == 0 && reinterpret_cast<std::uintptr_t>(c.dst.base) % 16 == 0;
  if (!contiguous || !aligned) return quad_op::none;
  if (is_packed(c.to) || is_packed(c.from)) return quad_op::none;  // fields of shared words: bit by bit
  if (c.to == c.from && c.width == 4 && c.from.bytes == 4) return quad_op::copy4;
  if (c.to == c.from && c.width == 2 && c.from.bytes == 2) return quad_op::copy2;
  if (is_float(c.from) && is_sixteen_bit_float(c.to)) return quad_op::narrow;
  if (is_sixteen_bit_float(c.from) && is_float(c.to)) return quad_op::widen;
  auto const four_byte_number = [](stored_format f) {
    return f.bytes == 4 && (f.kind == number_kind::fixed || f.kind == number_kind::box_fraction);
  };
  if (is_float(c.from) && four_byte_number(c.to)) return quad_op::encode4;
  if (four_byte_number(c.from) && is_float(c.to)) return quad_op::decode4;
  return quad_op::none;
}

// The first-failure word of the calling host thread on one device, and the pinned host word it is
// read back into: kept between conversions (a cudaMallocAsync, memset, pageable read-back and free
// per call were ~80 us of a 463 us conversion of 33.5M elements). Set to ~0 on the stream at the
// start of every call, so that no failure of an earlier call (one that threw before reading it)
// can leak into this one. One per host thread: a conversion waits for its stream before it
// returns, so calls of one thread never overlap.
struct failure_word {
  int device = -1;
  unsigned long long* on_device = nullptr;
  unsigned long long* on_host = nullptr;
  failure_word() = default;
  failure_word(failure_word const&) = delete;
  failure_word& operator=(failure_word const&) = delete;
  ~failure_word() { release(); }
  void release() {
    // At process exit the CUDA runtime may be gone already: errors here change nothing.
    if (on_device != nullptr) (void)cudaFree(on_device);
    if (on_host != nullptr) (void)cudaFreeHost(on_host);
    on_device = on_host = nullptr;
    device = -1;
  }
  unsigned long long* prepare(int current_device, cudaStream_t stream) {
    if (device != current_device || on_device == nullptr || on_host == nullptr) {
      release();
      COALESCE_CUDA_TRY(cudaMalloc(&on_device, sizeof *on_device));
      COALESCE_CUDA_TRY(cudaMallocHost(&on_host, sizeof *on_host));
      device = current_device;
    }
    COALESCE_CUDA_TRY(cudaMemsetAsync(on_device, 0xff, sizeof *on_device, stream));
    return on_device;
  }
};
}  // namespace

conversion_result convert_columns(memory_kind kind, column_conversion const* columns, std::size_t count, std::size_t n,
                                  void* native_stream) {
  if (kind == memory_kind::host) return host_convert_columns(columns, count, n, false);
  if (n == 0 || count == 0) return {n, count};
  if (n >= (std::size_t{1} << failure_element_bits) || count >= (std::size_t{1} << (64 - failure_element_bits)))
    throw_error("convert_columns: " + std::to_string(n) + " elements of " + std::to_string(count) +
                " columns; a GPU conversion takes fewer than 2^40 elements and 2^24 columns");
  cudaStream_t const stream = static_cast<cudaStream_t>(native_stream);
  int device = 0, sms = 0;
  COALESCE_CUDA_TRY(cudaGetDevice(&device));
  thread_local failure_word word;
  unsigned long long* const failure = word.prepare(device, stream);
  int const block_threads = 256;
  COALESCE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  auto const blocks = static_cast<unsigned>(
      std::min<std::size_t>((n + block_threads - 1) / block_threads, static_cast<std::size_t>(sms) * 16));
  // Contiguous columns of 2- and 4-byte words (converted or kept): a batch of them per launch, four
  // elements per thread. The rest: batches of columns, an element of each per thread.
  auto const quad_blocks =
      static_cast<unsigned>(std::min<std::size_t>((n / 4 + block_threads) / block_threads, 0x7fffffff));
  conversion_batch batch{};
  quad_batch quads{};
  auto flush = [&] {
    if (batch.count == 0) return;
    batch.n = n;
    convert_columns_kernel<<<blocks, block_threads, 0, stream>>>(batch, failure);
    COALESCE_CUDA_TRY(cudaGetLastError());
    batch = conversion_batch{};
  };
  auto flush_quads = [&] {
    if (quads.count == 0) return;
    quads.n = n;
    if (has_numbers(quads)) {
      for (int c = 0; c < quads.count; ++c) {
        stored_format const& to = quads.columns[c].to;
        bool const into_box = quads.op[c] == quad_op::encode4 && to.kind == number_kind::box_fraction && to.step > 0.0;
        quads.inverse_step[c] = into_box ? 1.0 / to.step : 0.0;
      }
      number_columns_kernel<<<quad_blocks, block_threads, 0, stream>>>(quads, failure);
    } else {
      quad_columns_kernel<<<quad_blocks, block_threads, 0, stream>>>(quads, failure);
    }
    COALESCE_CUDA_TRY(cudaGetLastError());
    quads = quad_batch{};
  };
  quad_batch words{};
  auto flush_words = [&] {
    if (words.count == 0) return;
    words.n = n;
    if (has_word_shape(words)) {
      launch_word_shape(std::make_integer_sequence<int, max_shape_fields>{}, words, quad_blocks, block_threads, stream,
                        failure);
    } else {
      word_columns_kernel<<<quad_blocks, block_threads, 0, stream>>>(words, failure);
    }
    COALESCE_CUDA_TRY(cudaGetLastError());
    words = quad_batch{};
  };
  std::vector<std::size_t> general;
  for (std::size_t c = 0; c < count; ++c) {
    quad_op const op = quad_op_for(columns[c]);
    if (op != quad_op::none) {
      append_column(quads, columns[c], c, op);
      if (quads.count == conversions_per_launch) flush_quads();
      continue;
    }
    general.push_back(c);
  }
  // The fields of one word next to each other (word_run), the other columns in their order.
  auto const run_of = [&](std::size_t c) {
    column_conversion const& col = columns[c];
    bool const into = is_packed(col.to) && !is_packed(col.from), out_of = is_packed(col.from) && !is_packed(col.to);
    return into ? word_run::pack : out_of ? word_run::unpack : word_run::none;
  };
  auto const same_column = [](column_ref const& x, column_ref const& y) {
    return x.base == y.base && x.stride == y.stride && x.block_stride == y.block_stride &&
           x.block_shift == y.block_shift && x.block == y.block;
  };
  auto const word_of = [&](std::size_t c) -> column_ref const& {
    return run_of(c) == word_run::pack ? columns[c].dst : columns[c].src;
  };
  auto const same_word = [&](std::size_t a, std::size_t b) {
    return run_of(a) != word_run::none && run_of(a) == run_of(b) && same_column(word_of(a), word_of(b));
  };
  auto const writers_of = [&](column_ref const& word) {
    std::size_t writers = 0;
    for (std::size_t c = 0; c < count; ++c) writers += same_column(columns[c].dst, word) ? 1 : 0;
    return writers;
  };
  std::vector<std::size_t> ordered;
  std::vector<bool> placed(general.size(), false);
  for (std::size_t a = 0; a < general.size(); ++a) {
    if (placed[a]) continue;
    for (std::size_t b = a; b < general.size(); ++b) {
      if (!placed[b] && (b == a || same_word(general[a], general[b]))) {
        ordered.push_back(general[b]);
        placed[b] = true;
      }
    }
  }
  // Word runs whose columns are contiguous go to the word kernel, four elements per thread (a run
  // longer than a batch is cut into runs that each read and write the word).
  std::vector<std::size_t> rest;
  for (std::size_t k = 0; k < ordered.size();) {
    std::size_t end = k + 1;
    while (end < ordered.size() && same_word(ordered[k], ordered[end])) ++end;
    word_run const kind = run_of(ordered[k]);
    if (kind == word_run::none || !quad_word_run(columns, ordered.data() + k, end - k, kind == word_run::pack)) {
      rest.insert(rest.end(), ordered.begin() + static_cast<std::ptrdiff_t>(k),
                  ordered.begin() + static_cast<std::ptrdiff_t>(end));
      k = end;
      continue;
    }
    // A pack run that is every column writing its words (the list holds every field of a word it
    // writes, buffer.hpp) composes them from zero; a run cut across batches reads them.
    bool const fresh =
        kind == word_run::pack && end - k <= conversions_per_launch && writers_of(columns[ordered[k]].dst) == end - k;
    for (; k < end;) {
      std::size_t const length = std::min<std::size_t>(end - k, conversions_per_launch);
      // One run per launch: word_shape_kernel takes a batch of one run (and the quad columns that
      // join the last), where the interpreting kernel took several runs at 0.79 of the copy ceiling.
      flush_words();
      int const at = words.count;
      for (std::size_t m = 0; m < length; ++m) {
        quad_op const op = m != 0                     ? quad_op::word_member
                           : kind == word_run::unpack ? quad_op::unpack_word
                           : fresh                    ? quad_op::pack_fresh_word
                                                      : quad_op::pack_word;
        column_conversion const& col = columns[ordered[k + m]];
        int const placed = append_column(words, col, ordered[k + m], op);
        words.fields[placed] = kind == word_run::pack ? plan_of(col.to, col.from) : plan_of(col.from, col.to);
      }
      words.run_length[at] = static_cast<unsigned char>(length);
      if (words.count == conversions_per_launch) flush_words();
      k += length;
    }
  }
  ordered = rest;
  int head = -1;
  for (std::size_t k = 0; k < ordered.size(); ++k) {
    std::size_t const c = ordered[k];
    int const at = batch.count;
    bool const joins = head >= 0 && same_word(batch.column_index[head], c);
    batch.run[at] = joins ? word_run::member : run_of(c);
    batch.run_length[at] = 1;
    if (joins) {
      ++batch.run_length[head];
    } else {
      head = batch.run[at] == word_run::none ? -1 : at;
    }
    batch.column_index[at] = c;
    batch.columns[batch.count++] = columns[c];
    if (batch.count == conversions_per_launch) {
      flush();
      head = -1;  // a run cut by the batch's end goes on as a new run in the next
    }
  }
  // The quad columns left (kept, narrowed or widened; not the 4-byte numbers, whose arithmetic
  // would cost the word kernel its registers) join the last word run's launch where there is room:
  // the word kernel's per-element work then overlaps their loads and stores instead of taking a pass
  // of its own (soa <-> four fields in bits, pos in quad columns: 0.76 / 0.79 of the copy ceiling in
  // two launches).
  if (words.count > 0 && quads.count > 0) {
    quad_batch left{};
    for (int c = 0; c < quads.count; ++c) {
      bool const room = words.count < conversions_per_launch && words.count - words.run_length[0] < max_shape_copies;
      append_column(joins_word_shape(quads.op[c]) && room ? words : left, quads.columns[c], quads.column_index[c],
                    quads.op[c]);
    }
    quads = left;
  }
  flush_quads();
  flush_words();
  flush();
  COALESCE_CUDA_TRY(cudaMemcpyAsync(word.on_host, failure, sizeof *failure, cudaMemcpyDeviceToHost, stream));
  COALESCE_CUDA_TRY(cudaStreamSynchronize(stream));
  unsigned long long const found = *word.on_host;
  if (found == ~0ull) return {n, count};
  return {static_cast<std::size_t>(found & ((1ull << failure_element_bits) - 1)),
          static_cast<std::size_t>(found >> failure_element_bits)};
}

conversion_result copy_and_convert_columns(memory_kind kind, column_copy const* copies, std::size_t copy_count,
                                           column_run_copy const* runs, std::size_t run_count,
                                           column_conversion const* conversions, std::size_t conversion_count,
                                           std::size_t n, void* stream) {
  if (kind == memory_kind::host || conversion_count == 0) {
    return copy_then_convert(kind, copies, copy_count, runs, run_count, conversions, conversion_count, n, stream);
  }
  // The kept columns that the quad kernel moves go in the conversions' launch (a second kernel for
  // them cost the ramp of a whole pass: soa -> soa with vel as half 0.72 of the copy ceiling),
  // appended after the conversions, which alone can report a failure.
  std::vector<column_conversion> all(conversions, conversions + conversion_count);
  std::vector<column_copy> rest;
  for (std::size_t c = 0; c < copy_count; ++c) {
    auto const width = static_cast<std::uint8_t>(copies[c].width);
    stored_format const kept{number_kind::opaque, width, 0, false};
    column_conversion const as_conversion{copies[c].dst, copies[c].src, kept, kept, copies[c].width};
    if (quad_op_for(as_conversion) != quad_op::none) {
      all.push_back(as_conversion);
    } else {
      rest.push_back(copies[c]);
    }
  }
  conversion_result const r =
      copy_then_convert(kind, rest.data(), rest.size(), runs, run_count, all.data(), all.size(), n, stream);
  if (r.element < n && r.column >= conversion_count) {
    throw_error("internal error: a column copied with a conversion reported element " + std::to_string(r.element) +
                " as not fitting; please report it");
  }
  return r.element < n ? r : conversion_result{n, conversion_count};
}

}  // namespace coalesce::detail
