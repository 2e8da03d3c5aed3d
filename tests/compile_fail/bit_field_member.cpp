// expect: coalesce: the element type has bit-fields or an over-aligned member
#include <coalesce/coalesce.hpp>
struct bad { unsigned alive : 1; unsigned species : 7; float mass; };
coalesce::host_vector<bad> v;
