// The Makefile example of docs/building.md: step.cu launches the device loop (nvcc), main.cpp
// holds the device_vector and is plain C++ (g++).
#pragma once
#include <coalesce/coalesce.hpp>

struct vec3 {
  float x, y, z;
};
struct particle {
  vec3 pos;
  vec3 vel;
  float mass;
};

void step(coalesce::device_vector<particle>& d, float dt);
