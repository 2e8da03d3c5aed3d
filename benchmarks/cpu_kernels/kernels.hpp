// The library kernels of cpu_kernels: each written once, in the three forms a user writes, and
// run unchanged on aos, soa, aosoa<W> and split views through coalesce::for_each_index over the
// view, each kernel taking a coalesce::element_index (under aosoa<W> the loop runs block by
// block and the lane loop vectorizes; every other layout gets the plain index).
#pragma once
#include <cstddef>
#include <type_traits>

#include <coalesce/coalesce.hpp>

#include "records.hpp"

namespace cpu_kernels {

// x += v * dt on the three components; pos and vel are proxies (or plain references) of vec3.
template <class Pos, class Vel> inline void advance(Pos&& pos, Vel&& vel, float dt) {
  auto [x, y, z] = pos;
  auto [vx, vy, vz] = vel;
  x += vx * dt;
  y += vy * dt;
  z += vz * dt;
}

// Load/store form: the whole record into registers, the whole record back.
template <class View> void step_load_store(View v, float dt) {
  using T = typename View::value_type;
  coalesce::for_each_index(coalesce::device{}, v, [=](coalesce::element_index i) {
    T p = v[i];
    p.pos.x += p.vel.x * dt;
    p.pos.y += p.vel.y * dt;
    p.pos.z += p.vel.z * dt;
    v[i] = p;
  });
}

// Bound-reference form: structured bindings of every member, then of pos and vel.
template <class View> void step_bindings(View v, float dt) {
  using T = typename View::value_type;
  coalesce::for_each_index(coalesce::device{}, v, [=](coalesce::element_index i) {
    if constexpr (std::is_same_v<T, particle6>) {
      auto [pos, vel] = v[i];
      advance(pos, vel, dt);
    } else {
      [[maybe_unused]] auto [pos, vel, force, mass, charge, radius, potential, density, pressure, energy] = v[i];
      advance(pos, vel, dt);
    }
  });
}

// Member-pointer form: v[i][&T::pos][&vec3::x].
template <class View> void step_members(View v, float dt) {
  using T = typename View::value_type;
  coalesce::for_each_index(coalesce::device{}, v, [=](coalesce::element_index i) {
    auto r = v[i];
    r[&T::pos][&vec3::x] += r[&T::vel][&vec3::x] * dt;
    r[&T::pos][&vec3::y] += r[&T::vel][&vec3::y] * dt;
    r[&T::pos][&vec3::z] += r[&T::vel][&vec3::z] * dt;
  });
}

// drift_x: 2 of 16 fields read, 1 written.
template <class View> void drift_bindings(View v, float dt) {
  coalesce::for_each_index(coalesce::device{}, v, [=](coalesce::element_index i) {
    [[maybe_unused]] auto [pos, vel, force, mass, charge, radius, potential, density, pressure, energy] = v[i];
    auto [x, y, z] = pos;
    auto [vx, vy, vz] = vel;
    x += vx * dt;
  });
}

template <class View> void drift_members(View v, float dt) {
  using T = typename View::value_type;
  coalesce::for_each_index(coalesce::device{}, v,
                           [=](coalesce::element_index i) { v[i][&T::pos][&vec3::x] += v[i][&T::vel][&vec3::x] * dt; });
}

}  // namespace cpu_kernels
