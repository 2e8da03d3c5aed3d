// expect: coalesce: fields<...> (or store<...>) names a member of another struct
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Particle { vec3 pos; vec3 vel; float mass; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&vec3::x, coalesce::half>>> v;
