// expect: coalesce: the element type must be trivially copyable
#include <string>
#include <coalesce/coalesce.hpp>
struct bad { float mass; std::string name; };
coalesce::host_vector<bad> v;
