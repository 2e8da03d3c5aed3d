// engine_list.hpp - the port's neighbour list over its copy of the atoms (comd_atoms.hpp): built
// by the library, reused over steps while no atom has moved more than skin / 2, then sorted into
// the list's order (cluster_pairs needs a spatial order; a padded list reads its candidates' rows
// closer together) and built again. CoMD rebuilds its link cells every step; the port's copy is
// ordered by the port, not by CoMD's boxes, so CoMD moving atoms between boxes does not touch it.
#pragma once
#include <chrono>
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
  bool lammps_splines = false;  // EAM: the library's eam_tables instead of CoMD's interpolation
};

// Where a port's force calls spend their time (every call of a run, the first one's build too).
struct port_phases {
  double copy_in = 0;   // CoMD's positions into the port's copy
  double check = 0;     // the rebuild test (needs_rebuild: the largest displacement)
  double sort = 0;      // where due: the copy sorted into the list's order (cell_keys, sort_by_key)
  double build = 0;     // and the list built
  double engine = 0;    // compute_pairs / compute_many_body
  double copy_out = 0;  // the forces into CoMD's f
  int builds = 0;
};

class phase_timer {
 public:
  explicit phase_timer(double& into) : into_(into), t0_(std::chrono::steady_clock::now()) {}
  ~phase_timer() { into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  phase_timer(phase_timer const&) = delete;
  phase_timer& operator=(phase_timer const&) = delete;

 private:
  double& into_;
  std::chrono::steady_clock::time_point t0_;
};

template <class Format> class port_list {
 public:
  port_list(SimFlat* s, double cutoff, port_options const& o)
      : list_({.cutoff = cutoff, .skin = o.skin, .half = o.half}), domain_(domain_of(s)) {
    copy_.init(s);
  }
  // CoMD's positions in; the list rebuilt where it no longer holds every pair within the cutoff.
  void update(SimFlat* s) {
    {
      phase_timer t(phases_.copy_in);
      copy_.positions_in(s);
    }
    engine_atoms& a = copy_.atoms();
    bool due = phases_.builds == 0;
    if (!due) {
      phase_timer t(phases_.check);
      due = list_.needs_rebuild(a, &engine_atom::pos);
    }
    if (due) {
      {
        phase_timer t(phases_.sort);
        coalesce::sort_by_key(a, list_.cell_keys(a, &engine_atom::pos, domain_, plan_), plan_);
        copy_.gids_moved();
      }
      phase_timer t(phases_.build);
      list_.build(a, &engine_atom::pos, domain_);
      ++phases_.builds;
    }
  }
  void forces_out(SimFlat* s) {
    phase_timer t(phases_.copy_out);
    copy_.forces_out(s);
  }
  // The engine's call, timed.
  template <class F> auto engine(F&& call) {
    phase_timer t(phases_.engine);
    return call();
  }
  engine_atoms& atoms() { return copy_.atoms(); }
  auto view() { return list_.view(copy_.atoms()); }
  coalesce::box const& domain() const { return domain_; }
  port_phases const& phases() const { return phases_; }

 private:
  coalesce::verlet_list<Format> list_;
  coalesce::box domain_;
  atom_copy copy_;
  coalesce::reorder_plan plan_;
  port_phases phases_;
};

}  // namespace comd
