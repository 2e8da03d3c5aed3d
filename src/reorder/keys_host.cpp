// Spatial keys in host memory (and in device memory when libcoalesce is built without CUDA).
#include <cstdint>

#include "keys_math.hpp"
#include "reorder_host_loops.hpp"
#include "reorder_state.hpp"

namespace coalesce::detail {
namespace {
template <class E, class Key>
std::size_t keys_typed(bool parallel, key_params const& p, position_columns const& pos, std::size_t n, Key* keys) {
  // One pass: compute every key, remember the first bad position (its key is garbage, and the
  // caller throws before anything else is touched).
  return first_where(parallel, n, [&](std::size_t i) {
    double x[3] = {0, 0, 0};
    for (unsigned a = 0; a < p.dims; ++a) x[a] = key_coordinate<E>(pos, a, i);
    std::uint32_t cell[3] = {0, 0, 0};
    bool const ok = cell_of(p, p.dims, x, cell);
    keys[i] = ok ? static_cast<Key>(key_of_cell(p, p.dims, cell)) : Key{0};
    return !ok;
  });
}
}  // namespace

void host_backend::compute_keys_into(key_spec const& spec, position_columns const& pos, std::size_t n, void* keys,
                                     std::uint64_t* flags) {
  key_params const p = make_key_params(spec);
  std::size_t bad = none;
  if (stored_position(pos)) {
    bad = spec.key_bytes == 4 ? keys_typed<std::int32_t>(parallel_, p, pos, n, static_cast<std::uint32_t*>(keys))
                              : keys_typed<std::int32_t>(parallel_, p, pos, n, static_cast<std::uint64_t*>(keys));
  } else if (pos.width == 4) {
    bad = spec.key_bytes == 4 ? keys_typed<float>(parallel_, p, pos, n, static_cast<std::uint32_t*>(keys))
                              : keys_typed<float>(parallel_, p, pos, n, static_cast<std::uint64_t*>(keys));
  } else {
    bad = spec.key_bytes == 4 ? keys_typed<double>(parallel_, p, pos, n, static_cast<std::uint32_t*>(keys))
                              : keys_typed<double>(parallel_, p, pos, n, static_cast<std::uint64_t*>(keys));
  }
  record_first(flags, bad_entry, bad);
}

}  // namespace coalesce::detail
