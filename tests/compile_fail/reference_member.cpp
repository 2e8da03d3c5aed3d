// expect: no reference members
#include <coalesce/coalesce.hpp>
struct bad { float& mass; int id; };
coalesce::host_vector<bad>* v = nullptr;
auto n = coalesce::reflect::leaf_count_v<bad>;
