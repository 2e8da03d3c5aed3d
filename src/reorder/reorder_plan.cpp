// The reorder algorithms, once for both backends: every check runs before anything the user
// owns is written (bad input leaves everything as it was), and every buffer is the plan's,
// reused across calls.
#include <bit>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include <coalesce/reorder/indexed_moves.hpp>
#include <coalesce/core/error.hpp>

#include "reorder_state.hpp"

namespace coalesce {

reorder_plan::reorder_plan() : state_(std::make_unique<detail::reorder_state>()) {}
reorder_plan::reorder_plan(coalesce::stream on, check_policy checks) : reorder_plan() {
  state_->set_stream(on.handle());
  state_->checks = checks;
}
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
  auto& s = detail::state_of(*this);
  detail::copy_bytes(detail::memory_kind::host, out.data(), s.kind, perm.data(), perm.size() * 4, s.stream);
  return out;
}
std::vector<std::uint32_t> reorder_plan::inverse_on_host() {
  auto const inv = inverse();
  std::vector<std::uint32_t> out(inv.size());
  auto& s = detail::state_of(*this);
  detail::copy_bytes(detail::memory_kind::host, out.data(), s.kind, inv.data(), inv.size() * 4, s.stream);
  return out;
}
std::size_t reorder_plan::allocations() const { return state_ ? state_->allocations : 0; }

std::size_t reorder_plan::bytes_held() const {
  if (!state_) return 0;
  auto const& s = *state_;
  std::size_t total = 0;
  for (auto const* b : {&s.keys, &s.keys_alt, &s.perm, &s.perm_alt, &s.inverse, &s.temp, &s.flag, &s.scalars, &s.cells,
                        &s.perm_mirror, &s.inverse_mirror}) {
    total += b->size();
  }
  for (auto const& b : s.pool) total += b.memory.size();
  for (auto const& b : s.host_blocks) total += b.size();
  return total;
}

void reorder_plan::release() {
  auto fresh = std::make_unique<detail::reorder_state>();
  if (state_) {
    fresh->set_stream(state_->stream);
    fresh->checks = state_->checks;
  }
  state_ = std::move(fresh);
}

coalesce::stream reorder_plan::stream() const {
#if COALESCE_WITH_CUDA
  return coalesce::stream(static_cast<CUstream_st*>(state_ ? state_->stream : nullptr));
#else
  return {};
#endif
}
void reorder_plan::set_stream(coalesce::stream on) { detail::state_of(*this).set_stream(on.handle()); }
check_policy reorder_plan::checks() const { return state_ ? state_->checks : check_policy::before_writing; }
void reorder_plan::set_checks(check_policy checks) { detail::state_of(*this).checks = checks; }
void reorder_plan::check() { detail::report_deferred(detail::state_of(*this)); }

detail::deferred_call::deferred_call(reorder_plan& plan) : plan_(plan) { ++state_of(plan).deferring_calls; }
detail::deferred_call::~deferred_call() { --state_of(plan_).deferring_calls; }

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

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string index_value(std::uint32_t v, bool is_signed) {
  return is_signed ? std::to_string(static_cast<std::int32_t>(v)) : std::to_string(v);
}

void check_plan(reorder_state const& s, char const* what) {
  if (!s.sorted)
    throw_error(std::string(what) + ": the plan has not sorted anything yet; call sort_by_key or sort_keys first");
}

char const* curve_name(curve c) {
  switch (c) {
    case curve::cell:
      return "cell_keys";
    case curve::morton:
      return "morton_keys";
    default:
      return "hilbert_keys";
  }
}

// The check words of `kind`'s backend, reset (queued) unless deferred checks are still
// collecting; null when the policy is off. A call that waits for its own verdict first reports
// what earlier deferred work (an _async call) found, as the docs promise: resetting the words
// would lose it, and leaving it would blame this call.
std::uint64_t* flags_for(reorder_state& s, memory_kind kind) {
  if (s.deferred_flags_set && s.policy_now() == check_policy::before_writing) report_deferred(s);
  if (s.policy_now() == check_policy::off) return nullptr;
  std::uint64_t* flags = s.host_flags.data();
  if (kind == memory_kind::device && device_is_gpu) {
    flags = static_cast<std::uint64_t*>(s.ensure(s.flag, memory_kind::device, check_words * sizeof(std::uint64_t)));
  }
  if (s.policy_now() == check_policy::before_writing || !s.deferred_flags_set) s.backend(kind).reset_flags(flags);
  if (s.policy_now() == check_policy::deferred) {
    s.deferred_flags_kind = kind;
    s.deferred_flags_set = true;
  }
  return flags;
}

// The check words, read back (the call's one wait), or all "nothing found" when the checks are
// deferred or off.
std::array<std::uint64_t, check_words> verdict(reorder_state& s, memory_kind kind, std::uint64_t const* flags) {
  std::array<std::uint64_t, check_words> words;
  words.fill(nothing_found);
  if (flags != nullptr && s.policy_now() == check_policy::before_writing) {
    copy_bytes(memory_kind::host, words.data(), kind, flags, sizeof words, s.stream);
  }
  return words;
}

std::size_t index_of(std::uint64_t word) { return word == nothing_found ? none : static_cast<std::size_t>(word); }

}  // namespace

void report_deferred(reorder_state& s) {
  synchronize_stream(s.stream);
  if (!s.deferred_flags_set) return;
  std::array<std::uint64_t, check_words> words;
  std::uint64_t const* flags = s.deferred_flags_kind == memory_kind::device && device_is_gpu
                                   ? reinterpret_cast<std::uint64_t const*>(s.flag.data())
                                   : s.host_flags.data();
  copy_bytes(memory_kind::host, words.data(), s.deferred_flags_kind, flags, sizeof words, s.stream);
  s.deferred_flags_set = false;
  std::string found;
  if (words[bad_count] != nothing_found)
    found += " a count above max_neighbors in row " + std::to_string(words[bad_count]) + ";";
  if (words[bad_offset] != nothing_found)
    found += " a CSR offset that drops (or offset 0 not 0) at " + std::to_string(words[bad_offset]) + ";";
  if (words[bad_entry] != nothing_found) {
    found += " an index entry out of range, a key above end_bit or a bad position at element or slot " +
             std::to_string(words[bad_entry]) + ";";
  }
  if (!found.empty()) {
    throw_error("reorder_plan::check: work queued with check_policy::deferred met bad input:" + found +
                " the arrays of the failing call hold such entries unchanged; run it again with "
                "check_policy::before_writing to stop before anything is written");
  }
}

plan_keys compute_keys(reorder_plan& plan, memory_kind kind, key_spec const& spec, position_columns const& pos,
                       std::size_t n) {
  check_element_count(n, curve_name(spec.kind));
  auto& s = state_of(plan);
  s.key_generation = s.sorted_generation = 0;  // overwritten now, whatever happens below
  void* keys = s.ensure(s.keys, kind, n * spec.key_bytes);
  std::uint64_t* flags = flags_for(s, kind);
  if (n > 0) s.backend(kind).compute_keys_into(spec, pos, n, keys, flags);
  std::size_t const bad = index_of(verdict(s, kind, flags)[bad_entry]);
  if (bad != none) {
    std::string where = "(";
    for (unsigned a = 0; a < pos.dims; ++a) {
      double v = 0;
      if (stored_position(pos)) {  // a float member stored as fixed point or box_fixed: its decoded value
        v = read_position_coordinate(kind, pos, a, bad);
      } else if (pos.width == 4) {
        v = read_one(s, kind, reinterpret_cast<float const*>(pos.axis[a].address(bad)));
      } else {
        v = read_one(s, kind, reinterpret_cast<double const*>(pos.axis[a].address(bad)));
      }
      where += (a ? ", " : "") + number(v);
    }
    where += ")";
    throw_error(std::string(curve_name(spec.kind)) + ": element " + std::to_string(bad) + " has position " + where +
                (spec.periodic == std::array<bool, 3>{true, true, true}
                     ? ", which is not finite"
                     : ", which is not finite or lies outside the box along an open axis") +
                "; nothing was reordered");
  }
  s.key_generation = next_key_generation();
  return {keys, s.key_generation};
}

void* keys_for_writing(reorder_plan& plan, memory_kind kind, unsigned key_bytes, std::size_t n) {
  check_element_count(n, "cell_keys");
  auto& s = state_of(plan);
  s.key_generation = s.sorted_generation = 0;  // overwritten now, whatever happens below
  return s.ensure(s.keys, kind, n * key_bytes);
}

std::uint64_t keys_written(reorder_plan& plan) {
  auto& s = state_of(plan);
  s.key_generation = next_key_generation();
  return s.key_generation;
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
    throw_error(
        "sort_by_key: these keys are gone: a key_array points into the plan that computed it, and a later "
        "key computation or sort through that plan overwrote them (or they belong to another plan); compute "
        "the keys again right before sorting, or use one reorder_plan per set of keys");
  }
  reorder_backend& backend = s.backend(kind);
  // Keys the plan computed fit their bit range by construction; the caller's are checked.
  if (end_bit < bits && generation == 0 && n > 0) {
    std::uint64_t* flags = flags_for(s, kind);
    if (flags != nullptr) backend.find_key_above(keys, key_bytes, n, end_bit, flags);
    std::size_t const bad = index_of(verdict(s, kind, flags)[bad_entry]);
    if (bad != none) {
      std::uint64_t const value = key_bytes == 4 ? read_one(s, kind, static_cast<std::uint32_t const*>(keys) + bad)
                                                 : read_one(s, kind, static_cast<std::uint64_t const*>(keys) + bad);
      throw_error("sort_keys: key " + std::to_string(bad) + " is " + std::to_string(value) +
                  ", which has bits at or above end_bit = " + std::to_string(end_bit) + "; nothing was reordered");
    }
  }
  // From here on the plan's old permutation is gone.
  s.sorted = false;
  s.inverse_valid = s.perm_mirror_valid = s.inverse_mirror_valid = false;
  ++s.step;
  std::size_t const bytes = n * key_bytes;
  if (keys != s.keys.data() || s.keys.kind() != kind) {
    s.ensure(s.keys, kind, bytes);
    copy_bytes(kind, s.keys.data(), kind, keys, bytes, s.stream);  // the sort works in place on the plan's copy
  }
  s.ensure(s.keys_alt, kind, bytes);
  s.ensure(s.perm, kind, n * 4);
  s.ensure(s.perm_alt, kind, n * 4);
  s.key_bytes = key_bytes;
  backend.iota(reinterpret_cast<std::uint32_t*>(s.perm.data()), n);
  // An empty bit range orders nothing: the stable sort is the identity (and a shift by the
  // key's whole width, which a host comparison on [32, 32) would need, is undefined).
  if (begin_bit < end_bit) backend.sort_pairs(s, n, begin_bit, end_bit);
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
    copy_bytes(kind, s.perm_mirror.data(), s.kind, perm, s.n * 4, s.stream);
    s.perm_mirror_valid = true;
  }
  return reinterpret_cast<std::uint32_t const*>(s.perm_mirror.data());
}

std::uint32_t const* inverse_in(reorder_plan& plan, memory_kind kind) {
  auto& s = state_of(plan);
  check_plan(s, "inverse");
  if (!s.inverse_valid) {
    s.ensure(s.inverse, s.kind, s.n * 4);
    s.backend(s.kind).invert(reinterpret_cast<std::uint32_t const*>(s.perm.data()),
                             reinterpret_cast<std::uint32_t*>(s.inverse.data()), s.n);
    s.inverse_valid = true;
  }
  auto const* inv = reinterpret_cast<std::uint32_t const*>(s.inverse.data());
  if (same_memory(kind, s.kind)) return inv;
  if (!s.inverse_mirror_valid) {
    s.ensure(s.inverse_mirror, kind, s.n * 4);
    copy_bytes(kind, s.inverse_mirror.data(), s.kind, inv, s.n * 4, s.stream);
    s.inverse_mirror_valid = true;
  }
  return reinterpret_cast<std::uint32_t const*>(s.inverse_mirror.data());
}

buffer& scratch(reorder_plan& plan, memory_kind kind, std::size_t bytes) {
  return scratch_besides(plan, kind, bytes, nullptr);
}

buffer& scratch_besides(reorder_plan& plan, memory_kind kind, std::size_t bytes, buffer const* in_use) {
  auto& s = state_of(plan);
  for (auto& b : s.pool) {
    if (&b.memory != in_use && b.memory.size() == bytes && (bytes == 0 || b.memory.kind() == kind)) {
      b.last_step = s.step;
      b.memory.free_on(s.stream);  // storage a sorted vector handed over: freed after the plan's work
      return b.memory;
    }
  }
  // A buffer no call has used since before the last sort belongs to a size the loop has left
  // behind (a drifting particle count): reuse its slot, freeing it first.
  for (auto& b : s.pool) {
    if (&b.memory != in_use && b.last_step + 1 < s.step) {
      b.memory = buffer();
      b.memory = buffer(kind, bytes);
      b.last_step = s.step;
      ++s.allocations;
      return b.memory;
    }
  }
  s.pool.push_back({buffer(kind, bytes), s.step});
  ++s.allocations;
  return s.pool.back().memory;
}

void permute_columns(reorder_plan& plan, memory_kind kind, column_copy const* columns, std::size_t count, std::size_t n,
                     std::uint32_t const* perm) {
  auto& s = state_of(plan);
  if (n > 0 && count > 0) s.backend(kind).gather_columns(columns, count, n, perm);
}

void copy_in_plan_stream(reorder_plan& plan, memory_kind kind, void* dst, void const* src, std::size_t bytes) {
  copy_bytes(kind, dst, kind, src, bytes, state_of(plan).stream);
}

void remap_indices(reorder_plan& plan, memory_kind kind, index_array const& indices) {
  auto& s = state_of(plan);
  check_plan(s, "remap");
  if (indices.size > 0 && indices.data == nullptr)
    throw_error("remap: null index array with " + std::to_string(indices.size) + " entries");
  if (indices.size == 0) return;
  reorder_backend& backend = s.backend(kind);
  std::uint64_t* flags = flags_for(s, kind);
  std::uint32_t const* inverse = inverse_in(plan, kind);
  if (s.policy_now() != check_policy::before_writing) {
    // One pass: out-of-range entries are recorded (deferred) and left as they are.
    backend.map_indices(indices.data, indices.size, inverse, s.n, flags);
    return;
  }
  backend.find_at_least(indices.data, indices.size, s.n, flags);
  std::size_t const bad = index_of(verdict(s, kind, flags)[bad_entry]);
  if (bad != none) {
    throw_error("remap: index entry " + std::to_string(bad) + " is " +
                index_value(read_one(s, kind, indices.data + bad), indices.is_signed) + ", outside [0, " +
                std::to_string(s.n) + "); nothing was remapped");
  }
  backend.map_indices(indices.data, indices.size, inverse, s.n, nullptr);
}

namespace {

// The errors a checked remap found, as messages naming the element (before anything the caller
// owns was written: the remap wrote into plan scratch or the caller's destination only).
void report_list_problems(reorder_state& s, memory_kind kind, neighbor_desc const& list,
                          std::array<std::uint64_t, check_words> const& words, char const* what) {
  std::string const name(what);
  if (std::size_t const drop = index_of(words[bad_offset]); drop != none) {
    if (drop == 0) {
      throw_error(name + ": CSR offset 0 is " + index_value(read_one(s, kind, list.offsets), list.is_signed) +
                  ", it must be 0");
    }
    throw_error(name + ": CSR offset " + std::to_string(drop) + " is " +
                index_value(read_one(s, kind, list.offsets + drop), list.is_signed) + ", below offset " +
                std::to_string(drop - 1) + " = " +
                index_value(read_one(s, kind, list.offsets + drop - 1), list.is_signed) +
                "; offsets must not decrease");
  }
  if (std::size_t const bad = index_of(words[bad_count]); bad != none) {
    throw_error(name + ": count " + std::to_string(bad) + " is " +
                index_value(read_one(s, kind, list.counts + bad), list.is_signed) +
                ", outside [0, max_neighbors = " + std::to_string(list.max_neighbors) + "]; nothing was remapped");
  }
  if (std::size_t const bad = index_of(words[bad_entry]); bad != none) {
    throw_error(name + ": neighbour entry " + std::to_string(bad) + " is " +
                index_value(read_one(s, kind, list.indices + bad), list.is_signed) + ", outside [0, " +
                std::to_string(s.n) + "); nothing was remapped");
  }
}

// Checks what can be checked without reading the list (its shape against the plan).
void check_shape(reorder_state& s, neighbor_desc const& list, char const* what) {
  std::string const name(what);
  if (list.particles != s.n) {
    throw_error(name + ": the neighbour list has " + std::to_string(list.particles) + " rows but the plan orders " +
                std::to_string(s.n) + " particles");
  }
  if (list.particles == 0) return;
  if (list.format == list_format::csr) {
    if (list.offsets == nullptr) throw_error(name + ": a CSR neighbour list needs offsets");
  } else if (list.indices == nullptr && list.max_neighbors > 0) {
    throw_error(name + ": the neighbour list has no indices");
  }
}

}  // namespace

void remap_neighbors(reorder_plan& plan, memory_kind kind, neighbor_desc const& list, neighbor_desc const* into) {
  auto& s = state_of(plan);
  check_plan(s, "remap");
  check_shape(s, list, "remap");
  if (into != nullptr) {
    check_shape(s, *into, "remap (the destination)");
    bool const same_shape = into->format == list.format && into->max_neighbors == list.max_neighbors &&
                            (into->counts == nullptr) == (list.counts == nullptr);
    if (!same_shape) {
      throw_error("remap: the destination list must have the source's order, max_neighbors and counts (or no counts)");
    }
    if (into->indices == list.indices || (list.counts != nullptr && into->counts == list.counts)) {
      throw_error("remap: the destination list shares memory with the source; remap in place instead (no destination)");
    }
  }
  if (list.particles == 0) return;
  reorder_backend& backend = s.backend(kind);
  std::uint32_t const* perm = permutation_in(plan, kind);
  std::uint32_t const* inv = inverse_in(plan, kind);
  if (list.format == list_format::csr) {
    std::uint64_t* flags = flags_for(s, kind);
    // The entry count sizes the output: the one value this path must read back, with the checks
    // of the offsets in the same words (deferred or off: read back alone).
    std::array<std::uint64_t, check_words> words{};
    if (flags != nullptr) {
      backend.check_csr_offsets(list.offsets, list.particles, flags);
      copy_bytes(memory_kind::host, words.data(), kind, flags, sizeof words, s.stream);
      if (s.policy_now() == check_policy::before_writing) report_list_problems(s, kind, list, words, "remap");
    } else {
      words[list_entries] = read_one(s, kind, list.offsets + list.particles);
    }
    std::size_t const entries = static_cast<std::uint32_t>(words[list_entries]);
    if (list.is_signed && static_cast<std::int32_t>(entries) < 0)
      throw_error("remap: CSR offsets overflow (the last one is negative)");
    if (entries > 0 && list.indices == nullptr) throw_error("remap: the CSR neighbour list has no indices");
    std::size_t const offsets_bytes = (list.particles + 1) * 4;
    buffer& new_offsets = scratch(plan, kind, offsets_bytes);
    backend.csr_permuted_offsets(list.offsets, perm, list.particles,
                                 reinterpret_cast<std::uint32_t*>(new_offsets.data()), s);
    std::uint32_t* out =
        into != nullptr
            ? into->indices
            : reinterpret_cast<std::uint32_t*>(scratch_besides(plan, kind, entries * 4, &new_offsets).data());
    if (flags != nullptr && s.policy_now() == check_policy::before_writing) backend.reset_flags(flags);
    backend.remap_csr(list, perm, inv, s.n, reinterpret_cast<std::uint32_t const*>(new_offsets.data()), out, flags);
    if (s.policy_now() == check_policy::before_writing)
      report_list_problems(s, kind, list, verdict(s, kind, flags), "remap");
    std::uint32_t* offsets_out = into != nullptr ? into->offsets : list.offsets;
    if (into == nullptr) copy_bytes(kind, list.indices, kind, out, entries * 4, s.stream);
    copy_bytes(kind, offsets_out, kind, new_offsets.data(), offsets_bytes, s.stream);
    return;
  }
  std::size_t const slots = list.particles * list.max_neighbors;
  std::uint32_t* out = nullptr;
  std::uint32_t* out_counts = nullptr;
  buffer* out_scratch = nullptr;
  if (into != nullptr) {
    out = into->indices;
    out_counts = into->counts;
  } else {
    out_scratch = &scratch(plan, kind, slots * 4);
    out = reinterpret_cast<std::uint32_t*>(out_scratch->data());
    if (list.counts != nullptr)
      out_counts =
          reinterpret_cast<std::uint32_t*>(scratch_besides(plan, kind, list.particles * 4, out_scratch).data());
  }
  std::uint64_t* flags = flags_for(s, kind);
  backend.remap_fixed(list, perm, inv, s.n, out, out_counts, flags);
  if (s.policy_now() == check_policy::before_writing)
    report_list_problems(s, kind, list, verdict(s, kind, flags), "remap");
  if (into == nullptr) {
    copy_bytes(kind, list.indices, kind, out, slots * 4, s.stream);
    if (out_counts != nullptr) copy_bytes(kind, list.counts, kind, out_counts, list.particles * 4, s.stream);
  }
}

double neighbor_locality(reorder_plan& plan, memory_kind kind, neighbor_desc const& list) {
  auto& s = state_of(plan);
  if (list.particles == 0) return 0.0;
  auto const [sum, count] = s.backend(kind).locality_sum(list, s);
  return count == 0 ? 0.0 : sum / static_cast<double>(count);
}

std::uint32_t const* cell_offsets(reorder_plan& plan, std::uint64_t cells, std::uint64_t generation) {
  auto& s = state_of(plan);
  check_plan(s, "cell_offsets");
  if (generation == 0 || generation != s.sorted_generation) {
    throw_error(
        "cell_offsets: the plan's last sort did not sort these cell keys, or a key computation since then "
        "overwrote the sorted keys; call cell_keys, sort_by_key with those keys, then cell_offsets, with no "
        "other key computation on the plan in between");
  }
  if (cells >= 0xffffffffull)
    throw_error("cell_offsets: " + std::to_string(cells) + " cells are too many for 32-bit offsets");
  // Keys computed by cell_keys are below `cells` by construction (the generation says these are
  // they), so nothing needs reading back here.
  s.ensure(s.cells, s.kind, (cells + 1) * 4);
  s.backend(s.kind).cell_starts(s.keys.data(), s.key_bytes, s.n, cells,
                                reinterpret_cast<std::uint32_t*>(s.cells.data()));
  return reinterpret_cast<std::uint32_t const*>(s.cells.data());
}

}  // namespace detail
}  // namespace coalesce
