// engine_list.hpp - the port's neighbour list over its copy of the atoms (comd_atoms.hpp): built
// by the library, reused over steps while no atom has moved more than skin / 2, then sorted into
// the list's order (cluster_pairs needs a spatial order; a padded list reads its candidates' rows
// closer together) and built again. CoMD rebuilds its link cells every step; the port's copy is
// ordered by the port, not by CoMD's boxes, so CoMD moving atoms between boxes does not touch it.
#pragma once
#include <cstddef>
#include <string>

#include <coalesce/coalesce.hpp>

#include "comd_atoms.hpp"

namespace comd {

// How the port builds its list (the driver's --format, --skin, --half).
struct port_options {
  // cluster_pairs | padded_rows; empty: what docs/neighbors.md measured fastest on the CPU, the
  // SIMD cluster-pair loop for a pair law, padded_rows for compute_many_body (its passes run a
  // thread per row: over cluster_pairs every listed cluster's 8 particles are candidates)
  std::string format;
  double skin = 0.3;  // Angstroms; 0: a build every step
  bool half = true;
};

template <class Format> class port_list {
 public:
  port_list(SimFlat* s, double cutoff, port_options const& o)
      : list_({.cutoff = cutoff, .skin = o.skin, .half = o.half}), domain_(domain_of(s)) {
    copy_.init(s);
  }
  // CoMD's positions in; the list rebuilt where it no longer holds every pair within the cutoff.
  void update(SimFlat* s) {
    copy_.positions_in(s);
    engine_atoms& a = copy_.atoms();
    if (builds_ == 0 || list_.needs_rebuild(a, &engine_atom::pos)) {
      coalesce::sort_by_key(a, list_.cell_keys(a, &engine_atom::pos, domain_, plan_), plan_);
      copy_.gids_moved();
      list_.build(a, &engine_atom::pos, domain_);
      ++builds_;
    }
  }
  void forces_out(SimFlat* s) { copy_.forces_out(s); }
  engine_atoms& atoms() { return copy_.atoms(); }
  auto view() { return list_.view(copy_.atoms()); }
  coalesce::box const& domain() const { return domain_; }
  int builds() const { return builds_; }

 private:
  coalesce::verlet_list<Format> list_;
  coalesce::box domain_;
  atom_copy copy_;
  coalesce::reorder_plan plan_;
  int builds_ = 0;
};

}  // namespace comd
