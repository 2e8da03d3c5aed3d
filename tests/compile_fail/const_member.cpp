// expect: coalesce: the element type has a const or volatile member
#include <coalesce/coalesce.hpp>
struct bad { const float mass; int id; };
auto n = coalesce::reflect::leaf_count_v<bad>;
