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
#include "analysis/advisor.hpp"
#include "analysis/analysis.hpp"
#include "analysis/counted_list.hpp"
#include "memory/array.hpp"
#include "reorder/async.hpp"
#include "core/atomic.hpp"
#include "core/column.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "memory/for_each.hpp"
#include "memory/graph.hpp"
#include "reorder/keys.hpp"
#include "core/layout.hpp"
#include "core/member_arrays.hpp"
#include "memory/index_arrays.hpp"
#include "memory/particle_array.hpp"
#include "core/periodic_difference.hpp"
#include "core/reference.hpp"
#include "core/reflect.hpp"
#include "reorder/reorder.hpp"
#include "memory/space.hpp"
#include "core/split.hpp"
#include "core/stored_as.hpp"
#include "memory/vector.hpp"
#include "neighbors/pair_engine.hpp"
#include "neighbors/many_body.hpp"
#include "neighbors/eam_tables.hpp"
#include "neighbors/verlet_list.hpp"
#include "core/view.hpp"
