// expect: coalesce: say how the neighbour list is stored
#include <coalesce/coalesce.hpp>
#include <cstdint>
#include <vector>
void f(std::vector<std::uint32_t> const& nbr) {
  coalesce::analysis::neighbor_list_ref list{nbr, 32};
  (void)coalesce::analysis::gather(coalesce::analysis::device_model{}, list, 4);
}
