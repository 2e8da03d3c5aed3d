// expect: the member's leaves cannot be stored in that format
#include <coalesce/coalesce.hpp>
#include <cstdint>
struct Particle { float x; std::uint32_t id; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::id, coalesce::box_fixed<>>>> v;
