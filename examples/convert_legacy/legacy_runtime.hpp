// What the legacy program already had: a device array with upload/download, and a launch
// helper (one thread per index; OpenMP loops when built without CUDA). The migration leaves
// this file alone.
#pragma once
#include <cstddef>
#include <cstring>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "common/kernel_timer.hpp"
#include "particle.hpp"

namespace legacy {

template <class T> class device_array {
 public:
  explicit device_array(std::vector<T> const& host) : values_(host) {}
  explicit device_array(std::size_t n) : values_(n) {}
  void upload(std::vector<T> const& host) { values_.copy_from(host); }
  std::vector<T> download() const { return values_.to_host(); }
  T* data() const { return const_cast<T*>(values_.data()); }
  std::size_t size() const { return values_.size(); }

 private:
  coalesce::device_array<T> values_;
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
