// expect: coalesce: the element type must be an aggregate
#include <coalesce/coalesce.hpp>
struct bad { bad(float m) : mass(m) {} float mass; };
coalesce::host_vector<bad> v;
