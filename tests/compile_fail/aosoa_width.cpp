// expect: coalesce: aosoa<W> needs W >= 1
#include <coalesce/coalesce.hpp>
struct ok { float x; };
coalesce::host_vector<ok, coalesce::aosoa<0>> v;
