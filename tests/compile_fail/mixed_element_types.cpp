// expect: error
// A proxy of one element type cannot be assigned from a proxy of another, even of the same size.
#include <coalesce/coalesce.hpp>
struct a_type { float x; int id; };
struct b_type { float y; int tag; };
void f(coalesce::view<a_type> a, coalesce::view<b_type> b) { a[0] = b[0]; }
