// expect: coalesce::compute_pairs: the evaluator computes in float
#include <coalesce/coalesce.hpp>
struct dvec3 {
  double x, y, z;
};
struct Atom {
  dvec3 pos;
  dvec3 force;
};
struct repulsion {
  struct param_type {
    float strength;
  };
  coalesce::pair_value<float> operator()(float r2, param_type const& q) const { return {q.strength / r2, 0.f}; }
};
void forces(coalesce::host_vector<Atom>& atoms, coalesce::verlet_list<coalesce::padded_columns, coalesce::host>& near,
            coalesce::box const& domain) {
  coalesce::pair_table<repulsion::param_type> table(1);
  coalesce::compute_pairs<&Atom::pos, &Atom::force>(atoms, near.view(atoms), domain, repulsion{}, table);
}
