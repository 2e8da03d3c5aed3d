// expect: coalesce: push_back on a device_vector
// (with CUDA, device memory is GPU memory; without, the same code must still be rejected)
#include <coalesce/coalesce.hpp>
struct ok { float x; };
void f(coalesce::device_vector<ok>& d) { d.push_back(ok{1.0f}); }
