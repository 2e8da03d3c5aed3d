#include <coalesce/core/error.hpp>

namespace coalesce::detail {

void throw_error(std::string const& what) { throw error("coalesce: " + what); }

void throw_out_of_range(std::size_t index, std::size_t size) {
  throw error("coalesce: index " + std::to_string(index) + " is out of range for a view of size " +
              std::to_string(size));
}

}  // namespace coalesce::detail
