// expect: coalesce: the element type has a C-array member
#include <coalesce/coalesce.hpp>
struct bad { float pos[3]; int id; };
coalesce::host_vector<bad> v;
