// expect: coalesce: store<&T::member, bits<N>>: only an integer or bool member can be bit-packed
#include <coalesce/coalesce.hpp>
#include <cstdint>
struct Flags { std::uint8_t a, b; };
struct Particle { float mass; Flags flags; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::flags, coalesce::bits<2>>>> v;
