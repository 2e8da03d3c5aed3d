// expect: coalesce: column() needs a member path that starts at the element type
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct particle { vec3 pos; float mass; };
struct unrelated { float a, b, c, d; };
void f(coalesce::view<particle> v) { auto c = v.column(&unrelated::d); (void)c; }
