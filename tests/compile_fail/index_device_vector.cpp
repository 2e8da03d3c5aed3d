// expect: coalesce: a device_vector's elements live in GPU memory
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Particle { vec3 pos; float mass; };
float f(coalesce::device_vector<Particle>& d) { return d[0][&Particle::mass]; }
