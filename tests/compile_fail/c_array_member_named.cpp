// expect: c_array_member<1, double
// The diagnostic names the C-array member: its index and its type (g++: "double [2]").
#include <coalesce/coalesce.hpp>
struct bad { int id; double w[2]; float mass; };
coalesce::host_vector<bad> v;
