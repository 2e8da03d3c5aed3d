// compute_pairs over a cluster_pairs list in CPU memory, instantiated for the machine-code check
// (check_simd.py): the SIMD loop of neighbors/cluster_pair_loop_host.hpp compiled with AVX2 and FMA,
// as a user's LJ code instantiates it. Compiled, never run.
#include <coalesce/coalesce.hpp>

namespace cluster_pair_simd {

struct vec3 {
  float x, y, z;
};
struct Atom {
  vec3 pos;
  vec3 force;
};

struct lennard_jones {
  struct param_type {
    float epsilon, sigma2;
  };
  coalesce::pair_value<float> operator()(float r2, param_type const& q) const {
    float const r2i = 1.f / r2, s2 = q.sigma2 * r2i, s6 = s2 * s2 * s2;
    return {24.f * q.epsilon * s6 * (2.f * s6 - 1.f) * r2i, 4.f * q.epsilon * s6 * (s6 - 1.f)};
  }
};

coalesce::pair_totals forces(coalesce::device_vector<Atom>& atoms,
                             coalesce::verlet_list_ref<coalesce::cluster_pairs> const& list,
                             coalesce::box const& domain,
                             coalesce::pair_table<lennard_jones::param_type> const& table) {
  return coalesce::compute_pairs<&Atom::pos, &Atom::force>(atoms, list, domain, lennard_jones{}, table);
}

}  // namespace cluster_pair_simd
