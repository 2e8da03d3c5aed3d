// expect: store a float4's w apart
#include <coalesce/coalesce.hpp>
struct float4_like { float x, y, z, w; };
struct Particle { float4_like pos; float mass; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>> v;
