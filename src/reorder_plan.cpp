// The reorder algorithms, once for both backends: every check runs before anything the user
// owns is written (bad input leaves everything as it was), and every buffer is the plan's,
// reused across calls.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include <coalesce/error.hpp>

#include "reorder_state.hpp"

namespace coalesce {

reorder_plan::reorder_plan() : state_(std::make_unique<detail::reorder_state>()) {}
reorder_plan::~reorder_plan() = default;
reorder_plan::reorder_plan(reorder_plan&&) noexcept = default;
reorder_plan& reorder_plan::operator=(reorder_plan&&) noexcept = default;

std::size_t reorder_plan::size() const { return state_ && state_->sorted ? state_->n : 0; }

std::span<std::uint32_t const> reorder_plan::permutation() {
  auto& s = detail::state_of(*this);
  return {detail::permutation_in(*this, s.kind), size()};
}
std::span<std::uint32_t const> reorder_plan::inverse() {
  auto& s = detail::state_of(*this);
  return {detail::inverse_in(*this, s.kind), size()};
}
std::vector<std::uint32_t> reorder_plan::permutation_on_host() {
  auto const perm = permutation();
  std::vector<std::uint32_t> out(perm.size());
  detail::copy_bytes(detail::memory_kind::host, out.data(), detail::state_of(*this).kind, perm.data(), perm.size() * 4);
  return out;
}
std::vector<std::uint32_t> reorder_plan::inverse_on_host() {
  auto const inv = inverse();
  std::vector<std::uint32_t> out(inv.size());
  detail::copy_bytes(detail::memory_kind::host, out.data(), detail::state_of(*this).kind, inv.data(), inv.size() * 4);
  return out;
}
std::size_t reorder_plan::allocations() const { return state_ ? state_->allocations : 0; }

std::size_t reorder_plan::bytes_held() const {
  if (!state_) return 0;
  auto const& s = *state_;
  std::size_t total = 0;
  for (auto const* b : {&s.keys, &s.keys_alt, &s.perm, &s.perm_alt, &s.inverse, &s.temp, &s.flag, &s.cells,
                        &s.perm_mirror, &s.inverse_mirror}) {
    total += b->size();
  }
  for (auto const& b : s.pool) total += b.size();
  for (auto const& b : s.host_blocks) total += b.size();
  return total;
}

void reorder_plan::release() { state_ = std::make_unique<detail::reorder_state>(); }

namespace detail {

reorder_state& state_of(reorder_plan& plan) {
  if (!plan.state_) plan.state_ = std::make_unique<reorder_state>();  // a moved-from plan is usable again
  return *plan.state_;
}

// A scratch buffer other than `in_use` (when two of the same size are needed at once).
buffer& scratch_besides(reorder_plan& plan, memory_kind kind, std::size_t bytes, buffer const* in_use);

namespace {

std::uint64_t next_key_generation() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

template <class U> U read_one(memory_kind kind, U const* p) {
  U value{};
  copy_bytes(memory_kind::host, &value, kind, p, sizeof(U));
  return value;
}

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string index_value(std::uint32_t v, bool is_signed) {
  return is_signed ? std::to_string(static_cast<std::int32_t>(v)) : std::to_string(v);
}

void check_plan(reorder_state const& s, char const* what) {
  if (!s.sorted) throw_error(std::string(what) + ": the plan has not sorted anything yet; call sort_by_key or sort_keys first");
}

char const* curve_name(curve c) {
  switch (c) {
    case curve::cell: return "cell_keys";
    case curve::morton: return "morton_keys";
    default: return "hilbert_keys";
  }
}

void check_element_count(std::size_t n, char const* what) {
  if (n > 0xffffffffull) {
    throw_error(std::string(what) + ": " + std::to_string(n) + " elements; a reorder handles at most 2^32 - 1");
  }
}

}  // namespace

plan_keys compute_keys(reorder_plan& plan, memory_kind kind, key_spec const& spec, position_columns const& pos,
                       std::size_t n) {
  check_element_count(n, curve_name(spec.kind));
  auto& s = state_of(plan);
  s.key_generation = s.sorted_generation = 0;  // overwritten now, whatever happens below
  void* keys = s.ensure(s.keys, kind, n * spec.key_bytes);
  std::size_t const bad = compute_keys_into(kind, spec, pos, n, keys, s);
  if (bad != none) {
    std::string where = "(";
    for (unsigned a = 0; a < pos.dims; ++a) {
      double v = 0;
      if (pos.width == 4) {
        v = read_one(kind, reinterpret_cast<float const*>(pos.axis[a].address(bad)));
      } else {
        v = read_one(kind, reinterpret_cast<double const*>(pos.axis[a].address(bad)));
      }
      where += (a ? ", " : "") + number(v);
    }
    where += ")";
    throw_error(std::string(curve_name(spec.kind)) + ": element " + std::to_string(bad) + " has position " + where +
                (spec.periodic ? ", which is not finite" : ", which is not finite or lies outside the clamped box") +
                "; nothing was reordered");
  }
  s.key_generation = next_key_generation();
  return {keys, s.key_generation};
}

void sort_keys(reorder_plan& plan, memory_kind kind, void const* keys, unsigned key_bytes, std::size_t n, int begin_bit,
               int end_bit, std::uint64_t generation) {
  check_element_count(n, "sort_keys");
  int const bits = static_cast<int>(8 * key_bytes);
  if (begin_bit < 0 || end_bit > bits || begin_bit > end_bit) {
    throw_error("sort_keys: the bit range [" + std::to_string(begin_bit) + ", " + std::to_string(end_bit) +
                ") does not fit a " + std::to_string(bits) + "-bit key");
  }
  if (n > 0 && keys == nullptr) throw_error("sort_keys: null keys for " + std::to_string(n) + " elements");
  auto& s = state_of(plan);
  if (generation != 0 && (generation != s.key_generation || keys != s.keys.data())) {
    throw_error("sort_by_key: these keys are gone: a key_array points into the plan that computed it, and a later "
                "key computation or sort through that plan overwrote them (or they belong to another plan); compute "
                "the keys again right before sorting, or use one reorder_plan per set of keys");
  }
  if (end_bit < bits) {
    std::size_t const bad = first_key_above(kind, keys, key_bytes, n, end_bit, s);
    if (bad != none) {
      std::uint64_t const value = key_bytes == 4 ? read_one(kind, static_cast<std::uint32_t const*>(keys) + bad)
                                                 : read_one(kind, static_cast<std::uint64_t const*>(keys) + bad);
      throw_error("sort_keys: key " + std::to_string(bad) + " is " + std::to_string(value) +
                  ", which has bits at or above end_bit = " + std::to_string(end_bit) + "; nothing was reordered");
    }
  }
  // From here on the plan's old permutation is gone.
  s.sorted = false;
  s.inverse_valid = s.perm_mirror_valid = s.inverse_mirror_valid = false;
  std::size_t const bytes = n * key_bytes;
  if (keys != s.keys.data() || s.keys.kind() != kind) {
    s.ensure(s.keys, kind, bytes);
    copy_bytes(kind, s.keys.data(), kind, keys, bytes);  // the sort works in place on the plan's copy
  }
  s.ensure(s.keys_alt, kind, bytes);
  s.ensure(s.perm, kind, n * 4);
  s.ensure(s.perm_alt, kind, n * 4);
  s.key_bytes = key_bytes;
  iota(kind, reinterpret_cast<std::uint32_t*>(s.perm.data()), n);
  // An empty bit range orders nothing: the stable sort is the identity (and a shift by the
  // key's whole width, which a host comparison on [32, 32) would need, is undefined).
  if (begin_bit < end_bit) sort_pairs(kind, s, n, begin_bit, end_bit);
  s.kind = kind;
  s.n = n;
  s.sorted = true;
  s.key_generation = 0;  // the computed keys are sorted now: they no longer match the elements
  s.sorted_generation = generation;
}

std::uint32_t const* permutation_in(reorder_plan& plan, memory_kind kind) {
  auto& s = state_of(plan);
  check_plan(s, "permutation");
  auto const* perm = reinterpret_cast<std::uint32_t const*>(s.perm.data());
  if (same_memory(kind, s.kind)) return perm;
  if (!s.perm_mirror_valid) {
    s.ensure(s.perm_mirror, kind, s.n * 4);
    copy_bytes(kind, s.perm_mirror.data(), s.kind, perm, s.n * 4);
    s.perm_mirror_valid = true;
  }
  return reinterpret_cast<std::uint32_t const*>(s.perm_mirror.data());
}

std::uint32_t const* inverse_in(reorder_plan& plan, memory_kind kind) {
  auto& s = state_of(plan);
  check_plan(s, "inverse");
  if (!s.inverse_valid) {
    s.ensure(s.inverse, s.kind, s.n * 4);
    invert(s.kind, reinterpret_cast<std::uint32_t const*>(s.perm.data()), reinterpret_cast<std::uint32_t*>(s.inverse.data()),
           s.n);
    s.inverse_valid = true;
  }
  auto const* inv = reinterpret_cast<std::uint32_t const*>(s.inverse.data());
  if (same_memory(kind, s.kind)) return inv;
  if (!s.inverse_mirror_valid) {
    s.ensure(s.inverse_mirror, kind, s.n * 4);
    copy_bytes(kind, s.inverse_mirror.data(), s.kind, inv, s.n * 4);
    s.inverse_mirror_valid = true;
  }
  return reinterpret_cast<std::uint32_t const*>(s.inverse_mirror.data());
}

buffer& scratch(reorder_plan& plan, memory_kind kind, std::size_t bytes) { return scratch_besides(plan, kind, bytes, nullptr); }

buffer& scratch_besides(reorder_plan& plan, memory_kind kind, std::size_t bytes, buffer const* in_use) {
  auto& s = state_of(plan);
  for (auto& b : s.pool) {
    if (&b != in_use && b.size() == bytes && (bytes == 0 || b.kind() == kind)) return b;
  }
  // A few sizes live side by side (a sort's vector-sized scratch and a remap's list-sized one
  // alternate every reorder); beyond that a new size replaces the smallest buffer, so a plan
  // used with a drifting particle count holds a bounded number of buffers, not one per size.
  constexpr std::size_t pool_buffers = 4;
  if (s.pool.size() >= pool_buffers) {
    buffer* smallest = nullptr;
    for (auto& b : s.pool) {
      if (&b != in_use && (smallest == nullptr || b.size() < smallest->size())) smallest = &b;
    }
    if (smallest != nullptr) {
      *smallest = buffer(kind, bytes);
      ++s.allocations;
      return *smallest;
    }
  }
  s.pool.emplace_back(kind, bytes);
  ++s.allocations;
  return s.pool.back();
}

void permute_columns(memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n,
                     std::uint32_t const* perm) {
  gather_columns(kind, columns, count, n, perm);
}

void remap_indices(reorder_plan& plan, memory_kind kind, index_array const& indices) {
  auto& s = state_of(plan);
  check_plan(s, "remap");
  if (indices.size > 0 && indices.data == nullptr) throw_error("remap: null index array with " + std::to_string(indices.size) + " entries");
  std::size_t const bad = first_at_least(kind, indices.data, indices.size, s.n, s);
  if (bad != none) {
    throw_error("remap: index entry " + std::to_string(bad) + " is " +
                index_value(read_one(kind, indices.data + bad), indices.is_signed) +
                ", outside [0, " + std::to_string(s.n) + "); nothing was remapped");
  }
  map_indices(kind, indices.data, indices.size, inverse_in(plan, kind));
}

namespace {

// Checks a neighbour list completely (shape, counts or offsets, every used entry) before any write.
void check_list(reorder_state& s, memory_kind kind, neighbor_desc const& list, char const* what) {
  std::string const name(what);
  if (list.particles != s.n) {
    throw_error(name + ": the neighbour list has " + std::to_string(list.particles) + " rows but the plan orders " +
                std::to_string(s.n) + " particles");
  }
  if (list.particles == 0) return;
  if (list.indices == nullptr && list.format != list_format::csr && list.max_neighbors > 0) {
    throw_error(name + ": the neighbour list has no indices");
  }
  if (list.format == list_format::csr) {
    if (list.offsets == nullptr) throw_error(name + ": a CSR neighbour list needs offsets");
    std::uint32_t const first = read_one(kind, list.offsets);
    if (first != 0) throw_error(name + ": CSR offset 0 is " + index_value(first, list.is_signed) + ", it must be 0");
    std::size_t const drop = first_offset_drop(kind, list.offsets, list.particles, s);
    if (drop != none) {
      throw_error(name + ": CSR offset " + std::to_string(drop + 1) + " is " +
                  index_value(read_one(kind, list.offsets + drop + 1), list.is_signed) + ", below offset " +
                  std::to_string(drop) + " = " + index_value(read_one(kind, list.offsets + drop), list.is_signed) +
                  "; offsets must not decrease");
    }
    std::uint32_t const entries = read_one(kind, list.offsets + list.particles);
    if (list.is_signed && static_cast<std::int32_t>(entries) < 0) {
      throw_error(name + ": CSR offsets overflow (the last one is negative)");
    }
    if (entries > 0 && list.indices == nullptr) throw_error(name + ": the CSR neighbour list has no indices");
  } else if (list.counts != nullptr) {
    std::size_t const bad = first_at_least(kind, list.counts, list.particles, std::uint64_t{list.max_neighbors} + 1, s);
    if (bad != none) {
      throw_error(name + ": count " + std::to_string(bad) + " is " + index_value(read_one(kind, list.counts + bad), list.is_signed) +
                  ", outside [0, max_neighbors = " + std::to_string(list.max_neighbors) + "]; nothing was remapped");
    }
  }
  std::size_t const bad = first_bad_entry(kind, list, s.n, s);
  if (bad != none) {
    throw_error(name + ": neighbour entry " + std::to_string(bad) + " is " +
                index_value(read_one(kind, list.indices + bad), list.is_signed) + ", outside [0, " + std::to_string(s.n) +
                "); nothing was remapped");
  }
}

}  // namespace

void remap_neighbors(reorder_plan& plan, memory_kind kind, neighbor_desc const& list) {
  auto& s = state_of(plan);
  check_plan(s, "remap");
  check_list(s, kind, list, "remap");
  if (list.particles == 0) return;
  std::uint32_t const* perm = permutation_in(plan, kind);
  std::uint32_t const* inv = inverse_in(plan, kind);
  if (list.format == list_format::csr) {
    std::size_t const entries = read_one(kind, list.offsets + list.particles);
    std::size_t const offsets_bytes = (list.particles + 1) * 4;
    buffer& new_offsets = scratch(plan, kind, offsets_bytes);
    csr_permuted_offsets(kind, list.offsets, perm, list.particles, reinterpret_cast<std::uint32_t*>(new_offsets.data()), s);
    buffer& out = scratch_besides(plan, kind, entries * 4, &new_offsets);
    remap_csr(kind, list, perm, inv, reinterpret_cast<std::uint32_t const*>(new_offsets.data()),
              reinterpret_cast<std::uint32_t*>(out.data()));
    copy_bytes(kind, list.indices, kind, out.data(), entries * 4);
    copy_bytes(kind, list.offsets, kind, new_offsets.data(), offsets_bytes);
    return;
  }
  std::size_t const slots = list.particles * list.max_neighbors;
  buffer& out = scratch(plan, kind, slots * 4);
  buffer* out_counts = nullptr;
  if (list.counts != nullptr) out_counts = &scratch_besides(plan, kind, list.particles * 4, &out);
  remap_fixed(kind, list, perm, inv, reinterpret_cast<std::uint32_t*>(out.data()),
              out_counts ? reinterpret_cast<std::uint32_t*>(out_counts->data()) : nullptr);
  copy_bytes(kind, list.indices, kind, out.data(), slots * 4);
  if (out_counts) copy_bytes(kind, list.counts, kind, out_counts->data(), list.particles * 4);
}

double neighbor_locality(reorder_plan& plan, memory_kind kind, neighbor_desc const& list) {
  auto& s = state_of(plan);
  if (list.particles == 0) return 0.0;
  auto const [sum, count] = locality_sum(kind, list, s);
  return count == 0 ? 0.0 : sum / static_cast<double>(count);
}

std::uint32_t const* cell_offsets(reorder_plan& plan, std::uint64_t cells, std::uint64_t generation) {
  auto& s = state_of(plan);
  check_plan(s, "cell_offsets");
  if (generation == 0 || generation != s.sorted_generation) {
    throw_error("cell_offsets: the plan's last sort did not sort these cell keys, or a key computation since then "
                "overwrote the sorted keys; call cell_keys, sort_by_key with those keys, then cell_offsets, with no "
                "other key computation on the plan in between");
  }
  if (cells >= 0xffffffffull) throw_error("cell_offsets: " + std::to_string(cells) + " cells are too many for 32-bit offsets");
  if (s.n > 0) {
    std::uint64_t const last = s.key_bytes == 4 ? read_one(s.kind, reinterpret_cast<std::uint32_t const*>(s.keys.data()) + s.n - 1)
                                                : read_one(s.kind, reinterpret_cast<std::uint64_t const*>(s.keys.data()) + s.n - 1);
    if (last >= cells) {
      throw_error("cell_offsets: the largest sorted key is " + std::to_string(last) + ", not below the " +
                  std::to_string(cells) + " cells; sort by these cell keys first");
    }
  }
  s.ensure(s.cells, s.kind, (cells + 1) * 4);
  cell_starts(s.kind, s.keys.data(), s.key_bytes, s.n, cells, reinterpret_cast<std::uint32_t*>(s.cells.data()));
  return reinterpret_cast<std::uint32_t const*>(s.cells.data());
}

}  // namespace detail
}  // namespace coalesce
