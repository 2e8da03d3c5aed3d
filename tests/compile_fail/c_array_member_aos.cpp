// expect: Every layout needs this, aos included
// The aos layout also reaches members through reflection, so the message must not send users there.
#include <coalesce/coalesce.hpp>
struct bad { float pos[3]; int id; };
coalesce::host_vector<bad, coalesce::aos> v;
