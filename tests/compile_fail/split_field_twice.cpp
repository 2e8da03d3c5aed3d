// expect: coalesce: fields<...> lists a member twice
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Particle { vec3 pos; vec3 vel; float mass; };
coalesce::host_vector<Particle, coalesce::split<coalesce::fields<&Particle::pos, &Particle::pos>, coalesce::aos,
                                                coalesce::soa>> v;
