// The host loop of convert_columns, shared by the CUDA build (host memory) and the CPU build.
#pragma once
#include <cstddef>

#include <coalesce/memory/buffer.hpp>

namespace coalesce::detail {
conversion_result host_convert_columns(column_conversion const* columns, std::size_t count, std::size_t n,
                                       bool parallel);
}  // namespace coalesce::detail
