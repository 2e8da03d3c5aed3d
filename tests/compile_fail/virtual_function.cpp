// expect: coalesce: the element type has virtual functions or virtual bases
#include <coalesce/coalesce.hpp>
struct bad { virtual ~bad() = default; float mass; };
coalesce::host_vector<bad> v;
