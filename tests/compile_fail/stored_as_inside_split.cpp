// expect: coalesce: stored_as<...> must be the outermost layout
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Particle { vec3 pos; vec3 vel; float mass; };
using inner = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::half>>;
coalesce::host_vector<Particle, coalesce::split<coalesce::fields<&Particle::pos>, coalesce::aos, inner>> v;
