// The pair law the engine's tests (tests/pair_engine*_test.cpp, tests/gpu/pair_engine_*.cu) run:
// Lennard-Jones with a per-type-pair epsilon and sigma^2, written once as a user writes an evaluator.
#pragma once
#include <coalesce/coalesce.hpp>

namespace coalesce_test {

struct lennard_jones {
  struct param_type {
    float epsilon, sigma2;
  };
  COALESCE_HOST_DEVICE coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const s2 = q.sigma2 / r2, s6 = s2 * s2 * s2;
    return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) / r2, 4.f * q.epsilon * s6 * (s6 - 1.f)};
  }
};

}  // namespace coalesce_test
