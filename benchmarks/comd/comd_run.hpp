// comd_run.hpp - one CoMD simulation as CoMD.c's main runs it (initSimulation, then timestep() in
// blocks of printRate steps with the thermo line between them), with the force routine chosen by
// the caller: CoMD's own (ljForce, eamForce) or a port's. Both are timed the same way.
#pragma once
#include <string>
#include <vector>

#include "comd_c.hpp"

namespace comd {

// A force routine as CoMD calls it (BasePotential::force): forces of the local atoms into
// s->atoms->f, the potential energy into s->ePotential.
using force_routine = int (*)(SimFlat* s);

// What one run printed and how long it took.
struct run_result {
  std::vector<std::string> thermo;    // CoMD's thermo lines, timing column included
  std::vector<std::string> energies;  // the same lines' energy and temperature columns only
  double loop_seconds = 0;            // the step loop (CoMD's loopTimer): integration, redistribution, forces
  double force_seconds = 0;           // the force routine inside the loop (CoMD's computeForceTimer)
  int atoms = 0;
};

// `port` null: CoMD's own force routine; otherwise `port` replaces it from the first force call on
// (the one initSimulation makes) and `port_setup` is called with the simulation before that call.
run_result run(Command const& cmd, force_routine port = nullptr, void (*port_setup)(SimFlat*) = nullptr);

// CoMD's thermo header (printThings's first call).
std::string thermo_header();

}  // namespace comd
