// The baselines of cpu_kernels: the same kernels written by hand over plain arrays of the same
// shape (an array of records; one restrict column per field; 16-byte position slots plus
// columns; an array of blocks of W lanes per field), each an OpenMP `parallel for simd` loop
// (aosoa: `parallel for` over blocks, `simd` over the W lanes of a block). No coalesce here: this is what the library is held against.
//
// aos is the exception: `parallel for` without `simd`. g++ 12 does not vectorize these strided
// loops, and under `simd` it keeps the record copy `T r = p[i]` in a stack slot (the per-lane
// "omp simd array" of a private variable), which made that loop 4x slower than without `simd`.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>

#include "records.hpp"

namespace cpu_kernels::raw {

struct aligned_delete {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{256}); }
};
using buffer = std::unique_ptr<std::byte[], aligned_delete>;
inline buffer allocate(std::size_t bytes) {
  return buffer(static_cast<std::byte*>(::operator new[](std::max<std::size_t>(bytes, 1), std::align_val_t{256})));
}
inline std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

// Field k of a record, records being all-float standard-layout structs.
template <class T> float field(T const& r, int k) {
  float f;
  std::memcpy(&f, reinterpret_cast<std::byte const*>(&r) + k * sizeof(float), sizeof f);
  return f;
}
template <class T> void set_field(T& r, int k, float f) {
  std::memcpy(reinterpret_cast<std::byte*>(&r) + k * sizeof(float), &f, sizeof f);
}

// -------------------------------------------------------------------------------------- aos
template <class T> struct aos_arrays {
  static constexpr char const* name = "aos";
  buffer memory;
  T* p = nullptr;
  std::size_t n = 0;
  explicit aos_arrays(std::span<T const> records)
      : memory(allocate(records.size() * sizeof(T))), p(reinterpret_cast<T*>(memory.get())), n(records.size()) {
    std::copy(records.begin(), records.end(), p);
  }
  void store(std::span<T> out) const { std::copy(p, p + n, out.begin()); }
};

template <class T> void step(aos_arrays<T>& a, float dt) {
  T* const p = a.p;
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    p[i].pos.x += p[i].vel.x * dt;
    p[i].pos.y += p[i].vel.y * dt;
    p[i].pos.z += p[i].vel.z * dt;
  }
}
template <class T> void step_load_store(aos_arrays<T>& a, float dt) {
  T* const p = a.p;
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    T r = p[i];
    r.pos.x += r.vel.x * dt;
    r.pos.y += r.vel.y * dt;
    r.pos.z += r.vel.z * dt;
    p[i] = r;
  }
}
template <class T> void drift(aos_arrays<T>& a, float dt) {
  T* const p = a.p;
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) p[i].pos.x += p[i].vel.x * dt;
}

// -------------------------------------------------------------------------------------- soa
template <class T> struct soa_arrays {
  static constexpr char const* name = "soa";
  static constexpr int F = fields_of<T>;
  buffer memory;
  std::array<float*, F> col{};
  std::size_t n = 0;
  explicit soa_arrays(std::span<T const> records) : n(records.size()) {
    std::size_t const pitch = round_up(n * sizeof(float), 256);  // columns on 256-byte boundaries
    memory = allocate(F * pitch);
    for (int k = 0; k < F; ++k) col[k] = reinterpret_cast<float*>(memory.get() + k * pitch);
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < F; ++k) col[k][i] = field(records[i], k);
  }
  void store(std::span<T> out) const {
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < F; ++k) set_field(out[i], k, col[k][i]);
  }
};

template <class T> void step(soa_arrays<T>& a, float dt) {
  float* __restrict const x = a.col[0];
  float* __restrict const y = a.col[1];
  float* __restrict const z = a.col[2];
  float const* __restrict const vx = a.col[3];
  float const* __restrict const vy = a.col[4];
  float const* __restrict const vz = a.col[5];
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    x[i] += vx[i] * dt;
    y[i] += vy[i] * dt;
    z[i] += vz[i] * dt;
  }
}
// Every field loaded, every field stored back (what `T p = v[i]; ...; v[i] = p;` asks for).
template <class T> void step_load_store(soa_arrays<T>& a, float dt) {
  constexpr int F = soa_arrays<T>::F;
  std::array<float*, F> const col = a.col;
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    float f[F];
#pragma GCC unroll 16
    for (int k = 0; k < F; ++k) f[k] = col[k][i];
    f[0] += f[3] * dt;
    f[1] += f[4] * dt;
    f[2] += f[5] * dt;
#pragma GCC unroll 16
    for (int k = 0; k < F; ++k) col[k][i] = f[k];
  }
}
template <class T> void drift(soa_arrays<T>& a, float dt) {
  float* __restrict const x = a.col[0];
  float const* __restrict const vx = a.col[3];
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) x[i] += vx[i] * dt;
}

// --------------------------------------------------------------------------------- split<pos>
// pos packed in 16-byte slots (x, y, z, padding), every other field a column: what
// coalesce::split<fields<&T::pos>, aos, soa> stores.
struct pos_slot {
  float x, y, z, pad;
};
template <class T> struct split_arrays {
  static constexpr int F = fields_of<T>;
  buffer memory;
  pos_slot* pos = nullptr;
  std::array<float*, F> col{};  // col[0..2] unused: pos lives in the slots
  std::size_t n = 0;
  explicit split_arrays(std::span<T const> records) : n(records.size()) {
    std::size_t const slots = round_up(n * sizeof(pos_slot), 256);
    std::size_t const pitch = round_up(n * sizeof(float), 256);
    memory = allocate(slots + (F - 3) * pitch);
    pos = reinterpret_cast<pos_slot*>(memory.get());
    for (int k = 3; k < F; ++k) col[k] = reinterpret_cast<float*>(memory.get() + slots + (k - 3) * pitch);
    for (std::size_t i = 0; i < n; ++i) {
      pos[i] = {field(records[i], 0), field(records[i], 1), field(records[i], 2), 0.0f};
      for (int k = 3; k < F; ++k) col[k][i] = field(records[i], k);
    }
  }
  void store(std::span<T> out) const {
    for (std::size_t i = 0; i < n; ++i) {
      set_field(out[i], 0, pos[i].x);
      set_field(out[i], 1, pos[i].y);
      set_field(out[i], 2, pos[i].z);
      for (int k = 3; k < F; ++k) set_field(out[i], k, col[k][i]);
    }
  }
};

template <class T> void step(split_arrays<T>& a, float dt) {
  pos_slot* __restrict const p = a.pos;
  float const* __restrict const vx = a.col[3];
  float const* __restrict const vy = a.col[4];
  float const* __restrict const vz = a.col[5];
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    p[i].x += vx[i] * dt;
    p[i].y += vy[i] * dt;
    p[i].z += vz[i] * dt;
  }
}
template <class T> void step_load_store(split_arrays<T>& a, float dt) {
  constexpr int F = split_arrays<T>::F;
  pos_slot* const p = a.pos;
  std::array<float*, F> const col = a.col;
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    float f[F];
    f[0] = p[i].x;
    f[1] = p[i].y;
    f[2] = p[i].z;
#pragma GCC unroll 16
    for (int k = 3; k < F; ++k) f[k] = col[k][i];
    f[0] += f[3] * dt;
    f[1] += f[4] * dt;
    f[2] += f[5] * dt;
    p[i].x = f[0];
    p[i].y = f[1];
    p[i].z = f[2];
#pragma GCC unroll 16
    for (int k = 3; k < F; ++k) col[k][i] = f[k];
  }
}
template <class T> void drift(split_arrays<T>& a, float dt) {
  pos_slot* __restrict const p = a.pos;
  float const* __restrict const vx = a.col[3];
  std::ptrdiff_t const n = static_cast<std::ptrdiff_t>(a.n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) p[i].x += vx[i] * dt;
}

// ---------------------------------------------------------------------------------- aosoa<W>
template <int F, std::size_t W> struct block { float f[F][W]; };

template <class T, std::size_t W> struct aosoa_arrays {
  static constexpr int F = fields_of<T>;
  using block_type = block<F, W>;
  buffer memory;
  block_type* b = nullptr;
  std::size_t n = 0;
  explicit aosoa_arrays(std::span<T const> records)
      : memory(allocate((records.size() + W - 1) / W * sizeof(block_type))),
        b(reinterpret_cast<block_type*>(memory.get())),
        n(records.size()) {
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < F; ++k) b[i / W].f[k][i % W] = field(records[i], k);
  }
  void store(std::span<T> out) const {
    for (std::size_t i = 0; i < n; ++i)
      for (int k = 0; k < F; ++k) set_field(out[i], k, b[i / W].f[k][i % W]);
  }
};

// The lanes [0, count) of one block; count is W except in the last block. Always inlined, so
// that the lane loop has its compile-time trip count W inside the loop over blocks.
#define CPU_KERNELS_LANES inline __attribute__((always_inline))
template <int F, std::size_t W> CPU_KERNELS_LANES void step_lanes(block<F, W>& k, std::size_t count, float dt) {
#pragma omp simd
  for (std::size_t l = 0; l < count; ++l) {
    k.f[0][l] += k.f[3][l] * dt;
    k.f[1][l] += k.f[4][l] * dt;
    k.f[2][l] += k.f[5][l] * dt;
  }
}
template <int F, std::size_t W>
CPU_KERNELS_LANES void step_load_store_lanes(block<F, W>& k, std::size_t count, float dt) {
#pragma omp simd
  for (std::size_t l = 0; l < count; ++l) {
    float f[F];
#pragma GCC unroll 16
    for (int m = 0; m < F; ++m) f[m] = k.f[m][l];
    f[0] += f[3] * dt;
    f[1] += f[4] * dt;
    f[2] += f[5] * dt;
#pragma GCC unroll 16
    for (int m = 0; m < F; ++m) k.f[m][l] = f[m];
  }
}
template <int F, std::size_t W> CPU_KERNELS_LANES void drift_lanes(block<F, W>& k, std::size_t count, float dt) {
#pragma omp simd
  for (std::size_t l = 0; l < count; ++l) k.f[0][l] += k.f[3][l] * dt;
}

// Full blocks in parallel with a compile-time lane count, then the partial last block.
#define CPU_KERNELS_BLOCK_LOOP(lanes_fn)                                                                             \
  std::ptrdiff_t const full = static_cast<std::ptrdiff_t>(a.n / W);                                                  \
  auto* const blocks = a.b;                                                                                          \
  _Pragma("omp parallel for schedule(static)") for (std::ptrdiff_t j = 0; j < full; ++j) lanes_fn(blocks[j], W, dt); \
  if (a.n % W != 0) lanes_fn(blocks[full], a.n % W, dt)

template <class T, std::size_t W> void step(aosoa_arrays<T, W>& a, float dt) { CPU_KERNELS_BLOCK_LOOP(step_lanes); }
template <class T, std::size_t W> void step_load_store(aosoa_arrays<T, W>& a, float dt) {
  CPU_KERNELS_BLOCK_LOOP(step_load_store_lanes);
}
template <class T, std::size_t W> void drift(aosoa_arrays<T, W>& a, float dt) { CPU_KERNELS_BLOCK_LOOP(drift_lanes); }
#undef CPU_KERNELS_BLOCK_LOOP
#undef CPU_KERNELS_LANES

}  // namespace cpu_kernels::raw
