// coalesce/core/error.hpp - the one exception type of the host API.
//
//   try { coalesce::device_vector<Particle> d(n); }
//   catch (coalesce::error const& e) { std::cerr << e.what(); }   // says what failed and why
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

#include "config.hpp"

namespace coalesce {

class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

[[noreturn]] void throw_error(std::string const& what);
[[noreturn]] void throw_out_of_range(std::size_t index, std::size_t size);

// x with every digit a double holds (%.17g): messages about boxes compared exactly, where
// std::to_string's six decimals would show two different values alike.
inline std::string exact_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

// Debug-build bounds check usable in host and device code: throws on the host (so tests can
// see it), traps on the device (a kernel cannot throw).
COALESCE_HOST_DEVICE COALESCE_INLINE void check_index(std::size_t index, std::size_t size) {
#if COALESCE_CHECK_BOUNDS
  if (index >= size) {
#if COALESCE_IN_DEVICE_CODE
    printf("coalesce: index %llu out of range for a view of size %llu\n", static_cast<unsigned long long>(index),
           static_cast<unsigned long long>(size));
    __trap();
#else
    throw_out_of_range(index, size);
#endif
  }
#else
  (void)index;
  (void)size;
#endif
}

}  // namespace detail
}  // namespace coalesce
