// coalesce_ncu_patterns: deterministic global-load patterns, one load per thread, for checking
// coalesce::analysis against Nsight Compute (see ncu_compare.sh and docs/analysis.md).
//
//   coalesce_ncu_patterns --list --dump-index DIR   # name|coalesce-explore arguments, one per line
//   coalesce_ncu_patterns --dump-index DIR          # runs every kernel once and checks its output
//
// Each kernel is launched once over 2^20 threads (32768 full warps, no partial warp), with every
// buffer from cudaMalloc (256-byte aligned), so every warp has the same pattern and the kernel's
// l1tex sectors per request equal the model's prediction for one warp. The two gather kernels read
// their index (a coalesced 4-sector load) and then the gathered value, both counted by ncu; their
// prediction is the kernel total (coalesce-explore --index ... "predicted_ncu_sectors_per_request").
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define NCU_CHECK(call)                                                                              \
  do {                                                                                               \
    cudaError_t const e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "coalesce_ncu_patterns: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

namespace {

constexpr unsigned threads = 1u << 20;
constexpr unsigned block = 256;

struct record24 {
  float x, y, z, vx, vy, vz;
};
static_assert(sizeof(record24) == 24);

// ------------------------------------------------------------------------------------ kernels
// Plain (non-template) names, so that ncu's kernel names are the pattern names.

__global__ void contiguous_float(float const* in, float* out) {
  unsigned const i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}
__global__ void offset_float(float const* in, float* out) {
  unsigned const i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i + 1];  // one float past a 256-byte boundary: each warp straddles a fifth sector
}
#define COALESCE_STRIDED_KERNEL(name, stride)                                              \
  __global__ void name(char const* in, float* out) {                                       \
    unsigned const i = blockIdx.x * blockDim.x + threadIdx.x;                              \
    out[i] = *reinterpret_cast<float const*>(in + static_cast<std::size_t>(i) * (stride)); \
  }
COALESCE_STRIDED_KERNEL(stride8_float, 8)
COALESCE_STRIDED_KERNEL(stride24_float, 24)
COALESCE_STRIDED_KERNEL(stride32_float, 32)
COALESCE_STRIDED_KERNEL(stride64_float, 64)
COALESCE_STRIDED_KERNEL(stride128_float, 128)
#undef COALESCE_STRIDED_KERNEL

__global__ void contiguous_float4(float4 const* in, float4* out) {
  unsigned const i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}
__global__ void aos24_x(record24 const* in, float* out) {
  unsigned const i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i].x;
}
__device__ void gather(std::uint32_t const* idx, float const* in, float* out) {
  unsigned const i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[idx[i]];
}
__global__ void gather_identity(std::uint32_t const* idx, float const* in, float* out) { gather(idx, in, out); }
__global__ void gather_random(std::uint32_t const* idx, float const* in, float* out) { gather(idx, in, out); }

// ------------------------------------------------------------------------------------- host

template <class T> struct device_buffer {
  T* p = nullptr;
  explicit device_buffer(std::size_t n) { NCU_CHECK(cudaMalloc(&p, n * sizeof(T))); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(device_buffer const&) = delete;
  device_buffer& operator=(device_buffer const&) = delete;
};

// A fixed-seed permutation (splitmix64 + Fisher-Yates): the same file on every machine.
std::vector<std::uint32_t> random_permutation(std::uint32_t n) {
  std::vector<std::uint32_t> p(n);
  for (std::uint32_t i = 0; i < n; ++i) p[i] = i;
  std::uint64_t state = 0x5EED5EED5EEDull;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (std::uint32_t i = n - 1; i > 0; --i) std::swap(p[i], p[next() % (i + 1)]);
  return p;
}

std::vector<std::uint32_t> identity(std::uint32_t n) {
  std::vector<std::uint32_t> p(n);
  for (std::uint32_t i = 0; i < n; ++i) p[i] = i;
  return p;
}

void write_u32(std::string const& path, std::vector<std::uint32_t> const& v) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(v.data(), sizeof v[0], v.size(), f) != v.size()) {
    std::fprintf(stderr, "coalesce_ncu_patterns: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fclose(f);  // little-endian on every CUDA host (x86-64, Arm64)
}

// Floats 0, 1, 2, ... so that out[i] tells which element thread i loaded.
std::vector<float> counting(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t j = 0; j < n; ++j) v[j] = static_cast<float>(j);
  return v;
}

int failures = 0;
void expect(char const* name, std::vector<float> const& got, std::vector<float> const& want) {
  if (std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) != 0) {
    std::fprintf(stderr, "coalesce_ncu_patterns: %s loaded the wrong elements\n", name);
    ++failures;
  }
}

template <class Launch>
std::vector<float> run(std::vector<float> const& host_in, std::size_t out_floats, Launch launch) {
  device_buffer<float> in(host_in.size()), out(out_floats);
  NCU_CHECK(cudaMemcpy(in.p, host_in.data(), host_in.size() * sizeof(float), cudaMemcpyHostToDevice));
  launch(in.p, out.p);
  NCU_CHECK(cudaGetLastError());
  NCU_CHECK(cudaDeviceSynchronize());
  std::vector<float> got(out_floats);
  NCU_CHECK(cudaMemcpy(got.data(), out.p, out_floats * sizeof(float), cudaMemcpyDeviceToHost));
  return got;
}

void strided(char const* name, void (*kernel)(char const*, float*), std::size_t stride) {
  std::vector<float> const in = counting(threads * stride / sizeof(float));
  auto got = run(in, threads,
                 [&](float* i, float* o) { kernel<<<threads / block, block>>>(reinterpret_cast<char const*>(i), o); });
  std::vector<float> want(threads);
  for (std::size_t t = 0; t < threads; ++t) want[t] = in[t * stride / sizeof(float)];
  expect(name, got, want);
}

void gathered(char const* name, void (*kernel)(std::uint32_t const*, float const*, float*),
              std::vector<std::uint32_t> const& idx) {
  std::vector<float> const in = counting(threads);
  device_buffer<std::uint32_t> d_idx(idx.size());
  NCU_CHECK(cudaMemcpy(d_idx.p, idx.data(), idx.size() * sizeof(idx[0]), cudaMemcpyHostToDevice));
  auto got = run(in, threads, [&](float* i, float* o) { kernel<<<threads / block, block>>>(d_idx.p, i, o); });
  std::vector<float> want(threads);
  for (std::size_t t = 0; t < threads; ++t) want[t] = in[idx[t]];
  expect(name, got, want);
}

}  // namespace

int main(int argc, char** argv) {
  bool list = false;
  std::string dir = ".";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--list") == 0) {
      list = true;
    } else if (std::strcmp(argv[i], "--dump-index") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: coalesce_ncu_patterns [--list] [--dump-index DIR]\n");
      return 2;
    }
  }
  std::string const identity_file = dir + "/gather_identity_u32.bin", random_file = dir + "/gather_random_u32.bin";
  std::vector<std::uint32_t> const id = identity(threads), rnd = random_permutation(threads);
  write_u32(identity_file, id);
  write_u32(random_file, rnd);

  if (list) {
    // name|coalesce-explore arguments that predict the kernel's sectors per request, L2 sectors
    // and DRAM bytes (a whole kernel: --threads for the one-load patterns, the index file's size
    // for the gathers).
    std::printf("contiguous_float|--width 4 --stride 4 --threads %u\n", threads);
    std::printf("offset_float|--width 4 --stride 4 --offset 4 --threads %u\n", threads);
    std::printf("stride8_float|--width 4 --stride 8 --threads %u\n", threads);
    std::printf("stride24_float|--width 4 --stride 24 --threads %u\n", threads);
    std::printf("stride32_float|--width 4 --stride 32 --threads %u\n", threads);
    std::printf("stride64_float|--width 4 --stride 64 --threads %u\n", threads);
    std::printf("stride128_float|--width 4 --stride 128 --threads %u\n", threads);
    std::printf("contiguous_float4|--width 16 --stride 16 --threads %u\n", threads);
    std::printf("aos24_x|--width 4 --stride 24 --threads %u\n", threads);
    std::printf("gather_identity|--index %s --index-type u32 --element-size 4\n", identity_file.c_str());
    std::printf("gather_random|--index %s --index-type u32 --element-size 4\n", random_file.c_str());
    return 0;
  }

  int count = 0;
  NCU_CHECK(cudaGetDeviceCount(&count));
  {
    std::vector<float> const in = counting(threads);
    expect("contiguous_float",
           run(in, threads, [](float* i, float* o) { contiguous_float<<<threads / block, block>>>(i, o); }), in);
    std::vector<float> const in1 = counting(threads + 1);
    expect("offset_float",
           run(in1, threads, [](float* i, float* o) { offset_float<<<threads / block, block>>>(i, o); }),
           std::vector<float>(in1.begin() + 1, in1.end()));
  }
  strided("stride8_float", stride8_float, 8);
  strided("stride24_float", stride24_float, 24);
  strided("stride32_float", stride32_float, 32);
  strided("stride64_float", stride64_float, 64);
  strided("stride128_float", stride128_float, 128);
  {
    std::vector<float> const in = counting(4 * std::size_t{threads});
    auto got = run(in, 4 * std::size_t{threads}, [](float* i, float* o) {
      contiguous_float4<<<threads / block, block>>>(reinterpret_cast<float4 const*>(i), reinterpret_cast<float4*>(o));
    });
    expect("contiguous_float4", got, in);
    std::vector<float> const rec = counting(6 * std::size_t{threads});
    auto x = run(rec, threads, [](float* i, float* o) {
      aos24_x<<<threads / block, block>>>(reinterpret_cast<record24 const*>(i), o);
    });
    std::vector<float> want(threads);
    for (std::size_t t = 0; t < threads; ++t) want[t] = rec[6 * t];
    expect("aos24_x", x, want);
  }
  gathered("gather_identity", gather_identity, id);
  gathered("gather_random", gather_random, rnd);
  if (failures != 0) return 1;
  std::printf("coalesce_ncu_patterns: 11 kernels ran and loaded the expected elements\n");
  return 0;
}
