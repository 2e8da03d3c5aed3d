// expect: coalesce: the element type has bit-fields or an over-aligned member
#include <coalesce/coalesce.hpp>
struct bad { float a; alignas(16) float b; };
coalesce::host_vector<bad> v;
