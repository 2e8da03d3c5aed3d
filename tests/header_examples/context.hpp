// What the examples at the top of the public headers refer to without declaring it: the
// user's types and the variables a simulation would have around. Each generated example
// (scripts/extract_header_examples.py) is a function body that sees these as locals.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <span>
#include <vector>

#include <coalesce/coalesce.hpp>

namespace header_examples {

struct vec3 {
  float x, y, z;
};
struct Particle {
  vec3 pos;
  vec3 vel;
  float mass;
  std::uint32_t id;
};
struct State {
  vec3 x;
  vec3 v;
};
struct Body {
  State state;
  float mass;
};
struct float4_like {
  float x, y, z, w;
};
struct Atom {
  float4_like pos;
  float charge;
  std::uint32_t id;
};

struct context {
  std::size_t n = 100, i = 3, m = 120, c = 200, step = 0, nb = 10;
  float dt = 0.01f, L = 10.0f, cutoff = 1.0f;
  Particle p{};
  std::vector<Particle> legacy = std::vector<Particle>(100), legacy_out = std::vector<Particle>(100);
  coalesce::host_vector<Particle> h{100};
  coalesce::device_vector<Particle> d{100};
  coalesce::device_vector<Body> bodies{100};
  coalesce::device_vector<vec3> forces{100};
  std::vector<std::uint32_t> ids_on_host = std::vector<std::uint32_t>(100);
  std::vector<std::uint32_t> neighbour_list = std::vector<std::uint32_t>(3200);
  std::uint32_t* nbr = nullptr;
  std::uint32_t* counts = nullptr;
  std::uint32_t* bonds = nullptr;
  std::byte* base = nullptr;
  Particle* particles_ptr = nullptr;
  float *px = nullptr, *py = nullptr, *pz = nullptr, *vx = nullptr, *vy = nullptr, *vz = nullptr, *masses = nullptr;
  std::uint32_t* ids = nullptr;
  float4_like* positions_float4 = nullptr;
  float* charges = nullptr;
  coalesce::box box{};
  coalesce::stream s{};  // a cudaStream_t in the user's code
  coalesce::device_neighbor_list<std::uint32_t> list{.order = coalesce::neighbor_order::column_major};
};

}  // namespace header_examples

// The context's members as local references, named as the examples use them.
#define COALESCE_EXAMPLE_CONTEXT(ctx)                                                                       \
  [[maybe_unused]] auto& n = ctx.n;                                                                         \
  [[maybe_unused]] auto& i = ctx.i;                                                                         \
  [[maybe_unused]] auto& m = ctx.m;                                                                         \
  [[maybe_unused]] auto& c = ctx.c;                                                                         \
  [[maybe_unused]] auto& step = ctx.step;                                                                   \
  [[maybe_unused]] auto& nb = ctx.nb;                                                                       \
  [[maybe_unused]] auto& dt = ctx.dt;                                                                       \
  [[maybe_unused]] auto& L = ctx.L;                                                                         \
  [[maybe_unused]] auto& cutoff = ctx.cutoff;                                                               \
  [[maybe_unused]] auto& p = ctx.p;                                                                         \
  [[maybe_unused]] auto& legacy = ctx.legacy;                                                               \
  [[maybe_unused]] auto& legacy_out = ctx.legacy_out;                                                       \
  [[maybe_unused]] auto& h = ctx.h;                                                                         \
  [[maybe_unused]] auto& d = ctx.d;                                                                         \
  [[maybe_unused]] auto& bodies = ctx.bodies;                                                               \
  [[maybe_unused]] auto& forces = ctx.forces;                                                               \
  [[maybe_unused]] auto& ids_on_host = ctx.ids_on_host;                                                     \
  [[maybe_unused]] auto& neighbour_list = ctx.neighbour_list;                                               \
  [[maybe_unused]] auto& nbr = ctx.nbr;                                                                     \
  [[maybe_unused]] auto& counts = ctx.counts;                                                               \
  [[maybe_unused]] auto& bonds = ctx.bonds;                                                                 \
  [[maybe_unused]] auto& base = ctx.base;                                                                   \
  [[maybe_unused]] auto& particles_ptr = ctx.particles_ptr;                                                 \
  [[maybe_unused]] auto& px = ctx.px;                                                                       \
  [[maybe_unused]] auto& py = ctx.py;                                                                       \
  [[maybe_unused]] auto& pz = ctx.pz;                                                                       \
  [[maybe_unused]] auto& vx = ctx.vx;                                                                       \
  [[maybe_unused]] auto& vy = ctx.vy;                                                                       \
  [[maybe_unused]] auto& vz = ctx.vz;                                                                       \
  [[maybe_unused]] auto& masses = ctx.masses;                                                               \
  [[maybe_unused]] auto& ids = ctx.ids;                                                                     \
  [[maybe_unused]] auto& positions_float4 = ctx.positions_float4;                                           \
  [[maybe_unused]] auto& charges = ctx.charges;                                                             \
  [[maybe_unused]] auto& box = ctx.box;                                                                     \
  [[maybe_unused]] auto& s = ctx.s;                                                                         \
  [[maybe_unused]] auto& list = ctx.list;                                                                   \
  [[maybe_unused]] auto v = ctx.d.view();                                                                   \
  [[maybe_unused]] auto a = coalesce::view<header_examples::Particle, coalesce::aos>(ctx.particles_ptr, 0); \
  [[maybe_unused]] auto b = coalesce::device_vector<header_examples::Particle, coalesce::aosoa<32>>(ctx.d).view();
