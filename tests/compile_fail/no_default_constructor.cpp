// expect: coalesce: the element type must be value-initializable
#include <coalesce/coalesce.hpp>
struct id_type { id_type(int v) : value(v) {} int value; };
struct bad { float mass; id_type id; };
auto n = coalesce::reflect::leaf_count_v<bad>;
