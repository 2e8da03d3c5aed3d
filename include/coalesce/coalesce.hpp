// coalesce/coalesce.hpp - everything.
//
//   #include <coalesce/coalesce.hpp>
//   struct vec3 { float x, y, z; };
//   struct Particle { vec3 pos; vec3 vel; float mass; std::uint32_t id; };   // untouched user type
//   coalesce::device_vector<Particle> d = coalesce::host_vector<Particle>(n);
//   auto v = d.view();
//   coalesce::for_each_index(coalesce::device{}, v.size(), [=] COALESCE_HOST_DEVICE (std::size_t i) {
//     auto [pos, vel, mass, id] = v[i];
//     auto [x, y, z] = pos;  auto [vx, vy, vz] = vel;
//     x += vx * dt;  y += vy * dt;  z += vz * dt;
//   });
#pragma once
#include "advisor.hpp"
#include "analysis.hpp"
#include "array.hpp"
#include "async.hpp"
#include "column.hpp"
#include "config.hpp"
#include "error.hpp"
#include "for_each.hpp"
#include "keys.hpp"
#include "layout.hpp"
#include "neighbor_list.hpp"
#include "reference.hpp"
#include "reflect.hpp"
#include "reorder.hpp"
#include "space.hpp"
#include "split.hpp"
#include "vector.hpp"
#include "view.hpp"
