// expect: coalesce: stored_as<...> names a member twice
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Particle { vec3 pos; vec3 vel; float mass; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::vel, coalesce::half>,
                                                    coalesce::store<&Particle::vel, float>>> v;
