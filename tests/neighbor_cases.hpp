// Particle sets and the O(N^2) reference the neighbour-list tests share (neighbors_test.cpp,
// neighbors_cell_order_test.cpp).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

namespace coalesce_test::neighbor_cases {

using rows_t = std::vector<std::vector<std::uint32_t>>;

// The pairs closer than `reach`, minimum image along periodic axes, computed as the build
// computes them (float positions wrapped into the box, the image's shift added to j).
inline rows_t brute_force(std::vector<coalesce_test::Particle> const& p, coalesce::box const& b,
                          std::array<bool, 3> periodic, double reach, bool half) {
  std::size_t const n = p.size();
  auto const wrapped = [&](coalesce_test::Particle const& q) {
    float c[3] = {q.pos.x, q.pos.y, q.pos.z};
    for (int a = 0; a < 3; ++a) {
      float const lo = static_cast<float>(b.lo[a]), length = static_cast<float>(b.hi[a] - b.lo[a]);
      float t = c[a] - lo;
      if (periodic[a] && (t < 0 || t >= length)) {
        t -= std::floor(t / length) * length;
        if (t >= length) t = 0;
      }
      c[a] = lo + t;
    }
    return std::array<float, 3>{c[0], c[1], c[2]};
  };
  float const reach2 = static_cast<float>(reach * reach);
  rows_t rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto const xi = wrapped(p[i]);
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i || (half && j < i)) continue;
      auto const xj = wrapped(p[j]);
      float e[3];
      for (int a = 0; a < 3; ++a) {
        float const length = static_cast<float>(b.hi[a] - b.lo[a]);
        float best = xi[a] - xj[a];
        if (periodic[a]) {
          for (float s : {-length, length}) {
            float const d = xi[a] - (xj[a] + s);
            if (std::abs(d) < std::abs(best)) best = d;
          }
        }
        e[a] = best;
      }
      if (coalesce::detail::distance2(e[0], e[1], e[2]) < reach2) rows[i].push_back(static_cast<std::uint32_t>(j));
    }
  }
  return rows;
}

inline std::size_t entries_of(rows_t const& rows) {
  std::size_t sum = 0;
  for (auto const& r : rows) sum += r.size();
  return sum;
}

inline rows_t sorted_rows(rows_t rows) {
  for (auto& r : rows) std::sort(r.begin(), r.end());
  return rows;
}

// The particles sorted along z, then y, then x: the spatial order the cluster format's build wants.
inline std::vector<coalesce_test::Particle> spatially_sorted(std::vector<coalesce_test::Particle> p) {
  std::sort(p.begin(), p.end(), [](coalesce_test::Particle const& x, coalesce_test::Particle const& y) {
    return std::tie(x.pos.z, x.pos.y, x.pos.x) < std::tie(y.pos.z, y.pos.y, y.pos.x);
  });
  return p;
}

inline std::vector<coalesce_test::Particle> random_particles(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<coalesce_test::Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {0, 0, 0}, 1.0f, static_cast<std::uint32_t>(i)};
  return out;
}

// Clustered: a few tight balls (crowded cells beside empty ones), some particles exactly on faces.
inline std::vector<coalesce_test::Particle> clustered_particles(std::size_t n, float length, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> spread(0.0f, 0.3f);
  std::uniform_real_distribution<float> u(0.0f, length);
  std::vector<coalesce_test::Particle> out(n);
  float const centres[3][3] = {{1, 1, 1}, {length - 0.5f, 2, length - 0.2f}, {length / 2, length / 2, 0.1f}};
  for (std::size_t i = 0; i < n; ++i) {
    auto const& c = centres[i % 3];
    coalesce_test::vec3 pos{c[0] + spread(rng), c[1] + spread(rng), c[2] + spread(rng)};
    if (i % 17 == 0) pos.x = 0.0f;             // on the lower face
    if (i % 19 == 0) pos.y = length;           // on the upper face (the image of 0)
    if (i % 23 == 0) pos.z = u(rng) - length;  // outside the periodic box: its image is used
    out[i] = {pos, {0, 0, 0}, 1.0f, static_cast<std::uint32_t>(i)};
  }
  return out;
}

// Particles no closer than 0.85 (a liquid's spacing: no pair deep in the repulsive wall), types
// 0 and 1 alternating.
inline std::vector<coalesce_test::Particle> liquid(std::size_t n, float length, unsigned seed) {
  std::vector<coalesce_test::Particle> out;
  auto candidates = random_particles(20 * n, 0.f, length, seed);
  for (auto const& c : candidates) {
    bool far = true;
    for (auto const& q : out) {
      float d2 = 0;
      for (float d : {c.pos.x - q.pos.x, c.pos.y - q.pos.y, c.pos.z - q.pos.z}) {
        d -= length * std::round(d / length);
        d2 += d * d;
      }
      far = far && d2 > 0.85f * 0.85f;
    }
    if (!far) continue;
    out.push_back(c);
    out.back().id = static_cast<std::uint32_t>(out.size() % 2);
    out.back().vel = {7, 7, 7};  // the force member: overwritten
    if (out.size() == n) break;
  }
  return out;
}

}  // namespace coalesce_test::neighbor_cases
