// expect: coalesce: store<&T::member, bits<N>>: only an integer or bool member can be bit-packed
#include <coalesce/coalesce.hpp>
#include <array>
#include <cstdint>
struct Particle { float mass; std::array<std::uint8_t, 4> flags; };
coalesce::host_vector<Particle, coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::flags, coalesce::bits<2>>>> v;
