#include <coalesce/core/error.hpp>
#include <coalesce/core/stored_types.hpp>

namespace coalesce::detail {

void throw_error(std::string const& what) { throw error("coalesce: " + what); }

void throw_out_of_range(std::size_t index, std::size_t size) {
  throw error("coalesce: index " + std::to_string(index) + " is out of range for a view of size " +
              std::to_string(size));
}

void throw_store_error(stored_format f) {
  throw error("coalesce: a value written to a member stored as " + format_name(f) +
              " is outside what that format holds (or NaN into an integer or fixed-point member); store the member "
              "in a wider format, or choose the saturate policy (e.g. coalesce::half_format<coalesce::saturate>)");
}

}  // namespace coalesce::detail
