// expect: coalesce: store<&T::member, Format>: the member's leaves cannot be stored in that format
#include <array>
#include <coalesce/coalesce.hpp>
struct Histogram { std::array<int, 8> counts; float weight; };
coalesce::host_vector<Histogram, coalesce::stored_as<coalesce::soa, coalesce::store<&Histogram::counts, coalesce::half>>> v;
