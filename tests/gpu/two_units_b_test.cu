// The second of two translation units that instantiate the engines alike (two_units.hpp).
#include "two_units.hpp"

namespace two_units_test {
energies run_in_unit_b() { return run_here(); }
}  // namespace two_units_test
