// expect: coalesce: the element type must be an aggregate
#include <coalesce/coalesce.hpp>
class bad { float mass_; public: int id; };
coalesce::host_vector<bad> v;
