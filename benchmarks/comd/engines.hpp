// engines.hpp - the ports of CoMD's force routines to the pair engine: ljForce (ljForce.c) as a
// compute_pairs evaluator, eamForce (eam.c) as a compute_many_body law over CoMD's funcfl tables.
#pragma once
#include <string>

#include "comd_run.hpp"
#include "engine_list.hpp"

namespace comd {

// A port for the next run: its setup (called with the simulation before the first force call) and
// its force routine, both plain functions as CoMD's BasePotential holds them; the state lives in
// the port's file until the next make_*_port.
struct port {
  force_routine force = nullptr;
  void (*setup)(SimFlat*) = nullptr;
  port_phases (*phases)() = nullptr;  // where its force calls spent their time since setup
};

// Throws for a format it does not know.
port make_lj_port(port_options const& options);
// The funcfl file at `path` (CoMD's potDir/potName).
port make_eam_port(port_options const& options, std::string const& path);

}  // namespace comd
