// expect: needs the box its coordinates are stored in
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Particle { vec3 pos; float mass; };
using boxed = coalesce::stored_as<coalesce::soa, coalesce::store<&Particle::pos, coalesce::box_fixed<coalesce::wrap>>>;
void f(void* a, void* b, void* c, void* d) { (void)coalesce::view<Particle, boxed>::over_blobs(1, {a, b, c, d}); }
