// expect: bits and signed_bits hold integer and bool members
#include <coalesce/coalesce.hpp>
#include <cstdint>
struct Particle { float mass; std::uint32_t id; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::mass, coalesce::bits<8>>>> v;
