// comd_run.cpp - CoMD.c's initSimulation and main loop, repeated here so that one process can run
// the simulation twice (CoMD.c keeps them static and prints from static state). The order of the
// calls and the arithmetic of the thermo line are CoMD.c's; the force routine is the caller's.
#include "comd_run.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <strings.h>

namespace comd {
namespace {

// The force routine inside the timer: CoMD's computeForceTimer wraps computeForce the same way.
force_routine timed_inner = nullptr;
double force_seconds = 0;
int timed_force(SimFlat* s) {
  auto const t0 = std::chrono::steady_clock::now();
  int const r = timed_inner(s);
  force_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// CoMD.c's sanityChecks, as errors instead of exit codes.
void sanity_checks(Command const& cmd, double cutoff, double lattice, char const* lattice_type) {
  if (cmd.xproc * cmd.yproc * cmd.zproc != 1) {
    throw std::runtime_error("comd: the benchmark runs one rank; xproc * yproc * zproc must be 1");
  }
  if (cmd.nx * lattice < 2 * cutoff || cmd.ny * lattice < 2 * cutoff || cmd.nz * lattice < 2 * cutoff) {
    throw std::runtime_error("comd: simulation too small: each side must be at least " + std::to_string(2 * cutoff) +
                             " Angstroms (twice the cutoff)");
  }
  if (strcasecmp(lattice_type, "FCC") != 0) {
    throw std::runtime_error(std::string("comd: only the FCC lattice is supported, not ") + lattice_type);
  }
}

SimFlat* init_simulation(Command cmd, force_routine port, void (*port_setup)(SimFlat*)) {
  auto* sim = static_cast<SimFlat*>(comdMalloc(sizeof(SimFlat)));
  sim->nSteps = cmd.nSteps;
  sim->printRate = cmd.printRate;
  sim->dt = cmd.dt;
  sim->domain = nullptr;
  sim->boxes = nullptr;
  sim->atoms = nullptr;
  sim->ePotential = 0.0;
  sim->eKinetic = 0.0;
  sim->atomExchange = nullptr;

  sim->pot = cmd.doeam ? initEamPot(cmd.potDir, cmd.potName, cmd.potType) : initLjPot();
  real_t const lattice = cmd.lat < 0.0 ? sim->pot->lat : cmd.lat;
  sanity_checks(cmd, sim->pot->cutoff, lattice, sim->pot->latticeType);

  auto* species = static_cast<SpeciesData*>(comdMalloc(sizeof(SpeciesData)));
  std::strcpy(species->name, sim->pot->name);
  species->atomicNo = sim->pot->atomicNo;
  species->mass = sim->pot->mass;
  sim->species = species;

  real3 extent = {cmd.nx * lattice, cmd.ny * lattice, cmd.nz * lattice};
  sim->domain = initDecomposition(cmd.xproc, cmd.yproc, cmd.zproc, extent);
  sim->boxes = initLinkCells(sim->domain, sim->pot->cutoff);
  sim->atoms = initAtoms(sim->boxes);
  createFccLattice(cmd.nx, cmd.ny, cmd.nz, lattice, sim);
  setTemperature(sim, cmd.temperature);
  randomDisplacements(sim, cmd.initialDelta);
  sim->atomExchange = initAtomHaloExchange(sim->domain, sim->boxes);

  // Every force call goes through the timer; the port replaces CoMD's routine before the first.
  timed_inner = sim->pot->force;
  if (port != nullptr) {
    if (port_setup != nullptr) port_setup(sim);
    timed_inner = port;
  }
  sim->pot->force = timed_force;

  redistributeAtoms(sim);
  computeForce(sim);
  kineticEnergy(sim);
  return sim;
}

void destroy_simulation(SimFlat* s, bool ported_eam) {
  // eamDestroy frees the force halo exchange that eamForce makes on its first call, and crashes
  // where eamForce never ran (a port's run): there the potential's tables stay allocated (~0.1 MB).
  if (!ported_eam) s->pot->destroy(&s->pot);
  destroyLinkCells(&s->boxes);
  destroyAtoms(s->atoms);
  destroyHaloExchange(&s->atomExchange);
  comdFree(s->species);
  comdFree(s->domain);
  comdFree(s);
}

// CoMD.c's sumAtoms (one rank).
void sum_atoms(SimFlat* s) {
  s->atoms->nLocal = 0;
  for (int i = 0; i < s->boxes->nLocalBoxes; i++) s->atoms->nLocal += s->boxes->nAtoms[i];
  s->atoms->nGlobal = s->atoms->nLocal;
}

// CoMD.c's printThings, into strings: the whole line, and its energy and temperature columns.
void thermo_line(SimFlat* s, int step, int steps_since, double elapsed, run_result& out) {
  real_t const time = step * s->dt;
  real_t const e_total = (s->ePotential + s->eKinetic) / s->atoms->nGlobal;
  real_t const e_k = s->eKinetic / s->atoms->nGlobal;
  real_t const e_u = s->ePotential / s->atoms->nGlobal;
  real_t const temperature = (s->eKinetic / s->atoms->nGlobal) / (kB_eV * 1.5);
  double const per_atom = 1.0e6 * elapsed / (double)(steps_since * s->atoms->nLocal);
  char line[256];
  std::snprintf(line, sizeof line, " %6d %10.2f %18.12f %18.12f %18.12f %12.4f %10.4f %12d", step, time, e_total, e_u,
                e_k, temperature, per_atom, s->atoms->nGlobal);
  out.thermo.emplace_back(line);
  std::snprintf(line, sizeof line, "%6d %18.12f %18.12f %18.12f %12.4f", step, e_total, e_u, e_k, temperature);
  out.energies.emplace_back(line);
}

}  // namespace

std::string thermo_header() {
  return "#  Loop   Time(fs)       Total Energy   Potential Energy     Kinetic Energy  Temperature   (us/atom)     # "
         "Atoms";
}

run_result run(Command const& cmd, force_routine port, void (*port_setup)(SimFlat*)) {
  SimFlat* sim = init_simulation(cmd, port, port_setup);
  run_result out;
  force_seconds = 0;  // the loop's force calls only, as CoMD's timers report them
  int const steps = sim->nSteps, rate = sim->printRate;
  int step = 0, previous = -1;
  double last_block = 0;
  auto const t0 = std::chrono::steady_clock::now();
  for (; step < steps;) {
    sum_atoms(sim);
    thermo_line(sim, step, step - previous, last_block, out);
    previous = step;
    auto const b0 = std::chrono::steady_clock::now();
    timestep(sim, rate, sim->dt);
    last_block = std::chrono::duration<double>(std::chrono::steady_clock::now() - b0).count();
    step += rate;
  }
  out.loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.force_seconds = force_seconds;
  sum_atoms(sim);
  thermo_line(sim, step, step - previous, last_block, out);
  out.atoms = sim->atoms->nGlobal;
  destroy_simulation(sim, port != nullptr && cmd.doeam);
  return out;
}

}  // namespace comd
