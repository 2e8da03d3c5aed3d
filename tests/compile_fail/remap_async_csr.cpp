// expect: coalesce: the remap of a CSR list waits for its entry count
// (its entry count sizes the output, so there is no form of it that never waits)
#include <coalesce/coalesce.hpp>
void f(coalesce::host_csr_neighbor_list<unsigned> const& list, coalesce::reorder_plan& plan) { coalesce::remap_async(list, plan); }
