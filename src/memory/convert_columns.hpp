// The host loop of convert_columns and the plain copy-then-convert order, shared by the CUDA build
// (host memory) and the CPU build.
#pragma once
#include <cstddef>

#include <coalesce/memory/buffer.hpp>

namespace coalesce::detail {
conversion_result host_convert_columns(column_conversion const* columns, std::size_t count, std::size_t n,
                                       bool parallel);
// The copies, then the conversions, each by its own kernels or loops: copy_and_convert_columns
// wherever the conversions' launch does not take the kept columns.
conversion_result copy_then_convert(memory_kind kind, column_copy const* copies, std::size_t copy_count,
                                    column_run_copy const* runs, std::size_t run_count,
                                    column_conversion const* conversions, std::size_t conversion_count, std::size_t n,
                                    void* stream);
}  // namespace coalesce::detail
