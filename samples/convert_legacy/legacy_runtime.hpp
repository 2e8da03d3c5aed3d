// What the legacy program already had: a device array with upload/download, and a launch
// helper (one thread per index; OpenMP loops when built without CUDA). The migration leaves
// this file alone.
#pragma once
#include <cstddef>
#include <cstring>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "../common/kernel_timer.hpp"
#include "particle.hpp"

namespace legacy {

template <class T> class device_array {
 public:
  explicit device_array(std::vector<T> const& host) : device_array(host.size()) { upload(host); }
  explicit device_array(std::size_t n) : n_(n) {
    data_ = static_cast<T*>(coalesce::detail::allocate(coalesce::detail::memory_kind::device, n * sizeof(T)));
  }
  device_array(device_array const&) = delete;
  device_array& operator=(device_array const&) = delete;
  ~device_array() { coalesce::detail::deallocate(coalesce::detail::memory_kind::device, data_); }
  void upload(std::vector<T> const& host) {
    coalesce::detail::copy_bytes(coalesce::detail::memory_kind::device, data_, coalesce::detail::memory_kind::host,
                                 host.data(), n_ * sizeof(T));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    coalesce::detail::copy_bytes(coalesce::detail::memory_kind::host, host.data(), coalesce::detail::memory_kind::device,
                                 data_, n_ * sizeof(T));
    return host;
  }
  T* data() const { return data_; }
  std::size_t size() const { return n_; }

 private:
  std::size_t n_;
  T* data_;
};

template <class F> void launch(std::size_t n, F f) { coalesce::for_each_index(coalesce::device{}, n, f); }

COALESCE_HOST_DEVICE inline float min_image(float d, float box) {
  if (d > 0.5f * box) return d - box;
  if (d < -0.5f * box) return d + box;
  return d;
}
COALESCE_HOST_DEVICE inline float wrap(float x, float box) {
  if (x >= box) return x - box;
  if (x < 0.0f) return x + box;
  return x;
}

// What every step returns: the particles after the run (as records) and the kinetic energy.
struct result {
  std::vector<Particle> particles;
  double kinetic_energy = 0;
};

inline double sum(std::vector<float> const& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

}  // namespace legacy
