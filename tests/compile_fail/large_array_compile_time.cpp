// Must compile within the time limit in CMakeLists.txt (compile_time.large_array): reflecting a
// struct costs per member, never per byte. Boost.PFR's count tried up to sizeof(T) * CHAR_BIT
// initializers: 35 s for std::array<int, 65536>, far longer for this one.
#include <array>
#include <coalesce/coalesce.hpp>
struct huge { std::array<int, 1 << 22> samples; int id; };
static_assert(coalesce::reflect::leaf_count_v<huge> == 2);
static_assert(coalesce::reflect::column_count_v<huge> == (1 << 22) + 1);
static_assert(coalesce::reflect::leaf_t<huge, 1>::offset == sizeof(int) << 22);
using view_type = coalesce::view<huge>;
static_assert(view_type::leaf_count == 2);
