// Internal to libcoalesce: the GPU side of detail/indexed_moves.hpp (src/indexed_moves_cuda.cu),
// called by the dispatch in src/indexed_moves.cpp for GPU memory in CUDA builds.
#pragma once
#include <coalesce/reorder/indexed_moves.hpp>

namespace coalesce::detail::cuda_moves {

void move_columns_indexed(column_copy const* columns, std::size_t count, std::size_t n, index_map src, index_map dst,
                          void* stream);
void add_columns_indexed(column_sum const* columns, std::size_t count, std::size_t n, index_map src, index_map dst,
                         void* stream);
void shift_column(position_columns const& position, unsigned axis, std::size_t first, std::size_t n, double shift,
                  void* stream);
std::size_t select_near_face(position_columns const& position, unsigned axis, std::size_t first, std::size_t n,
                             bool below, double threshold, std::uint32_t* out, void* stream);
void owners_of(position_columns const& position, std::size_t n, owner_grid const& grid, int* out, void* stream);
// keys[i] = 0 when dest[i] == self, dest[i] + 1 for another rank in [0, ranks), ranks + 1 otherwise.
void destination_keys(int const* dest, std::size_t n, int self, int ranks, std::uint32_t* keys, void* stream);
void* allocate_pinned(std::size_t bytes);
void deallocate_pinned(void* p) noexcept;

}  // namespace coalesce::detail::cuda_moves
