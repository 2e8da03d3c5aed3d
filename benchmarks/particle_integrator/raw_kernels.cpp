// Hand-written baselines: raw, restrict-qualified pointers, one particle per GPU thread (or an
// OpenMP loop on the CPU). Compiled as CUDA when coalesce has CUDA.
#include <cstring>

#include "kernels.hpp"

#if COALESCE_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace sample {

#if COALESCE_WITH_CUDA
namespace {
constexpr unsigned threads = 256;
unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }

__global__ void soa_step_kernel(float* __restrict__ x, float* __restrict__ y, float* __restrict__ z,
                                float const* __restrict__ vx, float const* __restrict__ vy,
                                float const* __restrict__ vz, std::size_t n, float dt) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] += vx[i] * dt;
    y[i] += vy[i] * dt;
    z[i] += vz[i] * dt;
  }
}
__global__ void aos_step_kernel(particle* __restrict__ p, std::size_t n, float dt) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    p[i].pos.x += p[i].vel.x * dt;
    p[i].pos.y += p[i].vel.y * dt;
    p[i].pos.z += p[i].vel.z * dt;
  }
}
__global__ void soa_drift_kernel(float* __restrict__ x, float const* __restrict__ vx, std::size_t n, float dt) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += vx[i] * dt;
}
__global__ void aos_drift_kernel(fat_particle* __restrict__ p, std::size_t n, float dt) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) p[i].pos.x += p[i].vel.x * dt;
}
__global__ void aos_to_soa_kernel(particle const* __restrict__ in, float* __restrict__ x, float* __restrict__ y,
                                  float* __restrict__ z, float* __restrict__ vx, float* __restrict__ vy,
                                  float* __restrict__ vz, std::size_t n) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    particle const p = in[i];
    x[i] = p.pos.x;
    y[i] = p.pos.y;
    z[i] = p.pos.z;
    vx[i] = p.vel.x;
    vy[i] = p.vel.y;
    vz[i] = p.vel.z;
  }
}
__global__ void copy_float4_kernel(float4* __restrict__ dst, float4 const* __restrict__ src, std::size_t n) {
  std::size_t const i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
}  // namespace

void raw_soa_step(soa_pointers p, std::size_t n, float dt) {
  soa_step_kernel<<<blocks_for(n), threads>>>(p.x, p.y, p.z, p.vx, p.vy, p.vz, n, dt);
}
void raw_aos_step(particle* p, std::size_t n, float dt) { aos_step_kernel<<<blocks_for(n), threads>>>(p, n, dt); }
void raw_soa_drift_x(float* x, float const* vx, std::size_t n, float dt) {
  soa_drift_kernel<<<blocks_for(n), threads>>>(x, vx, n, dt);
}
void raw_aos_drift_x(fat_particle* p, std::size_t n, float dt) {
  aos_drift_kernel<<<blocks_for(n), threads>>>(p, n, dt);
}
void raw_aos_to_soa(particle const* in, soa_pointers out, std::size_t n) {
  aos_to_soa_kernel<<<blocks_for(n), threads>>>(in, out.x, out.y, out.z, out.vx, out.vy, out.vz, n);
}
void copy_ceiling(void* dst, void const* src, std::size_t bytes) {
  std::size_t const n = bytes / sizeof(float4);
  copy_float4_kernel<<<blocks_for(n), threads>>>(static_cast<float4*>(dst), static_cast<float4 const*>(src), n);
}
void in_place_ceiling(float*, std::size_t) {}
#else
void raw_soa_step(soa_pointers p, std::size_t n, float dt) {
  float* __restrict__ x = p.x;
  float* __restrict__ y = p.y;
  float* __restrict__ z = p.z;
  float const* __restrict__ vx = p.vx;
  float const* __restrict__ vy = p.vy;
  float const* __restrict__ vz = p.vz;
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    x[i] += vx[i] * dt;
    y[i] += vy[i] * dt;
    z[i] += vz[i] * dt;
  }
}
void raw_aos_step(particle* p, std::size_t n, float dt) {
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    p[i].pos.x += p[i].vel.x * dt;
    p[i].pos.y += p[i].vel.y * dt;
    p[i].pos.z += p[i].vel.z * dt;
  }
}
void raw_soa_drift_x(float* __restrict__ x, float const* __restrict__ vx, std::size_t n, float dt) {
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) x[i] += vx[i] * dt;
}
void raw_aos_drift_x(fat_particle* p, std::size_t n, float dt) {
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) p[i].pos.x += p[i].vel.x * dt;
}
void raw_aos_to_soa(particle const* in, soa_pointers out, std::size_t n) {
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    out.x[i] = in[i].pos.x;
    out.y[i] = in[i].pos.y;
    out.z[i] = in[i].pos.z;
    out.vx[i] = in[i].vel.x;
    out.vy[i] = in[i].vel.y;
    out.vz[i] = in[i].vel.z;
  }
}
void copy_ceiling(void* dst, void const* src, std::size_t bytes) {
  std::size_t const n = bytes / sizeof(float);
  float* __restrict__ d = static_cast<float*>(dst);
  float const* __restrict__ s = static_cast<float const*>(src);
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) d[i] = s[i];
}
void in_place_ceiling(float* data, std::size_t count_) {
  std::ptrdiff_t const count = static_cast<std::ptrdiff_t>(count_);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) data[i] = data[i] * 1.0000001f;
}
#endif

}  // namespace sample
