// expect: coalesce: aosoa<W> needs W to be a power of two
#include <coalesce/coalesce.hpp>
struct ok { float x; };
coalesce::host_vector<ok, coalesce::aosoa<12>> v;
