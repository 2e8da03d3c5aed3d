// Test suites that a build may leave out, by name.
#pragma once
#include <doctest/doctest.h>

namespace coalesce_test {
// Cases that check figures (the advisor against H200 measurements, sizes of a million elements)
// rather than memory safety: seconds each, minutes under AddressSanitizer. The CPU build runs
// them; the sanitizer build's ctest entry, named for it, leaves them out (tests/CMakeLists.txt).
inline doctest::test_suite const calibration("calibration");
}  // namespace coalesce_test
