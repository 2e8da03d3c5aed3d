// Per-kernel timing for samples that run a whole program: each call of a kernel is timed
// on its own (CUDA events on the GPU, a steady clock on the CPU) and the median is reported.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "bench_timer.hpp"

namespace bench {

class kernel_timer {
 public:
  template <class F> void time(std::string const& kernel, F&& f) { times_[kernel].push_back(median_ms(f, 1, 0)); }
  double median(std::string const& kernel) const {
    auto it = times_.find(kernel);
    if (it == times_.end() || it->second.empty()) return 0.0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> times_;
};

}  // namespace bench
