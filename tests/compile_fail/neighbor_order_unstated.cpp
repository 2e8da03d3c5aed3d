// expect: coalesce: say how the neighbour list is stored
// A column-major list read as row-major renumbers every entry wrongly without any error, so the
// storage order has no default.
#include <coalesce/coalesce.hpp>
#include <cstdint>
void f(std::uint32_t* nbr, std::size_t n, coalesce::reorder_plan& plan) {
  coalesce::remap(coalesce::neighbor_list<std::uint32_t>{nbr, n, 32}, plan);
}
