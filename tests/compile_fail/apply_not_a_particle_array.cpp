// expect: coalesce: this argument is not a per-particle array
// (a std::list cannot be permuted in place by index: apply names the four shapes it takes)
#include <list>
#include <coalesce/coalesce.hpp>
void f(std::list<float>& charges, coalesce::reorder_plan& plan) { coalesce::apply(plan, charges); }
