// Columns that change number format on the way (a stored_as mapping on one side of a copy), in
// host memory, and in "device" memory when libcoalesce is built without CUDA (all cores).
#include <algorithm>
#include <cstddef>
#include <cstring>

#include <coalesce/memory/buffer.hpp>
#include <coalesce/memory/transfer.hpp>

#include "convert_columns.hpp"

namespace coalesce::detail {

conversion_result host_convert_columns(column_conversion const* columns, std::size_t count, std::size_t n,
                                       bool parallel) {
  // The first failure in (column, element) order: columns are converted one after another.
  conversion_result first{n, count};
  for (std::size_t c = 0; c < count && first.element == n; ++c) {
    column_conversion const col = columns[c];
    std::ptrdiff_t bad = static_cast<std::ptrdiff_t>(n);
    std::ptrdiff_t const elements = static_cast<std::ptrdiff_t>(n);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(min : bad) if (parallel && elements > 4096)
#else
    (void)parallel;
#endif
    for (std::ptrdiff_t i = 0; i < elements; ++i) {
      if (col.to == col.from && !is_packed(col.to)) {  // a column that keeps its format (a packed field: its bits only)
        std::memcpy(col.dst.address(static_cast<std::size_t>(i)), col.src.address(static_cast<std::size_t>(i)),
                    col.width);
        continue;
      }
      auto const status = convert_element(col.dst.address(static_cast<std::size_t>(i)), col.to,
                                          col.src.address(static_cast<std::size_t>(i)), col.from);
      if (status != encode_status::ok && !col.to.saturates) bad = std::min(bad, i);
    }
    if (bad < elements) first = {static_cast<std::size_t>(bad), c};
  }
  return first;
}

void throw_conversion_error(std::size_t element, stored_format to, std::string const& leaf_name) {
  throw error("coalesce: element " + std::to_string(element) + "'s " + leaf_name + " cannot be stored as " +
              format_name(to) +
              ": the value is outside the format's range (or NaN into an integer or fixed-point member); store the "
              "member in a wider format, or choose the saturate policy");
}

conversion_result copy_then_convert(memory_kind kind, column_copy const* copies, std::size_t copy_count,
                                    column_run_copy const* runs, std::size_t run_count,
                                    column_conversion const* conversions, std::size_t conversion_count, std::size_t n,
                                    void* stream) {
  // Every leaf is copied or converted: what the copies leave in a record is padding.
  if (copy_count != 0 || run_count != 0) {
    copy_columns(kind, copies, copy_count, runs, run_count, n, stream, record_gaps::zero);
  }
  if (conversion_count == 0) return {n, 0};
  return convert_columns(kind, conversions, conversion_count, n, stream);
}

#if !COALESCE_WITH_CUDA
conversion_result convert_columns(memory_kind kind, column_conversion const* columns, std::size_t count, std::size_t n,
                                  void*) {
  return host_convert_columns(columns, count, n, kind == memory_kind::device);
}
conversion_result copy_and_convert_columns(memory_kind kind, column_copy const* copies, std::size_t copy_count,
                                           column_run_copy const* runs, std::size_t run_count,
                                           column_conversion const* conversions, std::size_t conversion_count,
                                           std::size_t n, void* stream) {
  return copy_then_convert(kind, copies, copy_count, runs, run_count, conversions, conversion_count, n, stream);
}
#endif

}  // namespace coalesce::detail
