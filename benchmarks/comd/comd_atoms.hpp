// comd_atoms.hpp - CoMD's atom arrays as a coalesce view, and the engine's copy of the atoms.
//
// CoMD keeps its atoms in link-cell boxes of MAXATOMS slots: box b holds nAtoms[b] atoms in slots
// [b * MAXATOMS, b * MAXATOMS + nAtoms[b]), the rest of the box is a hole, and halo boxes (periodic
// images, refilled every step) follow the local ones. Its arrays are one per member (r[n][3],
// p[n][3], f[n][3], U[n], gid[n], iSpecies[n]), which member_arrays adopts without a copy.
//
// The engine cannot run over those slots: a list is built over particles [0, n) and every particle
// of the range is a particle (holes would be atoms at stale positions), and the halo images are the
// engine's minimum image already. So the port keeps the local atoms in a vector of its own, in the
// list's order, and copies positions in and forces out through the view each step (O(n), a few
// percent of a force call). The copy's order is the port's, not CoMD's: an atom is found by its gid
// (`where`), which CoMD carries along when it moves an atom between boxes or sorts a box, so the
// list stays valid over steps while CoMD redistributes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <coalesce/coalesce.hpp>

#include "comd_c.hpp"

namespace comd {

struct dvec3 {
  double x, y, z;
};
// CoMD's Atoms, one member per array (initAtoms.h), in the arrays' order.
struct comd_atom {
  dvec3 r;
  dvec3 p;
  dvec3 f;
  double U;
  int gid;
  int species;
};
// Every member dense (real3 is three doubles, as dvec3): the arrays as CoMD allocates them.
using comd_layout = coalesce::member_arrays<>;
using comd_view = coalesce::view<comd_atom, comd_layout>;

inline comd_view view_of(SimFlat* s) {
  std::size_t const slots = static_cast<std::size_t>(s->boxes->nTotalBoxes) * MAXATOMS;
  Atoms* a = s->atoms;
  return comd_view::over_blobs(slots, {a->r, a->p, a->f, a->U, a->gid, a->iSpecies});
}

// The engine's atoms: positions in, forces out, and the gid that finds the CoMD slot.
struct engine_atom {
  dvec3 pos;
  dvec3 force;
  int gid;
};
using engine_atoms = coalesce::device_vector<engine_atom>;

// The local atoms (slot order), counted; one rank holds every atom, gids 0 .. n-1.
inline std::size_t local_atoms(SimFlat* s) {
  std::size_t n = 0;
  for (int b = 0; b < s->boxes->nLocalBoxes; ++b) n += static_cast<std::size_t>(s->boxes->nAtoms[b]);
  return n;
}

// The engine's copy of the local atoms and where each gid sits in it.
class atom_copy {
 public:
  // Every gid at its own index, positions from CoMD (the first force call).
  void init(SimFlat* s) {
    std::size_t const n = local_atoms(s);
    atoms_ = engine_atoms(n);
    where_.assign(n, 0);
    auto const e = atoms_.view();
    for (std::size_t a = 0; a < n; ++a) {
      e[a][&engine_atom::gid] = static_cast<int>(a);
      where_[a] = static_cast<std::uint32_t>(a);
    }
  }
  // CoMD's positions into the copy (OpenMP over CoMD's local boxes).
  void positions_in(SimFlat* s) {
    check_count(s);
    for_each_local_atom(s,
                        [](auto const& comd, auto const& engine) { engine[&engine_atom::pos] = comd[&comd_atom::r]; });
  }
  // The engine's forces into CoMD's f.
  void forces_out(SimFlat* s) {
    for_each_local_atom(
        s, [](auto const& comd, auto const& engine) { comd[&comd_atom::f] = engine[&engine_atom::force]; });
  }
  // After the copy was sorted: each gid's new index.
  void gids_moved() {
    auto const e = atoms_.view();
    for (std::size_t a = 0; a < atoms_.size(); ++a) {
      where_[static_cast<std::size_t>(static_cast<int>(e[a][&engine_atom::gid]))] = static_cast<std::uint32_t>(a);
    }
  }
  engine_atoms& atoms() { return atoms_; }

 private:
  // move(comd, engine) for every local atom of CoMD's boxes: its slot's element and its element of
  // the copy (found by gid). OpenMP over the boxes.
  template <class Move> void for_each_local_atom(SimFlat* s, Move move) {
    comd_view const c = view_of(s);
    auto const e = atoms_.view();
    std::uint32_t const* where = where_.data();
    int const* counts = s->boxes->nAtoms;
    coalesce::for_each_index(coalesce::device{}, static_cast<std::size_t>(s->boxes->nLocalBoxes), [=](std::size_t b) {
      std::size_t const first = b * MAXATOMS;
      for (std::size_t slot = first; slot < first + counts[b]; ++slot)
        move(c[slot], e[where[c[slot][&comd_atom::gid]]]);
    });
  }
  void check_count(SimFlat* s) const {
    std::size_t const n = local_atoms(s);
    if (n != atoms_.size()) {
      throw std::runtime_error("comd port: CoMD holds " + std::to_string(n) + " local atoms but the engine's copy " +
                               std::to_string(atoms_.size()) + " (atoms lost or gained: one rank keeps them all)");
    }
  }
  engine_atoms atoms_;
  std::vector<std::uint32_t> where_;
};

// CoMD's periodic domain as the engine's box (one rank: the global bounds).
inline coalesce::box domain_of(SimFlat* s) {
  Domain const* d = s->domain;
  return coalesce::box{.lo = {d->globalMin[0], d->globalMin[1], d->globalMin[2]},
                       .hi = {d->globalMax[0], d->globalMax[1], d->globalMax[2]},
                       .edges = coalesce::boundary::periodic};
}

}  // namespace comd
