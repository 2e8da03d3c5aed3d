// expect: box_difference: box_fixed
#include <coalesce/coalesce.hpp>
struct vec3 { float x, y, z; };
struct Atom { vec3 pos; };
coalesce::host_vector<Atom> v;
vec3 d = coalesce::box_difference(v.view()[0][&Atom::pos], v.view()[1][&Atom::pos]);
