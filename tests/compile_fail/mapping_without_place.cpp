// expect: coalesce: a layout's mapping needs `COALESCE_HOST_DEVICE column_place place
// A user-written layout whose mapping forgets place(): the concept check names what is missing.
#include <coalesce/coalesce.hpp>
struct my_layout {
  template <class Shape> struct mapping {
    static constexpr std::size_t blob_count = 1;
    static constexpr std::size_t blob_of(std::size_t) { return 0; }
    constexpr mapping() = default;
    constexpr explicit mapping(std::size_t) {}
    std::size_t blob_bytes(std::size_t) const { return 0; }
  };
};
struct P { float x, y; };
coalesce::host_vector<P, my_layout> v;
