// The header of a CPU particle code that names its own vector types, as many do for builds without
// CUDA: the same names as CUDA's vector_types.h, at global scope. coalesce.hpp must not bring
// CUDA's (a redefinition of float4 here), even where CUDA's headers are on the include path.
#pragma once
struct float4 {
  float x, y, z, w;
};
struct double2 {
  double x, y;
};
struct float2 {
  float x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline double2 make_double2(double x, double y) { return double2{x, y}; }
