// expect: error
#include <coalesce/coalesce.hpp>
struct ok { float x; int id; };
void f(coalesce::view<ok const> v) { v[0] = ok{}; }
