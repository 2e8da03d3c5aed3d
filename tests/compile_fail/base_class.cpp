// expect: coalesce: the element type has a base class
#include <coalesce/coalesce.hpp>
struct tag {};
struct bad : tag { float mass; int id; };
coalesce::host_vector<bad> v;
